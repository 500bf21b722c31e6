"""A simple baseline as the node model's prior: a constant, the last label, the label mean
of the last ``k`` labels or a seasonal one (:mod:`rdl.baselines.constant`,
:mod:`rdl.baselines.history`), each seed's value in the space the model starts from
(:meth:`NodeKind.as_raw <rdl.families.node.kinds.NodeKind.as_raw>`: values, logits,
log-probabilities).

Val and test seeds (and "now" seeds) get the baseline's own predictions, as the run prints
them: the model at a correction of 0 scores what the baseline scores. A train seed at time
``s`` gets the same baseline computed from what is known at ``s`` only:

- the last label, the label mean and the seasonal ones read the entity's labels whose
  window has closed by ``s`` (:func:`~rdl.features.labels.visible_labels`, as for every seed);
- where the entity has none, and for a constant, what the printed baseline takes from the
  whole train split (the train mean, rate or class rates; the median) comes from the labels
  of every entity closed by ``s`` (:func:`~rdl.features.labels.closed_statistic`): the whole
  train split holds labels that close after ``s``.

A train seed before which no label at all has closed (the first train seed time) has no
prior (NaN): the model falls back there as it does for the tree prior's first block
(:meth:`NodePrepared.base <rdl.families.node.prepare.NodePrepared.base>`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.baselines.history import from_history, statistic, statistic_values
from rdl.features.labels import closed_statistic, train_prior
from rdl.tasks import Task


def is_simple(task: Task, name: str) -> bool:
    """Whether ``name`` is a simple baseline of ``task`` (a constant or a history one)."""
    return statistic(name) is not None or name in _constants(task, np.zeros(1))


def _constants(task: Task, y: np.ndarray) -> dict:
    return task.kind.constants(np.asarray(y, dtype=np.float64))


def simple_prior(task: Task, name: str, tables: dict[str, pd.DataFrame],
                 history: pd.DataFrame, splits=None) -> dict[str, np.ndarray]:
    """Per split (of ``splits``; None: all of ``tables``), the raw prior of each row of
    ``tables[split]`` from the simple baseline ``name`` (its printed name): ``[N]`` values
    or logits, or ``[N, C]`` log-probabilities; NaN where a train seed has none (see the
    module's docstring). ``tables`` holds the train split (its labels fit the printed
    baseline)."""
    if not is_simple(task, name):
        raise ValueError(f"task {task.name!r}: {name!r} is not a simple baseline")
    train_y = tables["train"][task.target_col].to_numpy(dtype=np.float64)
    key = statistic(name)
    out = {}
    for split in tables if splits is None else splits:
        df = tables[split]
        known = split == "train"   # else the printed baseline's, fitted on the train split
        if key is None:
            if known:
                values = closed_statistic(task, df, history, lambda y: _constants(task, y)[name])
            else:
                values = np.broadcast_to(np.atleast_1d(_constants(task, train_y)[name]),
                                         (len(df), task.kind.out_channels))
            pred = task.kind.from_matrix(np.asarray(values, dtype=np.float64))
        else:
            fill = (closed_statistic(task, df, history, task.kind.prior) if known
                    else np.atleast_1d(train_prior(task, tables["train"])))
            pred = from_history(task, statistic_values(task, df, history, key), fill)
        out[split] = task.kind.as_raw(pred)
    return out

