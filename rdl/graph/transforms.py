"""Loader transforms on sampled batches (they run in the loader, on the CPU workers)."""
from __future__ import annotations

import torch
import torch_frame
from torch import Tensor
from torch_geometric.utils import coalesce


class Bidirectional:
    """Make every sampled edge usable in both directions.

    The sampler follows edges from the seed outwards, and messages flow back towards the
    seed, so the outermost nodes (an article two hops from a customer) receive nothing.
    This adds the reverse of each sampled ``f2p_<col>`` edge to ``rev_f2p_<col>`` and vice
    versa, without duplicates (PyG's ``subgraph_type="bidirectional"``).
    """

    def __call__(self, batch):
        for src, rel, dst in batch.edge_types:
            if not rel.startswith("f2p_"):
                continue
            rev = (dst, "rev_" + rel, src)
            if rev not in batch.edge_types:
                continue
            n_src, n_dst = batch[src].num_nodes, batch[dst].num_nodes
            both = torch.cat([batch[src, rel, dst].edge_index, batch[rev].edge_index.flip(0)], 1)
            both = coalesce(both, num_nodes=max(n_src, n_dst))
            batch[src, rel, dst].edge_index = both
            batch[rev].edge_index = both.flip(0)
            for store in (batch[src, rel, dst], batch[rev]):
                if "e_id" in store:  # no longer one id per edge
                    del store.e_id
        return batch


class PadRows:
    """Append ``num_pad`` rows of its table to every node type's TensorFrame ``tf``
    (``batch[t].num_nodes`` still counts the real rows only). With
    :func:`rdl.training.compile.pad_inputs`, no node or edge type reaches the compiled
    model with 0 or 1 rows, which would make it recompile. Done here, on the CPU, because
    building a TensorFrame checks its offsets with a read of their values."""

    def __init__(self, data, num_pad: int = 2):
        first = torch.zeros(num_pad, dtype=torch.long)
        self.pad = {nt: data[nt].tf[first] for nt in data.node_types if "tf" in data[nt]}

    def __call__(self, batch):
        for nt, pad in self.pad.items():
            if "tf" in batch[nt]:
                batch[nt].tf = torch_frame.cat([batch[nt].tf, pad])
        return batch


def pad_lists(ptr: Tensor, idx: Tensor, rows: Tensor) -> Tensor:
    """Rows ``rows`` of a CSR list (``ptr``, ``idx``) as ``[len(rows), L]``, padded with -1."""
    start, count = ptr[rows], ptr[rows + 1] - ptr[rows]
    width = int(count.max()) if len(rows) else 0
    offset = torch.arange(max(width, 1))
    valid = offset < count.unsqueeze(-1)
    pos = (start.unsqueeze(-1) + offset).clamp(max=max(len(idx) - 1, 0))
    return torch.where(valid, idx[pos] if len(idx) else torch.zeros_like(pos), -1)


class AttachLinkTarget:
    """Loader transform for link tasks: the true ``dst`` rows of each seed.

    Sets ``batch[src_table].y`` ``[B, L]`` (true rows, -1 padded) and, for each
    ``dst_table`` node of the batch, ``batch[dst_table].y`` (1.0 if it is a true row of its
    own seed). The lists are a CSR over the task table's rows (``ptr``, ``idx``).
    """

    def __init__(self, src_table: str, dst_table: str, ptr: Tensor, idx: Tensor, num_dst: int):
        self.src_table, self.dst_table = src_table, dst_table
        self.ptr, self.idx, self.num_dst = ptr, idx, num_dst

    def __call__(self, batch):
        src = batch[self.src_table]
        pos = pad_lists(self.ptr, self.idx, src.input_id)
        src.y = pos
        dst = batch[self.dst_table]
        if "batch" in dst:
            seed = torch.arange(pos.size(0)).unsqueeze(-1).expand_as(pos)
            keys = (seed * self.num_dst + pos)[pos >= 0]
            dst.y = torch.isin(dst.batch * self.num_dst + dst.n_id, keys).float()
        return batch
