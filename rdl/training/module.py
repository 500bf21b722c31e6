"""LightningModules: compiled model, tensor learning rate, metrics on the device.

:class:`TaskModule` holds what every task shares (compilation, the optimiser and its
schedule, the metric collections, turning a batch into model inputs); each family's module
defines the steps (:mod:`rdl.families.node.module`, :mod:`rdl.families.link.module`).
"""
from __future__ import annotations

import warnings
from typing import Callable

import pytorch_lightning as pl
import torch
from torch import Tensor
from torchmetrics import MetricCollection

from rdl.nn.encoder import HeteroEncoder
from rdl.tasks import Task
from rdl.training.buckets import warm
from rdl.training.compile import (EVAL_BATCHES, CompileOptions, compile_model,
                                  compile_optimizer_step, planned_eval_batches)
from rdl.training.shapes import Padded, Shapes


class TaskModule(pl.LightningModule):
    """Shared machinery; subclasses define the steps.

    Args:
        model: a plain ``nn.Module`` taking ``(tf_dict, edge_index_dict, time_dict,
            batch_dict, seed_time, ...)``.
        task: the task (kind, tables, metrics).
        optimizer: ``partial`` taking ``(params, lr=Tensor)``; the LR is a tensor so that a
            scheduler changing it never triggers a recompile.
        lr: the base learning rate.
        scheduler: ``partial`` taking ``(optimizer, total_steps=...)``, stepped every
            optimizer step; ``None`` keeps the LR constant.
        compile: :class:`~rdl.training.compile.CompileOptions` (or a dict of them, or a
            bool for ``enabled``): compile the model and the optimiser step.
        shapes: how batches are shaped for the model (:mod:`rdl.training.shapes`; the
            loaders must shape them so too: ``rdl.train`` gives both the run's); default
            :class:`~rdl.training.shapes.Padded`, as the data module's.
    """

    def __init__(self, model: torch.nn.Module, task: Task, optimizer: Callable, lr: float = 0.005,
                 scheduler: Callable | None = None, compile: CompileOptions | dict | bool = True,
                 shapes: Shapes | None = None):
        super().__init__()
        self.model, self.task = model, task
        self.optimizer_fn, self.scheduler_fn, self.lr = optimizer, scheduler, lr
        self.entity = task.entity_table
        self.time_types = model.time_types
        # No compute groups: finding them compares metric states on the host.
        metrics = MetricCollection(dict(task.metrics), compute_groups=False)
        self.val_metrics = metrics.clone(prefix="val/")
        self.test_metrics = metrics.clone(prefix="test/")
        self.compile_options = CompileOptions.of(compile)
        self.shapes = shapes or Padded()
        forward = model
        if self.compile_options.enabled:
            forward = compile_model(model, self.compile_options.cpu_patches,
                                    self.compile_options.dynamo, **self.compile_options.kwargs)
        self._step_loss, self._loss_sum, self._loss_count = None, None, 0  # see training_step
        # Not nn.Module attributes: the compiled wrappers share the model's parameters,
        # and checkpoints keep the plain model's keys. ``train_fn``: see ``compile_loss``.
        object.__setattr__(self, "forward_fn", forward)
        object.__setattr__(self, "train_fn", None)
        # the model's table encoders, for the stacked ones' padded sizes (plain attribute:
        # a module attribute would save them twice)
        object.__setattr__(self, "_encoder", next(
            (m for m in model.modules() if isinstance(m, HeteroEncoder)), None))
        self._warmed: set[str] = set()
        #: evaluation runs the compiled model (:meth:`choose_eval`)
        self.eval_compiled = self.compile_options.eval is True

    def compile_loss(self, loss: Callable) -> None:
        """``train_fn``: the model with ``loss(output, *targets)`` after it
        (:class:`ModelLoss`) compiled as a training step's one graph, where the model is
        compiled and each of its outputs is a real seed's (:attr:`Shapes.keeps_all
        <rdl.training.shapes.Shapes.keeps_all>`); :meth:`graph_loss` calls it. On a GPU the
        loss and its gradient are otherwise a dozen eager kernels or more before and after
        the compiled ones. Buckets and token sets drop pad seeds' outputs on the host
        first: their loss stays after the compiled model."""
        if self.compile_options.enabled and self.shapes.keeps_all:
            options = self.compile_options
            object.__setattr__(self, "train_fn", compile_model(
                ModelLoss(self.model, loss), options.cpu_patches, options.dynamo,
                **options.kwargs))

    def graph_loss(self, batch, targets: tuple) -> Tensor:
        """The training loss of ``batch`` through ``train_fn`` (:meth:`compile_loss`):
        the model over the batch's inputs and the loss of its output and ``targets``."""
        args, kwargs = self.inputs(batch)
        return self.train_fn(*args, targets=targets, **kwargs)

    def set_forward(self, fn: Callable) -> None:
        """Run the model as ``fn`` from now on (``self.model``: eager), the loss after it."""
        object.__setattr__(self, "forward_fn", fn)
        object.__setattr__(self, "train_fn", None)

    def inputs(self, batch, seed_table: str | None = None) -> tuple[tuple, dict]:
        """The model's positional and keyword inputs from a sampled batch seeded at
        ``seed_table`` nodes: each node type's distinct rows and each node's row among them
        (``row_dict``), completed as the run's shapes say (:meth:`Shapes.complete
        <rdl.training.shapes.Shapes.complete>`: pad nodes and edges for a compiled model).
        A token model gets token sets. Stacked table encoders get their padded sizes
        (``stack_sizes``: decided here, from the batch's sizes on the host)."""
        if self.shapes.tokens:
            args = self.token_inputs(batch, seed_table)
            return args, self.stack_sizes(args[0])
        types = [nt for nt in batch.node_types if "tf" in batch[nt]]
        args = (
            {nt: batch[nt].tf for nt in types},
            batch.collect("edge_index"),
            {nt: batch[nt].time for nt in self.time_types},
            {nt: batch[nt].batch for nt in self.time_types},
            batch[seed_table or self.entity].seed_time,
        )
        args = self.shapes.complete(batch, args, {nt: batch[nt].num_nodes for nt in types})
        return args, {"row_dict": {nt: batch[nt].tf_index for nt in types},
                      **self.stack_sizes(args[0])}

    def stack_sizes(self, tf_dict: dict) -> dict:
        """``{"stack_sizes": ...}`` where the model's table encoders are stacked
        (:meth:`HeteroEncoder.stack_sizes <rdl.nn.encoder.HeteroEncoder.stack_sizes>`), else
        nothing."""
        sizes = None if self._encoder is None else self._encoder.stack_sizes(tf_dict)
        return {} if sizes is None else {"stack_sizes": sizes}

    def token_inputs(self, batch, seed_table: str | None = None) -> tuple:
        """A token model's inputs (:class:`~rdl.nn.transformer.RelGraphTransformer`): per
        node type its distinct rows, and per token ``[P, K_t]`` its row among them, mask,
        hop, degree and time (:class:`~rdl.graph.tokens.TokenSet`), and the seed times
        ``[P]``: ``P`` is the number of seeds ``B`` or, with static shapes, the batch size
        the token sets are padded to (pad seeds are as old as the first seed)."""
        types, timed = self.model.types, self.model.time_types
        seed_time = batch[seed_table or self.entity].seed_time
        return ({t: batch[t].tf for t in types},
                {t: batch[t].tok_row for t in types},
                {t: batch[t].tok_mask for t in types},
                {t: batch[t].tok_hop for t in types},
                {t: batch[t].tok_deg for t in types},
                {t: batch[t].tok_time for t in timed},
                pad_seeds(seed_time, batch[types[0]].tok_mask.size(0)))

    @property
    def model_fn(self) -> Callable:
        """The model as this mode runs it: compiled (``forward_fn``), or eager where
        evaluation is not compiled (:meth:`choose_eval`)."""
        return self.forward_fn if self.training or self.eval_compiled else self.model

    def choose_eval(self) -> None:
        """Whether evaluation runs compiled (``compile.eval``; ``auto``: decided at the
        first evaluation, prediction or test by the batches planned,
        :func:`~rdl.training.compile.planned_eval_batches`; once compiled, it stays)."""
        trainer = self._trainer
        if self.compile_options.eval == "auto" and not self.eval_compiled and trainer:
            self.eval_compiled = planned_eval_batches(trainer) >= EVAL_BATCHES

    def forward(self, batch, *extra):
        args, kwargs = self.inputs(batch)
        out = self.model_fn(*args, *extra, **kwargs)
        n = self.shapes.keep(batch, self.entity)
        if n is not None:   # pad seeds' outputs dropped (a size the host knows: no sync)
            out = tuple(o[:n] for o in out) if isinstance(out, tuple) else out[:n]
        return out

    def on_train_start(self):
        # An epoch of fewer batches than the logging interval would log no step of its own
        # (Lightning warns so as it counts them; rdl.training.process leaves that out): the
        # interval becomes the epoch, as Lightning advises (a lower log_every_n_steps).
        trainer = self.trainer
        if 0 < trainer.num_training_batches < trainer.log_every_n_steps:
            trainer.log_every_n_steps = int(trainer.num_training_batches)
        self.warm_buckets("train")

    def on_train_end(self):
        # Nothing reads the gradients after training, and with CUDA graphs
        # (``reduce-overhead``) they are outputs of the backward's graph, overwritten by
        # the next replay of another graph (evaluation's): Lightning's teardown, moving the
        # module to the CPU, would read one and fail.
        self.zero_grad(set_to_none=True)

    def on_validation_start(self):
        self.choose_eval()
        self.warm_buckets("val")

    def on_test_start(self):
        self.choose_eval()

    def on_predict_start(self):
        self.choose_eval()

    def warm_buckets(self, split: str) -> None:
        """With static-shape buckets (``data.buckets.warm``) and a compiled model, every
        bucket of ``split`` compiled before its first step, once a process
        (:func:`rdl.training.buckets.warm`)."""
        dm = getattr(self.trainer, "datamodule", None)
        settings = getattr(dm, "buckets", None)
        compiled = self.compile_options.enabled and (split == "train" or self.eval_compiled)
        if not (compiled and settings and settings.warm) or split in self._warmed:
            return
        self._warmed.add(split)
        warm(self, dm.bucket_examples(split), train=split == "train")

    # torchmetrics' compute gathers the states of every process: each holds the same value,
    # and "max" over them (Lightning's sync_dist) keeps it exactly, where a mean could round.
    def on_validation_epoch_end(self):
        self.log_dict(self.val_metrics.compute(), prog_bar=True, sync_dist=True, reduce_fx="max")
        self.val_metrics.reset()

    def on_test_epoch_end(self):
        self.log_dict(self.test_metrics.compute(), sync_dist=True, reduce_fx="max")
        self.test_metrics.reset()

    def step_loss(self, batch) -> tuple[Tensor, int]:
        """The training loss of a batch and the number of examples it averages."""
        raise NotImplementedError

    # The training loss reaches the loggers as ``train/loss_step`` (this process's loss at
    # the steps they write) and ``train/loss_epoch`` (the epoch's mean over all processes,
    # weighted by examples). Each ``self.log`` call costs the host a few hundred
    # microseconds (Lightning moves its result metric to the device at every call), so
    # the step's value is logged only at the steps the loggers write, and the epoch's
    # mean is accumulated here, on the device, and logged once. Written by hand because
    # torchmetrics' ``MeanMetric`` either checks for NaNs on the host (a sync every step)
    # or, with ``nan_strategy="disable"`` (torchmetrics 1.9), drops the weights.
    def on_train_epoch_start(self):
        self._loss_sum, self._loss_count = None, 0

    def training_step(self, batch, batch_idx):
        loss, n = self.step_loss(batch)
        # Lightning's arithmetic for a mean logged on_epoch (a half-precision loss summed
        # in float32): no rounding of its own.
        self._step_loss = loss.detach()
        if self._step_loss.dtype not in (torch.float32, torch.float64):
            self._step_loss = self._step_loss.float()
        weighted = self._step_loss * n
        self._loss_sum = weighted if self._loss_sum is None else self._loss_sum + weighted
        self._loss_count += n
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        # After the callbacks' own hooks (one may stop the run, which makes the loggers
        # write this step): the same test Lightning's LearningRateMonitor makes.
        if self.trainer.fast_dev_run or loggers_write_now(self.trainer):
            # Not on the progress bar: it would read the loss on the host at every step.
            self.log("train/loss_step", self._step_loss, on_step=True, on_epoch=False)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        # The epoch's loss so far: a run resumed mid-epoch logs the epoch's whole mean.
        checkpoint["rdl_epoch_loss"] = (self._loss_sum, self._loss_count)

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self._loss_sum, self._loss_count = checkpoint.get("rdl_epoch_loss", (None, 0))

    def on_train_epoch_end(self):
        if not self._loss_count:
            return
        reduce = self.trainer.strategy.reduce
        total = reduce(self._loss_sum, reduce_op="sum")
        count = reduce(torch.tensor(self._loss_count, device=total.device), reduce_op="sum")
        # The same value on every process: "max" keeps it (and Lightning asks for sync_dist).
        self.log("train/loss_epoch", total / count, on_step=False, on_epoch=True,
                 sync_dist=True, reduce_fx="max")

    def validation_step(self, batch, batch_idx):
        self.eval_step(batch, self.val_metrics)

    def test_step(self, batch, batch_idx):
        self.eval_step(batch, self.test_metrics)

    def configure_optimizers(self):
        lr = torch.tensor(self.lr, dtype=torch.float, device=self.device)
        # On CUDA a tensor LR needs the capturable update (no host read of the LR per step).
        extra = {"capturable": True} if self.device.type == "cuda" else {}
        opt = self.optimizer_fn(self.model.parameters(), lr=lr, **extra)
        if self.compile_options.enabled and self.compile_options.optimizer:
            compile_optimizer_step(opt)  # before the scheduler wraps ``step``
        if self.scheduler_fn is None:
            return opt
        sched = self.scheduler_fn(opt, total_steps=int(self.trainer.estimated_stepping_batches))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class ModelLoss(torch.nn.Module):
    """A model with its training loss after it: ``forward(*inputs, targets=(...), **kw)``
    is ``loss(model(*inputs, **kw), *targets)``, which a compiled run traces as one graph
    (:meth:`TaskModule.compile_loss`)."""

    def __init__(self, model: torch.nn.Module, loss: Callable):
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, *args, targets: tuple = (), **kwargs) -> Tensor:
        return self.loss(self.model(*args, **kwargs), *targets)


def loggers_write_now(trainer: pl.Trainer) -> bool:
    """Whether the loggers write at this step: Lightning's own test, which its
    ``LearningRateMonitor`` makes too (``_logger_connector.should_update_logs``, private).
    A Lightning without it: True, every step logs (a warning says so, once)."""
    should = getattr(getattr(trainer, "_logger_connector", None), "should_update_logs", None)
    if should is None:
        # a warning from one place in the code: Python shows it once
        warnings.warn(f"pytorch_lightning {pl.__version__} has no "
                      "_logger_connector.should_update_logs: the training loss is logged at "
                      "every step (more host work a step)", stacklevel=2)
        return True
    return bool(should)


def pad_seeds(x: Tensor, rows: int) -> Tensor:
    """``x [B, ...]`` with ``rows - B`` copies of its first row after it (pad seeds of a
    static batch: a seed time as old as the first seed's, or its seed features)."""
    if x.size(0) >= rows:
        return x
    return torch.cat([x, x[:1].expand(rows - x.size(0), *x.shape[1:])])
