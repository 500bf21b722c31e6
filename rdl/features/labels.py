"""What a seed may know of its entity's earlier labels: the statistics of the visible label
history (:func:`visible_labels`), used by the model's seed features and base, the feature
table and the history baselines alike.

A seed ``(entity, s)`` sees the labels of the entity's earlier seed times whose window has
closed by ``s`` (``available <= s``, :meth:`~rdl.families.node.NodeTask.history`), in either sampling
mode. The statistics come from one ``merge_asof`` of the seeds on the per-entity running
sums of the history, so they cost the same for one seed time or many.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rdl.tasks import Task
from rdl.tasks.window import seasonal_lag, shift
from rdl.visibility import includes_equal


def label_matrix(task: Task, y) -> np.ndarray:
    """Labels as an ``(n, c)`` float matrix: the label itself (``c = 1``), or one-hot
    (multiclass, ``c = num_classes``): :meth:`~rdl.tasks.kinds.Kind.label_matrix`."""
    return task.kind.label_matrix(y)


def visible_labels(task: Task, df: pd.DataFrame, history: pd.DataFrame,
                   ks=(4,), year: bool = False) -> dict[str, np.ndarray]:
    """Statistics of the labels each row ``(entity, timestamp)`` of ``df`` may see.

    Returns arrays aligned with the rows of ``df``: ``count`` (visible labels), ``since``
    (seconds from the closing of the last one to the seed time; NaN if none), ``last``,
    ``mean_all`` and ``mean_<k>`` for each ``k`` in ``ks`` (each ``(len(df), c)`` as in
    :func:`label_matrix`; NaN rows where there is no visible label); with ``year``,
    ``year_before`` (:func:`year_before`) and ``year_change``, the change from the window
    before it to it (NaN where either is missing).
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
                        allow_exact_matches=includes_equal(strict=False))  # always
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
    if year:
        now, before = _years_before(task, df, history, (0, -1))
        stats["year_before"], stats["year_change"] = now, now - before
    return stats


def year_before(task: Task, df: pd.DataFrame, history: pd.DataFrame,
                later: int = 0) -> np.ndarray:
    """Each row's label of a year before: the entity's label at the seed time the task's
    seasonal lag earlier (:func:`~rdl.tasks.window.seasonal_lag`: 12 months back for a
    monthly window, 52 weeks for a weekly one; ``later`` windows less), where its window
    has closed by the row's time (the history's rule); ``(len(df), c)`` as
    :func:`label_matrix`, NaN rows where there is none (no label then, or a window with no
    season)."""
    return _years_before(task, df, history, (later,))[0]


def _years_before(task: Task, df: pd.DataFrame, history: pd.DataFrame,
                  laters: tuple) -> list[np.ndarray]:
    """:func:`year_before` for each of ``laters``, from one pass over the history."""
    e, y = task.entity_col, task.target_col
    lag = seasonal_lag(task.window)
    t = df["timestamp"].to_numpy().astype("datetime64[ns]")
    then = [] if lag is None else [shift(t, task.window, n - lag) for n in laters]
    h = history[[e, "timestamp", "available", y]].dropna(subset=[y])
    if not then:
        h = h.iloc[:0]
    else:   # only the labels of those seed times (a week's of millions, for val or test)
        needed = np.unique(np.concatenate(then))
        h = h[np.isin(h["timestamp"].to_numpy().astype("datetime64[ns]"), needed)]
    h = h.drop_duplicates([e, "timestamp"], keep="last")
    labels = label_matrix(task, h[y])
    outs = [np.full((len(df), labels.shape[1]), np.nan) for _ in laters]
    if not then or not len(h):
        return outs
    at = pd.MultiIndex.from_arrays([h[e].to_numpy(dtype=np.int64),
                                    h["timestamp"].to_numpy().astype("datetime64[ns]")])
    available = h["available"].to_numpy().astype("datetime64[ns]")
    ids = df[e].to_numpy(dtype=np.int64)
    for out, when in zip(outs, then):
        rows = at.get_indexer(pd.MultiIndex.from_arrays([ids, when]))
        hit = rows >= 0
        hit[hit] = available[rows[hit]] <= t[hit]   # closed by the seed's time
        out[hit] = labels[rows[hit]]
    return outs


def closed_statistic(task: Task, df: pd.DataFrame, history: pd.DataFrame, statistic
                     ) -> np.ndarray:
    """``statistic`` (of a 1-d array of labels, as :meth:`~rdl.tasks.kinds.Kind.prior`)
    of every entity's labels closed by each row's time (``available <= timestamp``, the
    label history's rule), as an ``(len(df), c)`` matrix; NaN rows where none has closed.
    What a train seed may know of the whole train split: a baseline fitted on all of it
    would read labels that close after the seed."""
    y = history[["available", task.target_col]].dropna(subset=[task.target_col])
    y = y.sort_values("available", kind="stable")
    labels = y[task.target_col].to_numpy(dtype=np.float64)
    side = "right" if includes_equal(strict=False) else "left"  # always: available <= s
    closed = np.searchsorted(y["available"].to_numpy().astype("datetime64[ns]"),
                             df["timestamp"].to_numpy().astype("datetime64[ns]"), side=side)
    # one call per distinct number of closed labels (a handful of seed times), in order
    values = {n: np.atleast_1d(np.asarray(statistic(labels[:n]), dtype=np.float64))
              for n in np.unique(closed) if n > 0}
    width = next(iter(values.values())).shape[0] if values else task.kind.out_channels
    out = np.full((len(df), width), np.nan)
    for n, v in values.items():
        out[closed == n] = v
    return out


def train_prior(task: Task, train: pd.DataFrame) -> np.ndarray:
    """What a baseline predicts for an entity it knows nothing of: the train label mean
    (regression), the train positive rate (binary), or the train class frequencies
    (multiclass, whose argmax is the majority class)."""
    y = np.asarray(train[task.target_col], dtype=np.float64)
    y = y[~np.isnan(y)]
    if len(y) == 0:
        raise ValueError(f"task {task.name!r}: the train split has no labels")
    return task.kind.prior(y)
