"""The time-sorted CSC index of :class:`~rdl.graph.sampler.TemporalSampler`, and its time rule.

Index (built once, on ``device``): per edge type a CSC layout -- ``colptr``
over dst nodes, src ids and original edge ids sorted by ``(dst, src time,
edge id)`` -- plus, for timed src types, the sorted int64 key
``dst * S + time_key(src)``.  The end of the eligible range of a dst node is
then one ``searchsorted`` of ``dst * S + q(seed_time)`` for the whole
frontier.  Integer times use ``time_key = time - t_min`` (``S = span + 2``);
float times, or spans too wide for int64 keys, use the rank among the distinct
times.  Edge types in which every dst has exactly one incoming edge (the
reverse of a foreign key: child row -> its parent) skip the CSC lookups.

A seed time becomes a threshold ``q`` per timed node type (:meth:`TemporalIndex._threshold`):
a node with time key ``r`` is eligible iff ``r < q``.

Kept in a file (``index_file``, rdl's graph cache entry): the index is the graph's alone
(not the sampler's fan-outs, strategy or time rule), yet at four times rel-hm's size it is
two sorts of 60M edges, half a minute of every start. Where the file is there it is read,
mapped, instead of built (and put on ``device``); where it is not, it is written after the
build (a temporary file, then renamed: a killed writer leaves nothing that is read).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Dict, Optional

import torch
from torch import Tensor

from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType, NodeType

from rdl.visibility import includes_equal

log = logging.getLogger(__name__)
#: bump when the index's layout or content changes (an older file is then built again)
INDEX_VERSION = 1


class TemporalIndex:
    """Mixin of :class:`~rdl.graph.sampler.TemporalSampler`: builds and queries the index.

    Needs ``node_types``, ``edge_types``, ``num_nodes``, ``device``, ``strict`` and
    ``inclusive`` (node types compared with ``<=`` even when strict).
    """

    def _build_index(self, data: HeteroData, time_attr: str,
                     index_file: Optional[Path] = None) -> None:
        """Time keys of the timed node types and the CSC layout of every edge type, read
        from ``index_file`` where it holds this graph's, else built (and written there)."""
        if index_file is not None and self._read_index(data, time_attr, Path(index_file)):
            return
        self._make_index(data, time_attr)
        if index_file is not None:
            self._write_index(time_attr, Path(index_file))

    def _make_index(self, data: HeteroData, time_attr: str) -> None:
        dev = self.device
        max_nodes = max(self.num_nodes.values(), default=0) + 1
        # Timed node types.  A node's time is mapped to an integer "time key"
        # r >= 0 with stride S > max r, and a seed time to a threshold q in
        # [0, S): the node is eligible iff r < q.  Integer times use
        # r = time - t_min (no per-batch search needed); float times, or spans
        # too wide for int64 keys, use r = rank among the distinct times.
        self.node_time: Dict[NodeType, Tensor] = {}
        self._time_key: Dict[NodeType, Tensor] = {}
        self._time_stride: Dict[NodeType, int] = {}
        self._time_min: Dict[NodeType, int] = {}  # offset mode only
        self._uniq_time: Dict[NodeType, Tensor] = {}  # rank mode only
        for t in self.node_types:
            store = data[t]
            if time_attr not in store or store[time_attr] is None:
                continue
            time = torch.as_tensor(store[time_attr]).reshape(-1).to(dev)
            if time.numel() != self.num_nodes[t]:
                raise ValueError(f"data[{t!r}].{time_attr} has {time.numel()} entries, "
                                 f"expected {self.num_nodes[t]}")
            self.node_time[t] = time
            if time.numel() > 0 and not time.is_floating_point() and time.dtype != torch.bool:
                t_min, t_max = int(time.min()), int(time.max())
                stride = t_max - t_min + 2
                if stride * max_nodes < 2**62:
                    self._time_min[t] = t_min
                    self._time_stride[t] = stride
                    self._time_key[t] = time.long() - t_min
                    continue
            uniq = torch.unique(time)  # sorted
            if (uniq.numel() + 1) * max_nodes >= 2**62:
                raise ValueError(f"node type {t!r}: too many nodes x distinct times for int64 keys")
            self._uniq_time[t] = uniq
            self._time_stride[t] = uniq.numel() + 1
            self._time_key[t] = torch.searchsorted(uniq, time)

        # CSC per edge type: incoming src neighbours of every dst node, sorted
        # by (src time, edge id) within each dst segment.
        self._colptr: Dict[EdgeType, Tensor] = {}
        self._row: Dict[EdgeType, Tensor] = {}
        self._eid: Dict[EdgeType, Optional[Tensor]] = {}  # None: CSC order == edge order
        self._seg_key: Dict[EdgeType, Tensor] = {}  # dst * stride + time key, timed src only
        self._unit: Dict[EdgeType, bool] = {}  # every dst has exactly one incoming edge
        for et in self.edge_types:
            src, _, dst = et
            edge_index = data[et].edge_index.to(dev, torch.long)
            row, col = edge_index[0], edge_index[1]
            n_dst = self.num_nodes[dst]
            if src in self.node_time:
                tkey = self._time_key[src].index_select(0, row)
                key = col * self._time_stride[src]
                key.add_(tkey)
                if _is_sorted(tkey):  # child rows in time order: sorting by dst suffices
                    perm = _stable_argsort(col)
                else:
                    perm = _stable_argsort(key)
                del tkey
                self._seg_key[et] = key if perm is None else key.index_select(0, perm)
            else:
                perm = _stable_argsort(col)
            if perm is None:  # already in CSC order (e.g. one row per child)
                self._row[et] = row.contiguous()
                self._eid[et] = None
            else:
                self._row[et] = row.index_select(0, perm)
                self._eid[et] = perm
            deg = torch.bincount(col, minlength=n_dst)
            self._unit[et] = bool(row.numel() == n_dst and (n_dst == 0 or bool((deg == 1).all())))
            colptr = torch.zeros(n_dst + 1, dtype=torch.long, device=dev)
            torch.cumsum(deg, 0, out=colptr[1:])
            self._colptr[et] = colptr

    def _index_state(self, time_attr: str) -> dict:
        """The index as plain values on the host (what :meth:`_write_index` saves)."""
        def host(x):
            return None if x is None else x.cpu()
        return {"version": INDEX_VERSION, "time_attr": time_attr,
                "num_nodes": dict(self.num_nodes),
                "nodes": [[t, host(self._time_key[t]), self._time_stride[t],
                           self._time_min.get(t), host(self._uniq_time.get(t))]
                          for t in self.node_time],
                "edges": [[*et, host(self._colptr[et]), host(self._row[et]),
                           host(self._eid[et]), host(self._seg_key.get(et)), self._unit[et]]
                          for et in self.edge_types]}

    def _write_index(self, time_attr: str, path: Path) -> None:
        from rdl.caching import atomic_file, remove_stale, without_checksums
        try:
            remove_stale(path.parent)   # a killed writer's temporary
            with atomic_file(path) as tmp, without_checksums():
                torch.save(self._index_state(time_attr), tmp)
        except OSError as e:   # a full disk, a read-only cache: only the shortcut is lost
            log.warning("the sampler's index could not be kept in %s (%s): it is built "
                        "again at the next start", path, e)

    def _read_index(self, data: HeteroData, time_attr: str, path: Path) -> bool:
        """Sets the index from ``path`` (mapped, then put on the device) if it is this
        graph's: its version, time attribute, node counts, timed types and edge types."""
        try:
            s = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except FileNotFoundError:
            return False
        except Exception as e:   # damaged: built again, and the file replaced
            log.warning("the sampler's index %s is unreadable (%s): building it", path, e)
            return False
        timed = [t for t in self.node_types
                 if time_attr in data[t] and data[t][time_attr] is not None]
        if not (isinstance(s, dict) and s.get("version") == INDEX_VERSION
                and s.get("time_attr") == time_attr and s.get("num_nodes") == self.num_nodes
                and [n[0] for n in s["nodes"]] == timed
                and [tuple(e[:3]) for e in s["edges"]] == self.edge_types):
            return False
        dev = self.device

        def put(x):
            return None if x is None else x.to(dev)
        self.node_time, self._time_key, self._time_stride = {}, {}, {}
        self._time_min, self._uniq_time = {}, {}
        for t, key, stride, t_min, uniq in s["nodes"]:
            self.node_time[t] = torch.as_tensor(data[t][time_attr]).reshape(-1).to(dev)
            self._time_key[t], self._time_stride[t] = put(key), stride
            if t_min is not None:
                self._time_min[t] = t_min
            if uniq is not None:
                self._uniq_time[t] = put(uniq)
        self._colptr, self._row, self._eid, self._seg_key, self._unit = {}, {}, {}, {}, {}
        for src, rel, dst, colptr, row, eid, seg_key, unit in s["edges"]:
            et = (src, rel, dst)
            self._colptr[et], self._row[et], self._eid[et] = put(colptr), put(row), put(eid)
            if seg_key is not None:
                self._seg_key[et] = put(seg_key)
            self._unit[et] = unit
        return True

    def _threshold(self, node_type: NodeType, seed_time: Tensor) -> Tensor:
        """Per seed: a node of ``node_type`` with time key r is eligible iff r < q."""
        stride = self._time_stride[node_type]
        strict = self.strict and node_type not in self.inclusive
        node_int = not self.node_time[node_type].is_floating_point()
        if node_int and seed_time.is_floating_point():
            # Integer node times: t <= s  <=>  t <= floor(s);  t < s  <=>  t < ceil(s).
            seed_time = torch.ceil(seed_time) if strict else torch.floor(seed_time)
            seed_time = torch.nan_to_num(seed_time, nan=float("-inf"))
            # Into int64 range before the cast (the largest double below 2**63).
            seed_time = seed_time.clamp(-(2.0**63), 2.0**63 - 1024).to(torch.long)
        if node_type in self._time_min:
            lo = self._time_min[node_type]
            st = seed_time.to(torch.long).clamp(lo - 1, lo + stride - 1)
            q = st - lo + int(includes_equal(strict))
            return q.clamp_(0, stride - 1)
        uniq = self._uniq_time[node_type]
        return torch.searchsorted(uniq, seed_time.to(uniq.dtype), right=includes_equal(strict))


def _is_sorted(x: Tensor) -> bool:
    return x.numel() < 2 or bool((x[1:] >= x[:-1]).all())


def _stable_argsort(key: Tensor) -> Optional[Tensor]:
    """Stable argsort of ``key``, or None when it is already sorted."""
    if _is_sorted(key):
        return None
    return torch.argsort(key, stable=True)
