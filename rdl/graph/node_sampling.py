"""Disjoint temporal hop expansion of :class:`~rdl.graph.sampler.TemporalSampler`.

``sample_from_nodes`` (what ``NodeLoader`` calls) and the sampling core that link
sampling shares: seed thresholds, the hop loop, per-seed de-duplication of nodes,
and the per-segment draws.  The semantics are in :mod:`rdl.graph.sampler`.

Host synchronisation (CUDA): the sizes of data-dependent outputs are needed
on the host, so every hop and edge type syncs a few times (``_expand``'s
total, ``unique``, ``nonzero``, the large-segment path's convergence check).
Nothing per seed or per node runs in Python.  The seed-side work adds no
sync: seed thresholds, negative sampling (``randint`` / ``rand``,
``searchsorted``, gathers; no rejection loop), the batch relabelling and the
link metadata are device ops sized from host-known counts.  The loader's
input tensors arrive on the CPU and are copied to the device once each (a
pageable copy briefly blocks the host), and so are the random numbers, drawn
on the host (:mod:`rdl.graph.random_draws`): one copy per draw, a few draws
per hop and edge type.

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

from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor

from torch_geometric.sampler import HeteroSamplerOutput, NodeSamplerInput
from torch_geometric.typing import EdgeType, NodeType

from rdl.graph.random_draws import rand64, randint

_MID_FACTOR = 2  # c <= _MID_FACTOR * k -> random keys over the whole segment
_MAX_ROUNDS = 64  # safety bound on the re-draw rounds of the large-c path


class NodeSampling:
    """Mixin of :class:`~rdl.graph.sampler.TemporalSampler`: node seeds -> subgraphs."""

    def sample_from_nodes(self, inputs: NodeSamplerInput, **kwargs) -> HeteroSamplerOutput:
        input_type = inputs.input_type
        if input_type is None or input_type not in self.num_nodes:
            raise ValueError(f"unknown input node type {input_type!r}")
        dev = self.device
        self.reseed_for(inputs.input_id)
        seed_nodes = inputs.node.to(dev, torch.long)
        seed_time = inputs.time.to(dev) if inputs.time is not None else None
        out = self._sample({input_type: seed_nodes},
                           None if seed_time is None else {input_type: seed_time})
        input_id = inputs.input_id
        if input_id is None:
            input_id = torch.arange(seed_nodes.numel())
        out.metadata = (input_id.to(dev), seed_time)
        return out

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
        if self.strategy == "mix":  # the k // 2 most recent, the rest uniform among the older
            take = cnt.clamp(max=k // 2)
            pos, seg = _expand(take, end - take)
            upos, useg = self._uniform(start, cnt - take, k - k // 2, gen)
            return torch.cat([pos, upos]), torch.cat([seg, useg])
        return self._uniform(start, cnt, k, gen)

    def _uniform(self, start: Tensor, cnt: Tensor, k: int, gen) -> Tuple[Tensor, Tensor]:
        """``min(k, c)`` distinct uniform positions in each segment ``[start, start + c)``."""
        # Segments with c <= 2k are expanded in full ...
        dev = cnt.device
        small = cnt <= _MID_FACTOR * k
        pos, seg = _expand(torch.where(small, cnt, 0), start)
        # ... and those with k < c <= 2k keep the k smallest random keys.
        idx = (cnt.index_select(0, seg) > k).nonzero().view(-1)
        if idx.numel() > 0:
            sseg = seg.index_select(0, idx)  # ascending
            rnd = randint(2**31, (idx.numel(),), gen, dev)
            # Stable: two edges of a segment may draw the same key, and an unstable sort
            # orders such ties otherwise on CUDA than on the CPU (and on one CPU than another).
            order = torch.sort(sseg * 2**31 + rnd, stable=True).indices
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
        draws = (rand64((s, m), gen, dev) * cntf).long()
        draws = torch.minimum(draws, cnt.unsqueeze(1) - 1)
        for _ in range(_MAX_ROUNDS):
            sel, ok = _first_distinct(draws, k)
            if bool(ok.all()):
                break
            # Rows with fewer than k distinct values: extend their sequences.
            bad = (~ok).nonzero().view(-1)
            extra = (rand64((bad.numel(), m), gen, dev) * cntf.index_select(0, bad)).long()
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
