"""Trivial baselines, scored by the task's own metrics, printed beside the model.

classification: a constant score (every AUROC is then 0.5) at the train positive rate;
regression: predicting zero, and the train median (the L1-optimal constant).
"""
from __future__ import annotations

import torch
from torchmetrics import MetricCollection

from rdl.tasks import Task


def constants(task: Task, train_y: torch.Tensor) -> dict[str, float]:
    if task.kind == "binary_classification":
        return {"constant (train rate)": train_y.float().mean().item()}
    if task.kind == "regression":
        return {"zero": 0.0, "train median": train_y.float().median().item()}
    return {}


@torch.no_grad()
def evaluate(task: Task, train_y: torch.Tensor, split_y: dict[str, torch.Tensor]) -> dict:
    """``{baseline: {split: {metric: value}}}`` for each constant baseline."""
    out = {}
    for name, value in constants(task, train_y).items():
        out[name] = {}
        for split, y in split_y.items():
            metrics = MetricCollection(dict(task.metrics)).clone()
            target = y.long() if task.is_classification else y.float()
            metrics.update(torch.full((len(y),), value), target)
            out[name][split] = {k: float(v) for k, v in metrics.compute().items()}
    return out
