"""Sync audit: a training step (forward, loss, backward, optimiser and LR-schedule step,
``self.log``) and an evaluation step (forward, metric update) never force the host to wait
for the device.

Runs Lightning's real loop on the CPU with a ``TorchDispatchMode`` that records every op
which, on CUDA, copies a value to the host (``.item()``, ``bool(tensor)``, ``nonzero``,
boolean-mask indexing, ``unique``, ``repeat_interleave`` without ``output_size``, ...),
from the start to the end of each train and validation batch, the progress bar's update
included (the loggers read values every ``log_every_n_steps`` only, and at epoch end).

The model itself is compiled in training, and Dynamo does not run compiled code under a
dispatch mode, so the audit pauses inside the model's forward and backward and the
compiled model is covered otherwise: a host sync is data-dependent (a value or a size read
from a tensor), which Dynamo cannot put in a graph, so it would be a graph break, and
``test_compile`` compiles every model with ``fullgraph=True``. The model run eagerly, on a
device other than the CPU, is audited by ``test_device_step.py``.
"""
from __future__ import annotations

import traceback

import pytest
import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from torch.utils._python_dispatch import TorchDispatchMode

from rdl.api import build

aten = torch.ops.aten
ALWAYS = {aten._local_scalar_dense, aten.item, aten.is_nonzero, aten.equal, aten.nonzero,
          aten.masked_select, aten._unique, aten._unique2, aten.unique_dim,
          aten.unique_consecutive, aten.unique_dim_consecutive, aten.bincount,
          aten.allclose, aten.histc}
# On the CPU, torchmetrics checks whether predictions are probabilities with a Python
# ``if`` (cheap there); on other devices the same function uses ``torch.where`` instead.
CPU_ONLY_BRANCHES = {"normalize_logits_if_needed"}


def forces_sync(func, args, kwargs) -> bool:
    packet = func.overloadpacket
    if packet in ALWAYS:
        return True
    if packet is aten.repeat_interleave:  # the output size is read from the device
        return isinstance(args[0], torch.Tensor) and args[0].dim() > 0 and \
            kwargs.get("output_size") is None and (len(args) < 4 or args[3] is None)
    if packet in (aten.index, aten.index_put, aten.index_put_):  # boolean masks -> nonzero
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] or ())
    return False


class SyncRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.events: list[str] = []
        self.paused = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.paused and forces_sync(func, args, kwargs):
            stack = traceback.extract_stack()[:-1]
            if not CPU_ONLY_BRANCHES & {f.name for f in stack}:
                where = next((f for f in reversed(stack) if "/torch/" not in f.filename), stack[-1])
                self.events.append(f"{func} at {where.filename}:{where.lineno} ({where.name})")
        return func(*args, **kwargs)


class Audit(pl.Callback):
    """Records from the start to the end of every train and validation batch, except
    inside the model (see the module's docstring)."""

    def __init__(self):
        self.recorder = SyncRecorder()
        self.batches = 0

    def setup(self, trainer, module, stage):
        # the model's call, and a compiled run's model and loss (TaskModule.compile_loss)
        for name in ("forward_fn", "train_fn"):
            if getattr(module, name, None) is not None:
                object.__setattr__(module, name, self.paused(getattr(module, name)))

    def paused(self, model):
        def forward(*args, **kwargs):
            self.recorder.paused += 1
            try:
                return model(*args, **kwargs)
            finally:
                self.recorder.paused -= 1
        return forward

    def _start(self, *args):
        self.recorder.__enter__()
        self.batches += 1

    def _stop(self, *args):
        self.recorder.__exit__(None, None, None)

    def on_before_backward(self, *args):
        self.recorder.paused += 1

    def on_after_backward(self, *args):
        self.recorder.paused -= 1

    on_train_batch_start = on_validation_batch_start = _start
    on_train_batch_end = on_validation_batch_end = _stop


@pytest.mark.parametrize("task,model", [
    ("user-churn", "sage"), ("item-sales", "sage"), ("user-churn", "graph-transformer"),
    ("user-item-purchase", "idgnn"),
    ("user-item-purchase", "contextgnn"), ("user-item-purchase", "two-tower")])
def test_training_and_evaluation_steps_never_sync(tmp_path, tiny_cfg, task, model):
    cfg = tiny_cfg(
        f"task={task}", f"model={model}", "compile.enabled=false",
        "scheduler=cosine", "scheduler.warmup_steps=2", f"trainer.default_root_dir={tmp_path}",
        "trainer.max_epochs=1", "trainer.limit_train_batches=4", "trainer.limit_val_batches=2",
        "+trainer.num_sanity_val_steps=0")
    _, dm, module = build(cfg)
    audit = Audit()
    trainer = instantiate(cfg.trainer, callbacks=[audit], logger=False,
                          enable_checkpointing=False)
    # Last, so that its window also covers the progress bar's per-batch update.
    trainer.callbacks.append(trainer.callbacks.pop(trainer.callbacks.index(audit)))
    trainer.fit(module, datamodule=dm)
    assert audit.batches == 4 + min(2, len(dm.val_dataloader())), "it saw every batch"
    assert trainer.global_step == 4
    assert not audit.recorder.events, "\n".join(audit.recorder.events)


def test_the_audit_sees_a_sync():
    recorder = SyncRecorder()
    x = torch.arange(6.0)
    with recorder:
        x.sum().item()
        x[x > 2]
        torch.repeat_interleave(torch.tensor([1, 2]))
        torch.repeat_interleave(torch.tensor([1, 2]), output_size=3)  # no sync: size given
        x.nonzero()
    assert len(recorder.events) == 4, recorder.events
