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
"""
from __future__ import annotations

from typing import Dict, Optional

import torch
from torch import Tensor

from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType, NodeType

from rdl.visibility import includes_equal


class TemporalIndex:
    """Mixin of :class:`~rdl.graph.sampler.TemporalSampler`: builds and queries the index.

    Needs ``node_types``, ``edge_types``, ``num_nodes``, ``device``, ``strict`` and
    ``inclusive`` (node types compared with ``<=`` even when strict).
    """

    def _build_index(self, data: HeteroData, time_attr: str) -> None:
        """Time keys of the timed node types and the CSC layout of every edge type."""
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
