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
from rdl.baselines.scoring import score
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


@pytest.mark.parametrize("kind", ["regression", "multiclass_classification"])
def test_the_label_mean_best_on_val_is_the_prior(kind, caplog):
    from rdl.baselines.trees import fit_tree_baselines
    task = make_task(kind)
    db, tables = levels(kind)
    history = task.history(tables)
    fits, _ = fit_tree_baselines(task, db, tables, history)
    printed = node_baselines(task, db, tables, history=history, trees=fits)
    metric, sign = task.monitor, 1 if task.monitor_mode == "max" else -1
    best = max(printed, key=lambda w: sign * printed[w]["val"][metric])
    assert best.startswith("label mean"), printed   # clearly: ahead of LightGBM on val
    assert sign * (printed[best]["val"][metric] - printed["LightGBM"]["val"][metric]) > 0.02
    with caplog.at_level(logging.INFO, logger="rdl.preparation"):
        assert chosen_prior(task, tables, history, fits) == best
    assert f"prior: {best}, the best on val" in caplog.text
    # among the trees only (data.prior_from=trees), as before: LightGBM
    assert chosen_prior(task, tables, history, fits, "trees") == "LightGBM"


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
