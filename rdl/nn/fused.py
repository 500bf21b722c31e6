"""Heterogeneous message passing in a few large ops instead of many small ones per type.

A heterogeneous GraphSAGE layer written per edge type (PyG's ``HeteroConv`` of
``SAGEConv``) runs, for every edge type, a gather of the source rows, a scatter onto the
destinations and two matmuls, then sums the edge types into each destination type and
normalises each node type on its own. On a GPU each of these is a kernel launch on a
small tensor, and the step is bound by the host that launches them (docs/performance.md).
This module computes the same layer with:

- **one gather and one scatter per layer** (per aggregation) over the edges of every
  edge type at once: each (destination node, incoming edge type) pair is a slot of one
  buffer, laid out so that a destination type's rows, viewed as ``[N_d, k_d * C]``, are
  the concatenation of its ``k_d`` aggregations; the destination's own features go
  through the same gather and scatter into one more slot;
- **one matmul per destination type**: ``[agg_1 | ... | agg_k | x_d] @ [W_1; ...; W_k;
  W_root]^T + b``, where ``W_root`` is the sum of the edge types' root weights (each
  ``SAGEConv`` adds ``lin_r(x_d)``; their sum is one linear map). The weights are the
  per-edge-type modules' own parameters, concatenated at each call: checkpoints, the
  initialisation and what the optimiser sees are the per-type model's;
- **one layer norm over the stacked destination types**, each row scaled by its type's
  weight and bias.

The aggregations are PyG's ``scatter`` (sum, mean, min, max, or a list of them, as
``SAGEConv`` takes): each slot receives exactly the edges, in the same order, that the
per-type scatter gives it. Outputs and gradients equal the per-type layer's up to float
rounding (the matmuls' sums run in another order; tests/nn/test_fused.py).

Written here because PyG's grouped alternatives (``HeteroDictLinear``, segment matmuls)
need ``pyg-lib``, which is not on PyPI, and loop per type without it.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import scatter

#: aggregations the fused layer computes with one scatter each (others: per edge type)
AGGREGATIONS = ("sum", "add", "mean", "min", "max")


def fusable(aggr) -> bool:
    """Whether :func:`sage_layer` computes aggregation ``aggr`` (a name or a list)."""
    names = [aggr] if isinstance(aggr, str) else list(aggr)
    return bool(names) and all(isinstance(a, str) and a in AGGREGATIONS for a in names)


def sage_layer(conv, x_dict: dict[str, Tensor], edges: dict[tuple, Tensor],
               aggr) -> dict[str, Tensor]:
    """One heterogeneous GraphSAGE layer, fused: what ``conv`` (a PyG ``HeteroConv`` of
    ``SAGEConv`` summed per destination type) returns for ``x_dict`` and ``edges``, for
    every destination type with an incoming edge type (before any norm).

    Args:
        conv: the per-type layer whose parameters are used.
        x_dict: node type -> ``[N_t, C]``.
        edges: edge type -> ``[2, E]`` (the edge types to pass messages along).
        aggr: the convs' aggregation: a name or a list (outputs concatenated).
    """
    edges = {et: ei for et, ei in edges.items() if et[0] in x_dict and et[2] in x_dict}
    into: dict[str, list[tuple]] = {}
    for et in edges:
        into.setdefault(et[2], []).append(et)
    if not into:
        return {}
    # The source matrix: every type that sends a message or receives one (its root slot).
    types = list(dict.fromkeys([et[0] for et in edges] + list(into)))
    sizes = [x_dict[t].size(0) for t in types]
    x = torch.cat([x_dict[t] for t in types]) if len(types) > 1 else x_dict[types[0]]
    row0 = dict(zip(types, _starts(sizes)))
    # Slots: destination type d's block holds N_d * (k_d + 1) rows, node-major: node j's
    # slot for its i-th incoming edge type is j * (k_d + 1) + i, its root slot the last.
    dsts = list(into)
    width = {d: len(into[d]) + 1 for d in dsts}
    slot0 = dict(zip(dsts, _starts([x_dict[d].size(0) * width[d] for d in dsts])))
    src, dst = [], []
    for d in dsts:
        for i, et in enumerate(into[d]):
            ei = edges[et]
            src.append(ei[0] + row0[et[0]])
            dst.append(ei[1] * width[d] + (slot0[d] + i))
    for d in dsts:
        node = torch.arange(x_dict[d].size(0), device=x.device)
        src.append(node + row0[d])
        dst.append(node * width[d] + (slot0[d] + width[d] - 1))
    src, dst = torch.cat(src), torch.cat(dst)
    total = sum(x_dict[d].size(0) * width[d] for d in dsts)
    names = [aggr] if isinstance(aggr, str) else list(aggr)
    msg = x.index_select(0, src)
    bufs = [scatter(msg, dst, 0, total, reduce=a) for a in names]
    buf = bufs[0] if len(bufs) == 1 else torch.stack(bufs, dim=1)   # [slots, A, C]
    out = {}
    for d in dsts:
        n, k = x_dict[d].size(0), width[d]
        start = slot0[d]
        rows = buf.narrow(0, start, n * k).reshape(n, k * math.prod(buf.shape[1:]))
        weight, bias = _weights(conv, into[d], len(names))
        out[d] = F.linear(rows, weight, bias)
    return out


def _starts(sizes: list) -> list:
    """Offsets of consecutive blocks of ``sizes`` (sizes may be symbolic)."""
    out, at = [], 0
    for s in sizes:
        out.append(at)
        at = at + s
    return out


def _weights(conv, ets: list[tuple], aggregations: int) -> tuple[Tensor, Tensor | None]:
    """``[W_l of each edge type | sum of their W_r]`` and the sum of their biases, as one
    linear map of a destination's concatenated slots (the root slot holds ``aggregations``
    copies of the node's own features: its weight is ``W_r`` then zeros). Each weight
    enters through :class:`OwnLayout`: its gradient, a column block of the concatenated
    weight's, is made contiguous inside the (compiled) backward, where the blocks of one
    weight are copied together, not by autograd one by one as it writes ``.grad``."""
    sages = [conv.convs[et] for et in ets]
    root = OwnLayout.apply(sages[0].lin_r.weight)
    for s in sages[1:]:
        root = root + OwnLayout.apply(s.lin_r.weight)
    if aggregations > 1:
        root = F.pad(root, (0, root.size(1) * (aggregations - 1)))
    weight = torch.cat([OwnLayout.apply(s.lin_l.weight) for s in sages] + [root], dim=1)
    biases = [s.lin_l.bias for s in sages if s.lin_l.bias is not None]
    bias = None
    for b in biases:
        bias = b if bias is None else bias + b
    return weight, bias


class OwnLayout(torch.autograd.Function):
    """The identity on a (contiguous) parameter, whose backward gives it a contiguous
    gradient of its own: the parameter's own layout.

    Written by hand because autograd writes a gradient whose strides are not its
    parameter's into ``.grad`` by copying it, outside any compiled graph: a kernel for
    each such parameter at every step on a GPU (14 a step for ``experiment=gpu``'s
    user-churn, whose fused layers' weights get column blocks of one gradient). Here the
    copy is part of the backward graph, where Inductor fuses the copies that read one
    buffer (tests/nn/test_fused.py)."""

    @staticmethod
    def forward(weight: Tensor) -> Tensor:
        return weight.view_as(weight)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        # a copy even where the gradient is contiguous: the edge types' root weights,
        # summed, receive one gradient tensor, and autograd copies a shared one too
        return grad.clone(memory_format=torch.contiguous_format)


def stacked_layer_norm(xs: list[Tensor], norms: list[torch.nn.LayerNorm]) -> list[Tensor]:
    """``[norm_t(x_t) for each t]`` as one normalisation over the stacked rows, each row
    then scaled and shifted by its own type's weight and bias (one kernel where the
    per-type version runs one per type)."""
    if len(xs) == 1:
        return [norms[0](xs[0])]
    sizes = [x.size(0) for x in xs]
    eps = {n.eps for n in norms}
    if len(eps) != 1 or any(n.weight is None or n.bias is None for n in norms):
        return [n(x) for n, x in zip(norms, xs)]
    c = xs[0].size(-1)
    y = F.layer_norm(torch.cat(xs), (c,), eps=eps.pop())
    if torch.compiler.is_compiling():
        # each row's weight chosen by where its type's rows end: compiled, one pointwise
        # kernel with the scaling (a concatenation of the types' weights expanded to their
        # rows is a copy kernel per type on a GPU, and a buffer of the rows' size)
        row = torch.arange(y.size(0), device=y.device).unsqueeze(1)
        w, b = norms[-1].weight, norms[-1].bias
        ends = _starts(sizes)[1:]            # type t's rows end where t + 1's start
        for n, end in reversed(list(zip(norms[:-1], ends))):   # the first type outermost
            below = row < end
            w, b = torch.where(below, n.weight, w), torch.where(below, n.bias, b)
    else:   # eager: one concatenation each, where the chain is a kernel per type
        w = torch.cat([n.weight.expand(s, c) for n, s in zip(norms, sizes)])
        b = torch.cat([n.bias.expand(s, c) for n, s in zip(norms, sizes)])
    return list(torch.split(y * w + b, sizes))
