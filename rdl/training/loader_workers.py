"""How many loader worker processes a run starts, and how many batches each keeps ready:
``data.num_workers`` and ``data.prefetch_factor`` (``rdl/conf/data/loader/default.yaml``).

``auto`` sizes them from the cores this process may use (:func:`usable_cores`), not from
the machine's: a container, a job scheduler or ``taskset`` give a process fewer cores than
``os.cpu_count()`` says, and a worker per core it cannot use only queues for those it can.
A number given for either setting is used as given.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

#: ``num_workers=auto`` starts at most this many workers
MAX_AUTO_WORKERS = 8
#: ``prefetch_factor=auto``: the workers keep this many batches ready in all (a few steps),
#: and each at least PyTorch's default of 2
AHEAD = 4
#: cgroup v2: the process's cgroup (``0::/path``) and where the hierarchy is mounted
PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


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


def usable_cores() -> int:
    """The cores this process may use: the fewest of its CPU affinity
    (``os.sched_getaffinity``), the cgroup v2 CPU quota (``cpu.max``) of its cgroup and of
    those above it, and ``SLURM_CPUS_PER_TASK``; ``os.cpu_count()`` where none is known.
    At least 1."""
    known = []
    if hasattr(os, "sched_getaffinity"):
        known.append(len(os.sched_getaffinity(0)))
    quota = _cgroup_quota()
    if quota is not None:
        known.append(quota)
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if slurm.strip().isdigit() and int(slurm) > 0:
        known.append(int(slurm))
    return max(1, min(known) if known else (os.cpu_count() or 1))


def _cgroup_quota() -> int | None:
    """The tightest cgroup v2 ``cpu.max`` quota on the way from this process's cgroup up to
    the root, in whole cores (rounded up), or None (no quota, or no cgroup v2)."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return None
    own = next((ln[3:] for ln in lines if ln.startswith("0::")), None)
    if own is None:
        return None
    folder, found = CGROUP_ROOT / own.strip().lstrip("/"), []
    while True:
        try:
            limit, period = (folder / "cpu.max").read_text().split()[:2]
            if limit != "max":
                found.append(math.ceil(int(limit) / int(period)))
        except (OSError, ValueError):
            pass
        if folder == CGROUP_ROOT or CGROUP_ROOT not in folder.parents:
            break
        folder = folder.parent
    return max(1, min(found)) if found else None


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
