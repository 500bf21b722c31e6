"""The cores this process may use (:func:`usable_cores`), and what limits them
(:func:`usable`): its CPU affinity (``taskset``, a cpuset), the CPU quota of its cgroup
(a container's ``--cpus``, systemd's ``CPUQuota``; cgroup v2 ``cpu.max`` or v1
``cpu.cfs_quota_us``) and Slurm's ``SLURM_CPUS_PER_TASK``, never the machine's core count
alone: a Slurm job given 4 cores of a 64-core node, or a container with a quota, runs 64
threads on 4 cores otherwise. The one rule that loader workers
(:mod:`rdl.training.loader_workers`), compute threads (:mod:`rdl.threads`) and LightGBM's
threads (:mod:`rdl.baselines.trees`) are sized by.

Read by hand: the standard library gives the affinity (``os.sched_getaffinity``) but
no quota, and Python 3.13's ``os.process_cpu_count`` is the affinity only.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

#: the process's cgroups (``hierarchy:controllers:path`` lines) and where each is mounted
PROC_CGROUP = Path("/proc/self/cgroup")
PROC_MOUNTS = Path("/proc/self/mountinfo")


def usable() -> tuple[int, str]:
    """``(cores, source)``: the fewest cores any limit allows, at least 1, and which limit
    that is (``CPU affinity``, ``cgroup v2 quota``, ``cgroup v1 quota``,
    ``SLURM_CPUS_PER_TASK``; ``os.cpu_count()`` where none is known). A tie names the
    first of these."""
    known = []
    if hasattr(os, "sched_getaffinity"):
        known.append((len(os.sched_getaffinity(0)), "CPU affinity"))
    known += [(n, f"cgroup {version} quota") for n, version in _cgroup_quotas()]
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "").strip()
    if slurm.isdigit() and int(slurm) > 0:
        known.append((int(slurm), "SLURM_CPUS_PER_TASK"))
    if not known:
        return max(1, os.cpu_count() or 1), "os.cpu_count()"
    cores, source = min(known, key=lambda k: k[0])    # min keeps the first of a tie
    return max(1, cores), source


def usable_cores() -> int:
    """The cores this process may use (:func:`usable`)."""
    return usable()[0]


def _cgroup_quotas() -> list[tuple[int, str]]:
    """The tightest CPU quota of each cgroup version that has one, on the way from this
    process's cgroup up to its hierarchy's mount, in whole cores (rounded up: 2.5 cores of
    quota let 3 threads run): ``[(cores, "v2" | "v1")]``."""
    try:
        own = PROC_CGROUP.read_text().splitlines()
        mounts = PROC_MOUNTS.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in own:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hierarchy == "0" and controllers == "":
            found = [_v2(f) for f in _folders(mounts, path, "cgroup2", None)]
            version = "v2"
        elif "cpu" in controllers.split(","):
            found = [_v1(f) for f in _folders(mounts, path, "cgroup", "cpu")]
            version = "v1"
        else:
            continue
        found = [q for q in found if q is not None]
        if found:
            out.append((max(1, math.ceil(min(found))), version))
    return out


def _folders(mounts: list[str], path: str, fstype: str, controller: str | None):
    """The folders of cgroup ``path`` and of those above it, up to the mount's root, in
    each mount of ``fstype`` (with ``controller`` among its options, for v1). A path the
    mount does not hold (a container that sees its own cgroup as the mount's root) starts
    at the mount's root."""
    for line in mounts:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        if len(after) < 3 or after[0] != fstype:
            continue
        if controller is not None and controller not in after[2].split(","):
            continue
        root, point = fields[3], Path(fields[4])
        held = path == root or path.startswith(root.rstrip("/") + "/")
        rel = path[len(root):] if held else ""
        folder = point / rel.strip("/")
        while True:
            yield folder
            if folder == point or point not in folder.parents:
                break
            folder = folder.parent


def _v2(folder: Path) -> float | None:
    """cgroup v2: ``cpu.max`` holds ``"<quota> <period>"`` or ``"max <period>"``."""
    try:
        limit, period = (folder / "cpu.max").read_text().split()[:2]
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        return None


def _v1(folder: Path) -> float | None:
    """cgroup v1: ``cpu.cfs_quota_us`` (-1: none) over ``cpu.cfs_period_us``."""
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None
