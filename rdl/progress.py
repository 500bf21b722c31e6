"""Progress while a user waits: the one rule for every stage of a run that can take more
than a few seconds (loading the database and its checks, the split tables, the graph build,
the depth-2 synthesis, the trees, the ranker, compiling).

- :class:`stage`: a line through the caller's logger when the stage starts
  (``graph build...``) and one when it ends, with its seconds (``graph build: 12.3 s``, and
  what the stage has to add after a ``;``). They go wherever the run's log goes (Hydra's
  console and log file), so a log, a pipe or CI shows where the time went.
- :func:`bar`: a loop of known length inside a long stage also gets tqdm's bar (tqdm comes
  with Lightning) on stderr, but only where stderr is a terminal (tqdm's own rule,
  ``disable=None``) and only once the loop has run :data:`BAR_DELAY` seconds (tqdm's
  ``delay``): a short loop, a small database, a log file or CI get the stage's two lines and
  nothing else. The bar is erased when its loop ends; the stage's end line follows.
"""
from __future__ import annotations

import logging
import time

#: seconds a loop runs before its bar appears: a shorter loop shows none
BAR_DELAY = 3.0
#: functions called as ``f(stage, ended)`` when any stage starts (``ended`` False) and
#: ends (True): a benchmark's meter of each stage's own time and memory
#: (:mod:`rdl.bench.scale`); empty in a run
listeners: list = []


class stage:   # lowercase, as contextlib's context managers: used like a function
    """A stage of a run: logs ``<name>...`` when made and ``<name>: <seconds> s`` (``;
    detail``) at :meth:`end`, or on leaving its ``with`` block without an error (an error
    speaks for itself). ``log``: the caller's logger (default: the run's, ``rdl.train``)."""

    def __init__(self, name: str, log: logging.Logger | None = None):
        self.name, self.log, self.ended = name, log or logging.getLogger("rdl.train"), False
        self.log.info("%s...", name)
        for listen in listeners:
            listen(self, False)
        self.start = time.perf_counter()

    def seconds(self) -> float:
        """Seconds since the stage started."""
        return time.perf_counter() - self.start

    def end(self, detail: str = "") -> float:
        """Logs the end line (once) and returns the stage's seconds."""
        seconds = self.seconds()
        if not self.ended:
            self.ended = True
            self.log.info("%s: %.1f s%s", self.name, seconds, f"; {detail}" if detail else "")
            for listen in listeners:
                listen(self, True)
        return seconds

    def __enter__(self) -> "stage":
        return self

    def __exit__(self, error, *_) -> None:
        if error is None:
            self.end()


def bar(iterable=None, desc: str = "", total: int | None = None, unit: str = "it"):
    """``iterable`` with a progress bar as the module's rule says (``total``: its length,
    where ``len()`` cannot tell). Without ``iterable``: a bar of ``total`` steps to
    ``update()`` by hand, closed by its ``with`` block. Where no bar is shown, tqdm's
    disabled bar: the iterable's own items, ``update()`` does nothing."""
    from tqdm import tqdm
    return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, delay=BAR_DELAY,
                disable=None, dynamic_ncols=True)
