"""Baselines from the entity's own earlier labels (the task's label history).

A seed ``(entity, s)`` sees the labels of the entity's earlier seed times whose window has
closed by ``s`` (``available <= s``, :meth:`~rdl.tasks.Task.history`), in either sampling
mode. From them:

- **last label**: the most recent such label;
- **label mean (last k)**: the mean of the last ``k`` such labels (multiclass: the class
  frequencies among them), ``k`` picked among :data:`KS` on the validation split by the
  task's monitor metric.

An entity with no visible label gets the train prior (:func:`~rdl.baselines.scoring.train_prior`).
The statistics come from one ``merge_asof`` of the seeds on the per-entity running sums of
the history, so they cost the same for one seed time or many.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rdl.baselines.scoring import score, train_prior
from rdl.tasks import Task

#: The window lengths (in labels) the label-mean baseline chooses from.
KS = (2, 4, 8, 16)


def label_matrix(task: Task, y) -> np.ndarray:
    """Labels as an ``(n, c)`` float matrix: the label itself (``c = 1``), or one-hot
    (multiclass, ``c = num_classes``): :meth:`~rdl.tasks.kinds.Kind.label_matrix`."""
    return task.kind.label_matrix(y)


def visible_labels(task: Task, df: pd.DataFrame, history: pd.DataFrame,
                   ks=(4,)) -> dict[str, np.ndarray]:
    """Statistics of the labels each row ``(entity, timestamp)`` of ``df`` may see.

    Returns arrays aligned with the rows of ``df``: ``count`` (visible labels), ``since``
    (seconds from the closing of the last one to the seed time; NaN if none), ``last``,
    ``mean_all`` and ``mean_<k>`` for each ``k`` in ``ks`` (each ``(len(df), c)`` as in
    :func:`label_matrix`; NaN rows where there is no visible label).
    """
    e, y = task.entity_col, task.target_col
    h = history[[e, "available", y]].dropna(subset=[y])
    h = h.assign(available=h["available"].astype("datetime64[ns]"))
    h = h.sort_values([e, "available"], kind="stable").reset_index(drop=True)
    labels = label_matrix(task, h[y])
    n, c = labels.shape
    ent = h[e].to_numpy(dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, ent[1:] != ent[:-1]]) if n else np.zeros(0, np.int64)
    first = np.repeat(starts, np.diff(np.r_[starts, n]))  # the row of the entity's first label
    # Running sums per entity: a sum reads only the entity's own labels up to its row,
    # never another entity's or a later one (not even through rounding).
    csum = pd.DataFrame(labels).groupby(ent, sort=False).cumsum().to_numpy()
    i = np.arange(n)

    def mean_of_last(k: float) -> np.ndarray:
        """The mean of the labels in rows ``lo..i`` of the entity, the last ``k``."""
        lo = first if math.isinf(k) else np.maximum(i + 1 - k, first)
        before = np.where((lo > first)[:, None], csum[np.maximum(lo - 1, 0)], 0.0)
        return (csum - before) / (i + 1 - lo)[:, None]

    # For each seed, the entity's last label with available <= timestamp.
    seeds = pd.DataFrame({"row": np.arange(len(df)), e: df[e].to_numpy(dtype=np.int64),
                          "t": df["timestamp"].to_numpy().astype("datetime64[ns]")})
    labelled = pd.DataFrame({e: ent, "available": h["available"].to_numpy(), "hrow": i})
    hit = pd.merge_asof(seeds.sort_values("t", kind="stable"), labelled.sort_values("available"),
                        left_on="t", right_on="available", by=e, direction="backward",
                        allow_exact_matches=True)
    hrow = np.full(len(df), -1, dtype=np.int64)
    hrow[hit["row"].to_numpy()] = hit["hrow"].fillna(-1).to_numpy(dtype=np.int64)
    has = hrow >= 0
    j = hrow[has]

    def at_seeds(values: np.ndarray) -> np.ndarray:
        out = np.full((len(df), *values.shape[1:]), np.nan)
        out[has] = values[j]
        return out

    t = seeds["t"].to_numpy()
    since = np.full(len(df), np.nan)
    since[has] = (t[has] - h["available"].to_numpy()[j]) / np.timedelta64(1, "s")
    count = np.zeros(len(df))
    count[has] = (i - first)[j] + 1
    stats = {"count": count, "since": since, "last": at_seeds(labels),
             "mean_all": at_seeds(mean_of_last(math.inf))}
    for k in ks:
        stats[f"mean_{k}"] = at_seeds(mean_of_last(k))
    return stats


def _predict(task: Task, values: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Rows without history get the prior; the shape the metrics expect."""
    values = np.where(np.isnan(values).any(axis=1, keepdims=True), prior, values)
    return task.kind.from_matrix(values)


def last_label(task: Task, df: pd.DataFrame, history: pd.DataFrame,
               prior: np.ndarray) -> np.ndarray:
    """The last-label prediction for each row of ``df`` (``prior`` where there is none)."""
    return _predict(task, visible_labels(task, df, history, ks=())["last"], np.atleast_1d(prior))


def better(task: Task, a: float, b: float) -> bool:
    """Whether validation score ``a`` beats ``b`` on the task's monitor (NaN never does)."""
    if math.isnan(a):
        return False
    if math.isnan(b):
        return True
    return a < b if task.monitor_mode == "min" else a > b


def monitor(task: Task) -> str:
    """The metric that selects among baselines: the task's monitor, else its first metric."""
    if task.monitor:
        return task.monitor
    if not task.metrics:
        raise ValueError(f"task {task.name!r} has no metrics")
    return next(iter(task.metrics))


def history_baselines(task: Task, tables: dict[str, pd.DataFrame],
                      history: pd.DataFrame | None = None) -> dict:
    """``{baseline: {split: {metric: value}}}`` for last label and the best label mean."""
    history = task.history(tables) if history is None else history
    prior = np.atleast_1d(train_prior(task, tables["train"]))
    stats = {s: visible_labels(task, tables[s], history, ks=KS) for s in ("val", "test")}

    def scores(key: str) -> dict:
        return {s: score(task, _predict(task, stats[s][key], prior), tables[s])
                for s in ("val", "test")}

    out = {"last label": scores("last")}
    metric, best = monitor(task), None
    for k in KS:
        res = scores(f"mean_{k}")
        if best is None or better(task, res["val"][metric], best[1]["val"][metric]):
            best = (k, res)
    out[f"label mean (last {best[0]})"] = best[1]
    return out
