"""The "LightGBM ranker": retrieval + a learned ranker, the recipe that won H&M's Kaggle
contest and tops RelBench's rel-hm user-item-purchase leaderboard, as a baseline beside every
link task's model, generic over any schema.

For each seed ``(entity, s)`` of a split, in DuckDB under the one visibility rule
(:mod:`~rdl.baselines.ranker.events`, :mod:`~rdl.baselines.ranker.retrieval`):

1. **retrieval**: about a hundred candidate items from five sources
   (:class:`~rdl.baselines.ranker.settings.RankerSettings`): the entity's past links, items
   co-occurring with its recent items, items sharing a parent row with them, items popular in
   its segments, and items popular overall;
2. **features** of each (seed, candidate): the pair's counts and recency, the item's
   popularity and trend, the co-occurrence, parent and segment scores, each source's rank,
   and the entity's and the item's own columns and child-table aggregates
   (:func:`~rdl.features.table.own_features`, :func:`~rdl.features.table.children_features`);
3. **LightGBM LambdaRank** trained on the train split's last seed times (a seeded sample of
   seeds), early-stopped on val (MAP@k), each seed's candidates ranked by it; the top ``k``
   are scored with the task's own metrics, as the model is. ``candidate_recall`` beside
   them is the share of each seed's true items that retrieval found, the ceiling of any
   ranking of its candidates.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdl import duck
from rdl.baselines.ranker.features import Candidates, Featuriser
from rdl.baselines.ranker.settings import RankerSettings
from rdl.data.database import Database
from rdl.progress import stage
from rdl.tasks import Task

log = logging.getLogger(__name__)

NAME = "LightGBM ranker"
__all__ = ["NAME", "RankerFit", "RankerSettings", "fit_ranker", "ranker_baseline"]


@dataclass
class RankerFit:
    """The fitted ranker: per split (val, test) its candidates (``splits``, without their
    features: they are built and scored a chunk of seeds at a time) and its score of each
    candidate (``scores``, aligned with the candidates' rows); ``names``: its features,
    LightGBM's name -> the readable one."""

    task: Task
    booster: object
    splits: dict[str, Candidates]
    scores: dict[str, np.ndarray]
    names: dict[str, str]

    def gain_shares(self) -> dict[str, float]:
        """The booster's gain per feature family (:data:`FAMILIES`), as shares of its
        total: where the ranker finds its signal."""
        names = self.names
        gain = self.booster.feature_importance(
            "gain", iteration=self.booster.best_iteration or None)
        out = dict.fromkeys([*FAMILIES, "other"], 0.0)
        for column, g in zip(self.booster.feature_name(), gain):
            out[family_of(names.get(column, column))] += float(g)
        total = sum(out.values()) or 1.0
        return {k: v / total for k, v in out.items() if k != "other" or v}

    def metrics(self) -> dict:
        """``{"LightGBM ranker": {split: {metric: value, "candidate_recall": r}}}``."""
        from rdl.baselines.ranker.fit import score_ranking
        return {NAME: {s: score_ranking(self.task, f, self.scores[s])
                       for s, f in self.splits.items()}}


#: the ranker's feature families by the start of their names (rdl/baselines/ranker/
#: retrieval.py, features.py), in report order
FAMILIES = {"pair": ("pair_",), "co-occurrence": ("cooc_",), "parents": ("parent_hits_",),
            "segments": ("segment_count_",), "popularity": ("item_count", "item_trend"),
            "source ranks": ("rank_",), "entity": ("entity_", "entity."), "item": ("item.",)}


def family_of(column: str) -> str:
    """The feature family of one of the ranker's feature names."""
    return next((f for f, starts in FAMILIES.items() if column.startswith(starts)), "other")


@duck.shared()   # its features' queries on one DuckDB database (rdl/duck.py)
def fit_ranker(task: Task, db: Database, tables: dict[str, pd.DataFrame],
               settings: RankerSettings | None = None, strict: bool = False, seed: int = 0,
               rows: dict | None = None, deep=None, splits=("val", "test")) -> RankerFit:
    """The ranker fitted on the train split and early-stopped on val, with its scores of
    every val and test candidate (``rows``: split -> the first ``n`` rows only; ``deep``:
    :class:`~rdl.features.deep.DeepSettings` for the entity's and the item's depth-2
    features, None: depth 1; ``splits``: those scored, val among them or not: it stops
    the trees early either way).

    Memory is bounded by the settings, not the data: the features are built for the seeds
    LightGBM learns from alone (of the sampled train seeds and of at most ``val_seeds`` val
    seeds, those with a true item among their candidates: for val found by retrieval
    first, as the sample is drawn from them), binned and let go of before training; the
    splits scored are built and scored ``chunk_seeds`` seeds at a time."""
    from rdl.baselines.ranker.fit import dataset, ranking_params, scored, train_booster, useful

    settings = settings or RankerSettings()
    timer = stage(NAME, log)
    rows = rows or {}
    params = ranking_params(task.eval_k, seed)
    feats = Featuriser(task, db, tables, settings, strict, deep)
    try:
        train = sample_train(tables["train"], settings, seed)
        f = feats.split(train, hits_only=True)
        if not len(f.rid):
            raise ValueError("LightGBM ranker: retrieval found no true item for any train "
                             "seed (no candidates to learn an order from)")
        learned = int((f.found > 0).sum())
        train_set, names = dataset(f, params)
        del f   # binned: the frame goes before the next one is built
        val = tables["val"].iloc[: rows.get("val")]
        found = feats.candidates(val)
        stop = useful(found.found, settings.val_seeds, seed)
        val_set = (dataset(feats.split(val.iloc[stop]), params, reference=train_set)[0]
                   if len(stop) else None)
        booster = train_booster(train_set, val_set, settings, params)
        out = {s: scored(booster, feats, tables[s].iloc[: rows.get(s)]) for s in splits}
    finally:
        feats.close()
    fit = RankerFit(task, booster, {s: c for s, (c, _) in out.items()},
                    {s: x for s, (_, x) in out.items()}, names)
    timer.end(f"{len(train)} train seeds at {train['timestamp'].nunique()} times "
              f"({learned} with a true item among their candidates), "
              f"{found.per_seed:.1f} candidates per seed, candidate recall "
              f"{found.candidate_recall():.3f} (val), "
              f"{booster.best_iteration or booster.current_iteration()} trees, "
              f"{len(names)} features")
    return fit


def ranker_baseline(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                    settings: RankerSettings | None = None, strict: bool = False,
                    seed: int = 0, rows: dict | None = None) -> dict:
    """``{"LightGBM ranker": {split: {metric: value, "candidate_recall": r}}}`` for val
    and test (``rows``: split -> score the first ``n`` rows only)."""
    return fit_ranker(task, db, tables, settings, strict, seed, rows).metrics()


def sample_train(train: pd.DataFrame, settings: RankerSettings, seed: int) -> pd.DataFrame:
    """The train split's rows at its last ``train_times`` seed times, at most
    ``train_seeds`` of them (a seeded sample, in the table's order)."""
    times = np.sort(train["timestamp"].unique())[-settings.train_times:]
    df = train[train["timestamp"].isin(times)]
    if len(df) > settings.train_seeds:
        df = df.sample(n=settings.train_seeds, random_state=seed).sort_index()
    return df
