"""Shared fixtures: rdl's packaged config composed with tiny settings, and ``python -m
rdl.train`` run in a subprocess with them, over one synthetic-database cache per session."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import rdl
from tests.zygote import command


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (pyproject's addopts): a worker per core, at most four. Each test file
    stays on one worker (``--dist loadfile``): test_readme.py starts its commands together."""
    return max(1, min(4, os.cpu_count() or 1))


def pytest_configure(config):
    """With several workers, each gets its share of the cores, it and the runs it starts
    (OMP_NUM_THREADS): OpenMP threads that outnumber the cores spin against each other."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch
        threads = max(1, (os.cpu_count() or 1) // workers)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)


#: A tiny database and model (the debug preset rdl ships): a test run takes seconds.
TINY = ("debug=tiny",)
#: How the README trains each task: a link task with the model its experiment picks (a node
#: model, the config's default, cannot rank).
TASK_RUN = {"user-item-purchase": ("experiment=user-item-purchase",)}


def task_overrides(name: str) -> tuple[str, ...]:
    """The overrides that train task ``name`` as the README does."""
    return TASK_RUN.get(name, (f"task={name}",))


#: A short training run: one epoch of a few batches.
SHORT = ("trainer.max_epochs=1", "trainer.limit_train_batches=3", "trainer.limit_val_batches=2")


@pytest.fixture(scope="session")
def rdl_cache(tmp_path_factory) -> Path:
    """One cache of synthetic databases and graphs for the whole session."""
    return tmp_path_factory.mktemp("rdl-cache")


@pytest.fixture(scope="session")
def tiny_cfg(rdl_cache):
    """``tiny_cfg(*overrides)``: rdl's config as ``python -m rdl.train`` composes it, with
    :data:`TINY` settings and the session cache, then ``overrides``."""
    def make(*overrides: str):
        with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
            return compose("config", [*TINY, f"data.cache_dir={rdl_cache}", *overrides])
    return make


@pytest.fixture(scope="session")
def run_train(rdl_cache):
    """``run_train(run_dir, *overrides, tiny=True)``: ``python -m rdl.train`` in a
    subprocess (a fork of :func:`tests.zygote.command`'s zygote where it runs the same) writing to ``run_dir``
    (with :data:`TINY` and :data:`SHORT` settings unless ``tiny=False``); returns the
    ``CompletedProcess``."""
    def run(run_dir: Path, *overrides: str, tiny: bool = True, env: dict | None = None,
            python: tuple = (sys.executable, "-m", "rdl.train"), timeout: int = 900):
        env = {**os.environ, "RDL_CACHE": str(rdl_cache), "HYDRA_FULL_ERROR": "0", **(env or {})}
        settings = (*TINY, *SHORT) if tiny else ()
        cmd = [*python, f"hydra.run.dir={run_dir}", *settings, *overrides]
        return command(cmd, env=env, timeout=timeout)
    return run


# -- RelBench's fake database and tasks, written by RelBench's own code (tests/relbench_fake.py)
@pytest.fixture(scope="session")
def relbench_v1(tmp_path_factory) -> Path:
    """RelBench 1.1.0's fake dataset and tasks in its 1.x/2.x layout (the ``relbench`` test
    extra)."""
    pytest.importorskip("relbench.datasets.fake", reason="the relbench test extra")
    from relbench_fake import write_v1
    return write_v1(tmp_path_factory.mktemp("rel-fake-v1"))


@pytest.fixture(scope="session")
def relbench3(tmp_path_factory) -> Path:
    """RelBench 3.0.2 in a folder of its own (``pip install --no-deps --target``), for
    subprocesses: it cannot share an environment with 1.1.0."""
    from relbench_fake import relbench3
    target = relbench3(tmp_path_factory.mktemp("relbench-3"))
    if target is None:
        pytest.skip("pip could not install relbench==3.0.2 (no package index reachable?)")
    return target


@pytest.fixture(scope="session")
def relbench_v3(relbench_v1, relbench3, tmp_path_factory) -> Path:
    """The same fake dataset in RelBench 3's layout (manifests), with its labels as RelBench
    3 makes them."""
    from relbench_fake import write_v3
    return write_v3(relbench_v1, tmp_path_factory.mktemp("rel-fake-v3"), relbench3)


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """``machine(affinity, v2={path: "limit period"}, v1={path: (quota_us, period_us)},
    own="/", slurm=None)``: this process's cores as :mod:`rdl.cores` reads them: its
    affinity, a cgroup v2 hierarchy and a v1 ``cpu`` hierarchy (``/proc/self/mountinfo``,
    ``/proc/self/cgroup``) with the quotas given, in cgroup ``own``."""
    from rdl import cores

    def make(affinity: int, v2: dict | None = None, v1: dict | None = None, own: str = "/",
             slurm=None):
        monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: set(range(affinity)))
        root = tmp_path / f"cgroup{len(list(tmp_path.glob('cgroup*')))}"   # a fresh one
        for path, quota in (v2 or {}).items():
            folder = root / "unified" / path.strip("/")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "cpu.max").write_text(quota + "\n")
        for path, (quota, period) in (v1 or {}).items():
            folder = root / "cpu,cpuacct" / path.strip("/")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "cpu.cfs_quota_us").write_text(f"{quota}\n")
            (folder / "cpu.cfs_period_us").write_text(f"{period}\n")
        (root / "unified").mkdir(parents=True, exist_ok=True)
        mounts = tmp_path / "mountinfo"
        mounts.write_text(
            f"24 30 0:22 / /proc rw,nosuid - proc proc rw\n"
            f"31 23 0:28 / {root} rw,relatime - tmpfs tmpfs rw,mode=755\n"
            f"32 31 0:29 / {root}/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
            f"33 31 0:30 / {root}/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
            f"34 31 0:31 / {root}/memory rw,nosuid - cgroup cgroup rw,memory\n")
        proc = tmp_path / "proc-cgroup"
        proc.write_text(f"4:memory:{own}\n2:cpu,cpuacct:{own}\n0::{own}\n")
        monkeypatch.setattr(cores, "PROC_MOUNTS", mounts)
        monkeypatch.setattr(cores, "PROC_CGROUP", proc)
        if slurm is None:
            monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
        else:
            monkeypatch.setenv("SLURM_CPUS_PER_TASK", str(slurm))
    return make
