"""Baselines from the entity's own earlier labels (the task's label history).

A seed ``(entity, s)`` sees the labels of the entity's earlier seed times whose window has
closed by ``s`` (``available <= s``, :meth:`~rdl.families.node.NodeTask.history`), in either sampling
mode. From them:

- **last label**: the most recent such label;
- **label mean (last k)**: the mean of the last ``k`` such labels (multiclass: the class
  frequencies among them), ``k`` picked among :data:`KS` on the validation split by the
  task's monitor metric;
- **label a year before** (the seasonal naive forecast): the entity's label of the same
  window a year earlier (12 months back for a monthly window, 52 weeks for a weekly one:
  :func:`~rdl.features.labels.year_before`), its last label where it has none;
- **last label + change a year ago** (regression): the last label moved by the change
  a year before, from the window before that one to it (the seasonal naive forecast of
  the changes: a trending series' season), the last label where there is none.

The two seasonal ones are printed where the window has a season and a val or test seed
has a label a year before. On the 148 monthly US employment series (docs/results.md) the
label a year before trails the last label (a year's trend outweighs the season) and the
last label moved by last year's change leads every other forecast.

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
from rdl.tasks.window import seasonal_lag

#: The window lengths (in labels) the label-mean baseline chooses from.
KS = (2, 4, 8, 16)
#: the last-label baseline's name
LAST = "last label"
#: the seasonal baselines' names, and their statistics
YEAR, CHANGE = "label a year before", "last label + change a year ago"
SEASONAL = {YEAR: "year_before", CHANGE: "year_change"}


def mean_name(k: int) -> str:
    """The name of the label-mean baseline over the last ``k`` labels."""
    return f"label mean (last {k})"


def statistic(name: str) -> str | None:
    """The statistic of :func:`~rdl.features.labels.visible_labels` that the history
    baseline ``name`` predicts (``last``, ``mean_<k>``); None: not a history baseline."""
    if name == LAST:
        return "last"
    if name in SEASONAL:
        return SEASONAL[name]
    return next((f"mean_{k}" for k in KS if name == mean_name(k)), None)


def statistic_values(task: Task, df: pd.DataFrame, history: pd.DataFrame,
                     key: str) -> np.ndarray:
    """The visible-label statistic ``key`` (of :func:`statistic`) of each row of ``df``,
    ``(n, c)``; the seasonal ones fall back to the last label (NaN rows: none)."""
    ks = (int(key.removeprefix("mean_")),) if key.startswith("mean_") else ()
    st = visible_labels(task, df, history, ks=ks, year=key in SEASONAL.values())
    return seasonal(st, key) if key in SEASONAL.values() else st[key]


def seasonal(st: dict, key: str) -> np.ndarray:
    """A seasonal baseline's predictions from :func:`~rdl.features.labels.visible_labels`'
    statistics: the label a year before (``year_before``) or the last label plus last
    year's change (``year_change``) where there is one, else the last label."""
    year = st["year_before"] if key == "year_before" else st["last"] + st["year_change"]
    return np.where(np.isnan(year).any(axis=1, keepdims=True), st["last"], year)


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
    """``{baseline: {split: {metric: value}}}`` for last label, the best label mean and,
    where the labels have a season, the seasonal ones."""
    history = task.history(tables) if history is None else history
    prior = np.atleast_1d(train_prior(task, tables["train"]))
    year = seasonal_lag(task.window) is not None
    stats = {s: visible_labels(task, tables[s], history, ks=KS, year=year)
             for s in ("val", "test")}

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
    if year and any(not np.isnan(stats[s]["year_before"]).all() for s in stats):
        changes = task.kind.starts_from_last_label   # (regression: labels that add up)
        for name, key in SEASONAL.items():
            if key == "year_before" or changes:
                for s in stats:
                    stats[s][name] = seasonal(stats[s], key)
                out[name] = scores(name)
    return out
