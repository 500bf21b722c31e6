"""Trivial baselines, scored by the task's own metrics, printed beside the model.

- classification: a constant score at the train positive rate (every AUROC is then 0.5);
- regression: predicting zero, and the train median (the L1-optimal constant);
- link prediction: global popularity (the rows linked most often in the last window before
  the seed time) and past links (each entity's own earlier targets, most frequent first,
  then most recent), both from the task's own labels of earlier windows.
"""
from __future__ import annotations

import pandas as pd
import torch
from torchmetrics import MetricCollection

from rdl.tasks import Task


def _score(task: Task, pred: torch.Tensor, target: torch.Tensor) -> dict[str, float]:
    metrics = MetricCollection(dict(task.metrics)).clone()
    metrics.update(pred, target)
    return {k: float(v) for k, v in metrics.compute().items()}


@torch.no_grad()
def node_baselines(task: Task, train_y: torch.Tensor, split_y: dict[str, torch.Tensor]) -> dict:
    """``{baseline: {split: {metric: value}}}`` for the constant baselines."""
    if task.kind == "binary_classification":
        constants = {"constant (train rate)": train_y.float().mean().item()}
    elif task.kind == "regression":
        constants = {"zero": 0.0, "train median": train_y.float().median().item()}
    else:
        constants = {}
    out = {}
    for name, value in constants.items():
        out[name] = {}
        for split, y in split_y.items():
            target = y.long() if task.is_classification else y.float()
            out[name][split] = _score(task, torch.full((len(y),), value), target)
    return out


def _pad(lists, k: int) -> torch.Tensor:
    width = max([k, *map(len, lists)])
    return torch.tensor([list(x) + [-1] * (width - len(x)) for x in lists], dtype=torch.long)


@torch.no_grad()
def link_baselines(task: Task, tables: dict[str, pd.DataFrame]) -> dict:
    """``{baseline: {split: {metric: value}}}`` for popularity and past links."""
    src, dst, k = task.entity_col, task.target_col, task.eval_k
    links = pd.concat([tables["train"], tables["val"]])[["timestamp", src, dst]].explode(dst)
    out = {"popularity (last window)": {}, "past links": {}}
    for split in ("val", "test"):
        df = tables[split]
        t = df["timestamp"].iloc[0]
        # A label at time s covers (s, s + window]: it is history at t if s + window <= t.
        seen = links[links["timestamp"] + task.delta <= t]
        last = seen[seen["timestamp"] == seen["timestamp"].max()]
        popular = last[dst].value_counts().index[:k].tolist()
        past = (seen.groupby([src, dst]).agg(n=("timestamp", "size"), last=("timestamp", "max"))
                .reset_index().sort_values([src, "n", "last"], ascending=[True, False, False]))
        past = past.groupby(src)[dst].agg(lambda s: s.iloc[:k].tolist())
        truth = _pad(df[dst].map(list).tolist(), 1)
        preds = {
            "popularity (last window)": _pad([popular] * len(df), k),
            "past links": _pad([past.get(c, []) for c in df[src]], k),
        }
        for name, pred in preds.items():
            out[name][split] = _score(task, pred[:, :k], truth)
    return out
