"""Loader transforms on sampled batches. They run in the loader, on the CPU (its workers), or
with ``data.sampler.device`` on that device in the training process: every tensor a transform
makes is made on the batch's device, and computes there what it computes on the CPU."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import coalesce

#: pad rows (and nodes) after every node type's own in a batch, and pad edges between them
#: per edge type: no size that reaches the model is 0 or 1 (a compiled graph would bake it
#: in; ``rdl/training/shapes.py``). :class:`InputRows` adds the rows, ``pad_inputs`` the
#: nodes and edges.
PAD = 2


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


class InputRows:
    """The rows of each node type that the model encodes: every distinct row of the
    batch once (``tf``), then ``num_pad`` pad rows, and for each node of the batch and each
    pad row its row in ``tf`` (``tf_index``, ``[num_nodes + num_pad]``).

    A row's encoding does not depend on the seed (the time encoding is added later), and
    disjoint subgraphs repeat rows: popular articles appear once per customer who bought
    them, so each is encoded once instead (in the default user-churn batch about 6,000
    article nodes are fewer than 1,000 distinct rows). The pad rows (the table's first row)
    keep node types from reaching the compiled model with 0 or 1 rows (see
    :func:`rdl.training.shapes.pad_inputs`). Runs in the loader, on the CPU, where
    ``unique`` and building a TensorFrame (which checks its offsets) cost no device sync; on
    a GPU (``data.sampler.device``) each node type's ``unique`` syncs once a batch (its
    size), and so does gathering the rows of a multi-valued column (their offsets), never
    per node. The loader's graph carries no ``tf``, so that rows are gathered once, here.

    ``per_token``: for token sets, one row per token slot instead (``tf`` of
    ``B * K_t`` rows, ``tok_row`` their positions, no pad rows): each table's encoder then
    sees one size for every batch (static shapes), at the cost of encoding repeated rows.
    """

    def __init__(self, tf_dict: dict, num_pad: int = 2, per_token: bool = False):
        self.tf_dict, self.num_pad, self.per_token = tf_dict, num_pad, per_token

    def __call__(self, batch):
        for nt, tf in self.tf_dict.items():
            store = batch[nt]  # looked up once: PyG's lookup is Python, at every batch
            if "tok_id" in store and self.per_token:
                ids = store.tok_id
                store.tf = tf[ids.flatten()]
                store.tok_row = torch.arange(ids.numel(), device=ids.device).view_as(ids)
                continue
            if "tok_id" in store:
                # Token sets (:class:`~rdl.graph.tokens.TokenSet`): a token model encodes
                # only its tokens' rows (``tok_row``: each token's row in ``tf``).
                rows, index = torch.unique(store.tok_id, return_inverse=True)
                pad = torch.zeros(self.num_pad, dtype=torch.long, device=rows.device)
                store.tf, store.tok_row = tf[torch.cat([rows, pad])], index
                continue
            rows, index = torch.unique(store.n_id, return_inverse=True)
            pad = torch.zeros(self.num_pad, dtype=torch.long, device=rows.device)
            store.tf = tf[torch.cat([rows, pad])]
            store.tf_index = torch.cat([index, torch.arange(rows.numel(),
                                                            rows.numel() + self.num_pad,
                                                            device=rows.device)])
        return batch


class DropEdgeIds:
    """Loader transform: removes each edge type's ``e_id`` (the sampled edges' ids in the
    graph, which PyG's loaders attach for edge features). rdl's graphs have none and no
    step reads the ids: without them a batch has one tensor fewer per edge type to pin and
    to copy to the GPU at every step (40 tensors to 34 in the default user-churn batch)."""

    def __call__(self, batch):
        for store in batch.edge_stores:
            if "e_id" in store:
                del store.e_id
        return batch


def pad_lists(ptr: Tensor, idx: Tensor, rows: Tensor) -> Tensor:
    """Rows ``rows`` of a CSR list (``ptr``, ``idx``) as ``[len(rows), L]``, padded with -1."""
    start, count = ptr[rows], ptr[rows + 1] - ptr[rows]
    width = int(count.max()) if len(rows) else 0   # (on a GPU: a sync per batch)
    offset = torch.arange(max(width, 1), device=ptr.device)
    valid = offset < count.unsqueeze(-1)
    pos = (start.unsqueeze(-1) + offset).clamp(max=max(len(idx) - 1, 0))
    return torch.where(valid, idx[pos] if len(idx) else torch.zeros_like(pos), -1)


class AttachLinkTarget:
    """Loader transform for link tasks: the true ``dst`` rows of each seed.

    Sets ``batch[src_table].y`` ``[B, L]`` (true rows, -1 padded) and, for each
    ``dst_table`` node of the batch, ``batch[dst_table].dst_y`` (1.0 if it is a true row of
    its own seed): two names, as a task may link a table to itself (RelBench's
    post-post-related). The lists are a CSR over the task table's rows (``ptr``, ``idx``).
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
            seed = torch.arange(pos.size(0), device=pos.device).unsqueeze(-1).expand_as(pos)
            keys = (seed * self.num_dst + pos)[pos >= 0]
            dst.dst_y = torch.isin(dst.batch * self.num_dst + dst.n_id, keys).float()
        return batch


class AttachTarget:
    """Loader transform: the labels of a batch's seeds, looked up by their row in the table,
    and, optional, what the model's output starts from as ``base`` (the seed's last
    visible label, or its tree prior: :meth:`Prepared.base <rdl.preparation.Prepared.base>`) and its seed
    features as ``seed_x`` (``feats``, :mod:`~rdl.features.seed`).

    Labels cannot live on the graph: one entity is a seed at many times with other labels.
    """

    def __init__(self, entity_table: str, target: Tensor, base: Tensor | None = None,
                 feats: Tensor | None = None):
        self.entity_table = entity_table
        self.target, self.base, self.feats = target, base, feats

    def __call__(self, batch):
        store = batch[self.entity_table]
        idx = store.input_id
        if idx.device != self.target.device:
            # A sampler on the GPU returns its seeds' rows there: the tables follow once.
            self.target, self.base, self.feats = (None if t is None else t.to(idx.device)
                                                  for t in (self.target, self.base, self.feats))
        store.y = self.target[idx]
        if self.base is not None:
            store.base = self.base[idx]
        if self.feats is not None:
            store.seed_x = self.feats[idx]
        return batch
