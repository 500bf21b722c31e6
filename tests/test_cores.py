"""The cores a process may use (rdl/cores.py): the fewest of its CPU affinity, the cgroup v2
and v1 CPU quotas on the way up from its cgroup, and ``SLURM_CPUS_PER_TASK``; never the
machine's count where one of them is known. ``machine``: tests/conftest.py."""
from __future__ import annotations

from rdl import cores
from rdl.cores import usable, usable_cores


def test_usable_cores_are_the_fewest_any_limit_allows(machine, monkeypatch):
    monkeypatch.setattr(cores.os, "cpu_count", lambda: 64)   # never read alone
    machine(16)
    assert usable() == (16, "CPU affinity")      # affinity only: no quota, no SLURM
    machine(16, v2={"/": "max 100000"}, v1={"/": (-1, 100000)})
    assert usable() == (16, "CPU affinity")      # "max", -1: no quota
    machine(16, v2={"/": "250000 100000"})
    assert usable() == (3, "cgroup v2 quota")    # 2.5 cores of quota: 3 can run
    # the process's own cgroup and the tightest above it
    machine(16, v2={"/job": "400000 100000", "/job/step": "800000 100000"}, own="/job/step")
    assert usable_cores() == 4
    machine(16, v2={"/job": "400000 100000"}, own="/job/step/task")   # no cpu.max on the way
    assert usable_cores() == 4
    machine(16, slurm=6)
    assert usable() == (6, "SLURM_CPUS_PER_TASK")
    machine(2, v2={"/": "800000 100000"}, slurm=6)
    assert usable() == (2, "CPU affinity")       # taskset to 2 cores


def test_a_cgroup_v1_quota_counts_too(machine):
    machine(16, v1={"/": (-1, 100000), "/docker": (150000, 50000)}, own="/docker")
    assert usable() == (3, "cgroup v1 quota")
    # a container that sees only its own cgroup: the path is not in the mount, whose root
    # holds the container's quota
    machine(16, v1={"/": (200000, 100000)}, own="/docker/0123abc")
    assert usable() == (2, "cgroup v1 quota")
    machine(16, v1={"/": (500000, 100000)}, v2={"/": "300000 100000"})
    assert usable() == (3, "cgroup v2 quota")    # hybrid: the tighter of the two


def test_without_cgroup_files_or_affinity(machine, monkeypatch, tmp_path):
    machine(5, v2={"/": "100000 100000"})
    monkeypatch.setattr(cores, "PROC_CGROUP", tmp_path / "absent")
    assert usable() == (5, "CPU affinity")
    monkeypatch.delattr(cores.os, "sched_getaffinity")      # macOS, Windows
    monkeypatch.setattr(cores.os, "cpu_count", lambda: 7)
    assert usable() == (7, "os.cpu_count()")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "nonsense")
    assert usable() == (7, "os.cpu_count()")


def test_the_real_machine_reads_as_at_least_its_affinity_allows():
    n, source = usable()
    assert 1 <= n <= len(cores.os.sched_getaffinity(0)) and source


def test_every_user_of_the_cores_follows_a_quota(machine):
    """Loader workers and LightGBM's threads are sized by the same rule."""
    from rdl.baselines.trees import threads
    from rdl.training.loader_workers import LoaderWorkers
    machine(16)
    assert threads() == 2 and LoaderWorkers.of("auto", "auto", on_cuda=False).workers == 8
    machine(16, v1={"/": (200000, 100000)})      # a container given 2 cores of 16
    assert threads() == 1 and LoaderWorkers.of("auto", "auto", on_cuda=False).workers == 1
