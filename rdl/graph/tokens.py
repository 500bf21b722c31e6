"""Token sets: each seed's sampled neighbourhood as a fixed number of tokens per node type.

A graph transformer attends over a set of rows (tokens) per seed instead of passing
messages along edges. :class:`TokenSet` turns a batch of rdl's disjoint temporal
subgraphs (:class:`~rdl.graph.sampler.TemporalSampler`, so every row already respects the
seed's time) into dense ``[B, K_t]`` index tensors, one per node type ``t`` with a budget
``K_t``: the seed's nearest rows of that type, nearest hop first and, within a hop, most
recent first (then by node id). A seed with fewer rows of a type gets pad slots, masked.

A budget per node type rather than one ``K`` over all types keeps every shape fixed: the
rows of type ``t`` are always ``B * K_t``, so each table's encoder sees one size and the
whole model compiles once with ``dynamic=False`` (CUDA graphs need that). RelGT samples one
budget over all types; here a seed with few rows of one type leaves those slots padded.

Written here because neither PyG nor PyTorch Frame turns sampled subgraphs into
fixed-size token sets.
"""
from __future__ import annotations

import torch
from torch import Tensor


class TokenSet:
    """Loader transform, after sampling: ``batch[t].tok_node`` (``[B, K_t]``, the node of
    each token among the batch's type-``t`` nodes, ``0`` in pad slots), ``tok_mask``
    (``[B, K_t]``, real tokens), ``tok_hop`` (``[B, K_t]``, hops from the seed) and
    ``tok_deg`` (``[B, K_t]``, the node's edges in its sampled subgraph: a local structural
    encoding) for every node type ``t`` in ``budgets``, and for timed types ``tok_time``
    (``[B, K_t]``, the node's time). Pad slots hold 0 everywhere; a node type with no node
    in the batch gets only pad slots. ``tok_id`` (``[B, K_t]``) is each token's row in its
    table (pads: row 0), from which :class:`~rdl.graph.transforms.InputRows` then gathers
    the tokens' rows only.

    Args:
        seed_type: the node type of the seeds; its slot 0 is the seed itself.
        budgets: node type -> tokens per seed ``K_t`` (the seed type's budget counts the
            seed).
        pad_to: a number of seeds ``P``: a batch of ``B < P`` seeds gets ``P - B`` pad
            seeds, so that every token tensor is ``[P, K_t]`` (static shapes: a model
            compiled with ``dynamic=False`` then sees one shape). A pad seed has only pad
            slots, except its seed slot, which is marked real (its row 0) so that its
            attention has a key; its output means nothing and is dropped
            (:meth:`~rdl.training.module.TaskModule.forward`). ``None``: ``B`` rows.
    """

    def __init__(self, seed_type: str, budgets: dict[str, int], pad_to: int | None = None):
        bad = {t: k for t, k in budgets.items() if int(k) < 0}
        if bad:
            raise ValueError(f"token budgets must be >= 0, got {bad}")
        if budgets.get(seed_type, 0) < 1:
            raise ValueError(f"the seed type {seed_type!r} needs a token budget of at least 1 "
                             "(its first token is the seed)")
        if pad_to is not None and int(pad_to) < 1:
            raise ValueError(f"pad_to must be >= 1, got {pad_to}")
        self.seed_type, self.budgets = seed_type, {t: int(k) for t, k in budgets.items()}
        self.pad_to = None if pad_to is None else int(pad_to)

    def __call__(self, batch):
        num_seeds = batch[self.seed_type].seed_time.numel()
        if self.pad_to is not None and num_seeds > self.pad_to:
            raise ValueError(f"a batch of {num_seeds} seeds cannot be padded to {self.pad_to}")
        rows = num_seeds if self.pad_to is None else self.pad_to
        degree = degrees(batch)
        for t, k in self.budgets.items():
            store = batch[t]
            node, mask, hop = select(store.batch, hops_of(store), store.get("time"),
                                     num_seeds, k)
            deg, ids = gather(degree[t], node, mask), gather(store.n_id, node, mask)
            time = gather(store.time, node, mask) if "time" in store else None
            if rows > num_seeds:
                node, hop, deg, ids, time = (None if x is None else pad_rows(x, rows)
                                             for x in (node, hop, deg, ids, time))
                mask = pad_rows(mask, rows)
                if t == self.seed_type:
                    mask[num_seeds:, 0] = True
            store.tok_node, store.tok_mask, store.tok_hop = node, mask, hop
            store.tok_deg, store.tok_id = deg, ids
            if time is not None:
                store.tok_time = time
        return batch


def pad_rows(x: Tensor, rows: int) -> Tensor:
    """``x [B, ...]`` followed by zero rows up to ``[rows, ...]``."""
    return torch.cat([x, x.new_zeros(rows - x.size(0), *x.shape[1:])])


def gather(values: Tensor, node: Tensor, mask: Tensor) -> Tensor:
    """``values[node]``, 0 in pad slots (and everywhere if ``values`` is empty)."""
    if values.numel() == 0:
        return torch.zeros(node.shape, dtype=values.dtype, device=node.device)
    return torch.where(mask, values[node], 0)


def degrees(batch) -> dict[str, Tensor]:
    """Per node type, each node's number of sampled edges (in and out, every edge type)."""
    deg = {t: torch.zeros(batch[t].num_nodes, dtype=torch.long, device=batch[t].n_id.device)
           for t in batch.node_types}
    for (src, _, dst), ei in batch.collect("edge_index").items():
        deg[src] += torch.bincount(ei[0], minlength=deg[src].numel())
        deg[dst] += torch.bincount(ei[1], minlength=deg[dst].numel())
    return deg


def hops_of(store) -> Tensor:
    """Each node's hop from its seed: the sampler adds the nodes hop by hop
    (``num_sampled_nodes[h]`` of them at hop ``h``)."""
    counts = store.num_sampled_nodes   # host ints: the output's size is known, no sync
    dev = store.n_id.device
    return torch.repeat_interleave(torch.arange(len(counts), device=dev),
                                   torch.as_tensor(counts, dtype=torch.long, device=dev),
                                   output_size=sum(counts))


def select(seed: Tensor, hop: Tensor, time: Tensor | None, num_seeds: int,
           k: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per seed, the first ``k`` nodes ordered by (hop, time descending, node index):
    ``(node [num_seeds, k], mask, hop)``, pad slots ``0``, ``False`` and ``0``."""
    n, dev = seed.numel(), seed.device
    order = torch.arange(n, device=dev)
    if time is not None and n:
        # Stable sorts from the last key to the first: most recent, then hop, then seed.
        order = order[torch.sort(-time.to(torch.float64)[order], stable=True).indices]
    order = order[torch.sort(hop[order], stable=True).indices]
    order = order[torch.sort(seed[order], stable=True).indices]
    s = seed[order]
    first = torch.searchsorted(s, s)            # the first position of each seed's run
    rank = torch.arange(n, device=dev) - first
    keep = rank < k
    node = torch.zeros(num_seeds, k, dtype=torch.long, device=dev)
    mask = torch.zeros(num_seeds, k, dtype=torch.bool, device=dev)
    hops = torch.zeros(num_seeds, k, dtype=torch.long, device=dev)
    at = (s[keep], rank[keep])
    node[at], mask[at], hops[at] = order[keep], True, hop[order[keep]]
    return node, mask, hops
