"""The training loss reaches the loggers as it did when ``training_step`` called
``self.log`` twice at every step (``train/loss_step`` and ``train/loss_epoch``), with
``self.log`` called only at the steps the loggers write and once per epoch."""
from __future__ import annotations

import csv
import warnings

import pytest
import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from pytorch_lightning.loggers import CSVLogger

from rdl.api import build
from rdl.families.node.module import NodeTaskModule
from rdl.training.process import quiet


class PerStepLogging(NodeTaskModule):
    """The logging this replaced: both values through ``self.log`` at every step."""

    def training_step(self, batch, batch_idx):
        loss, n = self.step_loss(batch)
        self.log("train/loss_step", loss, on_step=True, on_epoch=False, batch_size=n)
        self.log("train/loss_epoch", loss, on_step=False, on_epoch=True, batch_size=n,
                 sync_dist=True)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        pass

    def on_train_epoch_end(self):
        pass


class StopAt(pl.Callback):
    """Stops the run at the end of a batch (as ``max_time`` does): the loggers write it."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.step:
            trainer.should_stop = True


def train(tiny_cfg, tmp_path, cls, stop: int | None, every: int = 2) -> tuple[list[dict], int]:
    """The loss columns of metrics.csv after 3 epochs of 5 steps, and the self.log calls
    (``every``: trainer.log_every_n_steps)."""
    cfg = tiny_cfg("task=user-churn", "compile.enabled=false",
                   f"trainer.log_every_n_steps={every}")
    pl.seed_everything(0, verbose=False)
    _, dm, module = build(cfg)
    module.__class__ = cls
    calls = [0]
    log = module.log

    def counted(*args, **kwargs):
        calls[0] += 1
        return log(*args, **kwargs)

    module.log = counted
    trainer = instantiate(cfg.trainer, default_root_dir=tmp_path, max_epochs=3,
                          limit_train_batches=5, limit_val_batches=0, num_sanity_val_steps=0,
                          enable_checkpointing=False, enable_progress_bar=False,
                          callbacks=[StopAt(stop)] if stop else [],
                          logger=CSVLogger(tmp_path, name="", version=""))
    trainer.fit(module, datamodule=dm)
    with open(tmp_path / "metrics.csv") as f:
        rows = [{k: v for k, v in r.items() if k in ("step", "train/loss_step",
                                                       "train/loss_epoch") and v}
                for r in csv.DictReader(f)]
    return [r for r in rows if len(r) > 1], calls[0]


@pytest.mark.parametrize("stop", [None, 7])
def test_the_loss_is_logged_as_before_with_fewer_calls(tiny_cfg, tmp_path, stop):
    new, new_calls = train(tiny_cfg, tmp_path / "new", NodeTaskModule, stop)
    old, old_calls = train(tiny_cfg, tmp_path / "old", PerStepLogging, stop)
    assert new == old
    logged = [int(r["step"]) for r in new if "train/loss_step" in r]
    epochs = sum("train/loss_epoch" in r for r in new)
    assert epochs == (2 if stop else 3)
    if stop:  # the step that stopped the run, not one of every 2nd
        assert logged == [1, 3, 5, 6]
    else:
        assert logged == list(range(1, 15, 2))
    assert old_calls == 2 * (stop or 15)
    assert new_calls == len(logged) + epochs  # at the steps the loggers write, per epoch


def test_an_epoch_shorter_than_the_logging_interval_logs_its_last_step_unwarned(tiny_cfg,
                                                                                 tmp_path):
    """Lightning warns where an epoch has fewer batches than log_every_n_steps (none of its
    steps would be logged) and advises a lower interval: rdl lowers it to the epoch's
    batches, and a run (verbose=false) leaves the warning out."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet():
            rows, _ = train(tiny_cfg, tmp_path, NodeTaskModule, None, every=50)
    assert [int(r["step"]) for r in rows if "train/loss_step" in r] == [4, 9, 14]
    assert [str(w.message) for w in seen if "logging interval" in str(w.message)] == []


def test_a_half_precision_loss_is_summed_in_float32(tiny_cfg):
    """As Lightning's logging did (bf16-true or fp16 training)."""
    _, _, module = build(tiny_cfg("task=user-churn", "compile.enabled=false"))
    loss = torch.tensor(0.1, dtype=torch.bfloat16)
    module.step_loss = lambda batch: (loss, 3)
    module.on_train_epoch_start()
    for _ in range(2):
        assert module.training_step(None, 0) is loss
    assert module._loss_sum.dtype == torch.float32 and module._loss_count == 6
    assert module._loss_sum.item() == 6 * loss.float().item()


def test_a_lightning_without_the_loggers_test_logs_every_step():
    """``loggers_write_now`` reads a private Lightning property; without it every step logs
    (the old behaviour), with a warning, rather than an AttributeError mid-training."""
    from types import SimpleNamespace

    from rdl.training.module import loggers_write_now
    assert loggers_write_now(SimpleNamespace(
        _logger_connector=SimpleNamespace(should_update_logs=False))) is False
    with pytest.warns(UserWarning, match="should_update_logs"):
        assert loggers_write_now(SimpleNamespace()) is True
