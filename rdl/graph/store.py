"""The graph cache's entries: a built graph written whole, read back mapped.

An entry (``graph-<fingerprint>/``, :mod:`rdl.caching`'s marker written last) holds a file
per table's frame and its column statistics (``<table>.pt``, PyTorch Frame's layout) and
:data:`STRUCTURE`: the node types in order, their row counts, the timed ones' times and
every foreign key's edges, both directions. A graph read from an entry needs nothing else:
no row of the database, and every tensor is mapped from the files (``torch.load(mmap=True)``),
so the processes that read it (loader workers, DDP ranks, a restart) share the pages
instead of each holding a copy; at four times rel-hm's size the edges alone are 3.8 GB.

Two indexes map keys to entries (``keys/``): :func:`~rdl.graph.build.make_graph`'s, by the
caller's digest of the rows with what the database's shape says, and :func:`bare_index`'s,
by that digest and the settings alone. The second lets a restart find its graph before the
database it was built from is even cut (:func:`cached_graph`).
"""
from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import numpy as np
import torch
from torch_frame.data import TensorFrame
from torch_frame.utils.io import deserialize_feat_dict
from torch_geometric.data import HeteroData

from rdl import caching
from rdl.progress import stage

log = logging.getLogger(__name__)

#: bump when the layout of an entry changes (older entries are then built again)
GRAPH_VERSION = 4
#: an entry's file of what is not a table's columns: node types, times, edges
STRUCTURE = "structure.pt"
#: where :func:`read_entry` notes a graph's entry (in the object, not in its stores: a
#: sampled batch or a copy has none)
_ENTRY = "_rdl_cache_entry"


def table_file(table: str) -> str:
    """The cache file of a table's frame: ``<table>.pt``, or, for a name that is no plain
    file name (``a/b``, ``..``, empty), one made from its hash."""
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", table) and table != "..":
        return f"{table}.pt"
    return f"table-{hashlib.sha1(table.encode()).hexdigest()[:16]}.pt"


def _numpy_scalars() -> list:
    """What torch's weights-only unpickler needs, beyond what PyTorch Frame allows itself,
    to read the column stats of a cached frame: the NumPy integers of a timestamp column's
    ``StatType.YEAR_RANGE`` (the years pandas gives, int32; int64 in older pandas)."""
    multiarray = getattr(np, "_core", None) or np.core   # numpy 2 / numpy 1.26
    return [multiarray.multiarray.scalar, np.dtype,
            *(type(np.dtype(t)) for t in (np.int32, np.int64))]


def load_frame(path: str):
    """A cached frame and its stats, as ``torch_frame.load(path)`` reads them, but mapped
    (``torch.load(mmap=True)``, torch >= 2.1; rdl needs 2.6). Read with torch's
    weights-only unpickler and the NumPy scalar types its stats hold allowed for this read
    only (without them PyTorch Frame's own weights-only read fails, and it warns and reads
    the file again with the full unpickler)."""
    with torch.serialization.safe_globals(_numpy_scalars()):
        tf_dict, col_stats = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    tf_dict["feat_dict"] = deserialize_feat_dict(tf_dict.pop("feat_serialized_dict"))
    return TensorFrame(**tf_dict), col_stats


def save_structure(folder: Path, data: HeteroData) -> None:
    """Writes ``data``'s node types (in order), row counts, times and edges into an entry
    being built (its frames are written table by table as they are made)."""
    edges = [[*et, data[et].edge_index.contiguous()] for et in data.edge_types]
    with caching.without_checksums():
        torch.save({"version": GRAPH_VERSION, "tables": list(data.node_types),
                    "num_nodes": {nt: int(data[nt].num_nodes) for nt in data.node_types},
                    "time": {nt: data[nt].time for nt in data.node_types if "time" in data[nt]},
                    "edges": edges}, folder / STRUCTURE)


def read_entry(entry: Path) -> tuple[HeteroData, dict[str, dict]]:
    """``(graph, col_stats)`` of a complete entry, every tensor mapped from its files."""
    s = torch.load(entry / STRUCTURE, map_location="cpu", weights_only=True, mmap=True)
    data, col_stats = HeteroData(), {}
    for name in s["tables"]:
        data[name].tf, col_stats[name] = load_frame(str(entry / table_file(name)))
        data[name].num_nodes = s["num_nodes"][name]
        if name in s["time"]:
            data[name].time = s["time"][name]
    for src, rel, dst, edge_index in s["edges"]:
        data[src, rel, dst].edge_index = edge_index
    data.__dict__[_ENTRY] = entry
    return data, col_stats


def index_file(data: HeteroData, time_attr: str = "time") -> Path | None:
    """Where the temporal sampler keeps ``data``'s index (:mod:`rdl.graph.temporal_index`):
    a file in the cache entry the graph was read from, or None (a graph not read from
    rdl's cache). The entry is the graph's, so the index it keeps is too; it is no file of
    the entry's marker, which an entry is complete without."""
    entry = data.__dict__.get(_ENTRY)
    return None if entry is None else entry / f"sampler-index-{time_attr}.pt"


def readable(entry: Path | None) -> bool:
    """Whether ``entry`` is a complete entry of this layout."""
    return entry is not None and caching.complete(entry) and (entry / STRUCTURE).exists()


def indexed(index: Path | None) -> Path | None:
    """The complete entry the key file ``index`` names, or None."""
    try:
        name = index.read_text().strip() if index is not None else ""
    except OSError:
        return None
    entry = index.parent.parent / name if re.fullmatch(r"graph-[0-9a-f]{16}", name) else None
    return entry if readable(entry) else None


def record(index: Path | None, entry: Path) -> None:
    """Records that the key file ``index`` names ``entry`` (a cache that cannot be
    written only loses the shortcut)."""
    if index is None:
        return
    try:
        index.parent.mkdir(exist_ok=True)
        caching.write_atomic(index, entry.name)
    except OSError:
        pass


def bare_index(root: Path, key: str, stypes: dict | None, text_embedder,
               given_stats: bool) -> Path:
    """The key file of a graph by ``key`` alone: a digest that covers every row it is
    built from and every setting its database is made with (the prepared data's), with
    what that digest leaves out (the stypes asked for, the text embedder, whether the
    columns are encoded with another graph's statistics)."""
    parts = (GRAPH_VERSION, "bare", key, repr(sorted((stypes or {}).items())),
             repr(text_embedder), given_stats)
    return root / "keys" / hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def cached_graph(cache_dir, key: str | None, stypes: dict | None, text_embedder,
                 given_stats: bool = False) -> tuple[HeteroData, dict] | None:
    """The graph :func:`~rdl.graph.build.make_graph` built and cached under ``key`` with
    these settings, read from its entry, or None (no cache, no key, never built)."""
    if cache_dir is None or key is None:
        return None
    entry = indexed(bare_index(Path(cache_dir), key, stypes, text_embedder, given_stats))
    if entry is None:
        return None
    try:
        with stage("graph read from the cache", log):
            return read_entry(entry)
    except OSError as e:   # unreadable since it was written: the caller builds it
        log.warning("graph cache entry %s is unreadable (%s): building the graph", entry, e)
        return None
