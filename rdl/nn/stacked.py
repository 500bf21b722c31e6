"""The tables' encoders (PyTorch Frame's ResNet, one per table) in a few large ops.

- :func:`resnet_forward`: one table's ResNet with its first block's two linear maps of the
  input (``lin1`` and the ``shortcut``) as one matmul (``model.fused``);
- :func:`stacked_resnets`: every table's later blocks and decoder at once, one batched
  matmul per linear map and one layer norm per norm (``model.stacked_encoders``), over the
  tables' rows padded to more than the largest table's (``true``) or cut into chunks of a
  number of rows, each table padded to whole chunks (a number: :func:`chunk_layout`); the
  padded sizes (:func:`stack_sizes`) decided by the host, ahead of a compiled model,
  with the later blocks' parameters held stacked over the tables (:class:`StackedTail`).

The per-table modules' values: their initialisation, and checkpoints under their names;
outputs and gradients equal up to float rounding (tests/nn/test_fused.py). Written here
because PyG's grouped matmuls (``HeteroDictLinear``, segment matmuls) need ``pyg-lib``,
which is not on PyPI, and PyTorch Frame runs one table at a time.
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
    joined = getattr(block, "joined", None)
    if joined is not None:
        both = F.linear(x, joined.weight, joined.bias)
    else:
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
    affine parameters after the first block, linear maps with biases, one dropout
    probability, one width."""
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
    lins = [lin for blocks in later for b in blocks for lin in (b.lin1, b.lin2)]
    if any(lin.bias is None for lin in lins + [m.decoder[-1] for m in models]):
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


def stacked_resnets(heads: list, tfs: list, tail: StackedTail, tables: tuple | None = None,
                    chunk: int = 0, sizes: tuple | None = None) -> list[Tensor]:
    """Several tables' ResNets at once: each table's first block on its own (``heads``,
    the per-table ResNets: their input widths differ), then every later block and the
    decoder as one batched matmul (``bmm``) per linear map and one layer norm per norm
    over the tables' rows stacked into ``[tables, rows, channels]``, each table padded to
    more than the most rows of any (pad rows are zeros, dropped at the end), with
    ``tail``'s parameters (:class:`StackedTail`; ``tables``: the tables' positions in it,
    None for all of them in its order). Outputs equal the per-table ResNets' up to float
    rounding.

    Fewer, larger kernels at the price of the padding's arithmetic: for a GPU step bound
    by launches, not for a CPU bound by its matmuls (``model.stacked_encoders``). With
    ``chunk`` rows (> 0), the rows are stacked instead as ``[chunks, chunk, channels]``,
    each table padded only to whole chunks, and each chunk computed with its table's
    weights (:func:`chunk_layout`): the arithmetic of the real rows, and for the weight
    gradients many short sums instead of one long one per table. ``sizes``: the layout,
    :func:`stack_sizes` of the tables' rows (computed here if None)."""
    out = [resnet_head(m, tf) for m, tf in zip(heads, tfs)]
    rows = [h.size(0) for h in out]
    sizes = sizes or stack_sizes(rows, chunk)
    if chunk > 0:
        x, index = chunk_layout(out, chunk, sizes)
    else:
        x = torch.stack([F.pad(h, (0, 0, 0, sizes[0] - r)) for h, r in zip(out, rows)])
        index = None
    for block in tail.blocks:
        out = _bmm(x, block.lin1.take(tables), index)
        out = _stacked_norm(out, block.norm1.take(tables), tail.eps, index)
        out = tail.dropout(out.relu())
        out = _bmm(out, block.lin2.take(tables), index)
        out = _stacked_norm(out, block.norm2.take(tables), tail.eps, index)
        x = tail.dropout(out.relu()) + x
    x = _stacked_norm(x, tail.norm.take(tables), tail.eps, index).relu()
    x = _bmm(x, tail.lin.take(tables), index)
    if index is None:
        return [x[i, :r] for i, r in enumerate(rows)]
    x = x.reshape(-1, x.size(-1))
    out, start = [], 0
    for r, n in zip(rows, sizes):
        out.append(x[start:start + r])
        start = start + n * chunk
    return out


class StackedTail(torch.nn.Module):
    """Every table's ResNet blocks after the first, and its decoder, with each parameter
    stacked over the tables: a linear map's weight ``[T, out, in]`` and bias ``[T, out]``,
    a layer norm's weight and bias ``[T, C]``; what :func:`stacked_resnets` computes with.

    Taken from the per-table ResNets ``models`` (:func:`stackable`), whose later blocks
    and decoder it removes (each keeps its column encoder and first block): one parameter
    a map for all tables, not one a table. The optimiser, autograd's accumulation into
    ``.grad`` and ``zero_grad`` each work per parameter, on the host, at every step
    (``experiment=gpu``'s user-churn: 222 parameters, of which this makes 112 into 28),
    and no weight is stacked again at each step. The per-table values are what the
    optimiser's elementwise update and the initialisation see alike
    (:meth:`reset_table`, table by table in the per-table modules' order), and
    :class:`~rdl.nn.encoder.HeteroEncoder` saves and loads them under the per-table
    modules' names: ``sources`` names each stacked parameter's per-table ones.
    """

    def __init__(self, models: list, names: dict):
        super().__init__()
        later = [list(m.backbone)[1:] for m in models]
        self.blocks = torch.nn.ModuleList(torch.nn.ModuleDict(
            {k: StackedParams([getattr(b[i], k) for b in later], names)
             for k in ("lin1", "norm1", "lin2", "norm2")}) for i in range(len(later[0])))
        self.norm = StackedParams([m.decoder[0] for m in models], names)
        self.lin = StackedParams([m.decoder[-1] for m in models], names)
        self.eps = models[0].decoder[0].eps
        self.dropout = models[0].backbone[0].dropout   # one probability (stackable)
        self.sources = {f"{name}.{attr}": mod.sources[attr]
                        for name, mod in self.named_modules() if isinstance(mod, StackedParams)
                        for attr in ("weight", "bias")}
        for m in models:   # the per-table copies leave their modules
            m.backbone = torch.nn.Sequential(m.backbone[0])
            m.decoder = InTail()

    def reset_table(self, t: int) -> None:
        """Table ``t``'s parameters initialised as its own blocks and decoder would be
        (each block's ``lin1``, ``lin2`` and norms, then the decoder's norm and linear
        map: PyTorch Frame's order, which draws the same random numbers)."""
        for block in self.blocks:
            for k in ("lin1", "lin2", "norm1", "norm2"):
                block[k].reset_table(t)
        self.norm.reset_table(t)
        self.lin.reset_table(t)


class InTail(torch.nn.Module):
    """A stacked table encoder's decoder: in its :class:`StackedTail`, so that the table's
    own ResNet, called alone, says so instead of returning its first block's output."""

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("this table's later encoder blocks and decoder are stacked with "
                           "the other tables' (model.stacked_encoders): run the "
                           "HeteroEncoder that holds them, not the table's ResNet alone")


class StackedParams(torch.nn.Module):
    """The ``weight`` and ``bias`` of several modules of one kind (``Linear``,
    ``LayerNorm``), stacked: ``[T, *shape]``; ``sources``: their names in ``names``
    (parameter -> name)."""

    def __init__(self, modules: list, names: dict):
        super().__init__()
        self.kind = type(modules[0])
        self.weight = torch.nn.Parameter(torch.stack([m.weight.detach() for m in modules]))
        self.bias = torch.nn.Parameter(torch.stack([m.bias.detach() for m in modules]))
        self.sources = {a: [names[getattr(m, a)] for m in modules] for a in ("weight", "bias")}

    def take(self, tables: tuple | None) -> tuple[Tensor, Tensor]:
        """``(weight, bias)`` of the tables at positions ``tables`` (None: all)."""
        if tables is None:
            return self.weight, self.bias
        return self.weight[list(tables)], self.bias[list(tables)]

    def reset_table(self, t: int) -> None:
        # the module kind's own initialisation, on table t's slices
        self.kind.reset_parameters(_Slices(self.weight[t], self.bias[t]))


class _Slices:
    """A module's ``weight`` and ``bias`` as its ``reset_parameters`` reads them."""

    def __init__(self, weight: Tensor, bias: Tensor):
        self.weight, self.bias, self.elementwise_affine = weight, bias, True


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


def _bmm(x: Tensor, params: tuple, index: Tensor | None = None) -> Tensor:
    """``x[t] @ weight[t]^T + bias[t]`` for each table ``t`` as one batched matmul (``x
    [T, R, in]``, ``params``: ``(weight [T, out, in], bias [T, out] or None)``); with
    ``index``, ``x [N, K, in]`` holds chunks and chunk ``n`` is table ``index[n]``'s."""
    weight, bias = params
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
        tables = weight.size(0)
        # each summed by table on its own: one sum of both would give each a gradient
        # strided as a block of it, which autograd copies into ``.grad``
        gw = _by_table(torch.bmm(grad.transpose(1, 2), x), index, tables) \
            if ctx.needs_input_grad[1] else None
        gb = _by_table(grad.sum(1), index, tables) \
            if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb, None


class ChunkRows(torch.autograd.Function):
    """``stack([weight, bias], 1)[index]`` (``weight``, ``bias`` ``[T, C]``, ``index
    [N]``): each chunk's rows of its table, ``[N, 2, C]``; the gradients summed back by
    table in one matmul (:func:`_by_table`), each a block of ``[2, T, C]``: contiguous,
    its parameter's layout."""

    @staticmethod
    def forward(weight: Tensor, bias: Tensor, index: Tensor) -> Tensor:
        return torch.stack([weight, bias], 1).index_select(0, index)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[2])
        ctx.tables = inputs[0].size(0)

    @staticmethod
    def backward(ctx, grad: Tensor):
        both = _by_table(grad.transpose(0, 1), ctx.saved_tensors[0], ctx.tables, parts=True)
        return both[0], both[1], None


def _by_table(values: Tensor, index: Tensor, tables: int, parts: bool = False) -> Tensor:
    """``values [N, ...]`` summed over the chunks of each table: ``[tables, ...]`` (with
    ``parts``, ``values [P, N, ...]``: ``[P, tables, ...]``). One matmul by the chunks'
    one-hot table matrix, where ``index_add`` into zeros would be two kernels (a fill and
    a scatter), and on a CPU compiled, a fallback to ATen."""
    onehot = (torch.arange(tables, device=index.device).unsqueeze(1) == index).to(values.dtype)
    if parts:
        flat = values.reshape(values.size(0), values.size(1), -1)          # [P, N, rest]
        return (onehot @ flat).view(values.size(0), tables, *values.shape[2:])
    return (onehot @ values.reshape(values.size(0), -1)).view(tables, *values.shape[1:])


def _stacked_norm(x: Tensor, params: tuple, eps: float,
                  index: Tensor | None = None) -> Tensor:
    """Each table's layer norm (``params``: ``(weight [T, C], bias [T, C])``) of ``x [T,
    R, C]``: one normalisation, each table's weight and bias broadcast over its rows (with
    ``index``: over the chunks of :func:`chunk_layout`, each its table's)."""
    y = F.layer_norm(x, x.shape[-1:], eps=eps)
    w, b = params
    if index is not None:   # weights and biases gathered together: one sum of their grads
        wb = ChunkRows.apply(w, b, index)
        return y * wb[:, :1] + wb[:, 1:]
    return y * w.unsqueeze(1) + b.unsqueeze(1)
