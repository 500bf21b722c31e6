"""Print a benchmark's rows as a table and write them as Markdown and CSV."""
from __future__ import annotations

import csv
import datetime as dt
import os
import resource
from pathlib import Path

from rdl.caching import atomic_file, write_atomic


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def reset_peak_rss() -> bool:
    """Start this process's peak resident memory afresh (Linux: writing 5 to
    ``/proc/self/clear_refs`` resets ``VmHWM``), so that :func:`step_peak_rss_gib` reads the
    peak of the steps after it alone; False where the system does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def anon_rss_gib() -> float | None:
    """This process's anonymous resident memory now (``RssAnon``: its own pages, not the
    file pages it maps, which the kernel drops and reads again under pressure), in GiB;
    None without ``/proc``."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("RssAnon:")[1].split()[0]) / 2**20
    except (OSError, IndexError, ValueError):
        return None


class AnonPeak:
    """The most anonymous resident memory (:func:`anon_rss_gib`) since :meth:`reset`,
    sampled every ``every_s`` by a thread: the kernel keeps a peak of the whole resident
    size (``VmHWM``), which counts the pages of a mapped cache as they are read, but none of
    the process's own memory alone. A peak shorter than ``every_s`` can be missed."""

    def __init__(self, every_s: float = 0.05):
        import threading
        self.every_s, self.peak = every_s, anon_rss_gib()
        if self.peak is not None:
            threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        import time
        while True:
            self.sample()
            time.sleep(self.every_s)

    def sample(self) -> float | None:
        """The peak so far, a sample taken now included."""
        now = anon_rss_gib()
        if now is not None:
            self.peak = max(self.peak or 0.0, now)
        return self.peak

    def reset(self) -> None:
        self.peak = anon_rss_gib()


def step_peak_rss_gib() -> float:
    """Peak resident memory since the last :func:`reset_peak_rss` (``VmHWM``), in GiB;
    without ``/proc`` the peak of the whole process, as :func:`peak_rss_gib`."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return peak_rss_gib()


def load_average() -> str:
    """The machine's load average (1/5/15 min) as text, for a report's header."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return "?"


def run_dir(name: str, root: str | os.PathLike = "outputs/bench") -> Path:
    path = Path(root) / f"{dt.datetime.now():%Y-%m-%d_%H-%M-%S}-{name}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def report(name: str, rows: list[dict], out: str | os.PathLike | None = None,
           header: str = "") -> Path:
    """Print ``rows`` and write ``<out>/<name>.md`` and ``.csv``; returns the folder."""
    out = Path(out) if out else run_dir(name)
    out.mkdir(parents=True, exist_ok=True)
    text = (header + "\n\n" if header else "") + markdown(rows) + "\n"
    print(text)
    write_atomic(out / f"{name}.md", text)
    with atomic_file(out / f"{name}.csv") as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"written to {out}/{name}.md and .csv")
    return out
