"""LightGBM LambdaRank on the candidates' features: trained on train seeds, early-stopped on
val by MAP@k, each split scored a chunk of seeds at a time, and each seed's top k scored
with the task's own metrics."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from rdl.baselines.link import pad_lists
from rdl.baselines.ranker.features import Candidates, Featuriser, SplitFeatures, sort_order
from rdl.baselines.ranker.settings import RankerSettings
from rdl.baselines.scoring import score_tensors
from rdl.baselines.trees import PARAMS, growing, threads
from rdl.tasks import Task


def useful(found: np.ndarray, limit: int | None, seed: int) -> np.ndarray:
    """The seeds (positions) with a true item among their candidates (``found``: how many
    per seed; a seed without one has no pair to order: LambdaRank learns nothing from it),
    at most ``limit`` of them (a seeded sample), in order."""
    hit = np.flatnonzero(found > 0)
    if limit is not None and len(hit) > limit:
        hit = np.sort(np.random.default_rng(seed).choice(hit, limit, replace=False))
    return hit


def ranking_params(k: int, seed: int) -> dict:
    """LightGBM's LambdaRank parameters, stopped early by MAP@k."""
    params = dict(PARAMS, objective="lambdarank", metric="map", eval_at=[k], seed=seed,
                  num_threads=threads(), lambdarank_truncation_level=max(2 * k, 20))
    params.pop("bagging_fraction"), params.pop("bagging_freq")  # rows of a group stay whole
    return params


def dataset(f: SplitFeatures, params: dict, reference=None) -> tuple[object, dict]:
    """LightGBM's dataset of every row of ``f``, binned now (with ``params``, as
    :func:`lightgbm.train` would bin it), and ``f``'s feature names (LightGBM's ->
    readable). Binned, LightGBM lets go of the frame ``f.X``: it is freed with ``f``, before
    the next frame is built (the caller keeps no reference to ``f``)."""
    import lightgbm

    return (lightgbm.Dataset(f.X, f.label, group=f.groups(), reference=reference,
                             params=params).construct(), f.names)


def train_booster(train, val, settings: RankerSettings, params: dict):
    """A LambdaRank booster on the dataset ``train``, stopped early on ``val`` (None: not
    stopped early) by LightGBM's MAP@k (:func:`dataset` makes both)."""
    import lightgbm

    sets = {}
    if val is not None:
        sets = dict(valid_sets=[val],
                    callbacks=[lightgbm.early_stopping(settings.patience, verbose=False)])
    with growing(settings.rounds) as grown:
        sets["callbacks"] = [*sets.get("callbacks", ()), grown]
        return lightgbm.train(params, train, num_boost_round=settings.rounds, **sets)


def scored(booster, feats: Featuriser, df: pd.DataFrame) -> tuple[Candidates, np.ndarray]:
    """The candidates of every row of the split table ``df`` and the booster's score of
    each, a chunk of seeds at a time (:meth:`Featuriser.chunks`): a chunk's features are
    dropped once scored, so that memory holds one chunk's, whatever the split's size."""
    parts, truth = [], []
    for f in feats.chunks(df):
        score = predict(booster, f)
        f.X = None
        parts.append((f.rid, f.item, f.label, score))
        truth = f.truth   # every chunk's: df's (none without a chunk: df has no row)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    rid, item, label, score = map(np.concatenate, zip(*parts)) if parts else empty
    order = sort_order(rid, item)
    if order is not None:   # seed times interleaved in df: chunks of each time in turn
        rid, item, label, score = rid[order], item[order], label[order], score[order]
    found = np.bincount(rid, weights=label, minlength=len(df))
    return Candidates(rid, item, label, truth, found), score


def top_k(f: Candidates, scores: np.ndarray, k: int) -> list[list[int]]:
    """Each seed's ``k`` best candidates by ``scores``, best first (fewer if it has fewer;
    ties: the smaller item first)."""
    order = np.lexsort((f.item, -scores, f.rid))
    rid, item = f.rid[order], f.item[order]
    starts = np.searchsorted(rid, np.arange(f.seeds))
    ends = np.searchsorted(rid, np.arange(f.seeds), side="right")
    return [item[a: min(b, a + k)].tolist() for a, b in zip(starts, ends)]


def predict(booster, f: SplitFeatures) -> np.ndarray:
    """The booster's score of every candidate of ``f``."""
    if not len(f.X):
        return np.zeros(0)
    return booster.predict(f.X, num_iteration=booster.best_iteration or
                           booster.current_iteration())


@torch.no_grad()
def score_ranking(task: Task, f: Candidates, scores: np.ndarray) -> dict[str, float]:
    """The task's metrics of each seed's top k candidates by ``scores`` on one split, and
    the candidates' recall."""
    pred = pad_lists(top_k(f, scores, task.eval_k), task.eval_k)[:, : task.eval_k]
    out = score_tensors(task, pred, pad_lists(f.truth, 1))
    out["candidate_recall"] = f.candidate_recall()
    return out
