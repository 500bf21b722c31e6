"""Compile together, time alone: how ``python -m rdl.bench gpu`` runs its rows at once.

A row of the end-to-end benchmark compiles for a minute or more (cold caches) and is timed
for seconds; a GPU check has minutes. So several rows run at once, each in its own process
group, and take turns at the timed part: a row that has compiled waits at its gate
(:class:`Gate`, in the row's process) until the parent (:class:`Turns`) gives it the turn,
having stopped every other row (``SIGSTOP`` to its process group: compile workers and
loader workers too). Nothing else then runs on the CPU or the GPU while a row is timed.
When the row is done, the others go on (``SIGCONT``).

Written by hand: no library schedules processes this way (a lock would leave the other
rows compiling on the cores, and launching kernels, while one is timed). The two sides
talk through files: ``<gate>.ready`` (the row waits), ``<gate>.go`` (its turn),
``<gate>.done`` (its turn is over).
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


class Gate:
    """The row's side. ``path`` None (a row run alone): no waiting."""

    def __init__(self, path: str | None):
        self.path = path
        self.turn: list[float] = []   # when the turn began and ended (time.time())

    def _file(self, what: str) -> Path:
        return Path(f"{self.path}.{what}")

    def wait(self) -> None:
        """Block until it is this row's turn."""
        if not self.path:
            return
        self._file("ready").touch()
        while not self._file("go").exists():
            time.sleep(0.005)
        self.turn = [time.time()]

    def done(self) -> None:
        if self.path and not self._file("done").exists():
            self.turn.append(time.time())
            self._file("done").touch()


class Turns:
    """The parent's side: ``step(running)`` every few milliseconds with the running rows
    (``{name: Popen}``, each the leader of its own process group, ``start_new_session``)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.holder: str | None = None     # the row being timed
        self.stopped: set[str] = set()
        self.paused: dict[str, float] = {}  # seconds each row spent stopped
        self._since = 0.0

    def gate(self, name: str) -> str:
        """The gate path to give row ``name`` (its ``Gate``)."""
        return str(self.folder / name)

    def started(self, name: str, proc) -> None:
        """A row just started: stopped at once if another is being timed."""
        self.paused.setdefault(name, 0.0)
        if self.holder is not None:
            self._signal({name: proc}, signal.SIGSTOP)

    def step(self, running: dict) -> None:
        if self.holder is not None:
            proc = running.get(self.holder)
            if proc is None or proc.poll() is not None or Gate(self.gate(self.holder))._file(
                    "done").exists():
                self._release(running)
        if self.holder is None:
            ready = [n for n, p in running.items() if p.poll() is None
                     and Gate(self.gate(n))._file("ready").exists()
                     and not Gate(self.gate(n))._file("go").exists()]
            if ready:
                self.holder = ready[0]
                self._signal({n: p for n, p in running.items() if n != self.holder},
                             signal.SIGSTOP)
                self._since = time.monotonic()
                Gate(self.gate(self.holder))._file("go").touch()

    def _release(self, running: dict) -> None:
        waited = time.monotonic() - self._since
        for name in self.stopped:
            self.paused[name] = self.paused.get(name, 0.0) + waited
        self._signal({n: p for n, p in running.items() if n in self.stopped}, signal.SIGCONT)
        self.stopped.clear()
        self.holder = None

    def _signal(self, procs: dict, sig: int) -> None:
        for name, proc in procs.items():
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                continue
            if sig == signal.SIGSTOP:
                self.stopped.add(name)

    def close(self, procs: dict) -> None:
        """Let these processes go on, stopped or not (before killing or waiting for them)."""
        self._signal(procs, signal.SIGCONT)
        self.stopped -= set(procs)
