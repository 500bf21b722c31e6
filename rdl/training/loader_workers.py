"""How many loader worker processes a run starts, and how many batches each keeps ready:
``data.num_workers`` and ``data.prefetch_factor`` (``rdl/conf/data/loader/default.yaml``).

``auto`` sizes them from the cores this process may use (:func:`rdl.cores.usable_cores`),
not from the machine's: a container, a job scheduler or ``taskset`` give a process fewer
cores than ``os.cpu_count()`` says, and a worker per core it cannot use only queues for
those it can.
A number given for either setting is used as given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from rdl.cores import usable_cores

#: ``num_workers=auto`` starts at most this many workers
MAX_AUTO_WORKERS = 8
#: ``prefetch_factor=auto``: the workers keep this many batches ready in all (a few steps),
#: and each at least PyTorch's default of 2
AHEAD = 4


def check(num_workers, prefetch_factor) -> None:
    """A :class:`ValueError` naming ``data.num_workers`` or ``data.prefetch_factor`` where
    it is neither a number it can be nor ``auto`` (nor null, for the prefetch)."""
    if not (num_workers == "auto" or (_whole(num_workers) and num_workers >= 0)):
        raise ValueError(f"data.num_workers={num_workers}: must be a whole number >= 0 "
                         "(0: the loader in the training process) or auto (from the cores)")
    if not (prefetch_factor is None or prefetch_factor == "auto"
            or (_whole(prefetch_factor) and prefetch_factor >= 1)):
        raise ValueError(f"data.prefetch_factor={prefetch_factor}: must be a whole number >= 1 "
                         "(batches each loader worker keeps ready), auto, or null "
                         "(PyTorch's default)")
    if num_workers == 0 and _whole(prefetch_factor):
        raise ValueError(f"data.prefetch_factor={prefetch_factor}: batches each loader worker "
                         "keeps ready, and data.num_workers=0 starts none (set "
                         "data.num_workers, or data.prefetch_factor=null)")


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class LoaderWorkers:
    """What a run's loaders start: ``workers`` processes, each keeping ``prefetch`` batches
    ready (None: PyTorch's default, 2 with workers); ``cores``: what ``auto`` saw (None:
    nothing was sized)."""
    workers: int
    prefetch: int | None
    cores: int | None = None

    @classmethod
    def of(cls, num_workers, prefetch_factor, on_cuda: bool, processes: int = 1):
        """From the settings: ``auto`` workers are the cores usable by each of the
        ``processes`` training processes on this machine, less one for the process itself,
        at most :data:`MAX_AUTO_WORKERS`, and at least one when training on CUDA (the
        GPU's step then overlaps the next batch's sampling); ``auto`` prefetch keeps
        :data:`AHEAD` batches ready in all, at least two a worker."""
        check(num_workers, prefetch_factor)
        cores = None
        workers = num_workers
        if num_workers == "auto":
            cores = max(1, usable_cores() // max(1, processes))
            workers = min(MAX_AUTO_WORKERS, cores - 1)
            workers = max(1 if on_cuda else 0, workers)
        prefetch = prefetch_factor
        if not workers:
            prefetch = None    # no worker to keep a batch ready
        elif prefetch_factor == "auto":
            prefetch = max(2, math.ceil(AHEAD / workers))
        return cls(workers, prefetch, cores)

    def loader_kwargs(self) -> dict:
        """The DataLoader's arguments: workers kept from one pass to the next."""
        return {"num_workers": self.workers, "persistent_workers": self.workers > 0,
                "prefetch_factor": self.prefetch}

    def describe(self) -> str:
        cores = f" ({self.cores} cores usable)" if self.cores is not None else ""
        prefetch = self.prefetch if self.prefetch is not None else (
            "PyTorch's default (2)" if self.workers else "none")
        plural = "s" if self.workers != 1 else ""
        return f"loader: {self.workers} worker{plural}{cores}, prefetch {prefetch}"
