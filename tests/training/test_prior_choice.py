"""The node model's prior chosen on val among every baseline the run prints (issue 50):
a simple baseline's train values read no label from after the seed, its val and test values
score as the printed baseline, and the baseline best on val is the prior."""
import logging

import numpy as np
import pandas as pd
import pytest

from rdl.baselines import node_baselines
from rdl.baselines.constant import constant_baselines
from rdl.baselines.history import history_baselines, mean_name
from rdl.baselines.scoring import paired_se, score
from rdl.data import Database, Table
from rdl.families.node.prior_choice import chosen_prior, choose, val_scores
from rdl.families.node.simple_prior import simple_prior
from tests.baselines.shop import TEST, VAL, W, make_task
from tests.baselines.test_trees import problem
from tests.training.test_tree_prior import KINDS, perturb


def simple_names(task, tables) -> list[str]:
    """The simple baselines the run prints: the constants, the last label and the label
    mean of the ``k`` chosen on val; and the label mean of every other ``k`` too."""
    printed = {**constant_baselines(task, tables), **history_baselines(task, tables)}
    return list(dict.fromkeys([*printed, *(mean_name(k) for k in (2, 4, 8, 16))]))


@pytest.mark.parametrize("kind", KINDS)
def test_a_simple_prior_of_a_train_seed_reads_no_label_from_after_it(kind):
    """Every label whose window closes after ``cut`` rewritten (any entity's): the prior of
    every train seed at or before ``cut`` is the same, later ones change; the first seed
    time, before which no label has closed, has none."""
    task = make_task(kind)
    _, tables = problem(kind)
    train = tables["train"]
    seed = train["timestamp"]
    times = np.sort(seed.unique())
    cut = times[len(times) // 2]
    late = (seed + task.delta > cut).to_numpy()
    y = train["y"].to_numpy()
    changed = dict(tables, train=train.assign(
        y=np.where(late, perturb(kind, y, np.random.default_rng(1)), y)))
    early = (seed <= cut).to_numpy()
    first = (seed == times[0]).to_numpy()
    for name in simple_names(task, tables):
        prior = simple_prior(task, name, tables, task.history(tables))["train"]
        again = simple_prior(task, name, changed, task.history(changed))["train"]
        assert prior.shape[0] == len(train)
        np.testing.assert_array_equal(again[early], prior[early], err_msg=name)
        missing = np.isnan(prior.reshape(len(train), -1)).any(axis=1)
        assert (missing == first).all(), name
        if name != "zero":  # the later seeds do read the rewritten labels
            assert not np.allclose(again[~early], prior[~early]), name


@pytest.mark.parametrize("kind", KINDS)
def test_val_and_test_priors_score_as_the_printed_baselines(kind):
    """The model at its prior (no correction) predicts what the printed baseline does: the
    prior's raw values (values, logits, log-probabilities) mapped as LightGBM's are,
    scored by the task's metrics, give the printed scores."""
    task = make_task(kind)
    _, tables = problem(kind)
    history = task.history(tables)
    printed = {**constant_baselines(task, tables), **history_baselines(task, tables, history)}
    for name, scores in printed.items():
        prior = simple_prior(task, name, tables, history)
        for split in ("val", "test"):
            assert np.isfinite(prior[split]).all(), name
            got = score(task, task.kind.from_raw(prior[split]), tables[split])
            assert got == pytest.approx(scores[split], abs=1e-6), (name, split)


def levels(kind: str, n_shop: int = 60, weeks: int = 12, seed: int = 0):
    """Shops whose labels are a level of their own plus much noise, and a database without
    signal: the mean of a shop's last labels is the best guess, and trees on a few hundred
    rows find less of it."""
    rng = np.random.default_rng(seed)
    level = rng.gamma(2.0, 2.0, n_shop)
    start = VAL - weeks * W
    shop = pd.DataFrame({"shop_id": range(n_shop), "noise": rng.random(n_shop)})
    sale = pd.DataFrame({"sale_id": range(n_shop), "t": start,
                         "shop_id": pd.array(range(n_shop), dtype="Int64"),
                         "amount": rng.random(n_shop)})
    db = Database({"shop": Table(shop, pkey="shop_id"),
                   "sale": Table(sale, pkey="sale_id", fkeys={"shop_id": "shop"}, time_col="t")})
    rows = []
    for k in range(weeks + 2):
        y = level + rng.normal(0, 3.0, n_shop)
        if kind == "multiclass_classification":
            y = np.digitize(y, np.quantile(level, [0.33, 0.67]))
        rows.append(pd.DataFrame({"timestamp": start + k * W, "shop_id": range(n_shop), "y": y}))
    labels = pd.concat(rows, ignore_index=True)
    return db, {"train": labels[labels["timestamp"] < VAL],
                "val": labels[labels["timestamp"] == VAL],
                "test": labels[labels["timestamp"] == TEST]}


def fitted(kind: str, **shape):
    from rdl.baselines.trees import fit_tree_baselines
    task = make_task(kind)
    db, tables = levels(kind, **shape)
    history = task.history(tables)
    fits, _ = fit_tree_baselines(task, db, tables, history)
    printed = node_baselines(task, db, tables, history=history, trees=fits)
    return task, tables, history, fits, printed


def best_on_val(task, printed) -> str:
    sign = 1 if task.monitor_mode == "max" else -1
    return max(printed, key=lambda w: sign * printed[w]["val"][task.monitor])


@pytest.mark.parametrize("kind", ["regression", "multiclass_classification"])
def test_the_label_mean_best_on_val_by_more_than_noise_is_the_prior(kind, caplog):
    """60 shops, 24 weeks: the label mean of the last 16 labels leads LightGBM on val by
    1.7 (regression) and 2.5 (multiclass) standard errors of the paired bootstrap."""
    task, tables, history, fits, printed = fitted(kind, n_shop=60, weeks=24)
    best = best_on_val(task, printed)
    assert best.startswith("label mean"), printed
    with caplog.at_level(logging.INFO, logger="rdl.preparation"):
        assert chosen_prior(task, tables, history, fits) == best
    assert f"prior: {best}; of LightGBM" in caplog.text
    assert "leads LightGBM by" in caplog.text and "more than 1 standard error" in caplog.text
    # among the trees only (data.prior_from=trees), as before: LightGBM
    assert chosen_prior(task, tables, history, fits, "trees") == "LightGBM"


def test_a_val_lead_within_noise_keeps_the_trees(caplog):
    """20 shops: the label mean leads LightGBM on val, by less than one standard error of
    the difference over the 20 val rows: the trees stay the prior (data.prior_margin=1);
    with a margin of 0 the best on val is taken whatever its lead."""
    task, tables, history, fits, printed = fitted("regression", n_shop=20, weeks=12)
    best = best_on_val(task, printed)
    assert best.startswith("label mean"), printed
    with caplog.at_level(logging.INFO, logger="rdl.preparation"):
        assert chosen_prior(task, tables, history, fits) == "LightGBM"
    assert "not more than 1 standard error" in caplog.text
    assert chosen_prior(task, tables, history, fits, margin=0) == best
    # a wider margin keeps the trees where one standard error was enough
    task, tables, history, fits, printed = fitted("regression", n_shop=60, weeks=24)
    assert chosen_prior(task, tables, history, fits, margin=1.0) != "LightGBM"
    assert chosen_prior(task, tables, history, fits, margin=3.0) == "LightGBM"
    with pytest.raises(ValueError, match="data.prior_margin=-1"):
        chosen_prior(task, tables, history, fits, margin=-1)


def test_the_paired_bootstrap_is_the_spread_of_the_difference():
    """Two predictions that differ by a constant have a difference of MAE with no spread
    where every error keeps its sign; shuffled errors have one."""
    task = make_task("regression")
    df = pd.DataFrame({"y": np.arange(100.0)})
    se = paired_se(task, "mae", df["y"] + 1.0, df["y"] + 2.0, df)
    assert se == pytest.approx(0.0, abs=1e-6)
    noisy = df["y"] + np.random.default_rng(0).normal(0, 5, 100)
    assert paired_se(task, "mae", noisy, df["y"] + 2.0, df) > 0.1


def test_the_choice_keeps_the_first_of_a_tie_and_never_takes_nan():
    assert choose({"LightGBM": 0.7, "LightGBM (depth 2)": 0.7, "last label": 0.7}) == "LightGBM"
    assert choose({"LightGBM": -2.0, "label mean (last 4)": -1.9}) == "label mean (last 4)"
    assert choose({"LightGBM": float("nan"), "last label": 0.6}) == "last label"


@pytest.mark.parametrize("kind", KINDS)
def test_every_printed_baseline_is_a_candidate(kind):
    task = make_task(kind)
    db, tables = problem(kind)
    history = task.history(tables)
    from rdl.baselines.trees import fit_tree_baselines
    fits, _ = fit_tree_baselines(task, db, tables, history)
    printed = node_baselines(task, db, tables, history=history, trees=fits)
    scores = val_scores(task, tables, history, fits)
    assert list(scores)[:1] == ["LightGBM"] and set(scores) == set(printed)
    sign = 1 if task.monitor_mode == "max" else -1
    for name, value in scores.items():
        assert value == pytest.approx(sign * printed[name]["val"][task.monitor])
    with pytest.raises(ValueError, match="data.prior_from='best'"):
        val_scores(task, tables, history, fits, "best")


def test_a_val_split_of_one_value_chooses_nothing(caplog, monkeypatch):
    """A month with no survey: every plot's count in val is 0, which the zero baseline
    matches exactly (Portal's plots, backtest 3: it became the prior, the correction was
    scaled to 0, and the model printed zero's test MAE, 3.67, against LightGBM's 1.80).
    Such a split chooses nothing: the prior is the trees, the correction kept as
    trained, and the report says why."""
    from rdl.families.node import family as node_family
    from rdl.report import task_report
    from rdl.tasks.kinds import one_value

    task, tables, history, fits, printed = fitted("regression", n_shop=60, weeks=24)
    tables = {**tables, "val": tables["val"].assign(y=0.0)}
    assert val_scores(task, tables, history, fits)["zero"] == 0.0   # zero matches val
    with caplog.at_level(logging.INFO, logger="rdl.preparation"):
        assert chosen_prior(task, tables, history, fits) == "LightGBM"
    assert "the trees (val's labels are one value)" in caplog.text
    note = one_value(task, tables)
    assert note.startswith("one value: every val label is 0 (60 rows)")
    assert not one_value(task, {**tables, "val": tables["test"]})

    class Data:   # what NodeFamily.evaluate reads of the data module
        prior, prior_name, task = object(), "LightGBM", None
    Data.task, Data.tables = task, tables
    called = []
    monkeypatch.setattr(node_family, "scaled_on_val", lambda *a, **k: called.append("scaled"))
    monkeypatch.setattr(node_family.Family, "evaluate",
                        lambda *a, **k: {"val": {"mae": 1.0}, "test": {"mae": 2.0}})
    model = node_family.NodeFamily().evaluate(None, None, Data(), "best.ckpt",
                                              {"correction_scales": [1, 0.5, 0]})
    assert not called and model["prior_by"] == "the trees (val's labels one value)"
    text = task_report(task, {"model": model}, caveat=note)
    assert "one value: every val label is 0" in text
    assert "its prior the trees (val's labels one value)" in text
