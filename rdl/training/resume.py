"""Resume a run exactly: what Lightning's checkpoints lack for it.

``ckpt_path=...`` makes Lightning restore the weights, optimiser, LR schedule, epoch, step
and callbacks (the best checkpoint so far). A run resumed mid-epoch then still differs from
the uninterrupted one in two ways, which :class:`ResumeState` closes:

- **random state**: dropout draws from torch's global generator; the checkpoint carries the
  generators' states (torch, CUDA, NumPy, Python) as they were when it was written, and
  they are set back when training resumes, after the sanity check has run;
- **position in the epoch**: Lightning counts the batches an interrupted epoch trained on,
  but a loader starts its epoch from the beginning. rdl's train loaders shuffle per epoch
  from ``(seed, epoch)`` alone and sample each batch from a generator seeded by its seeds
  (:mod:`rdl.training.batches`, ``TemporalSampler(rng_per_batch=True)``), so the resumed
  epoch only has to leave out the batches already trained on (:meth:`SeedBatches.skip`).

Exact with ``num_workers=0`` (the default): worker processes are forked before a resumed
epoch is set up, so with workers the resumed epoch's order is not the original one.
"""
from __future__ import annotations

import logging
import random

import numpy as np
import pytorch_lightning as pl
import torch

from rdl.training.batches import SeedBatches

log = logging.getLogger(__name__)


def rng_states() -> dict:
    """The states of torch's (CPU and, if in use, CUDA), NumPy's and Python's generators."""
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    # Tensors and plain Python values only: Lightning loads checkpoints with weights_only.
    states = {"torch": torch.get_rng_state(),
              "numpy": (kind, torch.from_numpy(key.astype(np.int64)), pos, has_gauss, gauss),
              "python": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    kind, key, pos, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, key.numpy().astype(np.uint32), pos, has_gauss, gauss))
    random.setstate(states["python"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class ResumeState(pl.Callback):
    """Saves the random state with every checkpoint; on resume, sets it back and makes
    the train loader skip the batches the interrupted epoch had trained on."""

    def __init__(self):
        self._pending: dict | None = None

    def state_dict(self) -> dict:
        return {"rng": rng_states()}

    def load_state_dict(self, state_dict: dict) -> None:
        self._pending = state_dict.get("rng")

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._pending is None:
            return
        states, self._pending = self._pending, None
        fit_loop = trainer.fit_loop
        if fit_loop.restarted_mid_epoch:
            # Batches whose optimiser step ran (a checkpoint written at a batch's end
            # counts that batch: ``completed`` is raised only after the hooks).
            done = fit_loop.epoch_loop.batch_progress.current.processed
            skipped = 0
            loaders = trainer.train_dataloader
            loaders = loaders.values() if isinstance(loaders, dict) else (
                loaders if isinstance(loaders, (list, tuple)) else [loaders])
            for loader in loaders:
                sampler = getattr(loader, "batch_sampler", None)
                if isinstance(sampler, SeedBatches):
                    sampler.skip(done)
                    skipped += 1
            if not skipped:
                log.warning("resuming mid-epoch: the train loader cannot skip the %d batches "
                            "already trained on, this epoch starts from its first", done)
        set_rng_states(states)
