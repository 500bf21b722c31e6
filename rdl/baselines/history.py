"""Baselines from the entity's own earlier labels (the task's label history).

A seed ``(entity, s)`` sees the labels of the entity's earlier seed times whose window has
closed by ``s`` (``available <= s``, :meth:`~rdl.families.node.NodeTask.history`), in either sampling
mode. From them:

- **last label**: the most recent such label;
- **label mean (last k)**: the mean of the last ``k`` such labels (multiclass: the class
  frequencies among them), ``k`` picked among :data:`KS` on the validation split by the
  task's monitor metric.

An entity with no visible label gets the train prior (:func:`~rdl.features.labels.train_prior`).
The statistics come from one ``merge_asof`` of the seeds on the per-entity running sums of
the history, so they cost the same for one seed time or many.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rdl.baselines.scoring import score
from rdl.features.labels import train_prior, visible_labels
from rdl.tasks import Task

#: The window lengths (in labels) the label-mean baseline chooses from.
KS = (2, 4, 8, 16)
#: the last-label baseline's name
LAST = "last label"


def mean_name(k: int) -> str:
    """The name of the label-mean baseline over the last ``k`` labels."""
    return f"label mean (last {k})"


def statistic(name: str) -> str | None:
    """The statistic of :func:`~rdl.features.labels.visible_labels` that the history
    baseline ``name`` predicts (``last``, ``mean_<k>``); None: not a history baseline."""
    if name == LAST:
        return "last"
    return next((f"mean_{k}" for k in KS if name == mean_name(k)), None)


def from_history(task: Task, values: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Predictions from a statistic of the visible labels ``values`` (``(n, c)``): rows
    without history get ``prior`` (``(c,)``, or ``(n, c)``: a row's own); the shape the
    metrics expect."""
    values = np.where(np.isnan(values).any(axis=1, keepdims=True), prior, values)
    return task.kind.from_matrix(values)


def last_label(task: Task, df: pd.DataFrame, history: pd.DataFrame,
               prior: np.ndarray) -> np.ndarray:
    """The last-label prediction for each row of ``df`` (``prior`` where there is none)."""
    return from_history(task, visible_labels(task, df, history, ks=())["last"],
                        np.atleast_1d(prior))


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
        return {s: score(task, from_history(task, stats[s][key], prior), tables[s])
                for s in ("val", "test")}

    out = {LAST: scores("last")}
    metric, best = monitor(task), None
    for k in KS:
        res = scores(f"mean_{k}")
        if best is None or better(task, res["val"][metric], best[1]["val"][metric]):
            best = (k, res)
    out[mean_name(best[0])] = best[1]
    return out
