"""Link sampling of :class:`~rdl.graph.sampler.TemporalSampler`: seeds, negatives, metadata.

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

Node-level semantics (disjoint subgraphs, time filter, strategies): :mod:`rdl.graph.sampler`.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from torch_geometric.loader import LinkLoader
from torch_geometric.sampler import EdgeSamplerInput, HeteroSamplerOutput, NegativeSampling
from torch_geometric.typing import NodeType

from rdl.graph.random_draws import rand64, randint


class LinkSampling:
    """Mixin of :class:`~rdl.graph.sampler.TemporalSampler`: seed links -> subgraphs + metadata."""

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
        self.reseed_for(inputs.input_id)
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
            return randint(n, (num,), gen, dev)
        order = hi = None
        if timed:
            keys, order = self._sorted_time_key(node_type)
            count = torch.searchsorted(keys, self._threshold(node_type, seed_time))
            hi = (count - 1).clamp_(min=0)  # count == 0: index 0, the oldest node
        u = rand64((num,), gen, dev)
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
        # Summed on the host, then moved: a GPU's parallel cumsum rounds otherwise than the
        # CPU's sequential one, and the draws would then pick other nodes near a boundary.
        w = w.to("cpu", torch.float64)
        if order is not None:
            w = w.index_select(0, order.cpu())
        cum = torch.cumsum(w, 0).to(self.device)
        self._neg_cache[key] = (weight, weight._version, cum)
        return cum


def _repeat_to(x: Optional[Tensor], n: int) -> Optional[Tensor]:
    """``x[i % len(x)]`` for ``i < n`` (None stays None)."""
    if x is None:
        return None
    if x.numel() == 0:
        return x[:0]
    return x.repeat(-(-n // x.numel()))[:n]


class KeepArgsLinkLoader(LinkLoader):
    """PyG's ``LinkLoader`` keeping ``edge_label``, ``edge_label_time`` and ``input_id`` as
    attributes: Lightning rebuilds a loader from its attributes to inject a distributed
    sampler, and without them it would rebuild one without link times (no time filter)."""

    def __init__(self, data, link_sampler, edge_label_index=None, edge_label=None,
                 edge_label_time=None, neg_sampling=None, input_id=None, **kwargs):
        super().__init__(data, link_sampler, edge_label_index, edge_label, edge_label_time,
                         neg_sampling, input_id=input_id, **kwargs)
        self.edge_label, self.edge_label_time, self.input_id = edge_label, edge_label_time, input_id
