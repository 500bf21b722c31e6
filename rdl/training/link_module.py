"""LightningModule for link prediction: rank every ``dst`` row for each seed, on the device.

Batches are seeded at the task's source rows (a customer at a time); the loader attaches
the true rows (``batch[src].y``, -1 padded) and marks the true ``dst`` nodes of each
subgraph (``batch[dst].y``). Evaluation scores all ``dst`` rows per batch (a ``[B, num_dst]``
matrix, never more) and keeps the top k.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection

from rdl.nn.link import IDGNN, ContextGNN, ContextGT, TwoTower
from rdl.training.compile import PAD
from rdl.training.module import TaskModule


def listwise_loss(scores: Tensor, pos: Tensor) -> Tensor:
    """Softmax cross-entropy of each true row against all rows: ``scores [B, N]``,
    ``pos [B, L]`` true rows padded with -1; averaged over the true rows."""
    valid = pos >= 0
    logp = scores.log_softmax(-1).gather(1, pos.clamp(min=0))
    return -(logp * valid).sum() / valid.sum().clamp(min=1)


class LinkTaskModule(TaskModule):
    """Trains an :class:`~rdl.nn.link.IDGNN`, :class:`~rdl.nn.link.ContextGNN`,
    :class:`~rdl.nn.link.ContextGT` or :class:`~rdl.nn.link.TwoTower` on a link task.

    Args:
        num_dst_nodes: rows of the task's target table.
        **kwargs: see :class:`~rdl.training.module.TaskModule`.
    """

    def __init__(self, model, task, *args, num_dst_nodes: int, **kwargs):
        super().__init__(model, task, *args, **kwargs)
        self.dst = task.target_table
        self.num_dst, self.k = num_dst_nodes, task.eval_k
        if not isinstance(model, (IDGNN, ContextGNN, ContextGT, TwoTower)):
            raise TypeError(f"task {task.name!r} is link prediction; model "
                            f"{type(model).__name__} is not a link model (model=idgnn, "
                            "contextgnn, context-transformer or two-tower)")

    def scores(self, batch) -> Tensor:
        """``[B, num_dst]`` logits of every ``dst`` row for each seed of the batch."""
        dst = batch[self.dst]
        B, N = batch[self.entity].batch_size, dst.num_nodes
        if isinstance(self.model, ContextGNN):
            pair, seed = self(batch)
            return self.model.scores(pair[:N], seed, dst.batch, dst.n_id)
        if isinstance(self.model, ContextGT):
            pair, seed = self(batch)
            return self.model.scores(pair, seed, dst.tok_id[:B], dst.tok_mask[:B])
        if isinstance(self.model, IDGNN):
            out = torch.full((B, self.num_dst), float("-inf"), device=self.device)
            return out.index_put((dst.batch, dst.n_id), self(batch)[:N])
        # Only seed embeddings are needed; two pad rows stand in as candidates, so that the
        # compiled model sees the same shapes as in :meth:`embed_all_dst`.
        pad = torch.arange(N, N + PAD, device=self.device)
        src, _ = self(batch, torch.arange(B, device=self.device), pad, torch.zeros_like(pad))
        return src @ self.dst_embeddings.t()

    def step_loss(self, batch) -> tuple[Tensor, int]:
        if isinstance(self.model, TwoTower):
            return self.bpr_loss(batch)
        elif isinstance(self.model, IDGNN):  # a label per candidate in the subgraph (RelBench)
            y = batch[self.dst].y
            logits = self(batch)[: y.numel()]  # without the pad rows
            loss = F.binary_cross_entropy_with_logits(logits, y, reduction="sum") / max(y.numel(), 1)
            n = batch[self.entity].batch_size
        else:
            loss = listwise_loss(self.scores(batch), batch[self.entity].y)
            n = batch[self.entity].batch_size
        return loss, n

    def bpr_loss(self, batch) -> tuple[Tensor, int]:
        """Bayesian personalised ranking on (seed, true row, random row) triplets."""
        dst = batch[self.dst]
        pos, neg = dst.dst_pos_index, dst.dst_neg_index
        dst_index = torch.cat([pos, neg])
        src, out = self(batch, batch[self.entity].src_index, dst_index, dst.n_id[dst_index])
        p, n = out.split([pos.numel(), neg.numel()])
        return -F.logsigmoid((src * p).sum(-1) - (src * n).sum(-1)).mean(), pos.numel()

    # -- two-tower evaluation: embed every candidate once per evaluation time -----------
    @torch.no_grad()
    def embed_all_dst(self, split: str) -> Tensor:
        out = []
        for batch in self.trainer.datamodule.dst_loader(split):
            batch = batch.to(self.device)
            B, N = batch[self.dst].batch_size, batch[self.entity].num_nodes
            index = torch.arange(B, device=self.device)
            pad = torch.arange(N, N + PAD, device=self.device)  # pad rows as the seeds
            args, kwargs = self.inputs(batch, self.dst)
            _, emb = self.forward_fn(*args, pad, index, batch[self.dst].n_id[:B], **kwargs)
            out.append(emb)
        return torch.cat(out)

    def on_validation_epoch_start(self):
        if isinstance(self.model, TwoTower):
            self.dst_embeddings = self.embed_all_dst("val")

    def on_test_epoch_start(self):
        if isinstance(self.model, TwoTower):
            self.dst_embeddings = self.embed_all_dst("test")

    def on_predict_epoch_start(self):
        if isinstance(self.model, TwoTower):
            self.dst_embeddings = self.embed_all_dst(self.trainer.datamodule.predict_split)

    def predict_step(self, batch, batch_idx):
        """``(row of the split table [B], the top k target rows [B, k], best first)``."""
        top = self.scores(batch).topk(self.k, dim=-1).indices
        return batch[self.entity].input_id.cpu(), top.cpu()

    def eval_step(self, batch, metrics: MetricCollection):
        top = self.scores(batch).topk(self.k, dim=-1).indices
        metrics.update(top, batch[self.entity].y)
