"""LightGBM LambdaRank on the candidates' features: trained on train seeds, early-stopped on
val by MAP@k, and each seed's top k scored with the task's own metrics."""
from __future__ import annotations

import numpy as np
import torch

from rdl.baselines.link import pad_lists
from rdl.baselines.ranker.features import SplitFeatures
from rdl.baselines.ranker.settings import RankerSettings
from rdl.baselines.scoring import score_tensors
from rdl.baselines.trees import PARAMS, growing, threads
from rdl.tasks import Task


def _useful(f: SplitFeatures, limit: int | None, seed: int) -> np.ndarray:
    """Row mask of the seeds with a true item among their candidates (a seed without one
    has no pair to order: LambdaRank learns nothing from it), at most ``limit`` of them
    (a seeded sample)."""
    hit = np.flatnonzero(f.found > 0)
    if limit is not None and len(hit) > limit:
        hit = np.sort(np.random.default_rng(seed).choice(hit, limit, replace=False))
    return np.isin(f.rid, hit)


def _dataset(f: SplitFeatures, mask: np.ndarray, reference=None):
    import lightgbm

    rid = f.rid[mask]
    groups = np.bincount(rid)[np.unique(rid)]
    return lightgbm.Dataset(f.X[mask], f.label[mask], group=groups, reference=reference)


def train_booster(train: SplitFeatures, val: SplitFeatures, k: int, settings: RankerSettings,
               seed: int = 0):
    """A LambdaRank booster on ``train``'s seeds, stopped early on ``val``'s (at most
    ``settings.val_seeds`` of them) by LightGBM's MAP@k."""
    import lightgbm

    if not (train.found > 0).any():
        raise ValueError("LightGBM ranker: retrieval found no true item for any train seed "
                         "(no candidates to learn an order from)")
    params = dict(PARAMS, objective="lambdarank", metric="map", eval_at=[k], seed=seed,
                  num_threads=threads(), lambdarank_truncation_level=max(2 * k, 20))
    params.pop("bagging_fraction"), params.pop("bagging_freq")  # rows of a group stay whole
    train_set = _dataset(train, _useful(train, None, seed))
    valid = _useful(val, settings.val_seeds, seed)
    sets = {}
    if valid.any():
        sets = dict(valid_sets=[_dataset(val, valid, reference=train_set)],
                    callbacks=[lightgbm.early_stopping(settings.patience, verbose=False)])
    with growing(settings.rounds) as grown:
        sets["callbacks"] = [*sets.get("callbacks", ()), grown]
        return lightgbm.train(params, train_set, num_boost_round=settings.rounds, **sets)


def top_k(f: SplitFeatures, scores: np.ndarray, k: int) -> list[list[int]]:
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
def score_ranking(task: Task, f: SplitFeatures, scores: np.ndarray) -> dict[str, float]:
    """The task's metrics of each seed's top k candidates by ``scores`` on one split, and
    the candidates' recall."""
    pred = pad_lists(top_k(f, scores, task.eval_k), task.eval_k)[:, : task.eval_k]
    out = score_tensors(task, pred, pad_lists(f.truth, 1))
    out["candidate_recall"] = f.candidate_recall()
    return out
