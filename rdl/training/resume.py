"""Resume a run exactly, from any checkpoint it wrote: what Lightning's checkpoints lack.

``ckpt_path=...`` makes Lightning restore the weights, optimiser, LR schedule, epoch, step
and callbacks (the best checkpoint so far, early stopping's patience). A resumed run would
still differ from the uninterrupted one in four ways, which this module closes:

- **random numbers**: dropout draws from torch's global generator, which everything else
  draws from too, at moments a resumed run does not repeat: a loader's iterator takes a
  number from it when it is made (Lightning makes the resumed epoch's before anything of
  the checkpoint's random state could be set back), the sanity check, worker start-up.
  :class:`ResumeState` therefore seeds the generator at the start of every training
  batch from ``(seed, epoch, batch)`` alone: a step's random numbers depend on where it is
  in the run, not on what ran before it in this process.
- **position in the epoch**: Lightning counts the batches an interrupted epoch trained on,
  but a loader starts its epoch from the first batch. rdl's train loaders shuffle from
  ``(seed, epoch)`` alone and sample each batch from a generator seeded by its seeds
  (:mod:`rdl.training.batches`, ``TemporalSampler(rng_per_batch=True)``), so the resumed
  loader only has to start at the checkpoint's epoch and leave out the batches already
  trained on. It is told so before it is made (:meth:`RelDataModule.start_at
  <rdl.training.datamodule.RelDataModule.start_at>`): loader workers, which fetch their
  first batches as soon as the loader's iterator exists, fetch the right ones.
- **a checkpoint Lightning resumes from wrongly**: one written at an epoch's last batch,
  before its validation, resumes without that validation; :class:`StepCheckpoint` (the
  ``last`` callback) writes none there, and ``last.ckpt`` at every epoch's end instead.
- **a kill while a checkpoint is written**: Lightning writes through a temporary file only
  where the temporary directory is on the checkpoint's file system (``fsspec`` moves it
  from ``/tmp``, copying across file systems). :class:`AtomicCheckpointIO` writes beside
  the checkpoint and renames: a checkpoint is whole or absent, and a run killed while
  writing resumes from the one before.
"""
from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.plugins.io import TorchCheckpointIO

from rdl.caching import atomic_file
from rdl.training.batches import SeedBatches

log = logging.getLogger(__name__)


def step_seed(seed: int, epoch: int, batch: int) -> int:
    """The seed of torch's generator at training batch ``batch`` of epoch ``epoch``."""
    return ((int(seed) * 1_000_003 + int(epoch)) * 1_000_003 + int(batch)) % (2**63)


#: accelerators whose generators :func:`seed_generators` seeds once they have started
STARTED_LATER = ("cuda", "xpu", "mtia")


def seed_generators(seed: int, device: torch.device) -> None:
    """``torch.manual_seed(seed)`` for the generators a step on ``device`` draws from: the
    CPU's, and every device's of an accelerator this process has started (the same
    states as ``torch.manual_seed`` leaves them; on MPS its generator; another device
    type: ``torch.manual_seed`` itself).

    Written by hand for the host's time: ``torch.manual_seed`` also queues the seed for
    each accelerator this process has not started, with a formatted stack trace (file
    reads and all): at every training batch 0.2 ms per such accelerator at the depth of
    Lightning's loop (XPU and MTIA on a CUDA machine, also CUDA on a CPU-only build),
    beside a GPU step of about 20 ms (docs/performance.md)."""
    if device.type not in ("cpu", "mps", *STARTED_LATER):
        torch.manual_seed(seed)
        return
    torch.default_generator.manual_seed(seed)
    for name in STARTED_LATER:
        started = getattr(getattr(torch, name, None), "is_initialized", None)
        if started is not None and started():
            getattr(torch, name).manual_seed_all(seed)
    if device.type == "mps":
        torch.mps.manual_seed(seed)


class ResumeState(pl.Callback):
    """Seeds each training batch's random numbers from its place in the run, saves that
    place with every checkpoint, and, on resume, makes the train loader start there.

    Args:
        seed: the run's seed (``${seed}``).
    """

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self._trainer: pl.Trainer | None = None
        #: ``(epoch, batches)`` a resumed run's train loader starts at, from the checkpoint
        self._start: tuple[int, int] | None = None

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._trainer = trainer

    def state_dict(self) -> dict:
        """Where the next training batch is: the epoch and the batches of it trained on.
        A checkpoint written at an epoch's end (after its validation, or at its last
        batch) points at the next epoch's first batch."""
        trainer = self._trainer
        if trainer is None:
            return {}
        # Batches whose optimiser step ran: a checkpoint written at a batch's end counts
        # that batch (Lightning raises ``completed`` only after the hooks).
        done = trainer.fit_loop.epoch_loop.batch_progress.current.processed
        epoch = trainer.current_epoch
        if done >= trainer.num_training_batches:
            epoch, done = epoch + 1, 0
        return {"epoch": epoch, "batches": done}

    def load_state_dict(self, state_dict: dict) -> None:
        if "epoch" not in state_dict:  # a checkpoint of an rdl before this one
            log.warning("this checkpoint does not say where in its epoch it was written: "
                        "the resumed run starts its epoch from the first batch, and its "
                        "random numbers differ from the uninterrupted run's")
            return
        self._start = (state_dict["epoch"], state_dict["batches"])
        self._tell_datamodule()

    def _tell_datamodule(self) -> None:
        """Hands the start to the data module, for the train loader it makes next. Lightning
        restores callbacks before the optimisers are configured, whose schedule asks for
        the number of steps and so makes the train loader: this runs at the restore."""
        dm = None if self._trainer is None else self._trainer.datamodule
        if self._start is not None and dm is not None and hasattr(dm, "start_at"):
            dm.start_at(self._start)
            self._start = None

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._trainer = trainer
        self._tell_datamodule()

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        dm = trainer.datamodule
        pending = self._start or getattr(dm, "pending_start", None)
        if pending is None:
            return
        # The train loader was made before the data module could be told (or is not rdl's):
        # skip on its batch sampler, where its iterator has not read it yet (no workers).
        self._start = None
        if dm is not None and hasattr(dm, "start_at"):
            dm.start_at(None)
        sampler = getattr(trainer.train_dataloader, "batch_sampler", None)
        if isinstance(sampler, SeedBatches) and not getattr(trainer.train_dataloader,
                                                            "num_workers", 0):
            sampler.sampler.set_epoch(pending[0])
            sampler.skip(pending[1])
        else:
            log.warning("resuming: the train loader cannot be told to start at epoch %d, "
                        "batch %d; the resumed epoch starts from its first batch, and the "
                        "run ends otherwise than the uninterrupted one", *pending)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                             batch, batch_idx: int) -> None:
        progress = trainer.fit_loop.epoch_progress
        if progress.current.ready <= trainer.current_epoch:
            # Lightning (2.6) resumed from a checkpoint written at an epoch's end (when its
            # validation ended) as from the middle of that epoch, then went on to the next
            # without counting its start or calling on_train_epoch_start: a checkpoint of
            # this epoch would then resume as a fresh epoch, all of its batches again.
            # Count the start, and call the hooks it skipped.
            progress.increment_ready()
            progress.increment_started()
            for callback in trainer.callbacks:
                if callback is not self:
                    callback.on_train_epoch_start(trainer, pl_module)
            pl_module.on_train_epoch_start()
        # Seeds the CPU's and the devices' generators (host-side state: no device sync).
        seed_generators(step_seed(self.seed, trainer.current_epoch, batch_idx),
                        pl_module.device)


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint writer, through a temporary file beside the checkpoint
    (:func:`rdl.caching.atomic_file`): a kill leaves the old checkpoint or the new one."""

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as tmp:
            torch.save(checkpoint, tmp)


class StepCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` every ``every_n_train_steps`` steps, but at each
    epoch's end after its validation, not at its last batch before it.

    Lightning resumes from a checkpoint of an epoch's last batch without that epoch's
    validation (it counts it as done), so the best checkpoint and early stopping would miss
    it; and since Lightning 2.6 ``save_last`` writes ``last.ckpt`` at an epoch's end only
    when the monitored metric improved. This writes it at every epoch's end, after the
    best checkpoint's callback (the state it saves includes that epoch's best).
    """

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx + 1 >= trainer.num_training_batches:
            return   # the epoch's end checkpoint follows its validation
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        if trainer.sanity_checking or trainer.fast_dev_run or self.dirpath is None:
            return
        # weights_only as ModelCheckpoint passes it (False: the whole state, to resume
        # from); left out, Lightning says at every save that it defaulted to False
        trainer.save_checkpoint(self.format_checkpoint_name({}), self.save_weights_only)
