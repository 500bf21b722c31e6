"""Scoring a baseline with the task's own metrics, exactly as the model is scored.

Predictions are what the model's metrics receive: probabilities of the positive class
(binary), class probabilities ``(N, num_classes)`` (multiclass) or values (regression).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torchmetrics import MetricCollection

from rdl.tasks import Task


def _alone() -> bool:
    return False


@torch.no_grad()
def score_tensors(task: Task, pred: torch.Tensor, target: torch.Tensor,
                  only: str | None = None) -> dict[str, float]:
    """Every metric of ``task`` (``only``: that one) on ``pred`` against ``target``: all
    of them here, not gathered from other processes (a multi-process run scores baselines
    in one)."""
    chosen = {k: m for k, m in task.metrics.items() if only is None or k == only}
    metrics = MetricCollection(chosen).clone()
    for m in metrics.values():
        m.distributed_available_fn = _alone
    metrics.update(pred, target)
    return {k: float(v) for k, v in metrics.compute().items()}


def targets(task: Task, df: pd.DataFrame) -> torch.Tensor:
    """The labels of a split table as the metrics expect them (long for classification)."""
    return task.kind.metric_target(torch.tensor(np.asarray(df[task.target_col],
                                                           dtype=np.float64)))


def score(task: Task, pred, df: pd.DataFrame, only: str | None = None) -> dict[str, float]:
    """Every metric of ``task`` (``only``: that one) for the predictions ``pred``
    (array-like, aligned with the rows of the split table ``df``)."""
    pred = torch.tensor(np.asarray(pred, dtype=np.float32))   # a copy: a column is read-only
    if len(pred) != len(df):
        raise ValueError(f"task {task.name!r}: {len(pred)} predictions for {len(df)} rows")
    return score_tensors(task, pred, targets(task, df), only)


@torch.no_grad()
def paired_se(task: Task, metric: str, a, b, df: pd.DataFrame, draws: int = 200,
              seed: int = 0) -> float:
    """The standard error of ``metric(a) - metric(b)`` over the rows of the split table
    ``df`` (``a``, ``b``: two predictions of them, as :func:`score` takes them): the
    standard deviation of the difference over ``draws`` paired bootstrap resamples of the
    rows (the same rows for both). Written here: torchmetrics has no paired bootstrap
    (its ``BootStrapper`` resamples one metric's updates, not two predictions' rows)."""
    a, b = (torch.tensor(np.asarray(x, dtype=np.float32)) for x in (a, b))
    y = targets(task, df)
    m = dict(task.metrics)[metric].clone()
    m.distributed_available_fn = _alone
    gen = torch.Generator().manual_seed(seed)
    diffs = []
    for _ in range(draws):
        rows = torch.randint(len(y), (len(y),), generator=gen)
        values = []
        for pred in (a, b):
            m.reset()
            m.update(pred[rows], y[rows])
            values.append(float(m.compute()))
        diffs.append(values[0] - values[1])
    return float(np.nanstd(diffs, ddof=1)) if draws > 1 else float("nan")
