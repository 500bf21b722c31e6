"""The tables' encoders (PyTorch Frame's ResNet, one per table) in a few large ops.

- :func:`resnet_forward`: one table's ResNet with its first block's two linear maps of the
  input (``lin1`` and the ``shortcut``) as one matmul (``model.fused``);
- :func:`stacked_resnets`: every table's later blocks and decoder at once, one batched
  matmul per linear map and one layer norm per norm (``model.stacked_encoders``), over the
  tables' rows padded to more than the largest table's (``true``) or cut into chunks of a
  number of rows, each table padded to whole chunks (a number: :func:`chunk_layout`); the
  padded sizes (:func:`stack_sizes`) decided by the host, ahead of a compiled model.

Same parameters as the per-table modules (checkpoints, initialisation and what the
optimiser sees are theirs); outputs and gradients equal up to float rounding
(tests/nn/test_fused.py). Written here because PyG's grouped matmuls (``HeteroDictLinear``,
segment matmuls) need ``pyg-lib``, which is not on PyPI, and PyTorch Frame runs one table
at a time.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


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
    for block in list(model.backbone)[start:]:   # a Sequential's slice is a new module
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
    later = [list(m.backbone)[1:] for m in models]   # a Sequential's slice is a new module
    norms = [n for blocks in later for b in blocks for n in (b.norm1, b.norm2)]
    norms += [m.decoder[0] for m in models]
    if any(not isinstance(n, torch.nn.LayerNorm) or n.weight is None or n.bias is None
           for n in norms) or len({n.eps for n in norms}) != 1:
        return False
    if any(b.shortcut is not None for blocks in later for b in blocks):
        return False
    widths = {m.decoder[-1].out_features for m in models}
    probs = {b.dropout.p for m in models for b in m.backbone}
    return len(widths) == 1 and len(probs) == 1


def stack_sizes(rows: list, chunk: int = 0) -> tuple:
    """The padded layout of :func:`stacked_resnets` for tables of ``rows`` rows: with
    ``chunk`` 0, one size ``R`` for every table, more than the most rows of any; else each
    table's chunks of ``chunk`` rows, more than its rows fill. Always at least one pad row
    a table.

    The host computes it from the batch's plain sizes and passes it to a compiled model
    (:meth:`HeteroEncoder.stack_sizes <rdl.nn.encoder.HeteroEncoder.stack_sizes>`): the
    graph then reads the padded sizes as inputs, each pad's length an input less a table's
    rows, positive whatever the batch. Computed inside the graph, the maximum of the
    tables' sizes (``sym_max``) let a warm Inductor cache guard an order of those sizes
    and recompile for a batch whose tables ordered otherwise (docs/compile.md, "A second
    run from Inductor's cache")."""
    if chunk > 0:
        return tuple(r // chunk + 1 for r in rows)
    most = rows[0]
    for r in rows[1:]:
        most = torch.sym_max(most, r)
    return (most + 1,)


def stacked_resnets(models: list, tfs: list, chunk: int = 0,
                    sizes: tuple | None = None) -> list[Tensor]:
    """Several tables' ResNets at once: each table's first block on its own (their input
    widths differ), then every later block and the decoder as one batched matmul
    (``bmm``) per linear map and one layer norm per norm over the tables' rows stacked
    into ``[tables, rows, channels]``, each table padded to more than the most rows of any
    (pad rows are zeros, dropped at the end). Same parameters as the per-table modules;
    outputs equal up to float rounding.

    Fewer, larger kernels at the price of the padding's arithmetic: for a GPU step bound
    by launches, not for a CPU bound by its matmuls (``model.stacked_encoders``). With
    ``chunk`` rows (> 0), the rows are stacked instead as ``[chunks, chunk, channels]``,
    each table padded only to whole chunks, and each chunk computed with its table's
    weights (:func:`chunk_layout`): the arithmetic of the real rows, and for the weight
    gradients many short sums instead of one long one per table. ``sizes``: the layout,
    :func:`stack_sizes` of the tables' rows (computed here if None)."""
    heads = [resnet_head(m, tf) for m, tf in zip(models, tfs)]
    rows = [h.size(0) for h in heads]
    sizes = sizes or stack_sizes(rows, chunk)
    if chunk > 0:
        x, index = chunk_layout(heads, chunk, sizes)
    else:
        x = torch.stack([F.pad(h, (0, 0, 0, sizes[0] - r)) for h, r in zip(heads, rows)])
        index = None
    for blocks in zip(*[list(m.backbone)[1:] for m in models]):
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
        return [x[i, :r] for i, r in enumerate(rows)]
    x = x.reshape(-1, x.size(-1))
    out, start = [], 0
    for r, n in zip(rows, sizes):
        out.append(x[start:start + r])
        start = start + n * chunk
    return out


def chunk_layout(xs: list[Tensor], chunk: int,
                 counts: tuple | None = None) -> tuple[Tensor, Tensor]:
    """The tables' rows ``xs[t] [R_t, C]`` as ``[chunks, chunk, C]``, each table's rows
    zero-padded to ``counts[t]`` chunks (default: :func:`stack_sizes`'), and each chunk's
    table ``[chunks]``."""
    counts = counts or stack_sizes([x.size(0) for x in xs], chunk)
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
    is a ``K``-row sum; a table's is the sum of its chunks' (:func:`_by_table`), in its
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
        tables, out_f, in_f = weight.shape
        want_w, want_b = ctx.needs_input_grad[1], ctx.has_bias and ctx.needs_input_grad[2]
        parts = ([torch.bmm(grad.transpose(1, 2), x).flatten(1)] if want_w else []) + \
            ([grad.sum(1)] if want_b else [])
        if parts:   # both summed by table in one matmul
            both = _by_table(torch.cat(parts, 1) if len(parts) > 1 else parts[0], index,
                             tables)
            gw = both[:, :out_f * in_f].view(tables, out_f, in_f) if want_w else None
            gb = both[:, -out_f:] if want_b else None
        return gx, gw, gb, None


class ChunkRows(torch.autograd.Function):
    """``values[index]`` (``values [T, ...]``, ``index [N]``): each chunk's row of its
    table; the gradient summed back by table with :func:`_by_table`."""

    @staticmethod
    def forward(values: Tensor, index: Tensor) -> Tensor:
        return values.index_select(0, index)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1])
        ctx.tables = inputs[0].size(0)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _by_table(grad, ctx.saved_tensors[0], ctx.tables), None


def _by_table(values: Tensor, index: Tensor, tables: int) -> Tensor:
    """``values [N, ...]`` summed over the chunks of each table: ``[tables, ...]``. One
    matmul by the chunks' one-hot table matrix, where ``index_add`` into zeros would be
    two kernels (a fill and a scatter), and on a CPU compiled, a fallback to ATen."""
    onehot = (torch.arange(tables, device=index.device).unsqueeze(1) == index).to(values.dtype)
    return (onehot @ values.reshape(values.size(0), -1)).view(tables, *values.shape[1:])


def _stacked_norm(x: Tensor, norms: list, index: Tensor | None = None) -> Tensor:
    """``[norm_t(x[t]) for each t]`` (``x [T, R, C]``): one normalisation, each table's
    weight and bias broadcast over its rows (with ``index``: over the chunks of
    :func:`chunk_layout`, each its table's)."""
    y = F.layer_norm(x, x.shape[-1:], eps=norms[0].eps)
    if index is not None:   # weights and biases gathered together: one sum of their grads
        wb = ChunkRows.apply(torch.stack([torch.stack([n.weight, n.bias]) for n in norms]),
                             index)
        return y * wb[:, :1] + wb[:, 1:]
    w = torch.stack([n.weight for n in norms])
    b = torch.stack([n.bias for n in norms])
    return y * w.unsqueeze(1) + b.unsqueeze(1)
