"""LightGBM and ``node_baselines`` end to end on a small synthetic problem whose signal is in
the features (recent sales, a shop column): LightGBM must beat the constants clearly, which
it could not with features misaligned to their rows."""
import numpy as np
import pandas as pd
import pytest

from rdl.baselines import node_baselines
from rdl.baselines.trees import lightgbm_baseline
from rdl.data import Database, Table
from .shop import METRICS, TEST, VAL, W, make_task


def problem(kind: str, seed: int = 0):
    """200 shops with sales at a rate of their own, 30 weekly seed times; the label of
    (shop, s) follows its sales in the last window and its ``boost`` column."""
    rng = np.random.default_rng(seed)
    n_shop, start = 200, VAL - 28 * W
    rate = rng.gamma(2.0, 1.5, n_shop)
    boost = rng.random(n_shop) < 0.3
    n = int(rng.poisson(rate.sum() * 31))
    shop_of = rng.choice(n_shop, n, p=rate / rate.sum())
    t = start + pd.to_timedelta(rng.random(n) * 31 * 7, "D").round("h")
    sale = pd.DataFrame({"sale_id": range(n), "t": t, "shop_id": pd.array(shop_of, dtype="Int64"),
                         "amount": rng.exponential(1.0, n)})
    shop = pd.DataFrame({"shop_id": range(n_shop), "boost": np.where(boost, "yes", "no"),
                         "noise": rng.random(n_shop)})
    db = Database({"shop": Table(shop, pkey="shop_id"),
                   "sale": Table(sale, pkey="sale_id", fkeys={"shop_id": "shop"}, time_col="t")})
    rows = []
    for s in [start + k * W for k in range(1, 30)]:
        recent = sale[(sale["t"] > s - W) & (sale["t"] <= s)].groupby("shop_id")["amount"].sum()
        signal = recent.reindex(range(n_shop), fill_value=0.0).to_numpy() + 3.0 * boost
        if kind == "regression":
            y = signal + rng.normal(0, 0.3, n_shop)
        elif kind == "binary_classification":
            y = (signal + rng.normal(0, 0.5, n_shop) > np.median(signal)).astype(int)
        else:
            y = np.digitize(signal + rng.normal(0, 0.5, n_shop), np.quantile(signal, [0.33, 0.67]))
        rows.append(pd.DataFrame({"timestamp": s, "shop_id": range(n_shop), "y": y}))
    labels = pd.concat(rows, ignore_index=True)
    tables = {"train": labels[labels["timestamp"] < VAL], "val": labels[labels["timestamp"] == VAL],
              "test": labels[labels["timestamp"] == TEST]}
    return db, tables


@pytest.mark.parametrize("kind", ["regression", "binary_classification",
                                  "multiclass_classification"])
def test_node_baselines_report_every_metric_and_lightgbm_wins(kind):
    task = make_task(kind)
    db, tables = problem(kind)
    assert len(tables["val"]) == len(tables["test"]) == 200
    out = node_baselines(task, db, tables)
    names = list(out)
    assert "last label" in names and "LightGBM" in names
    assert any(n.startswith("label mean (last ") for n in names)
    for name, res in out.items():
        for split in ("val", "test"):
            assert set(res[split]) == set(METRICS[kind]()), (name, split)
            assert all(np.isfinite(v) for v in res[split].values())
    # LightGBM beats every other baseline clearly (misaligned features would not)
    lgb = out["LightGBM"]["test"]
    others = [r["test"] for n, r in out.items() if n != "LightGBM"]
    if kind == "regression":
        assert lgb["mae"] < 0.5 * min(r["mae"] for r in others)
    elif kind == "binary_classification":
        assert out["constant (train rate)"]["test"]["auroc"] == 0.5
        assert lgb["auroc"] > 0.1 + max(r["auroc"] for r in others)
    else:
        assert lgb["accuracy"] > 0.15 + max(r["accuracy"] for r in others)


def test_lightgbm_is_deterministic_and_subsamples():
    task = make_task("binary_classification")
    db, tables = problem("binary_classification", seed=1)
    a = lightgbm_baseline(task, db, tables)
    assert a == lightgbm_baseline(task, db, tables)
    small = lightgbm_baseline(task, db, tables, max_train_rows=500)["LightGBM"]["test"]
    assert 0.5 < small["auroc"] and small != a["LightGBM"]["test"]


def test_depth_2_beats_depth_1_where_the_signal_is_two_hops_away():
    """The label is the mean quality of the products a shop sold in its last 4 windows: a
    column of the sales' parent table, which depth 1 (counts and sums of the sales) cannot
    see and depth 2 (the means of the sales' parents' numbers) can."""
    from rdl.baselines.trees import DEPTH2
    from rdl.features.deep import DeepSettings

    rng = np.random.default_rng(3)
    n_shop, n_prod, start = 150, 40, VAL - 28 * W
    n = 20_000
    taste = rng.random(n_shop)  # a shop's own mix of cheap and fine products, drifting
    quality = rng.random(n_prod)
    shop_of = rng.integers(0, n_shop, n)
    t = start + pd.to_timedelta(rng.random(n) * 31 * 7, "D").round("h")
    drift = rng.random(n) < 0.5
    fine = np.where(drift, rng.random(n) < taste[shop_of], rng.random(n) < 0.5)
    prod = np.where(fine, rng.integers(n_prod // 2, n_prod, n), rng.integers(0, n_prod // 2, n))
    quality = np.sort(quality)
    sale = pd.DataFrame({"sale_id": range(n), "t": t,
                         "shop_id": pd.array(shop_of, dtype="Int64"),
                         "product_id": pd.array(prod, dtype="Int64"),
                         "amount": rng.exponential(1.0, n)})
    db = Database({"shop": Table(pd.DataFrame({"shop_id": range(n_shop)}), pkey="shop_id"),
                   "product": Table(pd.DataFrame({"product_id": range(n_prod),
                                                  "quality": quality}), pkey="product_id"),
                   "sale": Table(sale, pkey="sale_id", time_col="t",
                                 fkeys={"shop_id": "shop", "product_id": "product"})})
    rows = []
    for s in [start + k * W for k in range(5, 30)]:
        seen = sale[(sale["t"] > s - 4 * W) & (sale["t"] <= s)]
        q = pd.Series(quality[seen["product_id"].to_numpy(dtype=int)], index=seen.index)
        y = q.groupby(seen["shop_id"].to_numpy(dtype=int)).mean().reindex(range(n_shop))
        rows.append(pd.DataFrame({"timestamp": s, "shop_id": range(n_shop),
                                  "y": y.fillna(0.5).to_numpy() + rng.normal(0, 0.01, n_shop)}))
    labels = pd.concat(rows, ignore_index=True)
    tables = {"train": labels[labels["timestamp"] < VAL],
              "val": labels[labels["timestamp"] == VAL],
              "test": labels[labels["timestamp"] == TEST]}
    for deep in (DeepSettings(), DeepSettings(select=(0, 3))):  # chosen on val: kept too
        out = node_baselines(make_task(), db, tables, deep=deep)
        assert DEPTH2 in out and "LightGBM" in out
        one, two = out["LightGBM"]["test"]["mae"], out[DEPTH2]["test"]["mae"]
        assert two < 0.6 * one, (deep, one, two)


def test_depth_2_features_chosen_on_val_keep_the_best_fit_and_the_signal(caplog):
    """``data.deep_features.select``: the depth-2 trees refitted on the depth-2 features of
    the most gain; the fit kept is never worse on val than the one on all of them, its
    columns are depth 1's plus the kept ones in their order, and where depth 1 has the
    signal (the shop problem: recent sales and a column of the shop) it keeps few."""
    from rdl.baselines.trees import DEPTH1, DEPTH2, fit_tree_baselines
    from rdl.features.deep import DeepSettings

    db, tables = problem("regression")
    task = make_task()
    every, every_feats = fit_tree_baselines(task, db, tables, deep=DeepSettings())
    with caplog.at_level("INFO", logger="rdl.baselines.trees"):
        chosen, feats = fit_tree_baselines(task, db, tables, deep=DeepSettings(select=(0, 3)))
    n1, n_all = every_feats[DEPTH1]["train"].shape[1], every_feats[DEPTH2]["train"].shape[1]
    kept = feats[DEPTH2]["train"].shape[1] - n1
    assert kept in (0, 3, n_all - n1)
    assert chosen[DEPTH2].val_score() >= every[DEPTH2].val_score()
    cols = list(feats[DEPTH2]["train"].columns)
    assert cols[:n1] == list(every_feats[DEPTH1]["train"].columns)
    deep = list(every_feats[DEPTH2]["train"].columns[n1:])
    assert cols[n1:] == [c for c in deep if c in cols[n1:]]  # their order kept
    assert f"{kept} of {n_all - n1} depth-2 features" in caplog.text
    assert kept < n_all - n1  # the trees on all the noise were not the best on val here
    assert chosen[DEPTH1].val_score() == every[DEPTH1].val_score()  # depth 1 untouched


def test_depth_2_features_chosen_on_the_train_tail_never_read_val(monkeypatch, caplog):
    """``data.deep_features.select_weeks=2``: the count of depth-2 features is chosen by
    trees fitted on the train split's earlier seed times and scored on its last two; no
    choosing fit sees a val row, scrambled val labels choose the same columns, and the
    trees kept are then fitted on the whole train split and scored on the real val."""
    import rdl.baselines.trees as trees
    from rdl.features.deep import DeepSettings

    db, tables = problem("regression")
    task, settings = make_task(), DeepSettings(select=(0, 3), select_weeks=2)
    calls, real = [], trees.fit_lightgbm
    monkeypatch.setattr(trees, "fit_lightgbm", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    with caplog.at_level("INFO", logger="rdl.baselines.trees"):
        fits, feats = trees.fit_tree_baselines(task, db, tables, deep=settings)
    assert "chosen on the train split's last 2 seed time(s) among [0, 3] and all" in caplog.text
    last = np.sort(tables["train"]["timestamp"].unique())[-2:]
    choosing = [t for t in calls if len(t["val"]) < len(tables["val"]) or
                not t["val"]["timestamp"].eq(VAL).all()]
    assert len(choosing) == 3   # all, 0 and 3 depth-2 features
    for t in choosing:
        assert set(t["val"]["timestamp"]) == set(last) and t["train"]["timestamp"].max() < last[0]
    fit = fits[trees.DEPTH2]
    assert fit.frames["val"]["timestamp"].eq(VAL).all()
    assert len(fit.frames["val"]) == len(tables["val"])
    scrambled = dict(tables, val=tables["val"].assign(y=np.random.default_rng(1).permutation(
        tables["val"]["y"].to_numpy())))
    _, again = trees.fit_tree_baselines(task, db, scrambled, deep=settings)
    assert list(again[trees.DEPTH2]["train"].columns) == list(feats[trees.DEPTH2]["train"].columns)
    n, fitted = tables["train"]["timestamp"].nunique(), len(calls)
    with pytest.raises(ValueError, match=rf"select_weeks={n}: the train split has {n} seed time"):
        trees.fit_tree_baselines(task, db, tables, deep=DeepSettings(select=(0,), select_weeks=n))
    assert len(calls) == fitted   # the error comes before any fit


def test_select_is_checked():
    from rdl.features.deep import DeepSettings

    assert DeepSettings.of({"select": [20, 0, 20]}).select == (0, 20)
    with pytest.raises(ValueError, match=r"data.deep_features.select=\[-1\]"):
        DeepSettings.of({"select": [-1]})
    with pytest.raises(ValueError, match=r"data.deep_features.select_weeks=-1"):
        DeepSettings.of({"select_weeks": -1})


def test_regression_trees_keep_to_the_range_of_the_train_labels_as_the_model_does():
    """Boosted from last week's label, trees can predict outside the train labels' range;
    the model's predictions are clamped to it (``Regression.prediction``), so the trees'
    are too: a clamp only the model had would be a lead that is only the clamp's."""
    from rdl.baselines.trees import fit_lightgbm, to_prediction
    task = make_task("regression")
    db, tables = problem("regression")
    fit = fit_lightgbm(task, db, tables, max_train_rows=500)
    y = tables["train"][task.target_col].to_numpy()
    assert len(fit.frames["train"]) == 500 < len(y)
    assert fit.bounds == (y.min(), y.max())   # the range of the whole split, not the sample's
    import torch   # one rule for the model's clamp and the trees' (float32 for the model)
    assert task.kind.target_stats(torch.tensor(y))[2:] == pytest.approx(fit.bounds, rel=1e-6)
    assert task.kind.label_range(np.array([np.nan, 3.0, -1.0])) == (-1.0, 3.0)
    assert task.kind.label_range(np.array([np.nan])) is None
    raw, truth = fit.raw("test"), tables["test"][task.target_col].to_numpy()
    assert np.array_equal(to_prediction(task, raw, fit.bounds), np.clip(raw, y.min(), y.max()))
    fit.bounds = tuple(np.quantile(y, [0.4, 0.6]))   # a range that binds: the scores follow it
    clipped = np.clip(raw, *fit.bounds)
    assert not np.array_equal(clipped, raw)
    assert fit.scores()["LightGBM"]["test"]["mae"] == pytest.approx(np.abs(clipped - truth).mean())
    binary = make_task("binary_classification")   # other kinds: no clamp
    assert np.array_equal(to_prediction(binary, np.array([-9.0, 9.0]), (0.0, 1.0)),
                          1 / (1 + np.exp([9.0, -9.0])))


@pytest.mark.parametrize("kind", ["binary_classification", "regression"])
def test_a_val_of_one_value_stops_the_trees_on_train_s_latest_week(kind, caplog):
    """A week in which every val label is the same (nobody churned): every metric prefers
    the fewest trees there, and LightGBM stopped at one or two, predicting about the same
    for every shop. The trees stop on train's latest seed time instead, then fit on every
    train row: as many trees as the real val would have chosen, give or take, and a test
    score near the real val's fit."""
    import logging

    from rdl.baselines.trees import fit_lightgbm
    task = make_task(kind)
    db, tables = problem(kind)
    history = task.history(tables)   # (the same for both: only where they stop differs)
    real = fit_lightgbm(task, db, tables, history)
    same = {**tables, "val": tables["val"].assign(y=0)}
    with caplog.at_level(logging.INFO, logger="rdl.baselines.trees"):
        fit = fit_lightgbm(task, db, same, history)
    assert "every val label one value" in caplog.text and "fitted again" in caplog.text
    assert fit.rounds > 10, (fit.rounds, real.rounds)
    key = "auroc" if kind == "binary_classification" else "mae"
    test, best = fit.scores()["LightGBM"]["test"][key], real.scores()["LightGBM"]["test"][key]
    assert abs(test - best) < 0.05 * abs(best), (test, best)
