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
    w = torch.cat([n.weight.expand(s, c) for n, s in zip(norms, sizes)])
    b = torch.cat([n.bias.expand(s, c) for n, s in zip(norms, sizes)])
    return list(torch.split(y * w + b, sizes))


# -- Table encoders (PyTorch Frame's ResNet, one per table) ----------------------------

def resnet_forward(model, tf) -> Tensor:
    """PyTorch Frame's ``ResNet.forward`` with the first block's two linear maps of its
    input (``lin1`` and the ``shortcut`` to ``channels``) as one matmul: the input, the
    table's ``columns * channels`` wide encodings, is read once instead of twice."""
    return resnet_tail(model, resnet_head(model, tf), 1)


def resnet_head(model, tf) -> Tensor:
    """The encodings of ``tf``'s rows after the first residual block (or, without blocks,
    the flattened column encodings)."""
    x, _ = model.encoder(tf)
    x = x.reshape(x.size(0), math.prod(x.shape[1:]))   # not -1: a table may have no row
    if len(model.backbone) == 0:
        return x
    block = model.backbone[0]
    if block.shortcut is None:
        return block(x)
    both = F.linear(x, torch.cat([block.lin1.weight, block.shortcut.weight]),
                    _cat_bias(block.lin1.bias, block.shortcut.bias))
    out, short = both.split(block.lin1.out_features, dim=-1)
    return _block_rest(block, out) + short


def resnet_tail(model, x: Tensor, start: int) -> Tensor:
    """The residual blocks from ``start`` on and the decoder."""
    for block in model.backbone[start:]:
        x = block(x)
    return model.decoder(x)


def _block_rest(block, out: Tensor) -> Tensor:
    """A residual block after its first linear map: norm, ReLU, dropout, ``lin2``, norm,
    ReLU, dropout (what ``FCResidualBlock.forward`` does between ``lin1`` and the sum)."""
    out = block.norm1(out) if block.norm1 is not None else out
    out = block.dropout(block.relu(out))
    out = block.lin2(out)
    out = block.norm2(out) if block.norm2 is not None else out
    return block.dropout(block.relu(out))


def _cat_bias(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    if a is None and b is None:
        return None
    a = a if a is not None else torch.zeros_like(b)
    b = b if b is not None else torch.zeros_like(a)
    return torch.cat([a, b])


def stackable(models: list) -> bool:
    """Whether :func:`stacked_resnets` can run these tables' ResNets together: two or
    more, each with blocks, the same number of them, layer norms with one ``eps`` and
    affine parameters after the first block, one dropout probability, one width."""
    if len(models) < 2 or len({len(m.backbone) for m in models}) != 1 \
            or len(models[0].backbone) < 1:
        return False
    norms = [n for m in models for b in m.backbone[1:] for n in (b.norm1, b.norm2)]
    norms += [m.decoder[0] for m in models]
    if any(not isinstance(n, torch.nn.LayerNorm) or n.weight is None or n.bias is None
           for n in norms) or len({n.eps for n in norms}) != 1:
        return False
    if any(b.shortcut is not None for m in models for b in m.backbone[1:]):
        return False
    widths = {m.decoder[-1].out_features for m in models}
    probs = {b.dropout.p for m in models for b in m.backbone}
    return len(widths) == 1 and len(probs) == 1


def stacked_resnets(models: list, tfs: list, chunk: int = 0) -> list[Tensor]:
    """Several tables' ResNets at once: each table's first block on its own (their input
    widths differ), then every later block and the decoder as one batched matmul
    (``bmm``) per linear map and one layer norm per norm over the tables' rows stacked
    into ``[tables, rows, channels]``, each table padded to the most rows of any (pad
    rows are zeros, dropped at the end). Same parameters as the per-table modules;
    outputs equal up to float rounding.

    Fewer, larger kernels at the price of the padding's arithmetic: for a GPU step bound
    by launches, not for a CPU bound by its matmuls (``model.stacked_encoders``). With
    ``chunk`` rows (> 0), the rows are stacked instead as ``[chunks, chunk, channels]``,
    each table padded only to a multiple of ``chunk``, and each chunk computed with its
    table's weights (:func:`chunk_layout`): the arithmetic of the real rows, and for the
    weight gradients many short sums instead of one long one per table."""
    heads = [resnet_head(m, tf) for m, tf in zip(models, tfs)]
    sizes = [h.size(0) for h in heads]
    if chunk > 0:
        x, index = chunk_layout(heads, chunk)
    else:
        rows = sizes[0]
        for s in sizes[1:]:
            rows = torch.sym_max(rows, s)
        x = torch.stack([F.pad(h, (0, 0, 0, rows - s)) for h, s in zip(heads, sizes)])
        index = None
    for blocks in zip(*[m.backbone[1:] for m in models]):
        out = _bmm(x, [b.lin1 for b in blocks], index)
        out = _stacked_norm(out, [b.norm1 for b in blocks], index)
        out = blocks[0].dropout(out.relu())
        out = _bmm(out, [b.lin2 for b in blocks], index)
        out = _stacked_norm(out, [b.norm2 for b in blocks], index)
        x = blocks[0].dropout(out.relu()) + x
    decoders = [m.decoder for m in models]
    x = _stacked_norm(x, [d[0] for d in decoders], index).relu()
    x = _bmm(x, [d[-1] for d in decoders], index)
    if index is None:
        return [x[i, :s] for i, s in enumerate(sizes)]
    x = x.reshape(-1, x.size(-1))
    out, start = [], 0
    for s in sizes:
        out.append(x[start:start + s])
        start = start + _chunks(s, chunk) * chunk
    return out


def _chunks(rows, chunk: int):
    """Chunks of ``chunk`` rows that hold ``rows`` (at least one: a table with no row
    keeps a chunk, so that no size is 0)."""
    return torch.sym_max((rows + chunk - 1) // chunk, 1)


def chunk_layout(xs: list[Tensor], chunk: int) -> tuple[Tensor, Tensor]:
    """The tables' rows ``xs[t] [R_t, C]`` as ``[chunks, chunk, C]``, each table's rows
    zero-padded to whole chunks, and each chunk's table ``[chunks]``."""
    counts = [_chunks(x.size(0), chunk) for x in xs]
    rows = torch.cat([F.pad(x, (0, 0, 0, n * chunk - x.size(0))) for x, n in zip(xs, counts)])
    # each chunk's table: how many tables start at or before it. Not a tensor of each
    # table's chunks (one may hold a single chunk, a size Dynamo would bake in).
    chunks = torch.arange(rows.size(0) // chunk, device=rows.device)
    index, start = torch.zeros_like(chunks), 0
    for n in counts[:-1]:
        start = start + n
        index = index + (chunks >= start)
    return rows.view(-1, chunk, rows.size(-1)), index


def _bmm(x: Tensor, lins: list, index: Tensor | None = None) -> Tensor:
    """``[lin_t(x[t]) for each t]`` as one batched matmul (``x [T, R, in]``); with
    ``index``, ``x [N, K, in]`` holds chunks and chunk ``n`` is table ``index[n]``'s."""
    weight = torch.stack([lin.weight for lin in lins])                  # [T, out, in]
    bias = None if lins[0].bias is None else torch.stack([lin.bias for lin in lins])
    if index is not None:
        return ChunkedLinear.apply(x, weight, bias, index)
    return StackedLinear.apply(x, weight, bias)


class StackedLinear(torch.autograd.Function):
    """``x[t] @ weight[t]^T + bias[t]`` for every ``t`` (``x [T, R, in]``, ``weight
    [T, out, in]``, ``bias [T, out]`` or None): one batched matmul, whose weight gradient
    is computed as ``[T, out, in]``, each table's block in its parameter's own layout.

    Written by hand because autograd's ``bmm(x, weight.transpose(1, 2))`` gives that
    gradient transposed, and autograd's accumulation into ``.grad`` then copies every
    parameter whose gradient's strides are not its own: on ``experiment=gpu``'s user-churn
    28 copies a step, each a kernel on a GPU (tests/nn/test_fused.py). The bias is added
    after the matmul, not by ``baddbmm``, which copies it into the output first: compiled,
    the add joins the next op's kernel."""

    @staticmethod
    def forward(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        out = torch.bmm(x, weight.transpose(1, 2))
        return out if bias is None else out + bias.unsqueeze(1).to(out.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias = inputs
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None

    @staticmethod
    def backward(ctx, grad: Tensor):
        # in the gradient's dtype: under autocast the forward's matmul ran in it
        x, weight = (t.to(grad.dtype) for t in ctx.saved_tensors)
        gx = torch.bmm(grad, weight) if ctx.needs_input_grad[0] else None
        gw = torch.bmm(grad.transpose(1, 2), x) if ctx.needs_input_grad[1] else None
        gb = grad.sum(1) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb


class ChunkedLinear(torch.autograd.Function):
    """``x[n] @ weight[index[n]]^T + bias[index[n]]`` for every chunk ``n`` (``x [N, K,
    in]``, ``weight [T, out, in]``, ``bias [T, out]`` or None, ``index [N]``): one batched
    matmul over the chunks, each with its table's weights. Each chunk's weight gradient
    is a ``K``-row sum; a table's is the sum of its chunks' (``index_add``), in its
    parameter's layout, as :class:`StackedLinear`'s."""

    @staticmethod
    def forward(x: Tensor, weight: Tensor, bias: Tensor | None, index: Tensor) -> Tensor:
        out = torch.bmm(x, weight.index_select(0, index).transpose(1, 2))
        return out if bias is None else \
            out + bias.index_select(0, index).unsqueeze(1).to(out.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias, index = inputs
        ctx.save_for_backward(x, weight, index)
        ctx.has_bias = bias is not None

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight, index = ctx.saved_tensors
        x, weight = x.to(grad.dtype), weight.to(grad.dtype)   # autocast: see StackedLinear
        gx = torch.bmm(grad, weight.index_select(0, index)) if ctx.needs_input_grad[0] \
            else None
        gw = gb = None
        if ctx.needs_input_grad[1]:
            gw = weight.new_zeros(weight.shape).index_add_(
                0, index, torch.bmm(grad.transpose(1, 2), x))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = grad.new_zeros(weight.shape[:2]).index_add_(0, index, grad.sum(1))
        return gx, gw, gb, None


def _stacked_norm(x: Tensor, norms: list, index: Tensor | None = None) -> Tensor:
    """``[norm_t(x[t]) for each t]`` (``x [T, R, C]``): one normalisation, each table's
    weight and bias broadcast over its rows (with ``index``: over the chunks of
    :func:`chunk_layout`, each its table's)."""
    y = F.layer_norm(x, x.shape[-1:], eps=norms[0].eps)
    w = torch.stack([n.weight for n in norms])
    b = torch.stack([n.bias for n in norms])
    if index is not None:   # index_select: its gradient is an index_add (see encoder.py)
        w, b = w.index_select(0, index), b.index_select(0, index)
    return y * w.unsqueeze(1) + b.unsqueeze(1)
