"""How many threads a run's ops use, and how OpenMP's idle threads wait: ``threads`` in
the config (``auto``, a number, or ``off``: torch's and OpenMP's own defaults).

- **The count** (:func:`used`, set for the run and put back after it): ``auto`` is the
  cores this process may use (:mod:`rdl.cores`: CPU affinity, the cgroup quota,
  ``SLURM_CPUS_PER_TASK`` - not the machine's core count, which torch's default follows
  on a quota or a Slurm node), shared among the run's training processes; a number is
  used as given. Over ``auto``, a user's own choice wins: ``OMP_NUM_THREADS`` or
  ``MKL_NUM_THREADS`` in the environment, or a ``torch.set_num_threads`` call before the
  run (a count other than the one torch starts with).
- **The wait policy** (:func:`at_start`, :data:`WAIT_ENV`): a thread that has done its
  share of a parallel region spins a few hundred turns, then sleeps. OpenMP's default
  spin (GNU libgomp's: 300,000 turns) costs nothing on cores a run has alone, but where
  another process holds them it takes their time: two default trainings on two cores
  each kept 0.10-0.15x of their speed alone (issue 50). Sleeping at once
  (``OMP_WAIT_POLICY=PASSIVE``) keeps the share but cost a training alone about a fifth
  of its speed, waking threads at each of a small model's many ops; 300 turns keep most
  of both (``python -m rdl.bench threads``, docs/performance.md). ``GOMP_SPINCOUNT`` is
  GNU libgomp's (torch's pip wheels on Linux), which reads it over the policy; another
  runtime (LLVM's, Intel's) reads only ``OMP_WAIT_POLICY`` and sleeps at once. The OpenMP runtime reads its environment once, when it loads, which is
  when torch is imported: rdl's command lines call :func:`at_start` before they import
  torch, and it is in effect in that process and those it starts (loader workers, DDP's
  processes). A user's ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or ``KMP_BLOCKTIME`` wins;
  ``threads=off`` on the command line leaves it out. In a program that imports torch
  itself (the Python API), call :func:`at_start` (or set ``OMP_WAIT_POLICY``) first.
- **Loader workers** need nothing here: PyTorch's DataLoader sets each worker to one thread
  (``torch.set_num_threads(1)`` in its worker loop), and they inherit the wait policy.

One line of the run's log says what was chosen and why (:func:`used`).
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import subprocess
import sys

from rdl.cores import usable

log = logging.getLogger(__name__)

#: what :func:`at_start` puts in the environment (libgomp: 300 turns, then sleep; other
#: OpenMP runtimes: sleep at once)
WAIT_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "300"}
#: a user's own wait policy (OpenMP's, GNU libgomp's, LLVM's and Intel's): rdl sets none
USER_WAIT = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
#: a user's own thread count: it wins over ``threads=auto``
USER_COUNT = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: the environment variables rdl set (comma-separated), so that a process it starts
#: (a loader worker, DDP's other processes, a benchmark's row) does not take them for the
#: user's
MARK = "RDL_THREADS_SET"
#: ``threads=...`` as Hydra's command line gives it (``+``/``++`` too)
_ON_COMMAND_LINE = re.compile(r"^\+{0,2}threads=(.*)$")
#: what :func:`at_start` did in this process: None (not called), or how the policy came
_started: str | None = None


def check(setting) -> None:
    """A :class:`ValueError` naming ``threads`` where it is not ``auto``, ``off`` or a
    whole number >= 1."""
    whole = isinstance(setting, int) and not isinstance(setting, bool)
    if not (setting in ("auto", "off") or (whole and setting >= 1)):
        raise ValueError(f"threads={setting}: must be auto (from the cores this process may "
                         "use), a whole number >= 1, or off (torch's and OpenMP's defaults)")


def _ours(env) -> set[str]:
    return {n for n in env.get(MARK, "").split(",") if n}


def _users(env, names) -> str | None:
    """The first of ``names`` set in ``env`` by the user (not by rdl)."""
    return next((n for n in names if n in env and n not in _ours(env)), None)


def environment(env: dict, off: bool = False) -> dict:
    """``env`` as a process with ``threads`` on (or ``off``) starts with: rdl's wait policy
    (:data:`WAIT_ENV`, marked as rdl's in :data:`MARK`) unless the user set one; with
    ``off``, without what rdl set."""
    env = dict(env)
    for name in _ours(env):
        env.pop(name, None)
    env.pop(MARK, None)
    if off or _users(env, USER_WAIT):
        return env
    return {**env, **WAIT_ENV, MARK: ",".join(WAIT_ENV)}


def at_start(argv: list[str] | None = None) -> None:
    """The wait policy into this process's environment (:func:`environment`), before
    torch is imported: the first thing rdl's command lines do. ``argv``: the command line,
    where ``threads=off`` leaves it out. Nothing is set once torch is imported (its OpenMP
    runtime has read the environment already). Once a process."""
    global _started
    if _started is not None:
        return
    said = [m.group(1) for a in (sys.argv if argv is None else argv)
            if (m := _ON_COMMAND_LINE.match(a))]
    off = bool(said) and said[-1] == "off"
    if "torch" in sys.modules:
        _started = "late"
        return
    new = environment(os.environ, off)
    for name in set(os.environ) - set(new):
        del os.environ[name]
    os.environ.update(new)
    _started = "off" if off else "on"


def wait_policy() -> str:
    """The OpenMP wait policy in effect, and where it came from."""
    env = os.environ
    user = _users(env, USER_WAIT)
    if user:
        return f"{user}={env[user]} (yours)"
    if _started == "late":
        return ("OpenMP's default (torch was imported before rdl could set " + " ".join(
            f"{n}={v}" for n, v in WAIT_ENV.items()) + "; set it before importing torch)")
    if _started == "off":
        return "OpenMP's default (threads=off)"
    if any(n in env for n in WAIT_ENV) and _ours(env) >= set(WAIT_ENV):
        return " ".join(f"{n}={v}" for n, v in WAIT_ENV.items() if n in env) + " (rdl's)"
    return "OpenMP's default (not set before torch was imported: rdl.threads.at_start())"


@functools.lru_cache(maxsize=1)
def torch_default() -> int:
    """The thread count torch starts with in a process like this one (same environment
    and affinity): asked of a fresh Python, since torch's own (OpenMP's or MKL's default)
    is gone once ``torch.set_num_threads`` is called."""
    try:
        out = subprocess.run([sys.executable, "-c",
                              "import torch; print(torch.get_num_threads())"],
                             capture_output=True, text=True, timeout=300, env=os.environ)
        return int(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return 0     # unknown: no count is taken for the user's


def choose(setting="auto", processes: int = 1) -> tuple[int | None, str]:
    """``(count, why)``: the threads :func:`used` sets (None: torch's as they are)."""
    import torch
    check(setting)
    now = torch.get_num_threads()
    if setting == "off":
        return None, f"{now}, torch's own (threads=off)"
    if setting != "auto":
        return setting, f"{setting} from threads={setting}"
    user = _users(os.environ, USER_COUNT)
    if user:
        return None, f"{now} from {user}={os.environ[user]} (yours)"
    cores, source = usable()
    count = max(1, cores // max(1, processes))
    share = f" shared by {processes} processes" if processes > 1 else ""
    if now != count and _started is None and now != torch_default():
        # torch's count is not what it starts with, and no rdl command line started this
        # process before torch was imported: the user's own torch.set_num_threads
        return None, f"{now} from torch.set_num_threads (yours)"
    return count, f"{count} from {source}{share}"


@contextlib.contextmanager
def used(setting="auto", processes: int = 1):
    """The run's thread count (:func:`choose`) set, logged with the wait policy in one
    line, and put back when the run ends. With several processes, ``OMP_NUM_THREADS``
    says it too (Lightning sets each DDP process's count from the affinity otherwise)."""
    import torch
    count, why = choose(setting, processes)
    policy = wait_policy()
    if setting == "off" and _started == "on":   # threads: off in a file, read after torch
        policy += " (set at the start; threads=off on the command line leaves it out)"
    log.info("threads %s, OpenMP wait policy %s", why, policy)
    before, env = torch.get_num_threads(), dict(os.environ)
    if count is not None and count != before:
        torch.set_num_threads(count)
    if count is not None and processes > 1:
        os.environ.update(OMP_NUM_THREADS=str(count),
                          **{MARK: ",".join(sorted(_ours(os.environ) | {"OMP_NUM_THREADS"}))})
    try:
        yield count
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
        for name in ("OMP_NUM_THREADS", MARK):
            if name in env:
                os.environ[name] = env[name]
            else:
                os.environ.pop(name, None)
