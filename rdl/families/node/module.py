"""The node family's LightningModule: one label per seed; the task's kind gives the loss
and the mapping of the model's output, which may start from each seed's tree prior or last
label."""
from __future__ import annotations

import functools

import torch
from torch import Tensor
from torchmetrics import MetricCollection

from rdl.training.module import TaskModule, pad_seeds


class NodeTaskModule(TaskModule):
    """Node-level tasks: one label per seed; the task's kind
    (:mod:`rdl.families.node.kinds`) gives the loss and the mapping of the model's output.

    Args:
        target_stats: the kind's statistics of the train labels
            (:meth:`~rdl.families.node.kinds.NodeKind.target_stats`; regression: ``(center, scale,
            low, high)``, the space the model predicts in), or None. When the batch
            carries each seed's last visible label or tree prior (``batch[entity].base``),
            the model's output is the change from it, as a forecaster starts from last
            week's value.
        **kwargs: see :class:`~rdl.training.module.TaskModule`.
    """

    def __init__(self, model, task, *args, target_stats: tuple | None = None, **kwargs):
        super().__init__(model, task, *args, **kwargs)
        self.kind = task.kind
        stats = None if target_stats is None else torch.tensor(target_stats, dtype=torch.float)
        self.register_buffer("target_stats", stats)
        #: the share of its correction of the base the model's output keeps: 1 in
        #: training, then chosen on val (:mod:`rdl.families.node.correction`)
        self.correction_scale = 1.0
        self.compile_loss(functools.partial(node_loss, self.kind))

    def inputs(self, batch, seed_table: str | None = None) -> tuple[tuple, dict]:
        args, kwargs = super().inputs(batch, seed_table)
        if "seed_x" in batch[self.entity]:
            kwargs["seed_x"] = pad_seeds(batch[self.entity].seed_x, args[-1].size(0))
        if self.model.takes_seed_ids:   # the seeds are the first entity nodes
            store = batch[self.entity]
            kwargs["seed_id"] = pad_seeds(store.n_id[: store.input_id.numel()],
                                          args[-1].size(0))
        return args, kwargs

    def forward(self, batch) -> Tensor:
        return output(self.kind, super().forward(batch), batch[self.entity].get("base"),
                      self.target_stats, self.correction_scale)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        # read by rdl.predict only: training, resumed or not, runs at 1
        checkpoint["rdl_correction_scale"] = self.correction_scale

    def loss(self, pred: Tensor, y: Tensor) -> Tensor:
        return self.kind.loss(pred, y, self.target_stats)

    def predict_value(self, pred: Tensor) -> Tensor:
        """The model output as the metrics expect it: probabilities or clamped values."""
        return self.kind.prediction(pred, self.target_stats)

    def step_loss(self, batch) -> tuple[Tensor, int]:
        y = batch[self.entity].y
        if self.train_fn is None:
            return self.loss(self(batch), y), y.size(0)
        targets = (y, batch[self.entity].get("base"), self.target_stats)
        return self.graph_loss(batch, targets), y.size(0)   # one compiled graph

    def predict_step(self, batch, batch_idx):
        """``(row of the split table [B], prediction [B] or [B, C])``, on the CPU."""
        return batch[self.entity].input_id.cpu(), self.predict_value(self(batch)).cpu()

    def eval_step(self, batch, metrics: MetricCollection):
        y = batch[self.entity].y
        pred = self(batch)
        metrics.update(self.predict_value(pred), self.kind.metric_target(y))
        self.log(f"{metrics.prefix}loss", self.loss(pred, y), on_epoch=True, batch_size=y.size(0),
                 sync_dist=True)


def output(kind, out: Tensor, base: Tensor | None, stats: Tensor | None,
           scale: float = 1.0) -> Tensor:
    """A node model's output ``out [B, 1]`` or ``[B, C]`` as its task's kind reads it:
    ``[B]`` or ``[B, C]``, its correction scaled by ``scale`` (chosen after training: no op
    at 1) and applied to ``base`` (each seed's last visible label or tree prior;
    :meth:`~rdl.families.node.kinds.NodeKind.from_base`), if any."""
    out = out.squeeze(-1) if out.size(-1) == 1 else out
    if scale != 1.0:
        out = out * scale
    return out if base is None else kind.from_base(out, base, stats)


def node_loss(kind, out: Tensor, y: Tensor, base: Tensor | None,
              stats: Tensor | None) -> Tensor:
    """The training loss of a node model's output ``out`` against the labels ``y``
    (:func:`output`, then the kind's loss): what a compiled run traces after the model
    (:meth:`TaskModule.compile_loss <rdl.training.module.TaskModule.compile_loss>`)."""
    return kind.loss(output(kind, out, base, stats), y, stats)
