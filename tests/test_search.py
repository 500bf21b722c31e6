"""``hparams_search=<task>-optuna``: Hydra's Optuna sweeper through rdl's resumable sweeper
(hydra_plugins/rdl_search): each trial is a run whose value is the monitored validation
metric, the search ends with a line naming the best trial, and a search run again on its
SQLite study goes on with it."""
from __future__ import annotations

import json
import re
import shlex
import sys

import pytest
from hydra import compose, initialize_config_dir

import rdl

optuna = pytest.importorskip("optuna", reason="the optuna extra")
pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason="the optuna extra")

SEARCHES = sorted(p.stem for p in (rdl.CONF_DIR / "hparams_search").glob("*.yaml"))
#: a trial as short as the tests' runs, eager (compiling would take most of its time)
FAST = ("compile.enabled=false",)
LINE = re.compile(r"^best trial (\d+) of (\d+) \(study (\S+)\): (\S+)=(\S+) with (.*) in (\S+); "
                  r"train it: (python -m rdl\.train .*)$", re.M)


@pytest.mark.parametrize("search", SEARCHES)
def test_a_search_config_picks_its_task_and_sweeps_its_monitored_metric(search):
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        cfg = compose("config", [f"hparams_search={search}"], return_hydra_config=True)
    task = search.removesuffix("-optuna")
    assert cfg.task.name == task
    sweeper = cfg.hydra.sweeper
    assert sweeper._target_.endswith("RdlOptunaSweeper")
    assert sweeper.direction == {"max": "maximize", "min": "minimize"}[cfg.task.monitor_mode]
    assert sweeper.sampler.seed == cfg.seed
    assert {"lr", "model.channels", "data.batch_size"} <= set(sweeper.params)
    assert ("data.tree_prior" in sweeper.params) == (cfg.task.kind != "link_prediction")


def search(run_train, sweep_dir, *overrides):
    return run_train(sweep_dir, "hparams_search=user-churn-optuna", *FAST,
                     f"hydra.sweep.dir={sweep_dir}", *overrides,
                     python=(sys.executable, "-m", "rdl.train", "-m"))


def val_metric(run_dir, name="auroc") -> float:
    return json.loads((run_dir / "metrics.json").read_text())["model"]["val"][name]


def test_a_search_finds_its_best_trial_and_resumes_its_study(run_train, tmp_path):
    sweep, db = tmp_path / "sweep", tmp_path / "study.db"
    storage = f"hydra.sweeper.storage=sqlite:///{db}"
    first = search(run_train, sweep, "hydra.sweeper.n_trials=2", storage)
    assert first.returncode == 0, first.stderr[-3000:]
    # run again on the same study with 4 trials in all: it runs the two still to go
    second = search(run_train, sweep, "hydra.sweeper.n_trials=4", storage)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "2 trials finished, 2 to go" in second.stdout + second.stderr

    study = optuna.load_study(study_name="user-churn", storage=f"sqlite:///{db}")
    trials = study.get_trials()
    assert [t.number for t in trials] == [0, 1, 2, 3]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    # each trial's value is the monitored metric its run wrote, in a folder named after it
    for t in trials:
        assert t.value == val_metric(sweep / str(t.number))
    # the restarted sampler does not propose the first run's settings again
    assert {t.params["lr"] for t in trials[:2]}.isdisjoint(t.params["lr"] for t in trials[2:])

    found = LINE.findall(second.stdout)
    assert len(found) == 1, second.stdout[-3000:]
    number, total, name, metric, value, settings, where, command = found[0]
    best = max(trials, key=lambda t: t.value)
    assert (int(number), int(total), name, metric) == (best.number, 4, "user-churn", "val/auroc")
    assert float(value) == best.value == val_metric(sweep / number)
    assert where == str(sweep / number)
    assert settings.split() == [f"{k}={v}" for k, v in best.params.items()]

    # the command trains the best trial's run again, to the same value
    args = shlex.split(command)[3:]
    again = run_train(tmp_path / "again", *args, tiny=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert val_metric(tmp_path / "again") == best.value
