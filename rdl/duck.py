"""DuckDB as rdl runs it (a task's SQL, the feature synthesis): one rule for every
connection, :func:`connect`.

- **One thread**: DuckDB's parallel aggregates add floats in an order that varies from run
  to run (label sums differed in their last bits, enough to change LightGBM's trees); a run
  must repeat with its seed.
- **A memory limit, past which DuckDB spills to disk** its joins, aggregates and sorts
  (the ``duckdb.memory_limit`` setting; ``auto``: a quarter of the memory this process may
  use, the machine's or its cgroup's limit, said once in the log). Without one DuckDB takes
  up to 80 % of the machine: a user-churn label query held 4 GiB at a quarter of rel-hm's
  size, four times the database (docs/performance.md, the cost curve). A query spilled
  gives the same rows in the same order (tested: ``tests/test_duck.py``); one that cannot
  fit even so fails with an error that names the setting.
- **Spilled to a folder of its own**, under ``duckdb.spill_dir`` (default: rdl's cache
  folder, on disk, where ``/tmp`` may be memory), removed when the database closes; the
  folders of processes that died (killed mid-query, their spilled files in them) are
  removed when the next database opens there.
- **One database for many small queries** (:func:`shared`, :func:`cursor`): the feature
  synthesis runs a query per table, window and depth, over a thousand for a tiny
  RelBench task's ranker, and a new in-memory database costs about 25 ms where a cursor
  of an open one costs 2.3 (``benchmarks/duck_connect.py``). Inside :func:`shared` (the
  synthesis, the ranker) rdl's own queries, which only register frames, are cursors of
  one database (a cursor sees its own frames only), closed on leaving: DuckDB's
  allocator keeps memory a closed database gives back. Outside, and for a task's SQL
  (a user's, which may create views), a database a query (:func:`connect`).
- **A split's seed times a few at a time** (:func:`seed_time_groups`): a label query may
  cross every seed time with every entity row (RelBench's user-churn ``EXISTS``, which
  rdl's own SQL no longer is: 52 seed times x 5.5M customers at four times rel-hm's size
  spilled more than 50 GB and filled the disk), so a task's SQL runs on groups of seed times of at most ``duckdb.label_pairs``
  (seed time, entity row) pairs, and the groups' rows are put together. A label depends
  only on its own seed time, so the rows are those of one query (tested), but for the
  last bits of float sums, which DuckDB may add in another order in another plan
  (item-sales: 0.01 % of its train labels at one seed time a query); the setting is in
  the prepared data's digest (:mod:`rdl.prepared_cache`).

DuckDB's insertion order is kept (its default): the label SQL's rows are sorted after,
but rows that tie keep DuckDB's order, which must not change.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import threading
from pathlib import Path

import duckdb

from rdl import caching, paths

log = logging.getLogger(__name__)

#: the process's settings (``duckdb.*`` of the config; :func:`configured` sets them)
#: ``duckdb.label_pairs``' default: (seed time, entity row) pairs one label query crosses
LABEL_PAIRS = 25_000_000
SETTINGS = {"memory_limit": "auto", "spill_dir": None, "label_pairs": LABEL_PAIRS}
#: ``auto``'s share of the memory this process may use
AUTO_SHARE = 0.25
_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)
_said: set = set()


def check(memory_limit) -> None:
    """A :class:`ValueError` naming ``duckdb.memory_limit`` where it is neither ``auto``
    nor a size DuckDB reads (``8GB``, ``500MiB``)."""
    if memory_limit != "auto" and not (isinstance(memory_limit, str) and _SIZE.match(memory_limit)):
        raise ValueError(f"duckdb.memory_limit={memory_limit!r}: expected auto or a size such "
                         "as 8GB or 500MiB")


@contextlib.contextmanager
def configured(memory_limit="auto", spill_dir=None, label_pairs=LABEL_PAIRS):
    """The process's DuckDB settings (``duckdb.*``) while inside; the previous ones after."""
    check(memory_limit)
    check_pairs(label_pairs)
    before = dict(SETTINGS)
    SETTINGS.update(memory_limit=memory_limit, spill_dir=spill_dir, label_pairs=label_pairs)
    try:
        yield
    finally:
        SETTINGS.update(before)


def check_pairs(label_pairs) -> None:
    """A :class:`ValueError` naming ``duckdb.label_pairs`` where it is not a whole number >= 1."""
    if isinstance(label_pairs, bool) or not isinstance(label_pairs, int) or label_pairs < 1:
        raise ValueError(f"duckdb.label_pairs={label_pairs!r}: expected a whole number >= 1 "
                         "(the (seed time, entity row) pairs one label query may cross)")


def seed_time_groups(times: list, rows: int) -> list[list]:
    """``times`` (a split's seed times, in order) in consecutive groups of at most
    ``duckdb.label_pairs // rows`` (at least one), ``rows``: the entity table's. One group
    where they all fit, as before this rule (the same query, the same rows)."""
    per = max(1, SETTINGS["label_pairs"] // max(1, rows))
    return [times[i:i + per] for i in range(0, len(times), per)] or [times]


def memory_limit() -> str:
    """The limit :func:`connect` gives DuckDB, as DuckDB reads it."""
    value = SETTINGS["memory_limit"]
    check(value)
    if value != "auto":
        _say(value, "DuckDB memory limit %s (duckdb.memory_limit), spilling past it to %s",
             value, spill_root())
        return value.replace(" ", "")
    total, source = usable_memory()
    mib = max(256, int(total * AUTO_SHARE / 2**20))
    _say(value, "DuckDB memory limit %.1f GiB (a quarter of %s, %.1f GiB; duckdb.memory_limit "
         "sets it), spilling past it to %s", mib / 1024, source, total / 2**30, spill_root())
    return f"{mib}MiB"


def spill_root() -> Path:
    """Where :func:`connect`'s spill folders go: ``duckdb.spill_dir``, else rdl's cache."""
    return Path(SETTINGS["spill_dir"] or paths.cache_dir() / "duckdb-spill").expanduser()


#: the optimisers an ``ordered`` database runs without: the joins as written, the right
#: side hashed (rdl.features.synthesis)
ORDERED = "join_order,build_side_probe_side"


def _open(limit: str, root: Path, ordered: bool = False, threads: int | None = 1):
    """A new in-memory database with rdl's settings, and its spill folder."""
    root.mkdir(parents=True, exist_ok=True)
    caching.remove_stale(root)   # a killed process's folder and what it spilled
    spill = str(caching.temp_dir(root, "duckdb"))
    config = {"memory_limit": limit, "temp_directory": spill}
    if threads is not None:
        config["threads"] = threads
    if ordered:   # DuckDB holds this setting for the whole database
        config["disabled_optimizers"] = ORDERED
    try:
        return duckdb.connect(config=config), spill
    except BaseException:
        shutil.rmtree(spill, ignore_errors=True)
        raise


def _close(con, spill: str) -> None:
    con.close()
    shutil.rmtree(spill, ignore_errors=True)


@contextlib.contextmanager
def _errors(limit: str, root: Path):
    """DuckDB's out-of-memory error as a :class:`MemoryError` naming the setting."""
    try:
        yield
    except duckdb.OutOfMemoryException as e:
        raise MemoryError(f"DuckDB ran out of its memory limit {limit} "
                          f"(duckdb.memory_limit) even spilling to {root}: raise it "
                          f"(duckdb.memory_limit=16GB): {e}".split("\n")[0]) from None


@contextlib.contextmanager
def connect(ordered: bool = False, threads: int | None = 1):
    """A new in-memory DuckDB database with rdl's settings (one thread, the memory limit,
    a spill folder of its own; ``ordered``: without the join-order optimisers,
    :data:`ORDERED`); closed, and its folder removed, on exit. ``threads=None``: DuckDB's
    own (every core), for queries whose results no order of adding changes."""
    limit, root = memory_limit(), spill_root()
    con, spill = _open(limit, root, ordered, threads)
    try:
        with _errors(limit, root):
            yield con
    finally:
        _close(con, spill)


#: this thread's :func:`shared` scope: ``depth``, ``pid``, ``open`` (``(limit, spill
#: root, ordered)``: ``(database, spill folder)``)
_scope = threading.local()
#: a forked process's copies of its parent's databases, kept from being destroyed there
_INHERITED: list = []


@contextlib.contextmanager
def shared():
    """Inside, :func:`cursor` gives cursors of one database per setting, opened at the
    first and closed, their spill folders removed, on leaving the outermost scope. Per
    thread; a forked process opens databases of its own and leaves its parent's alone."""
    depth = getattr(_scope, "depth", 0)
    if depth == 0:
        _scope.pid, _scope.open = os.getpid(), {}
    _scope.depth = depth + 1
    try:
        yield
    finally:
        _scope.depth = depth
        if depth == 0:
            opened, _scope.open = _scope.open, {}
            if _scope.pid == os.getpid():
                for con, spill in opened.values():
                    _close(con, spill)
            else:   # a fork's copies of its parent's databases: never destroyed here
                _INHERITED.extend(opened.values())


@contextlib.contextmanager
def cursor(ordered: bool = False):
    """For rdl's own queries, which only register frames (a cursor sees its own, and they
    go with it): inside :func:`shared`, a cursor of its database; outside, a database of
    its own (:func:`connect`)."""
    if not getattr(_scope, "depth", 0) or _scope.pid != os.getpid():
        with connect(ordered) as con:
            yield con
        return
    limit, root = memory_limit(), spill_root()
    key = (limit, str(root), ordered)
    if key not in _scope.open:
        _scope.open[key] = _open(limit, root, ordered)
    con = _scope.open[key][0].cursor()
    try:
        with _errors(limit, root):
            yield con
    finally:
        con.close()


@functools.cache
def usable_memory() -> tuple[int, str]:
    """``(bytes, source)``: the memory this process may use, the least of the machine's
    and its cgroups' limits (a container's, a Slurm job's)."""
    from rdl.cores import PROC_CGROUP, PROC_MOUNTS, _folders   # the cgroup walk, one place
    known = [(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "this machine's memory")]
    try:
        own, mounts = PROC_CGROUP.read_text().splitlines(), PROC_MOUNTS.read_text().splitlines()
    except OSError:
        own, mounts = [], []
    for line in own:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        v2 = hierarchy == "0" and controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        folders = (_folders(mounts, path, "cgroup2", None) if v2
                   else _folders(mounts, path, "cgroup", "memory"))
        for folder in folders:
            try:
                text = (folder / ("memory.max" if v2 else "memory.limit_in_bytes")).read_text()
            except OSError:
                continue
            if text.strip().isdigit():
                known.append((int(text), "the cgroup's memory limit"))
    return min(known, key=lambda k: k[0])


def _say(key, message: str, *args) -> None:
    """``message`` in the log once per process (per ``key``)."""
    if key not in _said:
        _said.add(key)
        log.info(message, *args)
