"""The link family's LightningModule: rank every ``dst`` row for each seed, on the device.

Batches are seeded at the task's source rows (a customer at a time); the loader attaches
the true rows (``batch[src].y``, -1 padded) and marks the true ``dst`` nodes of each
subgraph (``batch[dst].dst_y``). The model scores and trains through its
:class:`~rdl.nn.interface.LinkPredictor` interface; evaluation scores all ``dst`` rows per
batch (a ``[B, num_dst]`` matrix, never more) and keeps the top k.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torchmetrics import MetricCollection

from rdl.nn.interface import Run
from rdl.training.module import TaskModule


class LinkTaskModule(TaskModule):
    """Trains a link model (:class:`~rdl.nn.interface.LinkPredictor`: ID-GNN, ContextGNN,
    ContextGT, two-tower, or your own) on a link task.

    Args:
        num_dst_nodes: rows of the task's target table.
        **kwargs: see :class:`~rdl.training.module.TaskModule`.
    """

    def __init__(self, model, task, *args, num_dst_nodes: int, **kwargs):
        super().__init__(model, task, *args, **kwargs)
        self.dst = task.target_table
        self.num_dst, self.k = num_dst_nodes, task.eval_k
        # the weight of the model beside the LightGBM ranker chosen on val after training
        # (rdl/families/link/blend.py; None: the model alone over every item)
        self.ranker_blend: float | None = None
        self.compile_loss(model.loss_of)   # used where the model has loss_targets

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        # read by rdl.predict only: training and its evaluations rank with the model alone
        checkpoint["rdl_ranker_blend"] = self.ranker_blend

    def run(self, batch) -> Run:
        """The model's forward over ``batch`` (:class:`~rdl.nn.interface.Run`)."""
        return Run(lambda *extra: self(batch, *extra),
                   lambda node_type: self.shapes.spare(batch, node_type))

    def scores(self, batch) -> Tensor:
        """``[B, num_dst]`` logits of every ``dst`` row for each seed of the batch."""
        return self.model.link_scores(self.run(batch), batch, self.num_dst)

    def step_loss(self, batch) -> tuple[Tensor, int]:
        targets = None if self.train_fn is None else self.model.loss_targets(batch)
        if targets is None:
            return self.model.link_loss(self.run(batch), batch, self.num_dst)
        # the model and its loss in one compiled graph
        return self.graph_loss(batch, targets), batch[self.model.src_table].batch_size

    # -- a model that embeds every candidate once per evaluation time (two-tower) --------
    @torch.no_grad()
    def embed_candidates(self, split: str) -> None:
        """``model.candidates``: every ``dst`` row embedded at the split's time."""
        out = []
        for batch in self.trainer.datamodule.dst_loader(split):
            batch = batch.to(self.device)
            args, kwargs = self.inputs(batch, self.dst)
            run = Run(lambda *extra, a=args, k=kwargs: self.model_fn(*a, *extra, **k),
                      lambda node_type, b=batch: self.shapes.spare(b, node_type))
            out.append(self.model.candidate_embeddings(run, batch))
        self.model.candidates = torch.cat(out)

    def on_validation_epoch_start(self):
        if self.model.embeds_candidates:
            self.embed_candidates("val")

    def on_test_epoch_start(self):
        if self.model.embeds_candidates:
            self.embed_candidates("test")

    def on_predict_epoch_start(self):
        if self.model.embeds_candidates:
            self.embed_candidates(self.trainer.datamodule.settings.predict_split)

    def predict_step(self, batch, batch_idx):
        """``(row of the split table [B], the top k target rows [B, k], best first)``."""
        top = self.scores(batch).topk(self.k, dim=-1).indices
        return batch[self.entity].input_id.cpu(), top.cpu()

    def eval_step(self, batch, metrics: MetricCollection):
        top = self.scores(batch).topk(self.k, dim=-1).indices
        metrics.update(top, batch[self.entity].y)
