"""Depth 2's weight in the trees' prior (``data.prior_trees=chained``): chosen on the last
train weeks' forward-chained priors, not on val; the prior is then the weighted mean of both
LightGBMs on every split, and a cached run restores it."""
import logging

import numpy as np
import pandas as pd
import pytest

from rdl.api import build
from rdl.baselines.tree_mean import MEAN
from rdl.baselines.trees import DEPTH1, DEPTH2
from rdl.families.node import prior_weight
from rdl.families.node.prior_weight import GRID, chained_weight
from tests.baselines.shop import make_task

WEEKS = pd.date_range("2020-01-06", periods=8, freq="7D")


def train_table(rng, n=40):
    return pd.DataFrame({"timestamp": np.repeat(WEEKS, n), "shop_id": np.tile(np.arange(n), 8),
                         "y": rng.normal(10.0, 3.0, 8 * n)})


def parts_where(train, better_late, rng):
    """Depth 1 and 2 priors: NaN in the first two weeks, then the one ``better_late``
    names close to the labels in the last four weeks, the other one close before them."""
    y = train["y"].to_numpy()
    late = (train["timestamp"] >= WEEKS[4]).to_numpy()
    good, bad = y + rng.normal(0, 0.1, len(y)), y + rng.normal(0, 3.0, len(y))
    d2 = np.where(late == better_late, good, bad)
    d1 = np.where(late == better_late, bad, good)
    none = (train["timestamp"] < WEEKS[2]).to_numpy()
    return np.where(none, np.nan, d1), np.where(none, np.nan, d2)


@pytest.mark.parametrize("better_late,want", [(True, 1.0), (False, 0.0)])
def test_the_weight_is_the_one_best_on_the_last_chained_weeks(better_late, want):
    rng = np.random.default_rng(0)
    train = train_table(rng)
    parts = parts_where(train, better_late, rng)
    # the weeks before the last four favour the other depth: they do not choose
    assert chained_weight(make_task("regression"), train, parts, None, weeks=4) == want
    scores = prior_weight.week_scores(make_task("regression"), train, parts, None, weeks=4)
    assert all(len(v) == 4 for v in scores.values())   # the last 4 of 6 weeks with a prior
    # the weeks before the last four are not read: swapping the depths there changes nothing
    early = (train["timestamp"] < WEEKS[4]).to_numpy()
    swapped = (np.where(early, parts[1], parts[0]), np.where(early, parts[0], parts[1]))
    assert prior_weight.week_scores(make_task("regression"), train, swapped, None,
                                    weeks=4) == scores
    # all six are, with ``weeks=6``
    assert prior_weight.week_scores(make_task("regression"), train, swapped, None,
                                    weeks=6) != prior_weight.week_scores(
        make_task("regression"), train, parts, None, weeks=6)


def test_a_tie_or_fewer_chained_weeks_than_asked_give_the_plain_mean(caplog):
    rng = np.random.default_rng(1)
    train = train_table(rng)
    same = rng.normal(10.0, 3.0, len(train))
    assert chained_weight(make_task("regression"), train, (same, same), None) == 0.5
    only_last = np.where((train["timestamp"] == WEEKS[-1]).to_numpy(), same, np.nan)
    with caplog.at_level(logging.INFO, logger="rdl.preparation"):
        assert chained_weight(make_task("regression"), train, (only_last, same), None) == 0.5
    assert "1 train seed time(s) with a forward-chained prior to choose it on, fewer than 8" \
        in caplog.text
    # six chained weeks where depth 2 is far better in the last four: too few for eight
    parts = parts_where(train, True, rng)
    assert chained_weight(make_task("regression"), train, parts, None, weeks=4) == 1.0
    assert chained_weight(make_task("regression"), train, parts, None) == 0.5


def test_a_one_class_week_is_skipped():
    rng = np.random.default_rng(2)
    train = train_table(rng).assign(y=lambda d: (d["y"] > 10).astype(float))
    train.loc[train["timestamp"] == WEEKS[-1], "y"] = 1.0
    d1, d2 = rng.normal(size=len(train)), rng.normal(size=len(train))
    scores = prior_weight.week_scores(make_task("binary_classification"), train, (d1, d2), None,
                                      weeks=4)
    assert all(len(v) == 4 for v in scores.values())   # the last four with both classes
    every = prior_weight.week_scores(make_task("binary_classification"), train, (d1, d2), None)
    assert all(len(v) == 7 for v in every.values())    # all 8 weeks read, one skipped
    assert all(np.isfinite(v).all() for v in scores.values())


@pytest.mark.parametrize("weight", [0.25, 1.0])
def test_the_prior_is_the_weighted_mean_on_every_split(tiny_cfg, monkeypatch, tmp_path, weight):
    """Whatever weight is chosen, val and test get the weighted mean of both LightGBMs'
    predictions and train seeds the weighted mean of both forward-chained priors; the fit
    is printed under its weight's name, and a second run reads it back from the cache."""
    from rdl.families.node import prior as prior_module
    from rdl.families.node import prepare
    made = {}
    real = prior_module.chained_priors

    def keep(*args, **kwargs):
        made.update(real(*args, **kwargs))
        return made

    monkeypatch.setattr(prior_module, "chained_priors", keep)
    monkeypatch.setattr(prior_weight, "chained_weight", lambda *a, **k: weight)
    cfg = tiny_cfg("task=item-sales", "data.prior_from=trees", "data.prior_trees=chained",
                   "compile.enabled=false", "data.tree_blocks=4", f"data.cache_dir={tmp_path}")
    _, dm, _ = build(cfg)
    fits = dm.tree_fits
    name = DEPTH2 if weight == 1 else "LightGBM (depth 2 weight 0.25)"
    assert dm.prior_name == name and name in fits and MEAN in fits
    for s in ("val", "test"):
        np.testing.assert_allclose(dm.prior[s], (1 - weight) * fits[DEPTH1].raw(s)
                                   + weight * fits[DEPTH2].raw(s))
    want = (1 - weight) * made[DEPTH1]["train"] + weight * made[DEPTH2]["train"]
    np.testing.assert_allclose(dm.prior["train"], want)
    assert np.isnan(want).any() and not np.isnan(want).all()
    # from the prepared cache: the same prior, its fit restored with its weights
    monkeypatch.setattr(prepare, "_labels_and_features", None)  # computing again would fail
    _, again, _ = build(cfg)
    assert again.prior_name == name
    np.testing.assert_array_equal(again.prior["val"], dm.prior["val"])
    np.testing.assert_allclose(again.tree_fits[name].raw("test"), fits[name].raw("test"))


def test_grid_holds_both_ends_and_the_mean():
    assert GRID[0] == 0 and GRID[-1] == 1 and 0.5 in GRID


def test_a_one_row_week_is_skipped_and_only_the_monitored_metric_is_computed(monkeypatch):
    """A seed time with one row defines no r2 (RelBench's rating tasks monitor MAE and
    report r2 too): it is skipped, and no other metric than the monitored one is asked."""
    import torchmetrics
    rng = np.random.default_rng(3)
    full = train_table(rng)
    train = pd.concat([full, full.iloc[[0]].assign(timestamp=WEEKS[-1] + pd.Timedelta("7D"))],
                      ignore_index=True)
    task = make_task("regression")
    task.metrics["r2"] = torchmetrics.R2Score()
    parts = (rng.normal(10, 3, len(train)), rng.normal(10, 3, len(train)))
    scores = prior_weight.week_scores(task, train, parts, None, weeks=3)
    # the last three full weeks' scores, as without the one-row week: none of its own
    assert scores == prior_weight.week_scores(task, full, tuple(p[:-1] for p in parts), None,
                                              weeks=3)
    from rdl.baselines.scoring import score
    assert set(score(task, parts[0][:5], train.iloc[:5], only="mae")) == {"mae"}
