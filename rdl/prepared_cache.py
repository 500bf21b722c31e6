"""The prepared data, computed once for every run and every process that needs it.

What a family's ``prepare`` computes between the database and the graph (the split tables,
the label history, the tree fits and prior, the seed features: minutes at scale, against a
second to read) is kept in rdl's cache, ``<cache>/prepared/<digest>`` (``$RDL_CACHE`` or
``data.cache_dir``; ``data.cache_dir=false`` turns it off with the other caches). The
digest covers everything it is computed from (:func:`digest`): every row of the database,
its keys and stypes, the task (its settings and SQL), the data settings that change it,
``duckdb.label_pairs`` (how many seed times a label query takes: float sums may differ in
their last bits between groupings), the libraries that compute it and
:data:`PREPARED_VERSION`. A restart with the same settings reads the entry; any change gives another digest, another entry.

The entry is one file of tensors (:func:`rdl.safe_load.plain`: a frame's columns of
numbers and times, arrays, seed features), written as every cache entry is
(:mod:`rdl.caching`: a temporary folder, its marker written last, renamed into place; a
killed writer leaves nothing that is read) and loaded with ``mmap``: every process that
reads it, each DDP process of each machine and their loader workers, maps the same pages
instead of holding a copy, and nothing is written back.

Several processes (DDP): the first process of all (:func:`rdl.preparation.first_process`)
computes and writes the entry, the others wait for it and read it, on every machine (the
cache on storage they share). Where the cache cannot be written the first process leaves
the data in the run's folder instead (``shared_path``), as rdl did before this cache.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Callable

import torch

from rdl import caching, duck, paths
from rdl.caching import atomic_file
from rdl.data.database import Database
from rdl.preparation import first_process
from rdl.progress import stage
from rdl.safe_load import load, plain, unplain

log = logging.getLogger("rdl.preparation")

#: bump when what is prepared changes for the same inputs: older entries are not read
PREPARED_VERSION = 11   # 2: dropped columns left out of the trees' features; 3: tables of no
#: row by the test time left out of the graph and the features (preparation.without_empty);
#: 4: no prior chosen on a val split whose labels are one value (the trees: kinds.one_value);
#: 5: a sum over events whose values are all NULL is no label (left out), not 0; 6: depth
#: 2's windows whole months for a calendar window; 7: a calendar window's seed month; 8:
#: its label a year before, and that baseline among the priors; 9: names left out of the
#: trees' features (features.table.is_name); 10: train seed times from the data's first
#: row but a calendar's (Database.min_time: TPC-DS's date_dim starts in 1900); 11: trees
#: stopped on train's latest seed time where val's labels are one value (baselines.stopping)
#: the libraries whose numbers the prepared data holds (the task's SQL, the tree fits)
LIBRARIES = ("duckdb", "lightgbm", "pandas", "numpy")
#: data settings that change the graph, the loaders or the baselines fitted after
#: training, never what is prepared: left out of the digest (a restart with another batch
#: size reads the same entry)
NOT_PREPARED = ("batch_size", "eval_batch_size", "label_history", "ranker", "text_embedder",
                "num_workers", "prefetch_factor", "pin_memory", "pack_batches", "cache_dir", "buckets",
                "sampler", "num_neighbors", "strategy", "bidirectional", "triplets",
                "predict_split")
#: the entry's one file, beside the marker
DATA = "prepared.pt"
ADVICE = ("rdl writes this file itself; delete it (a cache entry: its folder) and run again")


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "none"


def task_key(task) -> str:
    """The task as what it labels depends on: its class, its settings (a metric by its
    repr, the kind by its class), its SQL's text, its label files' sizes and times."""
    fields = {f.name: getattr(task, f.name) for f in dataclasses.fields(task)}
    fields.pop("trainer_defaults", None)   # a training budget labels the same rows
    fields["kind"] = type(task.kind).__qualname__
    fields["metrics"] = {k: repr(v) for k, v in sorted((task.metrics or {}).items())}
    sql = getattr(task, "sql_path", None)
    sources = [sql.read_text() if sql is not None else None]
    labels = getattr(task, "labels", None)
    if labels is not None:
        for f in sorted(Path(labels).rglob("*")):
            st = f.stat()
            sources.append((str(f), st.st_size, st.st_mtime_ns))
    return json.dumps([type(task).__module__, type(task).__qualname__, fields, sources],
                      sort_keys=True, default=repr)


def settings_key(settings) -> str:
    """The data settings the prepared data depends on: all but :data:`NOT_PREPARED`."""
    kept = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if f.name not in NOT_PREPARED}
    return json.dumps(kept, sort_keys=True, default=repr)


def digest(task, db: Database, settings) -> str:
    """The digest of everything the prepared data of ``task`` on ``db`` (as the task sees
    it) with ``settings`` is computed from."""
    h = hashlib.sha1(repr((PREPARED_VERSION, [(n, _version(n)) for n in ("rdl", *LIBRARIES)],
                           task_key(task), settings_key(settings),
                           duck.SETTINGS["label_pairs"])).encode())
    # every row of every table and the files' ids, which the task's SQL sees (stored with
    # the rows where the database comes from rdl's cache: no row hashed again)
    h.update(db.digest().encode())
    h.update(repr(sorted(db.stypes.items())).encode())
    return h.hexdigest()[:16]


def entry_of(task, db: Database, settings) -> Path | None:
    """The cache entry of the prepared data, or None where the cache is off
    (``data.cache_dir=false``)."""
    if settings.cache_dir is False:
        return None
    root = Path(settings.cache_dir or paths.cache_dir()) / "prepared"
    with stage("prepared data's digest", log):
        return root / digest(task, db, settings)


def shared(task, db: Database, settings, compute: Callable[[], dict],
           store: Callable[[dict], dict] = lambda out: out,
           shared_path: str | None = None, entry: Path | None = None) -> dict:
    """What ``compute()`` returns (a dict), computed once: read from the cache entry
    (plain values: tables, arrays, tensors, mapped) where it is complete, else computed
    and, as ``store(out)`` says (plain values), written there. ``shared_path``: with
    several processes, the run folder's file for when the cache cannot be written; only
    the first process of all computes, the others wait for the entry or that file.
    ``entry``: :func:`entry_of`'s, where the caller made it already (it hashes every row)."""
    entry = entry if entry is not None else entry_of(task, db, settings)
    found = _read(entry)
    if found is not None:
        return found
    first = shared_path is None or first_process()
    if not first:
        found = _wait(entry, shared_path)
        if found is not None:
            return found
    out = compute()
    if first:
        kept = store(out)
        if not _write(entry, kept) and shared_path is not None:
            with atomic_file(shared_path) as tmp:   # never read half-written
                torch.save(plain(kept), tmp)
            log.info("prepared data computed and left for the other processes in %s",
                     shared_path)
    return out


def _read(entry: Path | None) -> dict | None:
    if entry is None or not caching.complete(entry):
        return None
    with stage("prepared data read from the cache", log) as read:
        out = unplain(load(entry / DATA, "the prepared data", advice=ADVICE, mmap=True))
        read.end(f"{entry} (mapped)")
    return out


def _write(entry: Path | None, out: dict) -> bool:
    """Writes ``out`` as ``entry`` (whole, or not at all); whether it is there now."""
    if entry is None:
        log.info("prepared data computed (not cached: data.cache_dir=false)")
        return False
    root = entry.parent
    if not caching.writable(root):
        return False
    caching.remove_stale(root)
    tmp = caching.temp_dir(root, entry.name)
    try:
        with stage("prepared data written to the cache", log), caching.without_checksums():
            torch.save(plain(out), tmp / DATA)
            caching.finish(tmp)
            caching.publish(tmp, entry)
    except OSError as e:   # a full disk, say: the data is fine, only its cache fails
        caching.warn_uncached(root, e)
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("prepared data computed and cached in %s", entry)
    return True


def _wait(entry: Path | None, path: str, timeout: float = 3600.0) -> dict | None:
    """A process other than the first of all takes what that one prepared: the cache
    entry, or the run folder's file where the cache could not be written (launched by
    ``torchrun`` or ``srun``, all processes start at once; on several machines the cache,
    or the run's folder, must be on storage they share)."""
    log.info("waiting for the prepared data, which the first process writes in %s (or, if "
             "it cannot write there, %s)", entry, path)
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        found = _read(entry)
        if found is not None:
            return found
        if os.path.exists(path):
            out = unplain(load(path, "the prepared data", advice=ADVICE, mmap=True))
            log.info("prepared data read from %s", path)
            return out
        time.sleep(0.5)
    log.warning("the prepared data did not appear in %.0f s: this process prepares it "
                "itself", timeout)
    return None
