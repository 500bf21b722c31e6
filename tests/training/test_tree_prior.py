"""The tree prior (``data.tree_prior``): train seeds get trees fitted only on labels whose
windows closed by their block's first seed time, val and test the LightGBM baseline's
predictions; the model starts as its prior exactly (the trees', or the baseline's best on
val: tests/training/test_prior_choice.py)."""
import numpy as np
import pytest
import torch

from rdl.features.table import entity_features
from rdl.features.labels import visible_labels
from rdl.baselines.trees import DEPTH1, DEPTH2, fit_lightgbm, to_prediction
from rdl.baselines.tree_mean import MEAN
from rdl.api import build
from rdl.families.node.prior import tree_prior
from rdl.families.node.prior_choice import choose, tree_candidates, val_scores
from tests.baselines.shop import make_task
from tests.baselines.test_trees import problem

KINDS = ["regression", "binary_classification", "multiclass_classification"]


def prior_of(task, db, tables, fit=None):
    history = task.history(tables)
    view = db.upto(task.test_time)
    full = {s: entity_features(task, view, df, history) for s, df in tables.items()}
    fit = fit or fit_lightgbm(task, db, tables, history, features=full)
    return fit, tree_prior(fit, tables, {fit.name: full}, history, blocks=4)


def perturb(kind, y, rng):
    if kind == "regression":
        return y + rng.normal(0, 5.0, len(y))
    if kind == "binary_classification":
        return 1 - y
    return (y + 1) % 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_train_seeds_prior_reads_no_label_from_after_it(kind):
    task = make_task(kind)
    db, tables = problem(kind)
    fit, prior = prior_of(task, db, tables)
    for s in ("val", "test"):  # the baseline's own predictions
        np.testing.assert_allclose(prior[s], fit.raw(s))
    train = tables["train"]
    seed = train["timestamp"]
    times = np.sort(seed.unique())
    missing = np.isnan(prior["train"].reshape(len(train), -1)).all(axis=1)
    # The first of 4 blocks of seed times has no earlier closed label; the rest have a
    # prior everywhere.
    first = np.array_split(times, 4)[0]
    assert 0 < len(first) < len(times) and (missing == seed.isin(first).to_numpy()).all()
    # Every label whose window closes after ``cut`` rewritten: the prior of every seed at or
    # before ``cut`` is the same; later seeds' priors change.
    cut = times[len(times) // 2]
    late = (seed + task.delta > cut).to_numpy()
    y = train["y"].to_numpy()
    changed = dict(tables, train=train.assign(
        y=np.where(late, perturb(kind, y, np.random.default_rng(1)), y)))
    _, again = prior_of(task, db, changed, fit=fit)  # the same number of trees
    early = (seed <= cut).to_numpy()
    np.testing.assert_array_equal(again["train"][early], prior["train"][early])
    assert not np.allclose(again["train"][~early], prior["train"][~early])


@pytest.mark.parametrize("task_name,among,trees", [
    ("user-churn", "trees", "mean"), ("item-sales", "trees", "mean"),
    ("user-churn", "trees", "best"), ("user-churn", "all", "mean")])
def test_the_model_starts_as_its_prior(tiny_cfg, task_name, among, trees):
    """The trees' (``data.prior_from=trees``: the mean of both LightGBMs, or with
    ``data.prior_trees=best`` the one better on val), or the baseline's best on val whatever
    its lead (``data.prior_margin=0``), among the trees' mean and the simple baselines."""
    cfg = tiny_cfg(f"task={task_name}", "data.tree_prior=true", f"data.prior_from={among}",
                   "data.prior_margin=0", f"data.prior_trees={trees}", "compile.enabled=false")
    task, dm, module = build(cfg)
    module.eval()
    batch = next(iter(dm.loader("val", shuffle=False)))
    rows = batch[task.entity_table].input_id
    with torch.no_grad():
        got = module.predict_value(module(batch))
    fits = dm.tree_fits
    if among == "trees" and trees == "mean":
        assert dm.prior_name == MEAN and set(fits) == {DEPTH1, DEPTH2, MEAN}
        np.testing.assert_allclose(dm.prior["val"], (fits[DEPTH1].raw("val")
                                                     + fits[DEPTH2].raw("val")) / 2)
    elif among == "trees":
        assert dm.prior_name == max((DEPTH1, DEPTH2), key=lambda n: fits[n].val_score())
    if among == "trees":
        np.testing.assert_array_equal(dm.prior["val"], fits[dm.prior_name].raw("val"))
    else:   # the best on val of the trees' mean and every simple baseline printed
        scores = val_scores(task, dm.tables, task.history(dm.tables),
                            tree_candidates(fits, trees), "all")
        assert len(scores) > 2 and dm.prior_name == choose(scores)
    want = to_prediction(task, dm.prior["val"])[rows.numpy()]
    if task.kind.name == "regression":  # clamped to the train targets' range
        low, high = module.target_stats[2:].tolist()
        want = np.clip(want, low, high)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)
    # The prior is a seed feature too, and the train seeds of the first block fall back:
    # regression to the last label, classification to the train rate's logit.
    assert "prior" in dm.seed_feature_names
    base = dm.base("train").numpy()
    first = np.isnan(dm.prior["train"])
    assert first.any() and not np.isnan(dm.prior["train"][~first]).any()
    np.testing.assert_array_equal(base[~first], dm.prior["train"][~first].astype(np.float32))
    if task.kind.starts_from_last_label:   # regression
        last = visible_labels(task, dm.tables["train"], dm.history, ks=())["last"][:, 0]
        np.testing.assert_array_equal(base[first], last[first].astype(np.float32))
    else:
        rate = dm.tables["train"][task.target_col].mean()
        np.testing.assert_allclose(base[first], task.kind.as_raw(rate), rtol=1e-5)


def test_tree_rows_caps_every_lightgbm_fit_and_the_log_says_so(tiny_cfg, monkeypatch, caplog):
    """``data.tree_rows``: the baselines' fits (depth 1, depth 2, each count of depth-2
    features tried) and each forward-chained block of the prior are fitted on at most that
    many train rows, a seeded sample, and the baselines' log lines say so."""
    import logging
    from rdl.baselines import trees
    from rdl.families.node import prior as prior_module
    fitted, real = [], trees.train_trees

    def counting(task, X, *args, **kwargs):
        fitted.append(len(X))
        return real(task, X, *args, **kwargs)

    monkeypatch.setattr(trees, "train_trees", counting)
    monkeypatch.setattr(prior_module, "train_trees", counting)
    with caplog.at_level(logging.INFO):
        _, dm, _ = build(tiny_cfg("data.tree_rows=40", "data.prior_from=trees",
                                  "data.prior_trees=mean", "data.cache_dir=false",
                                  "compile.enabled=false"))
    train = len(dm.tree_fits[DEPTH1].X["train"])
    assert train == 40 and len(dm.tables["train"]) > 40
    assert dm.prior_name == MEAN       # its blocks: two chained priors, each capped
    assert len(fitted) >= 3 and max(fitted) == 40
    assert f"a sample of 40 of {len(dm.tables['train'])} train rows (data.tree_rows)" \
        in caplog.text
    assert "each block's trees on at most 40 labels, a sample (data.tree_rows)" in caplog.text
    with pytest.raises(ValueError, match=r"^data.tree_rows=0: expected a whole number >= 1"):
        build(tiny_cfg("data.tree_rows=0"))


def test_train_seeds_caps_the_train_split_and_keeps_every_label_as_history(tiny_cfg, caplog):
    """``data.train_seeds``: the train split keeps a seeded sample of that many of its rows
    (said in the log), and every split's table, prior and seed features have its rows; the
    label history, a feature and a node type of the graph, keeps every label; the sample
    is the same run after run."""
    import logging
    import pandas as pd
    from rdl.tasks import HISTORY
    base = ("data.prior_from=trees", "data.cache_dir=false", "compile.enabled=false")
    _, whole, _ = build(tiny_cfg(*base))
    n = len(whole.tables["train"])
    with caplog.at_level(logging.INFO):
        _, dm, _ = build(tiny_cfg("data.train_seeds=60", *base))
    train = dm.tables["train"]
    assert n > 60 and len(train) == 60
    assert f"train split: a sample of 60 of its {n} rows (data.train_seeds)" in caplog.text
    # rows of the whole split, in its order, none twice
    key = ["timestamp", dm.task.entity_col]
    merged = train.merge(whole.tables["train"].reset_index(), on=key, how="left",
                         suffixes=("", "_whole"))
    assert merged["index"].notna().all() and merged["index"].is_monotonic_increasing
    assert merged["index"].is_unique
    pd.testing.assert_series_equal(merged[dm.task.target_col],
                                   merged[f"{dm.task.target_col}_whole"], check_names=False)
    assert len(dm.prior["train"]) == 60 and len(dm.seed_x["train"]) == 60
    for split in ("val", "test"):
        pd.testing.assert_frame_equal(dm.tables[split], whole.tables[split])
    pd.testing.assert_frame_equal(dm.history, whole.history)
    assert dm.data[HISTORY].num_nodes == whole.data[HISTORY].num_nodes == len(whole.history)
    _, again, _ = build(tiny_cfg("data.train_seeds=60", *base))
    pd.testing.assert_frame_equal(again.tables["train"], train)
    with pytest.raises(ValueError, match=r"^data.train_seeds=0: expected a whole number >= 1"):
        build(tiny_cfg("data.train_seeds=0"))
