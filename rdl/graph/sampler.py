"""Temporal neighbour sampler for heterogeneous (relational) graphs.

``TemporalSampler`` is a vectorised-torch replacement for PyG's
``NeighborSampler(disjoint=True, temporal_strategy=..., time_attr=...)``
(which needs ``pyg-lib``).  It plugs into ``torch_geometric.loader.NodeLoader``
(``sample_from_nodes``) and ``torch_geometric.loader.LinkLoader``
(``sample_from_edges``) and returns ordinary ``HeteroSamplerOutput`` objects.

Semantics (those of pyg-lib's ``hetero_neighbor_sample`` in disjoint temporal
mode, with the decisions below made explicit):

* Disjoint subgraphs: every seed gets its own subgraph.  Within one seed's
  subgraph a global node appears at most once: nodes are de-duplicated by the
  pair ``(seed index, global node id)``.  A node reached again (in the same or
  a later hop, through the same or another edge type) only adds the edge.
  ``batch[node_type]`` holds the seed index (``0..B-1``) of every node (link
  sampling: see below).
* Node order per type: the seeds first (input type only, in input order), then
  the nodes added by hop 1, hop 2, ... (``num_sampled_nodes[type][h]`` of
  them for hop ``h``, entry 0 being the seed count).  Within one hop and one
  edge type, new nodes are ordered by ``(seed index, global id)``; when several
  edge types add nodes of the same type in the same hop, they follow the order
  of ``data.edge_types``.
* Hop ``h`` expands every node added at hop ``h-1`` (the seeds for ``h=1``):
  for every edge type ``(src, rel, dst)`` whose ``dst`` is that node's type, up
  to ``num_neighbors[edge_type][h-1]`` incoming edges are sampled without
  replacement.  ``-1`` takes every eligible edge, ``0`` none.
* Time filter: a neighbour of a *timed* node type (one that has
  ``data[type][time_attr]``) is eligible iff ``time <= seed_time``
  (``strict=False``, the pyg-lib rule) or ``time < seed_time``
  (``strict=True``).  Neighbours of untimed node types are always eligible.
  Seed times come from ``NodeSamplerInput.time``; if it is ``None`` the seeds'
  own ``time_attr`` is used, and if the input type has no time either, no
  filter is applied.
* ``"uniform"``: a uniformly random subset of ``min(k, #eligible)`` eligible
  edges.  ``"last"``: the ``min(k, #eligible)`` most recent eligible edges; ties
  in time are broken by the original edge id (larger edge id = more recent),
  i.e. edges are ranked by ``(src time, edge id)``.  For an untimed source type
  ``"last"`` takes the ``k`` largest edge ids.
* Output tensors live on the sampler ``device``; ``edge`` holds ids into the
  original ``edge_index`` (so ``edge_permutation`` is ``None``).  Every node
  type and edge type of the graph is always present in the output dicts (empty
  tensors when nothing was sampled), so the keys never change across batches.
  ``metadata = (input_id, seed_time)`` as in PyG, moved to ``device``
  (``seed_time`` is ``None`` when the loader gave no input time).
* Seed times are compared with each node type's time (int64 seconds in rdl);
  float node times work too, and a float seed time against integer node times
  means ``time <= floor(seed)`` (``time < ceil(seed)`` when strict).
* Several seed types (link sampling): the seeds of all types are numbered
  consecutively in order (pyg-lib's ``batch_idx``); a seed type without a given
  time uses its own node time, or no filter if it has none.

Link sampling (``sample_from_edges``; PyG's ``edge_sample`` in disjoint
temporal mode, the metadata ``LinkLoader.filter_fn`` reads):

* Every src and every dst endpoint of the seed links, negatives included, is
  the seed of its own subgraph, with the link's time (``edge_label_time``) as
  seed time.  Negative ``j`` belongs to positive ``j % num_pos`` and takes its
  time.  Without link times, a seed of a timed type uses its own time.
* Seeds: ``[src, src_neg]`` of the src type, then ``[dst, dst_neg]`` of the
  dst type (the first ``n`` nodes of each type); when both ends have the same
  type, one list ``[src, src_neg, dst, dst_neg]``.
* ``batch``: the ``i``-th seed of each endpoint list has ``i % num_pos`` (the
  index of its positive link), so ``edge_label_time[batch]`` (``seed_time``
  for triplets) is every node's seed time.  PyG numbers the seeds across both
  lists before taking ``% num_pos``: identical whenever ``num_neg`` is a
  multiple of ``num_pos`` (integer ``amount``); with a fractional binary
  amount PyG's dst ``batch`` is shifted and no longer indexes the seed's time,
  so we keep the per-list numbering.
* Negatives, drawn with the sampler's generator: ``"binary"``:
  ``ceil(amount * num_pos)`` random (src, dst) pairs, label 0 (given labels,
  or 1, for the positives); ``"triplet"``: ``amount`` random dst per positive
  (no labels).  Uniform over the nodes of the type, or proportional to
  ``src_weight`` / ``dst_weight``.  For a timed endpoint type, with link
  times, each negative is drawn exactly among the nodes its seed may see
  under the sampler's time rule (inverse CDF over the nodes sorted by time);
  if it may see none, the oldest node (PyG's fallback).  Negatives can be
  false negatives, as in PyG.
* Metadata: ``None``/binary: ``(input_id, edge_label_index [2, n],
  edge_label, src_time)`` with ``edge_label_index`` the local indices of the
  endpoints of link ``i`` (``[i, i]``, or ``[i, n + i]`` for one node type);
  triplet: ``(input_id, src_index [P], dst_pos_index [P], dst_neg_index [P]
  or [P, amount], src_time [P])``.  All on ``device``.

Index (built once, on ``device``): per edge type a CSC layout -- ``colptr``
over dst nodes, src ids and original edge ids sorted by ``(dst, src time,
edge id)`` -- plus, for timed src types, the sorted int64 key
``dst * S + time_key(src)``.  The end of the eligible range of a dst node is
then one ``searchsorted`` of ``dst * S + q(seed_time)`` for the whole
frontier.  Integer times use ``time_key = time - t_min`` (``S = span + 2``);
float times, or spans too wide for int64 keys, use the rank among the distinct
times.  Edge types in which every dst has exactly one incoming edge (the
reverse of a foreign key: child row -> its parent) skip the CSC lookups.

Host synchronisation (CUDA): the sizes of data-dependent outputs are needed
on the host, so every hop and edge type syncs a few times (``_expand``'s
total, ``unique``, ``nonzero``, the large-segment path's convergence check).
Nothing per seed or per node runs in Python.  The seed-side work adds no
sync: seed thresholds, negative sampling (``randint`` / ``rand``,
``searchsorted``, gathers; no rejection loop), the batch relabelling and the
link metadata are device ops sized from host-known counts.  The loader's
input tensors arrive on the CPU and are copied to the device once each (a
pageable copy briefly blocks the host).

Uniform sampling without replacement, per (frontier node, edge type) segment
with ``c`` eligible edges and fan-out ``k``:

* ``c <= k``: take all.
* ``k < c <= 2k``: draw a random 31-bit key per eligible edge and keep the
  ``k`` smallest keys of the segment (one sort of ``(segment, key)``).
* ``c > 2k``: draw i.i.d. offsets in ``[0, c)`` (``2k + 4`` per segment) and
  keep the first ``k`` distinct ones in draw order; the first ``k`` distinct
  values of an i.i.d. uniform sequence are an exactly uniform ``k``-subset.
  Segments that got fewer than ``k`` distinct values draw more (appended to
  the same sequence) -- rare, and never more than a few rounds.  This never
  touches the ``c`` eligible edges of a huge segment.
"""
from __future__ import annotations

import copy
import math
import os
from typing import Dict, List, Optional, Tuple, Union

import torch
from torch import Tensor

from torch_geometric.data import HeteroData
from torch_geometric.sampler import (
    BaseSampler,
    EdgeSamplerInput,
    HeteroSamplerOutput,
    NegativeSampling,
    NodeSamplerInput,
)
from torch_geometric.sampler.base import NumNeighbors
from torch_geometric.typing import EdgeType, NodeType

__all__ = ["TemporalSampler"]

_STRATEGIES = ("uniform", "last")
_MID_FACTOR = 2  # c <= _MID_FACTOR * k -> random keys over the whole segment
_MAX_ROUNDS = 64  # safety bound on the re-draw rounds of the large-c path


def _parse_num_neighbors(
    num_neighbors, edge_types: List[EdgeType]
) -> Tuple[Dict[EdgeType, List[int]], int]:
    if isinstance(num_neighbors, NumNeighbors):
        num_neighbors = num_neighbors.get_values(edge_types)
    if isinstance(num_neighbors, (list, tuple)):
        values = [int(v) for v in num_neighbors]
        out = {et: list(values) for et in edge_types}
    elif isinstance(num_neighbors, dict):
        known = set(edge_types)
        unknown = [k for k in num_neighbors if tuple(k) not in known]
        if unknown:
            raise ValueError(f"num_neighbors names edge types not in the graph: {unknown}")
        given = {tuple(k): [int(x) for x in v] for k, v in num_neighbors.items()}
        missing = [et for et in edge_types if et not in given]
        if missing:
            raise ValueError(f"num_neighbors lacks edge types {missing}")
        out = {et: given[et] for et in edge_types}
    else:
        raise TypeError(f"num_neighbors must be a list or a dict (got {type(num_neighbors)})")
    hops = {len(v) for v in out.values()}
    if len(hops) > 1:
        raise ValueError("num_neighbors must give the same number of hops for every edge type")
    num_hops = hops.pop() if hops else 0
    for et, v in out.items():
        if any(x < -1 for x in v):
            raise ValueError(f"num_neighbors[{et}] has values below -1: {v}")
    return out, num_hops


class TemporalSampler(BaseSampler):
    r"""Disjoint temporal neighbour sampler over a :class:`HeteroData` graph.

    Args:
        data: the graph; ``data[t][time_attr]`` (int64 seconds) for timed node
            types, ``data[et].edge_index`` for every edge type.
        num_neighbors: fan-out per hop, for every edge type (list) or per edge
            type (dict of lists, all the same length).  ``-1``: all eligible.
        strategy: ``"uniform"`` or ``"last"``.
        time_attr: name of the node-level time attribute.
        strict: eligible iff ``time < seed_time`` instead of ``<=``.
        device: where the CSC index lives and sampling runs (CPU or CUDA).
        seed: seed of the sampler's own :class:`torch.Generator`.

    ``sample_from_nodes`` serves ``NodeLoader``, ``sample_from_edges``
    ``LinkLoader`` (with ``neg_sampling`` None, binary or triplet); see the
    module docstring for the exact semantics.

    In DataLoader worker processes the generator is re-seeded once per worker
    from ``(seed, worker_info.seed)`` so that workers draw different streams;
    results with workers are then reproducible whenever the loader's base seed
    is (``torch.manual_seed`` or a ``generator=`` passed to the loader).
    With ``device="cuda"`` use ``num_workers=0`` (CUDA does not survive a fork);
    CPU samplers work with any number of workers.

    CPU note: the ops are many and mostly small, so intra-op threading helps
    little; on a busy machine ``torch.set_num_threads(1)`` (what DataLoader
    workers use) avoids OpenMP stalls.
    """

    def __init__(
        self,
        data: HeteroData,
        num_neighbors: Union[List[int], Dict[EdgeType, List[int]]],
        strategy: str = "uniform",
        time_attr: str = "time",
        strict: bool = False,
        device: Union[str, torch.device, None] = None,
        seed: Optional[int] = None,
    ):
        if not isinstance(data, HeteroData):
            raise TypeError("TemporalSampler expects a HeteroData graph")
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {_STRATEGIES} (got {strategy!r})")
        self.strategy = strategy
        self.time_attr = time_attr
        self.strict = bool(strict)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.seed = seed

        self.node_types, self.edge_types = data.metadata()
        self.node_types = list(self.node_types)
        self.edge_types = [tuple(et) for et in self.edge_types]
        self.num_neighbors, self.num_hops = _parse_num_neighbors(num_neighbors, self.edge_types)
        self.num_nodes: Dict[NodeType, int] = {t: int(data[t].num_nodes or 0) for t in self.node_types}

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

        self._generator: Optional[torch.Generator] = None
        self._worker_key = None
        # Built on first use by negative sampling: sorted time keys, weight CDFs.
        self._neg_cache: Dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ #
    # Pickling / workers
    # ------------------------------------------------------------------ #
    def __getstate__(self):
        state = self.__dict__.copy()
        gen = state.pop("_generator")
        state["_gen_state"] = gen.get_state() if gen is not None else None
        return state

    def __setstate__(self, state):
        gen_state = state.pop("_gen_state", None)
        self.__dict__.update(state)
        self._generator = None
        if gen_state is not None:
            self._generator = torch.Generator(device=self.device)
            self._generator.set_state(gen_state)

    def _get_generator(self) -> torch.Generator:
        info = torch.utils.data.get_worker_info()
        if info is not None:
            key = (os.getpid(), info.id, info.seed)
            if self._worker_key != key:
                base = 0 if self.seed is None else int(self.seed)
                mixed = (base * 0x9E3779B97F4A7C15 + info.seed * 0xBF58476D1CE4E5B9 + 1) % (2**63)
                gen = torch.Generator(device=self.device)
                gen.manual_seed(mixed)
                self._generator = gen
                self._worker_key = key
            return self._generator
        if self._generator is None:
            gen = torch.Generator(device=self.device)
            # Unseeded: draw the seed from torch's global RNG, so that
            # ``pl.seed_everything`` / ``torch.manual_seed`` make runs repeatable.
            seed = self.seed if self.seed is not None else torch.randint(2**62, (1,)).item()
            gen.manual_seed(int(seed))
            self._generator = gen
        return self._generator

    def with_seed(self, seed: Optional[int]) -> "TemporalSampler":
        """A sampler that shares this one's index but draws from its own random stream."""
        other = copy.copy(self)
        other.seed, other._generator, other._worker_key = seed, None, None
        return other

    @property
    def edge_permutation(self):
        return None  # `edge` already holds ids into the original edge_index

    # ------------------------------------------------------------------ #
    # Node sampling
    # ------------------------------------------------------------------ #
    def sample_from_nodes(self, inputs: NodeSamplerInput, **kwargs) -> HeteroSamplerOutput:
        input_type = inputs.input_type
        if input_type is None or input_type not in self.num_nodes:
            raise ValueError(f"unknown input node type {input_type!r}")
        dev = self.device
        seed_nodes = inputs.node.to(dev, torch.long)
        seed_time = inputs.time.to(dev) if inputs.time is not None else None
        out = self._sample({input_type: seed_nodes},
                           None if seed_time is None else {input_type: seed_time})
        input_id = inputs.input_id
        if input_id is None:
            input_id = torch.arange(seed_nodes.numel())
        out.metadata = (input_id.to(dev), seed_time)
        return out

    # ------------------------------------------------------------------ #
    # Link sampling
    # ------------------------------------------------------------------ #
    def sample_from_edges(self, inputs: EdgeSamplerInput,
                          neg_sampling: Optional[NegativeSampling] = None) -> HeteroSamplerOutput:
        """Disjoint temporal subgraphs of both endpoints of every seed link.

        Each src and each dst endpoint (negatives included) is the seed of its own
        subgraph, with the link's label time as seed time; negatives take the time of
        their positive.  The metadata is what :class:`~torch_geometric.loader.LinkLoader`
        expects (PyG's ``edge_sample`` with ``disjoint=True``); see the module docstring.
        """
        input_type = inputs.input_type
        if input_type is None or len(input_type) != 3:
            raise ValueError(f"TemporalSampler samples links of a (src, rel, dst) edge type "
                             f"(got {input_type!r})")
        src_type, dst_type = input_type[0], input_type[-1]
        for t in (src_type, dst_type):
            if t not in self.num_nodes:
                raise ValueError(f"unknown node type {t!r} of input edge type {input_type}")
        neg = NegativeSampling.cast(neg_sampling)
        dev = self.device
        src = inputs.row.to(dev, torch.long)
        dst = inputs.col.to(dev, torch.long)
        num_pos = src.numel()
        if dst.numel() != num_pos:
            raise ValueError("seed links need as many dst as src nodes")
        label = inputs.label.to(dev) if inputs.label is not None else None
        time = inputs.time.to(dev) if inputs.time is not None else None
        src_time = dst_time = time

        num_neg = 0
        if neg is not None:
            gen = self._get_generator()
            if neg.is_binary():
                # Random (src, dst) pairs; negative j belongs to positive j % num_pos.
                num_neg = math.ceil(num_pos * neg.amount)
                neg_time = _repeat_to(time, num_neg)
                src_neg = self._negatives(src_type, num_neg, neg_time, neg.src_weight, gen)
                dst_neg = self._negatives(dst_type, num_neg, neg_time, neg.dst_weight, gen)
                src, dst = torch.cat([src, src_neg]), torch.cat([dst, dst_neg])
                if label is None:
                    label = torch.ones(num_pos, device=dev)
                label = torch.cat([label, label.new_zeros((num_neg,) + label.shape[1:])])
                if time is not None:
                    src_time = dst_time = torch.cat([time, neg_time])
            else:  # triplet: `amount` random dst per positive
                if label is not None:
                    raise ValueError("triplet negative sampling takes no edge labels")
                num_neg = num_pos * int(neg.amount)
                neg_time = _repeat_to(time, num_neg)
                dst = torch.cat([dst, self._negatives(dst_type, num_neg, neg_time,
                                                      neg.dst_weight, gen)])
                if time is not None:
                    dst_time = torch.cat([time, neg_time])

        n_src, n_dst = src.numel(), dst.numel()
        if src_type != dst_type:
            seeds = {src_type: src, dst_type: dst}
            times = None if time is None else {src_type: src_time, dst_type: dst_time}
        else:
            seeds = {src_type: torch.cat([src, dst])}
            times = None if time is None else {src_type: torch.cat([src_time, dst_time])}
        out = self._sample(seeds, times)

        # Seed index -> index of its positive link: the i-th src (or dst) seed,
        # negatives included, maps to i % num_pos, so that `time[batch]` is every
        # node's seed time.
        ar = torch.arange(max(n_src, n_dst), device=dev)
        if num_pos > 0:
            ar = ar.remainder(num_pos)
        relabel = torch.cat([ar[:n_src], ar[:n_dst]])
        out.batch = {t: relabel.index_select(0, b) for t, b in out.batch.items()}

        input_id = inputs.input_id
        if input_id is None:
            input_id = torch.arange(num_pos)
        input_id = input_id.to(dev)
        if neg is None or neg.is_binary():
            if src_type != dst_type:
                edge_label_index = torch.arange(n_src, device=dev).repeat(2).view(2, -1)
            else:
                edge_label_index = torch.arange(n_src + n_dst, device=dev).view(2, -1)
            out.metadata = (input_id, edge_label_index, label, src_time)
        else:
            src_index = torch.arange(num_pos, device=dev)
            base = num_pos if src_type != dst_type else 2 * num_pos
            dst_pos_index = torch.arange(base - num_pos, base, device=dev)
            dst_neg_index = torch.arange(base, base + num_neg, device=dev)
            dst_neg_index = dst_neg_index.view(int(neg.amount), num_pos).t().contiguous()
            if dst_neg_index.size(1) == 1:
                dst_neg_index = dst_neg_index.view(-1)
            out.metadata = (input_id, src_index, dst_pos_index, dst_neg_index, src_time)
        return out

    def _negatives(self, node_type: NodeType, num: int, seed_time: Optional[Tensor],
                   weight: Optional[Tensor], gen: torch.Generator) -> Tensor:
        """``num`` random nodes of ``node_type``, uniform or proportional to ``weight``.

        With ``seed_time`` and a timed type, the i-th is drawn among the nodes the i-th
        seed may see (the sampler's time rule); if it may see none, the oldest node.
        """
        dev = self.device
        n = self.num_nodes[node_type]
        if num == 0:
            return torch.empty(0, dtype=torch.long, device=dev)
        if n == 0:
            raise ValueError(f"cannot draw negative {node_type!r} nodes: the type has none")
        timed = seed_time is not None and node_type in self._time_stride
        if weight is None and not timed:
            return torch.randint(n, (num,), generator=gen, device=dev)
        order = hi = None
        if timed:
            keys, order = self._sorted_time_key(node_type)
            count = torch.searchsorted(keys, self._threshold(node_type, seed_time))
            hi = (count - 1).clamp_(min=0)  # count == 0: index 0, the oldest node
        u = torch.rand(num, generator=gen, device=dev, dtype=torch.float64)
        if weight is None:
            idx = torch.minimum((u * count).long(), hi)
        else:  # inverse CDF over the (eligible prefix of the) nodes
            cum = self._weight_cdf(node_type, weight, order)
            if hi is None:
                total = cum[-1:]
                hi = torch.full_like(u, n - 1, dtype=torch.long)
            else:
                total = torch.where(count > 0, cum.index_select(0, hi), 0.0)
            idx = torch.minimum(torch.searchsorted(cum, u * total, right=True), hi)
        return idx if order is None else order.index_select(0, idx)

    def _sorted_time_key(self, node_type: NodeType) -> Tuple[Tensor, Tensor]:
        """Time keys of a timed type in ascending order and the node ids in that order."""
        hit = self._neg_cache.get(("time", node_type))
        if hit is None:
            keys, order = torch.sort(self._time_key[node_type], stable=True)
            hit = self._neg_cache[("time", node_type)] = (keys, order)
        return hit

    def _weight_cdf(self, node_type: NodeType, weight: Tensor, order: Optional[Tensor]) -> Tensor:
        key = ("cdf", node_type, order is not None)
        hit = self._neg_cache.get(key)
        if hit is not None and hit[0] is weight and hit[1] == weight._version:
            return hit[2]
        w = weight.reshape(-1)
        if w.numel() != self.num_nodes[node_type]:
            raise ValueError(f"negative sampling weight of {node_type!r} has {w.numel()} entries, "
                             f"expected {self.num_nodes[node_type]}")
        w = w.to(self.device, torch.float64)
        if order is not None:
            w = w.index_select(0, order)
        cum = torch.cumsum(w, 0)
        self._neg_cache[key] = (weight, weight._version, cum)
        return cum

    # ------------------------------------------------------------------ #
    # Sampling core
    # ------------------------------------------------------------------ #
    def _threshold(self, node_type: NodeType, seed_time: Tensor) -> Tensor:
        """Per seed: a node of ``node_type`` with time key r is eligible iff r < q."""
        stride = self._time_stride[node_type]
        node_int = not self.node_time[node_type].is_floating_point()
        if node_int and seed_time.is_floating_point():
            # Integer node times: t <= s  <=>  t <= floor(s);  t < s  <=>  t < ceil(s).
            seed_time = torch.ceil(seed_time) if self.strict else torch.floor(seed_time)
            seed_time = torch.nan_to_num(seed_time, nan=float("-inf"))
            # Into int64 range before the cast (the largest double below 2**63).
            seed_time = seed_time.clamp(-(2.0**63), 2.0**63 - 1024).to(torch.long)
        if node_type in self._time_min:
            lo = self._time_min[node_type]
            st = seed_time.to(torch.long).clamp(lo - 1, lo + stride - 1)
            q = st - lo + (0 if self.strict else 1)
            return q.clamp_(0, stride - 1)
        uniq = self._uniq_time[node_type]
        return torch.searchsorted(uniq, seed_time.to(uniq.dtype), right=not self.strict)

    def _seed_thresholds(self, seed_dict: Dict[NodeType, Tensor],
                         seed_time_dict: Optional[Dict[NodeType, Tensor]],
                         ) -> Dict[NodeType, Tensor]:
        """Per timed node type: the threshold of every seed (in global seed order).

        A seed type without a given time uses its own node time, or no filter when
        it has none; no filter at all when no seed has a time.
        """
        parts: List[Optional[Tensor]] = []
        for t, nodes in seed_dict.items():
            if seed_time_dict is not None and seed_time_dict.get(t) is not None:
                parts.append(seed_time_dict[t])
            elif t in self.node_time:
                parts.append(self.node_time[t].index_select(0, nodes))
            else:
                parts.append(None)
        if all(p is None for p in parts):
            return {}
        out = {}
        for t, stride in self._time_stride.items():
            qs = [self._threshold(t, p) if p is not None else
                  torch.full((nodes.numel(),), stride - 1, dtype=torch.long, device=self.device)
                  for p, nodes in zip(parts, seed_dict.values())]
            out[t] = _cat(qs)
        return out

    def _sample(self, seed_dict: Dict[NodeType, Tensor],
                seed_time_dict: Optional[Dict[NodeType, Tensor]] = None) -> HeteroSamplerOutput:
        """Disjoint temporal sampling from seeds of one or more node types.

        The seeds of all types are numbered consecutively in dict order (the
        ``batch`` of the output is that global seed index), as pyg-lib's
        ``hetero_neighbor_sample`` does.  ``seed_time_dict``: per seed type, the
        seed times (see :meth:`_seed_thresholds`).  No metadata.
        """
        dev = self.device
        gen = self._get_generator()
        seed_q = self._seed_thresholds(seed_dict, seed_time_dict)

        empty = torch.empty(0, dtype=torch.long, device=dev)
        # Per node type: sorted (key, local id) chunks, key = batch * N + node.
        chunks: Dict[NodeType, List[Tuple[Tensor, Tensor]]] = {t: [] for t in self.node_types}
        node_parts: Dict[NodeType, List[Tensor]] = {t: [] for t in self.node_types}
        batch_parts: Dict[NodeType, List[Tensor]] = {t: [] for t in self.node_types}
        count: Dict[NodeType, int] = {t: 0 for t in self.node_types}
        num_sampled_nodes: Dict[NodeType, List[int]] = {t: [0] for t in self.node_types}
        rows: Dict[EdgeType, List[Tensor]] = {et: [] for et in self.edge_types}
        cols: Dict[EdgeType, List[Tensor]] = {et: [] for et in self.edge_types}
        eids: Dict[EdgeType, List[Tensor]] = {et: [] for et in self.edge_types}
        num_sampled_edges: Dict[EdgeType, List[int]] = {et: [] for et in self.edge_types}

        # Frontier: per node type, (global ids, seed index, local id of the
        # first one) -- a hop's new nodes have consecutive local ids.
        frontier: Dict[NodeType, Tuple[Tensor, Tensor, int]] = {}
        offset = 0
        for t, seed_nodes in seed_dict.items():
            if t not in self.num_nodes:
                raise ValueError(f"unknown seed node type {t!r}")
            n = seed_nodes.numel()
            local = torch.arange(n, device=dev)
            seed_batch = local + offset if offset else local
            chunks[t].append((seed_batch * max(self.num_nodes[t], 1) + seed_nodes, local))
            node_parts[t].append(seed_nodes)
            batch_parts[t].append(seed_batch)
            count[t] = n
            num_sampled_nodes[t][0] = n
            frontier[t] = (seed_nodes, seed_batch, 0)
            offset += n

        for hop in range(self.num_hops):
            hop_start = dict(count)
            for et in self.edge_types:
                src, _, dst = et
                k = self.num_neighbors[et][hop]
                f = frontier.get(dst)
                if k == 0 or f is None or f[0].numel() == 0:
                    num_sampled_edges[et].append(0)
                    continue
                f_node, f_batch, f_local0 = f
                pos, seg = self._sample_segments(et, f_node, f_batch, seed_q.get(src), k, gen)
                n_edges = pos.numel()
                num_sampled_edges[et].append(n_edges)
                if n_edges == 0:
                    continue
                src_node = self._row[et].index_select(0, pos)
                batch = f_batch.index_select(0, seg)
                local = self._assign_local(src, src_node, batch, chunks, node_parts,
                                           batch_parts, count)
                rows[et].append(local)
                cols[et].append(seg + f_local0 if f_local0 else seg)
                eid = self._eid[et]
                eids[et].append(pos if eid is None else eid.index_select(0, pos))

            new_frontier = {}
            for t in self.node_types:
                n_new = count[t] - hop_start[t]
                num_sampled_nodes[t].append(n_new)
                if n_new > 0:
                    # This hop's node parts are the trailing ones.
                    parts_n, parts_b, tot = [], [], 0
                    for pn, pb in zip(reversed(node_parts[t]), reversed(batch_parts[t])):
                        if tot >= n_new:
                            break
                        parts_n.append(pn)
                        parts_b.append(pb)
                        tot += pn.numel()
                    parts_n.reverse()
                    parts_b.reverse()
                    new_frontier[t] = (_cat(parts_n), _cat(parts_b), hop_start[t])
            frontier = new_frontier

        node = {t: _cat(node_parts[t]) if node_parts[t] else empty for t in self.node_types}
        batch = {t: _cat(batch_parts[t]) if batch_parts[t] else empty for t in self.node_types}
        row = {et: _cat(rows[et]) if rows[et] else empty for et in self.edge_types}
        col = {et: _cat(cols[et]) if cols[et] else empty for et in self.edge_types}
        edge = {et: _cat(eids[et]) if eids[et] else empty for et in self.edge_types}

        return HeteroSamplerOutput(
            node=node,
            row=row,
            col=col,
            edge=edge,
            batch=batch,
            num_sampled_nodes=num_sampled_nodes,
            num_sampled_edges=num_sampled_edges,
        )

    # ------------------------------------------------------------------ #
    def _assign_local(self, node_type, node, batch, chunks, node_parts, batch_parts, count) -> Tensor:
        """Local ids of the (batch, node) pairs; pairs never seen get new ids."""
        n = max(self.num_nodes[node_type], 1)
        key = batch * n + node
        uniq, inv = torch.unique(key, sorted=True, return_inverse=True)
        loc = None
        for ck, cl in chunks[node_type]:
            p = torch.searchsorted(ck, uniq).clamp_(max=ck.numel() - 1)
            hit = ck.index_select(0, p) == uniq
            found = torch.where(hit, cl.index_select(0, p), -1)
            loc = found if loc is None else torch.where(hit, found, loc)
        if loc is None:  # first nodes of this type
            new_key, new_loc = uniq, torch.arange(count[node_type], count[node_type] + uniq.numel(),
                                                  device=uniq.device)
            loc = new_loc
        else:
            new_idx = (loc < 0).nonzero().view(-1)
            new_key = uniq.index_select(0, new_idx)
            new_loc = torch.arange(count[node_type], count[node_type] + new_key.numel(),
                                   device=uniq.device)
            loc.index_copy_(0, new_idx, new_loc)
        n_new = new_key.numel()
        if n_new > 0:
            chunks[node_type].append((new_key, new_loc))
            node_parts[node_type].append(new_key % n)
            batch_parts[node_type].append(torch.div(new_key, n, rounding_mode="floor"))
            count[node_type] += n_new
        return loc.index_select(0, inv)

    def _sample_segments(self, et, f_node, f_batch, q, k, gen) -> Tuple[Tensor, Tensor]:
        """Sample up to ``k`` eligible incoming edges of every frontier node.

        Returns (positions into the CSC arrays, frontier index of each).
        """
        if self._unit[et]:  # one incoming edge per dst: CSC position == dst id
            if q is None:  # (clone: `pos` may become the output edge ids)
                return f_node.clone(), torch.arange(f_node.numel(), device=f_node.device)
            tkey = self._seg_key[et].index_select(0, f_node) - f_node * self._time_stride[et[0]]
            ok = (tkey < q.index_select(0, f_batch)).nonzero().view(-1)
            return f_node.index_select(0, ok), ok
        colptr = self._colptr[et]
        start = colptr.index_select(0, f_node)
        if q is not None:  # timed src: eligible = [start, first key >= q)
            query = f_node * self._time_stride[et[0]] + q.index_select(0, f_batch)
            end = torch.searchsorted(self._seg_key[et], query)
        else:
            end = colptr.index_select(0, f_node + 1)
        cnt = end - start
        if k < 0:
            return _expand(cnt, start)
        if self.strategy == "last":
            take = cnt.clamp(max=k)
            return _expand(take, end - take)

        # uniform: segments with c <= 2k are expanded in full ...
        dev = cnt.device
        small = cnt <= _MID_FACTOR * k
        pos, seg = _expand(torch.where(small, cnt, 0), start)
        # ... and those with k < c <= 2k keep the k smallest random keys.
        idx = (cnt.index_select(0, seg) > k).nonzero().view(-1)
        if idx.numel() > 0:
            sseg = seg.index_select(0, idx)  # ascending
            rnd = torch.randint(0, 2**31, (idx.numel(),), generator=gen, device=dev)
            order = torch.sort(sseg * 2**31 + rnd).indices
            sseg_sorted = sseg.index_select(0, order)
            first = torch.ones_like(sseg_sorted, dtype=torch.bool)
            first[1:] = sseg_sorted[1:] != sseg_sorted[:-1]
            rank = torch.arange(sseg_sorted.numel(), device=dev) - _run_starts(first)
            drop = idx.index_select(0, order.index_select(0, (rank >= k).nonzero().view(-1)))
            keep = torch.ones(seg.numel(), dtype=torch.bool, device=dev)
            keep[drop] = False
            kidx = keep.nonzero().view(-1)
            pos, seg = pos.index_select(0, kidx), seg.index_select(0, kidx)
        # Segments with c > 2k: i.i.d. offsets, first k distinct.
        big = (~small).nonzero().view(-1)
        if big.numel() > 0:
            bpos, bseg = self._sample_large(start.index_select(0, big), cnt.index_select(0, big),
                                            k, gen)
            pos = torch.cat([pos, bpos])
            seg = torch.cat([seg, big.index_select(0, bseg)])
        return pos, seg

    @staticmethod
    def _sample_large(start: Tensor, cnt: Tensor, k: int, gen,
                      m: Optional[int] = None) -> Tuple[Tensor, Tensor]:
        """k distinct uniform offsets per segment with cnt > 2k (never materialises cnt).

        ``m``: draws per segment and round (default ``2k + 4``).
        """
        dev = cnt.device
        s = cnt.numel()
        m = 2 * k + 4 if m is None else m
        cntf = cnt.to(torch.float64).unsqueeze(1)
        draws = (torch.rand((s, m), generator=gen, device=dev, dtype=torch.float64) * cntf).long()
        draws = torch.minimum(draws, cnt.unsqueeze(1) - 1)
        for _ in range(_MAX_ROUNDS):
            sel, ok = _first_distinct(draws, k)
            if bool(ok.all()):
                break
            # Rows with fewer than k distinct values: extend their sequences.
            bad = (~ok).nonzero().view(-1)
            extra = (torch.rand((bad.numel(), m), generator=gen, device=dev, dtype=torch.float64)
                     * cntf.index_select(0, bad)).long()
            extra = torch.minimum(extra, cnt.index_select(0, bad).unsqueeze(1) - 1)
            # Pad all rows to the new width; padding (-1) never counts as a value.
            pad = torch.full((s, m), -1, dtype=torch.long, device=dev)
            pad[bad] = extra
            draws = torch.cat([draws, pad], dim=1)
        else:  # pragma: no cover - probability ~0
            raise RuntimeError("uniform sampling did not converge")
        flat = sel.view(-1).nonzero().view(-1)
        r = torch.div(flat, draws.size(1), rounding_mode="floor")
        return start.index_select(0, r) + draws.view(-1).index_select(0, flat), r

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(strategy={self.strategy!r}, hops={self.num_hops}, "
                f"strict={self.strict}, device={self.device})")


def _is_sorted(x: Tensor) -> bool:
    return x.numel() < 2 or bool((x[1:] >= x[:-1]).all())


def _stable_argsort(key: Tensor) -> Optional[Tensor]:
    """Stable argsort of ``key``, or None when it is already sorted."""
    if _is_sorted(key):
        return None
    return torch.argsort(key, stable=True)


def _repeat_to(x: Optional[Tensor], n: int) -> Optional[Tensor]:
    """``x[i % len(x)]`` for ``i < n`` (None stays None)."""
    if x is None:
        return None
    if x.numel() == 0:
        return x[:0]
    return x.repeat(-(-n // x.numel()))[:n]


def _cat(parts: List[Tensor]) -> Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _expand(length: Tensor, base: Tensor) -> Tuple[Tensor, Tensor]:
    """Segments of lengths L starting at ``base``: (base[i] + j, i) for j < L[i]."""
    dev = length.device
    total = int(length.sum())
    seg = torch.repeat_interleave(torch.arange(length.numel(), device=dev), length,
                                  output_size=total)
    shift = base - (torch.cumsum(length, 0) - length)  # base - exclusive prefix sum
    pos = shift.index_select(0, seg) + torch.arange(total, device=dev)
    return pos, seg


def _run_starts(first: Tensor) -> Tensor:
    """Index of the start of the run each element belongs to (runs marked by ``first``)."""
    idx = torch.arange(first.numel(), device=first.device)
    starts = torch.where(first, idx, torch.zeros_like(idx))
    return torch.cummax(starts, 0).values


def _first_distinct(draws: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """Mask of the first k distinct values (in column order) of every row; -1 = padding.

    Returns (selected mask [S, M], row has k distinct values [S]).
    """
    sorted_vals, order = torch.sort(draws, dim=1, stable=True)
    first = torch.ones_like(sorted_vals, dtype=torch.bool)
    first[:, 1:] = sorted_vals[:, 1:] != sorted_vals[:, :-1]
    first &= sorted_vals >= 0
    is_first = torch.zeros_like(first)
    is_first.scatter_(1, order, first)
    csum = is_first.cumsum(1)
    sel = is_first & (csum <= k)
    ok = csum[:, -1] >= k
    return sel, ok
