"""The threads of a run (rdl/threads.py): the count from the cores the process may use,
unless the user chose one (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, their own
``torch.set_num_threads``) or the config did (``threads``); OpenMP's wait policy set by
rdl's command lines before torch starts (seen in what GNU libgomp says it read:
``OMP_DISPLAY_ENV=verbose``), unless the user set theirs; one line in the log."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import torch

from rdl import threads
from rdl.threads import MARK, check, choose, environment, used


@pytest.fixture
def fresh(monkeypatch):
    """No thread setting of the user's in the environment, no command line started this
    process, and torch's count put back after the test."""
    for name in (*threads.USER_WAIT, *threads.USER_COUNT, MARK):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "_started", None)
    before = torch.get_num_threads()
    yield monkeypatch
    torch.set_num_threads(before)


@pytest.mark.parametrize("bad", ["many", 0, -2, 1.5, True, None])
def test_a_bad_setting_is_named(bad):
    with pytest.raises(ValueError, match=rf"^threads={bad}: must be auto"):
        check(bad)
    for good in ("auto", "off", 1, 64):
        check(good)


def test_the_wait_policy_is_rdls_unless_the_user_set_one():
    ours = environment({"PATH": "/bin"})
    assert ours == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "300",
                    MARK: "OMP_WAIT_POLICY,GOMP_SPINCOUNT"}
    assert environment(ours) == ours                 # inherited from rdl: not the user's
    for name, value in (("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "1000"),
                        ("KMP_BLOCKTIME", "0")):
        assert environment({name: value}) == {name: value}
    # threads=off: what rdl set goes, what the user set stays
    assert environment(ours, off=True) == {"PATH": "/bin"}
    assert environment({"OMP_WAIT_POLICY": "ACTIVE"}, off=True) == {"OMP_WAIT_POLICY": "ACTIVE"}


def test_auto_is_the_usable_cores_shared_by_the_processes(fresh):
    fresh.setattr(threads, "usable", lambda: (3, "cgroup v2 quota"))
    fresh.setattr(threads, "torch_default", lambda: torch.get_num_threads())
    assert choose("auto") == (3, "3 from cgroup v2 quota")
    assert choose("auto", processes=2) == (1, "1 from cgroup v2 quota shared by 2 processes")
    assert choose(5) == (5, "5 from threads=5")
    now = torch.get_num_threads()
    assert choose("off") == (None, f"{now}, torch's own (threads=off)")


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_the_users_environment_wins_over_auto(fresh, name):
    fresh.setattr(threads, "usable", lambda: (3, "CPU affinity"))
    fresh.setattr(threads, "torch_default", lambda: torch.get_num_threads())
    fresh.setenv(name, "7")
    now = torch.get_num_threads()
    assert choose("auto") == (None, f"{now} from {name}=7 (yours)")
    fresh.setenv(MARK, f"OMP_WAIT_POLICY,{name}")    # set by rdl (a DDP process's parent)
    assert choose("auto")[0] == 3


def test_the_users_own_set_num_threads_wins_over_auto(fresh):
    fresh.setattr(threads, "usable", lambda: (3, "CPU affinity"))
    torch.set_num_threads(1)                 # the user's, before rdl.fit
    fresh.setattr(threads, "torch_default", lambda: 2)   # what torch starts with
    assert choose("auto") == (None, "1 from torch.set_num_threads (yours)")
    fresh.setattr(threads, "torch_default", lambda: 1)   # torch's own count after all
    assert choose("auto") == (3, "3 from CPU affinity")
    # a process that an rdl command line started: torch's count is its own, never asked
    fresh.setattr(threads, "_started", "on")
    fresh.setattr(threads, "torch_default", lambda: pytest.fail("asked"))
    assert choose("auto") == (3, "3 from CPU affinity")


def test_the_run_sets_the_count_says_it_in_one_line_and_puts_it_back(fresh, caplog):
    fresh.setattr(threads, "usable", lambda: (1, "SLURM_CPUS_PER_TASK"))
    fresh.setattr(threads, "torch_default", lambda: torch.get_num_threads())
    for name, value in environment({}).items():    # as rdl's command line starts
        fresh.setenv(name, value)
    torch.set_num_threads(2)
    with caplog.at_level(logging.INFO, logger="rdl.threads"):
        with used("auto"):
            assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    assert [r.getMessage() for r in caplog.records] == [
        "threads 1 from SLURM_CPUS_PER_TASK, OpenMP wait policy OMP_WAIT_POLICY=PASSIVE "
        "GOMP_SPINCOUNT=300 (rdl's)"]
    # several processes: OMP_NUM_THREADS says it too, as rdl's, until the run ends
    fresh.setattr(threads, "usable", lambda: (4, "CPU affinity"))
    with used("auto", processes=2):
        assert os.environ["OMP_NUM_THREADS"] == "2"
        assert set(os.environ[MARK].split(",")) == {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                                    "OMP_NUM_THREADS"}
        assert choose("auto", processes=2)[0] == 2     # not taken for the user's
    assert "OMP_NUM_THREADS" not in os.environ
    assert os.environ[MARK] == "OMP_WAIT_POLICY,GOMP_SPINCOUNT"


def test_threads_off_in_a_file_says_the_wait_policy_stayed(fresh, caplog):
    for name, value in environment({}).items():
        fresh.setenv(name, value)
    fresh.setattr(threads, "_started", "on")     # set at the start; the file said off
    with caplog.at_level(logging.INFO, logger="rdl.threads"), used("off"):
        pass
    assert caplog.records[-1].getMessage().endswith(
        "OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=300 (rdl's) (set at the start; threads=off "
        "on the command line "
        "leaves it out)")


def test_the_wait_policy_line_says_where_it_came_from(fresh):
    fresh.setenv("GOMP_SPINCOUNT", "5000")
    assert threads.wait_policy() == "GOMP_SPINCOUNT=5000 (yours)"
    fresh.delenv("GOMP_SPINCOUNT")
    fresh.setattr(threads, "_started", "late")
    assert "torch was imported before rdl could set" in threads.wait_policy()
    fresh.setattr(threads, "_started", "off")
    assert threads.wait_policy() == "OpenMP's default (threads=off)"


def test_torch_default_asks_a_fresh_process(fresh):
    threads.torch_default.cache_clear()
    fresh.setenv("OMP_NUM_THREADS", "1")    # (MKL caps a larger count at the cores)
    try:
        assert threads.torch_default() == 1
    finally:
        threads.torch_default.cache_clear()


def test_at_start_reads_the_command_line_and_sets_nothing_once_torch_is_in(fresh):
    def start(*argv):
        fresh.setattr(threads, "_started", None)
        threads.at_start(["python", *argv])
        return {n: os.environ.get(n) for n in ("OMP_WAIT_POLICY", MARK)}

    passive = {"OMP_WAIT_POLICY": "PASSIVE", MARK: "OMP_WAIT_POLICY,GOMP_SPINCOUNT"}
    fresh.setitem(sys.modules, "torch", None)
    assert start("task=user-churn") == {"OMP_WAIT_POLICY": None, MARK: None}   # too late
    assert threads._started == "late"
    fresh.delitem(sys.modules, "torch")            # as a command line starts
    assert start("task=user-churn") == passive and threads._started == "on"
    assert start("++threads=off") == {"OMP_WAIT_POLICY": None, MARK: None}
    assert threads._started == "off"
    assert start("threads=off", "threads=4") == passive              # the last one counts
    fresh.setenv("OMP_WAIT_POLICY", "ACTIVE")
    fresh.delenv(MARK)
    assert start() == {"OMP_WAIT_POLICY": "ACTIVE", MARK: None}       # the user's


def spin_counts(commands: dict) -> dict:
    """What GNU libgomp read as its spin count when the torch of each ``python *args``
    started (rdl's: 300 turns, then sleep), ``{name: args}`` run at once."""
    env = {k: v for k, v in os.environ.items()
           if k not in (*threads.USER_WAIT, *threads.USER_COUNT, MARK)}
    procs = {name: subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True,
                                    env={**env, "OMP_DISPLAY_ENV": "verbose"})
             for name, args in commands.items()}
    said = {}
    for name, proc in procs.items():
        err = proc.communicate(timeout=600)[1]
        assert proc.returncode == 0, (name, err[-2000:])
        counts = [ln.split("=", 1)[1].strip(" '") for ln in err.splitlines()
                  if ln.strip().startswith("GOMP_SPINCOUNT =")]
        if not counts:
            pytest.skip("torch's OpenMP runtime is not GNU libgomp (no OMP_DISPLAY_ENV lines)")
        said[name] = counts[0]
    return said


def test_rdls_command_lines_set_the_wait_policy_before_torch_starts():
    console = ("import sys; sys.argv = ['rdl-train', '--cfg', 'job', 'threads=off']; "
               "from rdl.commands import train; train()")
    said = spin_counts({"train": ("-m", "rdl.train", "--cfg", "job"),
                        "predict": ("-m", "rdl.predict", "--cfg", "job"),
                        "bench": ("-m", "rdl.bench", "e2e", "--help"),
                        "rdl-train threads=off": ("-c", console)})
    assert said["train"] == said["predict"] == said["bench"] == "300"
    assert said["rdl-train threads=off"] not in ("0", "300")      # libgomp's own
