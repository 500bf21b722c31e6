"""Each config group writes only its own section: choosing any option of a group changes
nothing of the composed config outside that group's key (``experiment/``, ``debug/`` and
``hparams_search/`` are presets, free to set anything: a search picks its task). What a
task or a model wants of the data it declares in its own section (``data_defaults``),
applied by ``rdl.train`` where ``data.*`` is null."""
from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import rdl
from rdl.settings import with_data_defaults, with_trainer_defaults

PRESETS = ("experiment", "debug", "hparams_search")
CHOICES = [(group.name, option.stem) for group in sorted(rdl.CONF_DIR.iterdir())
           if group.is_dir() and group.name not in PRESETS
           for option in sorted(group.glob("*.yaml"))]


def composed(*overrides: str) -> dict:
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        return OmegaConf.to_container(compose("config", list(overrides)), resolve=False)


def test_every_group_has_choices():
    groups = {g for g, _ in CHOICES}
    assert {"data", "model", "task", "trainer", "callbacks", "logger"} <= groups, groups
    assert len(CHOICES) > 20


@pytest.mark.parametrize("group,option", CHOICES, ids=[f"{g}={o}" for g, o in CHOICES])
def test_a_choice_writes_its_own_section_only(group, option):
    base, chosen = composed(), composed(f"{group}={option}")
    changed = sorted(k for k in set(base) | set(chosen) if base.get(k) != chosen.get(k))
    assert set(changed) <= {group}, f"{group}={option} also changes {changed}"


def test_a_task_or_model_fills_only_the_data_settings_left_null():
    def data(*overrides):
        with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
            return with_data_defaults(compose("config", list(overrides))).data

    assert data("task=user-churn").strategy == "mix"                       # the task's
    assert data("task=item-sales", "model=idgnn").strategy == "last"
    idgnn = data("task=user-item-purchase", "model=idgnn")
    assert (idgnn.strategy, idgnn.bidirectional) == ("last", True)         # the model's
    assert data("task=user-churn", "data.strategy=uniform").strategy == "uniform"  # yours
    two = data("task=user-item-purchase", "model=two-tower")
    assert (two.triplets, list(two.num_neighbors)) == (True, [32, 16])
    plain = data("task=user-churn")
    assert (plain.bidirectional, plain.triplets, list(plain.num_neighbors)) == (
        False, False, [128, 64])                                           # the data module's
    # a data config's own value stands too (the tiny database's fan-out)
    assert list(data("data=hm-tiny", "task=user-item-purchase",
                     "model=two-tower").num_neighbors) == [16, 8]


def test_two_experiments_compose_the_second_database_with_a_tasks_budget():
    """docs/results.md's synthetic-db2 purchase row: the database of one preset, the task,
    model and training budget of another, as Hydra composes a list of a group's configs."""
    both = composed("experiment=[synthetic-db2,user-item-purchase]")
    one = composed("experiment=user-item-purchase")
    assert (both["data"]["db"]["seed"], both["data"]["db"]["scale"]) == (1, 0.05)
    assert (one["data"]["db"]["seed"], one["data"]["db"]["scale"]) != (1, 0.05)
    for key in ("task", "model", "trainer"):
        assert both[key] == one[key], key
    budget = with_trainer_defaults(OmegaConf.create(both)).trainer
    assert budget.max_epochs == 6 and budget.limit_train_batches == 2000


def test_a_task_sets_the_training_budget_only_where_the_run_left_the_default():
    """H&M purchase's six epochs over every train seed (its trainer_defaults) apply to
    ``task=user-item-purchase`` with or without its preset, and not where the run chose a
    budget of its own, on the command line or through a preset: then the run's stands
    whole, not half of each."""
    def trainer(*overrides):
        with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
            return with_trainer_defaults(compose("config", list(overrides))).trainer

    default = composed()["trainer"]
    for run in (("task=user-item-purchase",), ("experiment=user-item-purchase",),
                ("experiment=synthetic-db2", "task=user-item-purchase"),
                ("task=user-item-purchase", "trainer=ddp")):
        t = trainer(*run)
        assert (t.max_epochs, t.limit_train_batches) == (6, 2000), run
    assert trainer("task=user-churn") == default                   # a task without one
    mine = trainer("task=user-item-purchase", "trainer.max_epochs=2")
    assert (mine.max_epochs, mine.limit_train_batches) == (2, default["limit_train_batches"])
    limited = trainer("task=user-item-purchase", "debug=limit")
    assert limited.limit_train_batches != default["limit_train_batches"]
    assert (limited.max_epochs, limited.limit_train_batches) == tuple(
        composed("task=user-item-purchase", "debug=limit")["trainer"][k]
        for k in ("max_epochs", "limit_train_batches"))


def test_a_run_of_the_task_carries_its_budget_into_the_checkpoint_config(tiny_cfg):
    """``python -m rdl.train task=user-item-purchase``: the run pieces (the config as run,
    which the checkpoints carry for rdl.predict and a resumed run) have the kind's model
    and the task's budget; with a budget on the command line, that budget."""
    from rdl.api import _run_pieces
    from rdl.checkpoints import CONFIG_KEY

    for overrides, budget in ((("task=user-item-purchase",), (6, 2000)),
                              (("task=user-item-purchase", "trainer.max_epochs=1",
                                "trainer.limit_train_batches=2"), (1, 2))):
        cfg, _, module, _ = _run_pieces(tiny_cfg(*overrides), None, None)
        saved = module.hparams[CONFIG_KEY]
        assert saved["model"]["_target_"] == "rdl.nn.ContextGNN"
        assert (saved["trainer"]["max_epochs"], saved["trainer"]["limit_train_batches"]) == budget
        assert (cfg.trainer.max_epochs, cfg.trainer.limit_train_batches) == budget
