"""The loader alone, the step alone, both together: which of them bounds a training epoch
(:func:`rdl.bench.e2e.measure`'s ``loader_seeds_per_s``, ``step_seeds_per_s``, ``bound``).

After the epochs that train as a user's run does (``seeds_per_s``: the loader and the
step together), in the same ``Trainer.fit``, the same process and the same row's turn:

- **the loader alone** (:class:`LoaderAlone`): the configured train loader (its workers,
  pinning and prefetch, as they are) iterated for as many passes and batches as the
  epochs, each batch moved to the device as Lightning moves it
  (``strategy.batch_to_device``: the data module's non-blocking copy), on CUDA
  synchronised at each pass's end; no step;
- **the step alone**: the last pass's batches, kept on the device, replayed as as many
  more epochs of the same fit (:class:`Replayable`): Lightning's whole loop (its hooks,
  callbacks, logging, the forward, loss, backward and optimiser step) without a loader.

Each is timed as the end-to-end epochs are: from the first batch in hand to the end,
every batch's seeds counted, the first pass or epoch untimed. What bounds the row
(:func:`bound`): the slower alone, where together comes within :data:`WITHIN` of it; else
``neither`` (the two do not overlap: a loader in the training process, say).
"""
from __future__ import annotations

import math
import time

import pytorch_lightning as pl
import torch

#: together within this fraction of the slower alone: that one bounds the row
WITHIN = 0.10


def bound(together: float | None, loader: float | None, step: float | None,
          within: float = WITHIN) -> str | None:
    """``loader`` or ``step`` (seeds/s alone), whichever is slower, where ``together``
    comes within ``within`` of it; ``neither`` where together is slower still (the two
    add up rather than overlap); None where a figure is missing."""
    if not all(x and math.isfinite(x) for x in (together, loader, step)):
        return None
    slower, name = min((loader, "loader"), (step, "step"))
    return name if together >= (1 - within) * slower else "neither"


def seeds_of(batch, module) -> int:
    """The seeds of a training batch (a batch padded to a static shape counts its real
    seeds, ``batch_size``)."""
    store = batch[module.entity] if hasattr(module, "entity") else None
    n = getattr(store, "seed_time", None) if store is not None else None
    if n is None:
        return 0
    return int(store.batch_size) if "batch_size" in store else int(n.numel())


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Replayable:
    """The data module's train loader as Lightning sees it: the loader itself (every
    attribute Lightning reads or sets is the loader's), or, once :attr:`kept` holds
    batches, those batches, on each pass."""

    def __init__(self, loader):
        object.__setattr__(self, "loader", loader)
        object.__setattr__(self, "kept", None)

    def __iter__(self):
        return iter(self.kept) if self.kept is not None else iter(self.loader)

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def __setattr__(self, name, value):
        if name == "kept":
            object.__setattr__(self, name, value)
        else:
            setattr(self.loader, name, value)


def replayable(dm) -> list:
    """Makes ``dm.train_dataloader()`` return a :class:`Replayable`; the list it returns
    receives each one made."""
    made, own = [], dm.train_dataloader

    def train_dataloader():
        made.append(Replayable(own()))
        return made[-1]
    dm.train_dataloader = train_dataloader
    return made


class LoaderAlone(pl.Callback):
    """At the start of epoch ``start``: the loader alone, ``passes`` passes of ``batches``
    batches (the first untimed); then the fit's remaining epochs replay the last pass's
    batches (the step alone). ``result`` after: ``loader_seeds_per_s``, ``loader_ms`` (a
    batch), the loader's workers and prefetch; ``peak`` the device's peak memory before
    batches were kept."""

    def __init__(self, made: list, device: torch.device, start: int, passes: int,
                 batches: int):
        self.made, self.device, self.start = made, device, start
        self.passes, self.batches = passes, batches
        self.result, self.peak = {}, None

    def on_train_epoch_start(self, trainer, module):
        if trainer.current_epoch != self.start or not self.made:
            return
        if self.device.type == "cuda":
            self.peak = torch.cuda.max_memory_allocated(self.device)
        replay = self.made[-1]
        timed, kept = [], []
        for _ in range(self.passes):
            kept, t, seeds = [], None, 0
            for batch in replay.loader:
                batch = trainer.strategy.batch_to_device(batch)   # as Lightning moves it
                if t is None:
                    t = time.perf_counter()     # the first batch in hand, as the epochs
                seeds += seeds_of(batch, module)
                kept.append(batch)
                if len(kept) == self.batches:
                    break
            sync(self.device)
            timed.append((time.perf_counter() - t if t is not None else 0.0, seeds,
                          len(kept)))
        replay.kept = kept
        secs, seeds, n = (sum(x[i] for x in timed[1:]) for i in range(3))
        loader = replay.loader
        self.result = {"loader_seeds_per_s": seeds / secs if secs else None,
                       "loader_ms": 1000 * secs / n if n else None,
                       "loader_workers": loader.num_workers,
                       "prefetch": loader.prefetch_factor if loader.num_workers else None}
