"""Tree prior: the model starts from a boosted tree's prediction and learns what it misses.

A relational model and gradient-boosted trees on the entity's aggregated past see much the
same signal, and on a table of aggregates trees are hard to beat. With ``data.tree_prior``
the node model's output is a correction to LightGBM's prediction for each seed (its value
for regression, its logit for classification), and the prediction is also one of the
seed's features: the graph model adds what the trees do not see, in the way boosting adds
a learner to the ones before it (BGNN, Ivanov and Prokhorenkova, 2021, fit trees and a GNN
to each other's residuals).

The prior of a seed at time ``s`` uses no label from after ``s``. Val and test seeds get
the trees fitted on the train split (the LightGBM baseline itself; its train labels all
closed before the val time). Train seeds get trees fitted on earlier train labels only,
*forward chaining*: the train seed times are cut into ``blocks`` consecutive blocks, and
block ``b``'s seeds get trees fitted on the labels whose windows closed by the block's
first seed time, with the number of trees of the baseline. The first block has no earlier
labels: its prior is missing (NaN), and the model falls back to the last label
(regression) or the train rate (classification) there. So does a block with fewer earlier
labels than :data:`MIN_ROWS` (a small database: 45 train rows in five weeks), logged: no
tree could split on them (LightGBM's bagging fails outright on one row).

The tree prior is the prior where a LightGBM is the baseline chosen on val
(:mod:`rdl.families.node.prior_choice`).
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from rdl.features.labels import train_prior
from rdl.baselines.trees import (MAX_TRAIN_ROWS, PARAMS, TreeFit, lightgbm_names,
                                 boost_base, raw_scores, train_trees)
from rdl.progress import bar, stage
from rdl.tasks import Task

log = logging.getLogger(__name__)

#: the fewest earlier labels a block's trees are fitted on: two leaves' minimum (with
#: fewer, no tree splits, and its prediction is its start shifted by a constant)
MIN_ROWS = 2 * PARAMS["min_data_in_leaf"]


def tree_prior(fit, tables: dict[str, pd.DataFrame], features: dict[str, dict],
               history: pd.DataFrame, blocks: int = 8, seed: int = 0,
               max_rows: int = MAX_TRAIN_ROWS, parts: dict | None = None) -> dict[str, np.ndarray]:
    """Per split, the raw prior of each row of ``tables[split]``: ``[N]`` values or logits,
    or ``[N, C]`` class scores; NaN where there is none (the first train block).
    ``fit``: a LightGBM baseline (:func:`~rdl.baselines.trees.fit_lightgbm`), or the
    (weighted) mean of several (:class:`~rdl.baselines.tree_mean.MeanFit`: the mean of
    their priors, each forward-chained on its own features); ``features``: by fit name, the
    feature tables of the whole splits it was fitted on; ``max_rows``: each block's trees
    on a seeded sample of that many earlier labels where there are more
    (``data.tree_rows``); ``parts``: by fit name, priors already made (:func:`chained_priors`),
    not made again."""
    parts = dict(parts or {})
    members = getattr(fit, "fits", (fit,))
    for f in members:
        if f.name not in parts:
            parts[f.name] = _chained(f, tables, features[f.name], history, blocks, seed, max_rows)
    if members == (fit,):
        return parts[fit.name]
    return {s: fit.combine([parts[f.name][s] for f in members]) for s in parts[members[0].name]}


def chained_priors(fits: dict, tables: dict[str, pd.DataFrame], features: dict[str, dict],
                   history: pd.DataFrame, blocks: int = 8, seed: int = 0,
                   max_rows: int = MAX_TRAIN_ROWS) -> dict[str, dict[str, np.ndarray]]:
    """:func:`tree_prior` of each LightGBM of ``fits`` (by name), made once: what the
    weight of a mean of them is chosen on (:mod:`rdl.families.node.prior_weight`) and what
    the mean's prior is made of."""
    return {name: _chained(f, tables, features[name], history, blocks, seed, max_rows)
            for name, f in fits.items()}


def _chained(fit: TreeFit, tables: dict[str, pd.DataFrame], features: dict[str, pd.DataFrame],
             history: pd.DataFrame, blocks: int, seed: int,
             max_rows: int) -> dict[str, np.ndarray]:
    """:func:`tree_prior` of one LightGBM fitted on ``features``."""
    task = fit.task
    timer = stage("tree prior", log)
    # the baseline's own predictions for every val and test row (and "now" row)
    out = {s: fit.raw(s) for s in fit.X if s != "train"}
    train = tables["train"]
    X = lightgbm_names(features["train"])
    y = train[task.target_col].to_numpy(dtype=np.float64)
    prior = np.full((len(train),) + out["val"].shape[1:], np.nan)
    sampled = False
    seed_time = train["timestamp"].to_numpy().astype("datetime64[ns]")
    times = np.unique(seed_time)
    cuts = [c[0] for c in np.array_split(times, min(blocks, len(times))) if len(c)]
    closed = task.closes(seed_time)  # when each train label becomes visible
    for lo, hi in bar(list(zip(cuts[1:], cuts[2:] + [None])), "tree prior", unit="block"):
        rows = seed_time >= lo if hi is None else (seed_time >= lo) & (seed_time < hi)
        known = np.flatnonzero(closed <= lo)
        if not rows.any():
            continue
        if len(known) < MIN_ROWS:
            log.info("tree prior: the %d train seeds from %s have none (their fallback "
                     "instead): only %d labels closed before them, fewer than %d", rows.sum(),
                     pd.Timestamp(lo), len(known), MIN_ROWS)
            continue
        if len(known) > max_rows:
            sampled = True
            known = np.sort(np.random.default_rng(seed).choice(known, max_rows, False))
        # Regression boosts from the last label, or where there is none the mean of the
        # labels known by ``lo`` (not of all train labels: that would read later ones).
        base = boost_base(task, train, history, train.iloc[known])
        booster = train_trees(task, X.iloc[known], y[known],
                              None if base is None else base[known], seed, rounds=fit.rounds)
        prior[rows] = raw_scores(booster, X[rows], None if base is None else base[rows],
                                 fit.rounds)
    out["train"] = prior
    seeded = 100 * (~np.isnan(prior.reshape(len(prior), -1)[:, 0])).mean() if len(prior) else 0
    cap = (f", each block's trees on at most {max_rows} labels, a sample (data.tree_rows)"
           if sampled else "")
    timer.end(f"{len(cuts) - 1} train blocks, {seeded:.0f}% of train seeds with a prior "
              f"({fit.name}){cap}")
    return out


def fallback(task: Task, train: pd.DataFrame) -> np.ndarray:
    """The prior where a seed has none: classification's train rate as a logit (class
    frequencies as log-probabilities); regression falls back to the last label instead."""
    return task.kind.as_raw(np.atleast_1d(train_prior(task, train)))
