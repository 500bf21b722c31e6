"""Ranking metrics for link prediction, as torchmetrics: state stays on the device.

``update(pred, target)``: ``pred [B, k]`` the ranked candidate ids (best first), ``target
[B, L]`` the true ids padded with ``-1``. Rows without a true id are skipped (RelBench).
Definitions follow RelBench: precision@k = hits / k; recall@k = hits / |true|;
MAP@k = sum over ranks i <= k of precision@i * hit_i, divided by min(|true|, k).
torchmetrics' retrieval metrics take one score per (query, document) pair instead of a
ranked list against a set, and normalise AP by |true|, hence these.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torchmetrics import Metric


def hits(pred: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``hit [B, k]`` (is ``pred[b, i]`` a true id of row ``b``) and ``count [B]`` (|true|)."""
    valid = target >= 0
    hit = ((pred.unsqueeze(-1) == target.unsqueeze(1)) & valid.unsqueeze(1)).any(-1)
    return hit, valid.sum(-1)


class _LinkMetric(Metric):
    full_state_update = False
    higher_is_better = True
    is_differentiable = False

    def __init__(self, k: int = 12, **kwargs):
        super().__init__(**kwargs)
        self.k = k
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("rows", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, pred: Tensor, target: Tensor) -> None:
        hit, count = hits(pred[:, : self.k], target)
        has = count > 0
        value = self.per_row(hit.to(torch.float64), count.to(torch.float64))
        self.total += torch.where(has, value, torch.zeros_like(value)).sum()
        self.rows += has.sum()

    def compute(self) -> Tensor:
        return (self.total / self.rows.clamp(min=1)).float()


class LinkMAP(_LinkMetric):
    """Mean average precision at k (RelBench's ``link_prediction_map``)."""

    def per_row(self, hit: Tensor, count: Tensor) -> Tensor:
        ranks = torch.arange(1, hit.size(1) + 1, device=hit.device, dtype=hit.dtype)
        precision_at = hit.cumsum(-1) / ranks
        return (precision_at * hit).sum(-1) / count.clamp(min=1, max=self.k)


class LinkPrecision(_LinkMetric):
    """Hits among the top k, divided by k."""

    def per_row(self, hit: Tensor, count: Tensor) -> Tensor:
        return hit.sum(-1) / self.k


class LinkRecall(_LinkMetric):
    """Hits among the top k, divided by the number of true ids."""

    def per_row(self, hit: Tensor, count: Tensor) -> Tensor:
        return hit.sum(-1) / count.clamp(min=1)
