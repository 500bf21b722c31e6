"""Per-table column encoders and the relative-time encoding."""
from __future__ import annotations

import math

import torch
import torch_frame
from torch import Tensor
from torch_frame.data.stats import StatType
from torch_frame.nn.encoder.stype_encoder import get_na_mask
from torch_frame.nn.encoder.stypewise_encoder import StypeWiseFeatureEncoder
from torch_frame.nn.models import ResNet
from torch_geometric.nn import PositionalEncoding

from rdl.nn.joined import JoinedInput
from rdl.nn.stacked import (StackedTail, resnet_forward, stack_sizes, stackable,
                             stacked_resnets)
from rdl.nn.names import TypeDict
from rdl.scaling import iqr_scale, robust_asinh


class RobustLinearEncoder(torch_frame.nn.LinearEncoder):
    """PyTorch Frame's linear encoder of numerical columns, on ``asinh((x - median) / s)``
    with ``s`` the interquartile range over 1.349 (the standard deviation where that is 0)
    instead of on ``(x - mean) / std``.

    Written here because relational columns are often heavy-tailed (prices, counts,
    sales): there the standard deviation is set by a few huge values, the bulk of the
    column collapses to one point, and the layer norms downstream squash the tail. The
    robust scale spreads the bulk, and ``asinh`` (linear near 0, logarithmic beyond)
    keeps every magnitude apart (:mod:`rdl.scaling`). Same parameters and statistics as
    ``LinearEncoder``.
    """

    def init_modules(self) -> None:
        super().init_modules()
        q = torch.tensor([stats[StatType.QUANTILES] for stats in self.stats_list],
                         dtype=torch.float).view(len(self.stats_list), -1)
        # quantiles: min, 25 %, median, 75 %, max
        self.register_buffer("median", q[:, 2])
        self.register_buffer("scale", iqr_scale(q[:, 1], q[:, 3], self.std))

    def encode_forward(self, feat: Tensor, col_names: list[str] | None = None) -> Tensor:
        x = robust_asinh(feat, self.median, self.scale).unsqueeze(-1)
        # A missing value encodes as zeros, as PyTorch Frame's encoders give it, but with
        # the NaN kept out of the product: ``NaN * weight`` zeroed afterwards still sends
        # a NaN gradient to the weight, and one missing value made the column's weight
        # NaN after the first step (the column then encoded as zeros everywhere).
        missing = torch.isnan(x)
        out = torch.where(missing, 0.0, x) * self.weight + self.bias
        return torch.where(missing, 0.0, out)


class EmbeddingEncoder(torch_frame.nn.EmbeddingEncoder):
    """PyTorch Frame's encoder of categorical columns, a missing category (``-1``) sent
    to the padding row by ``torch.where``.

    Written here because PyTorch Frame sends it there by boolean-mask assignment
    (``feat[mask] = 0``): on a GPU, run eagerly, a host-device sync at every step (the
    mask's ``nonzero``; ``tests/training/test_device_step.py``). Same parameters, same
    rows read.
    """

    def encode_forward(self, feat: Tensor, col_names: list[str] | None = None) -> Tensor:
        # feat [rows, columns]: each column's categories after those of the columns before
        return self.emb(torch.where(feat < 0, 0, feat + self.offset + 1))


class _YearEncoding(torch_frame.nn.encoding.PositionalEncoding):
    """PyTorch Frame's sinusoidal encoding of a timestamp's years since its column's
    first, without its check on the host that none is negative (see
    :class:`TimestampEncoder`)."""

    def forward(self, input_tensor: Tensor) -> Tensor:
        x = input_tensor.unsqueeze(-1) * self.mult_term.reshape((1,) * input_tensor.ndim + (-1,))
        return torch.cat([torch.sin(x), torch.cos(x)], dim=-1)


class _CyclicEncoding(torch_frame.nn.encoding.CyclicEncoding):
    """PyTorch Frame's cyclic encoding of a timestamp's month, day, weekday and time of
    day (each over its largest value), without its check on the host that each lies in
    [0, 1] (see :class:`TimestampEncoder`)."""

    def forward(self, input_tensor: Tensor) -> Tensor:
        x = input_tensor.unsqueeze(-1) * self.mult_term.reshape((1,) * input_tensor.ndim + (-1,))
        return torch.cat([torch.sin(x * math.pi), torch.cos(x * 2 * math.pi)], dim=-1)


class TimestampEncoder(torch_frame.nn.TimestampEncoder):
    """PyTorch Frame's timestamp encoder, its missing timestamps filled with
    ``torch.where`` and its encodings computed without checks on the host.

    Written here because PyTorch Frame fills them by boolean-mask assignment of each
    column's fill value (``col[mask] = fill``), which Inductor leaves as ``index_put_``:
    on a GPU a host-device sync at every step of the compiled model (CUDA's sync check,
    ``tests/test_cuda.py``). Same result: a timestamp with any part missing becomes its
    column's fill value, all parts. And its two encodings assert their inputs' range on
    the host (``assert torch.all(...)``): on a GPU two host-device syncs in every eager
    step, and in a compiled one a reduction and a device-side assert, which would end
    the process rather than the run. The range holds by construction (the years are
    counted from the column's first year in its statistics, the other parts are divided
    by their largest values); a year before the first (a checkpoint's statistics on an
    older table) is encoded as the sinusoid extends, not refused. Same buffers and
    parameters.
    """

    def init_modules(self) -> None:
        super().init_modules()
        self.positional_encoding = _YearEncoding(self.out_size)
        self.cyclic_encoding = _CyclicEncoding(self.out_size)

    def na_forward(self, feat: Tensor) -> Tensor:
        if self.na_strategy is None:
            return feat
        # feat [rows, columns, parts]; fill_values [columns, parts]
        missing = get_na_mask(feat).any(dim=-1, keepdim=True)
        return torch.where(missing, self.fill_values.to(feat.dtype), feat)


class LinearEmbeddingEncoder(torch_frame.nn.LinearEmbeddingEncoder):
    """PyTorch Frame's encoder of embedding columns, its columns' linear maps as one
    batched matmul where they are all as wide (one embedder made them: the usual case).

    Written here because PyTorch Frame maps each column with a matmul of its own and
    stacks the results: a kernel per column, and per column again in the backward. Same
    parameters; outputs equal up to float rounding (``tests/nn/test_encoder.py``).
    """

    def encode_forward(self, feat, col_names: list[str] | None = None) -> Tensor:
        dims = set(self.emb_dim_list)
        if len(dims) != 1 or len(self.emb_dim_list) < 2:
            return super().encode_forward(feat, col_names)
        values = feat.values.reshape(feat.values.size(0), len(self.emb_dim_list), dims.pop())
        weight = torch.stack(list(self.weight_list))        # [cols, emb_dim, channels]
        return torch.bmm(values.transpose(0, 1), weight).transpose(0, 1) + self.biases


# The stype encoders of each stype PyTorch Frame materialises (text_embedded becomes
# embedding once materialised).
STYPE_ENCODERS = {
    torch_frame.categorical: EmbeddingEncoder,
    torch_frame.numerical: RobustLinearEncoder,
    torch_frame.multicategorical: torch_frame.nn.MultiCategoricalEmbeddingEncoder,
    torch_frame.embedding: LinearEmbeddingEncoder,
    torch_frame.timestamp: TimestampEncoder,
}


class FixedOrderEncoder(StypeWiseFeatureEncoder):
    """PyTorch Frame's stype-wise encoder with the stype order fixed when it is built.

    Written here because ``TensorFrame.stypes`` lists the ``torch_frame.stype`` enum on
    every call, which Dynamo before torch 2.12 cannot trace: a graph break per table in the
    compiled model. Frames of one table always hold the stypes it was built with, in
    PyTorch Frame's canonical order, which this keeps.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stypes = [st for st in torch_frame.stype if st in self.col_names_dict]

    def forward(self, tf: torch_frame.TensorFrame) -> tuple[Tensor, list[str]]:
        xs = [self.encoder_dict[st.value](tf.feat_dict[st], self.col_names_dict[st])
              for st in self.stypes]
        # One stype: its encoding made contiguous, not ``cat``: Inductor's ``cat`` of one
        # tensor keeps its strides where eager's copies it contiguous, and the ResNet
        # views the result (a table of embedding columns alone, whose batched matmul
        # leaves them transposed, stopped the compile: ``tests/nn/test_encoder.py``).
        x = xs[0].contiguous() if len(xs) == 1 else torch.cat(xs, dim=1)
        return x, [c for st in self.stypes for c in self.col_names_dict[st]]


def hash_uniform(like: Tensor, seed: Tensor) -> Tensor:
    """Uniform ``[0, 1)`` float32 values shaped like ``like``, from a 32-bit ``seed``: a
    counter (each element's index) mixed by the 32-bit MurmurHash3 finaliser, the high 24
    bits kept (the uniforms ``torch.rand`` makes for float32 have 24 bits too).

    Written here because on the CPU PyTorch draws random numbers one at a time on one
    thread, and Inductor's own CPU random numbers are no faster; these are integer
    element-wise ops, which Inductor fuses into the kernel that uses them and vectorises.
    Each value depends only on ``seed`` and its index, as with counter-based generators
    (Philox on CUDA). Wrapping int32 arithmetic; logical shifts as arithmetic shifts
    masked.
    """
    h = torch.arange(like.numel(), dtype=torch.int32, device=like.device).view(like.shape)
    h = h * -1640531527 + seed                 # 0x9E3779B9: spreads consecutive counters
    h = h ^ ((h >> 16) & 0xFFFF)
    h = h * -2048144789                        # 0x85EBCA6B
    h = h ^ ((h >> 13) & 0x7FFFF)
    h = h * -1028477387                        # 0xC2B2AE35
    h = h ^ ((h >> 16) & 0xFFFF)
    return ((h >> 8) & 0xFFFFFF).float() * (1.0 / 16777216)


class Dropout(torch.nn.Dropout):
    """``nn.Dropout`` whose CPU mask is drawn faster: with ``torch.rand`` in eager mode,
    and when compiled with ``hash_when_compiled`` set, with :func:`hash_uniform` (seeded
    by one draw from PyTorch's generator per call, so ``torch.manual_seed`` makes both
    reproducible). rdl's compiled model sets it where ``compile.cpu_patches.hash_dropout``
    applies (:mod:`rdl.training.cpu_patches`); compiled without it, the mask is drawn with
    ``rand`` too.

    Written here because PyTorch's CPU dropout draws its mask with ``bernoulli_``, one
    value at a time on one thread: a quarter of the default CPU train step in
    ``python -m rdl.bench train --profile``; ``rand`` is faster, and compiled, the hash is
    fused into the ops around it (``rand`` was still a sixth of the compiled step). In
    eager mode the hash's dozen whole-tensor integer ops cost as much as ``rand``.
    Same distribution either way: each value kept with probability ``1 - p`` (to 2^-24)
    and scaled by ``1/(1-p)``; eager and compiled draw different masks (as PyTorch and
    Inductor do on CUDA). Elsewhere PyTorch's own (fused) dropout runs.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False, hash_when_compiled: bool = False):
        super().__init__(p, inplace)
        self.hash_when_compiled = hash_when_compiled

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0 or x.device.type != "cpu":
            return super().forward(x)
        if self.p == 1:
            return x * 0
        if (self.hash_when_compiled and torch.compiler.is_compiling()
                and x.numel() < 2**31):
            seed = torch.randint(-2**31, 2**31, (), dtype=torch.int32)
            u = hash_uniform(x, seed)
        else:
            u = torch.rand_like(x, dtype=torch.float)
        return x * (u >= self.p) * (1.0 / (1.0 - self.p))


def table_encoder(channels: int, names: dict, stats: dict, num_layers: int) -> ResNet:
    """RelBench's table encoder: PyTorch Frame's ResNet, with :class:`FixedOrderEncoder`
    and :class:`Dropout`."""
    model = ResNet(channels=channels, out_channels=channels, num_layers=num_layers,
                   col_stats=stats, col_names_dict=names,
                   stype_encoder_dict={st: STYPE_ENCODERS[st]() for st in names})
    for block in model.backbone:
        block.dropout = Dropout(block.dropout.p)
    model.encoder = FixedOrderEncoder(
        out_channels=channels, col_stats=stats, col_names_dict=names,
        stype_encoder_dict={st: STYPE_ENCODERS[st]() for st in names})
    model.encoder.reset_parameters()
    return model


class HeteroEncoder(torch.nn.Module):
    """One PyTorch Frame model per node type maps its rows to ``channels`` features.

    Args:
        channels: output width, shared by every node type.
        col_names: node type -> ``TensorFrame.col_names_dict``.
        col_stats: node type -> column stats from materialisation.
        num_layers: ResNet blocks per table (RelBench uses 4).
        fused: the first block's two linear maps of a table's encodings as one matmul
            (:func:`~rdl.nn.stacked.resnet_forward`; same parameters and outputs).
        stacked: every later block and the decoder of all tables as one batched matmul
            per layer (:func:`~rdl.nn.stacked.stacked_resnets`): ``True``, over rows padded
            to the largest table's (fewer kernels, more arithmetic); a number of rows
            (``chunk_rows``), over chunks of that many rows, each table padded to whole
            chunks (the real rows' arithmetic, one more small op per map's gradient).
            Their parameters are held stacked over the tables
            (:class:`~rdl.nn.stacked.StackedTail`, ``self.tail``): saved and loaded under
            the per-table modules' names, so a checkpoint loads into either layout.
    """

    def __init__(self, channels: int, col_names: dict, col_stats: dict, num_layers: int = 4,
                 fused: bool = False, stacked: bool | int = False):
        super().__init__()
        self.fused = bool(fused)
        if not isinstance(stacked, bool) and (not isinstance(stacked, int) or stacked < 2):
            raise ValueError(f"model.stacked_encoders={stacked!r}: true, false or a number "
                             "of rows per chunk (2 or more)")
        self.encoders = TypeDict({
            nt: table_encoder(channels, names, col_stats[nt], num_layers)
            for nt, names in col_names.items()
        })
        #: the tables' later blocks and decoders, stacked (None: each table's own)
        self.tail = None
        models = list(self.encoders.values())
        if stacked and stackable(models):
            names = {p: n for n, p in self.named_parameters()}
            self.tail = StackedTail(models, names)
        if self.fused or self.tail is not None:   # (both run the first block fused)
            for m in models:
                if len(m.backbone) and JoinedInput.joinable(m.backbone[0]):
                    m.backbone[0].joined = JoinedInput(m.backbone[0])
        #: each parameter held for several per-table ones: its name -> (their names, its
        #: sizes along dim 0 that are theirs; None: stacked, one index each)
        self.sources = {f"tail.{k}": (v, None)
                        for k, v in (self.tail.sources if self.tail is not None else {}).items()}
        for name, mod in self.named_modules():
            if isinstance(mod, JoinedInput):
                block = name.removesuffix("joined")
                self.sources.update({f"{name}.{a}": ([f"{block}lin1.{a}", f"{block}shortcut.{a}"],
                                                     mod.sizes) for a in ("weight", "bias")})
        if self.sources:
            self.register_state_dict_post_hook(_per_table_state)
            self.register_load_state_dict_pre_hook(_stacked_state)
        #: rows per chunk of the stacked encoders (0: padded to the largest table)
        self.chunk_rows = 0 if isinstance(stacked, bool) else stacked
        self._tables = {nt: i for i, nt in enumerate(col_names)}

    @property
    def stacked(self) -> bool:
        """Whether the tables' later blocks run stacked (:attr:`tail`)."""
        return self.tail is not None

    def reset_parameters(self):
        for i, enc in enumerate(self.encoders.values()):
            if self.tail is None:
                enc.reset_parameters()
            else:   # PyTorch Frame's order: the table's encoder, its blocks, its decoder
                enc.encoder.reset_parameters()
                enc.backbone[0].reset_parameters()
                self.tail.reset_table(i)

    def stack_sizes(self, tf_dict: dict) -> tuple[int, ...] | None:
        """The padded sizes the stacked encoders run ``tf_dict``'s tables at
        (:func:`~rdl.nn.stacked.stack_sizes`), from their rows as plain ints: what the host
        passes a compiled model's :meth:`forward`, so that no maximum of the tables' sizes
        is taken in its graph. None where the tables are not stacked."""
        if self.tail is None or not tf_dict:
            return None
        return stack_sizes([tf.num_rows for tf in tf_dict.values()], self.chunk_rows)

    def forward(self, tf_dict: dict, row_dict: dict | None = None,
                stack_sizes: tuple[int, ...] | None = None) -> dict[str, Tensor]:
        """``tf_dict``: node type -> TensorFrame ``[R_t]``; ``row_dict``: node type -> the
        row of each node, ``[N_t]`` (default: node i is row i); ``stack_sizes``:
        :meth:`stack_sizes` of ``tf_dict`` (computed here if None). Returns node type ->
        ``[N_t, C]``: rows shared by several nodes are encoded once."""
        models = [self.encoders[nt] for nt in tf_dict]
        if self.tail is not None and tf_dict:
            tables = tuple(self._tables[nt] for nt in tf_dict)
            tables = None if tables == tuple(range(len(self._tables))) else tables
            out = dict(zip(tf_dict, stacked_resnets(models, list(tf_dict.values()), self.tail,
                                                    tables, self.chunk_rows, stack_sizes)))
        elif self.fused:
            out = {nt: resnet_forward(m, tf) for m, (nt, tf) in zip(models, tf_dict.items())}
        else:
            out = {nt: m(tf) for m, (nt, tf) in zip(models, tf_dict.items())}
        if row_dict is not None:
            # index_select, not x[rows]: on the CPU the gradient of x[rows] is an
            # accumulating index_put (5-10 ms a call here), index_select's an index_add.
            out = {nt: x.index_select(0, row_dict[nt]) if nt in row_dict else x
                   for nt, x in out.items()}
        return out


# An encoder's state holds each table's parameters under the per-table modules' names,
# the stacked and joined ones split (checkpoints load into either layout, and read as the
# per-table model's).
def _per_table_state(module, state: dict, prefix: str, metadata) -> None:
    for name, (sources, sizes) in module.sources.items():
        held = state.pop(prefix + name)
        parts = held.unbind() if sizes is None else held.split(sizes)
        for source, part in zip(sources, parts):
            state[prefix + source] = part.clone()


def _stacked_state(module, state: dict, prefix: str, *args) -> None:
    for name, (sources, sizes) in module.sources.items():
        if all(prefix + s in state for s in sources):
            parts = [state.pop(prefix + s) for s in sources]
            state[prefix + name] = torch.stack(parts) if sizes is None else torch.cat(parts)


class RelativeTimeEncoder(torch.nn.Module):
    """Encodes how old each node is relative to its seed: ``seed_time - time``, in days.

    A sinusoidal encoding of the age, then a linear map per node type. Only timed node
    types get one; the sampler guarantees the age is never negative.
    """

    def __init__(self, node_types: list[str], channels: int):
        super().__init__()
        self.pe = PositionalEncoding(channels)
        # No bias: the encoding is added to the row encoder's output, which has one.
        self.lins = TypeDict({nt: torch.nn.Linear(channels, channels, bias=False)
                                         for nt in node_types})

    def reset_parameters(self):
        for lin in self.lins.values():
            lin.reset_parameters()

    def forward(self, seed_time: Tensor, time_dict: dict, batch_dict: dict) -> dict[str, Tensor]:
        """``seed_time [B]``; ``time_dict``/``batch_dict``: node type -> ``[N_t]`` (seconds, seed index)."""
        out = {}
        for nt, time in time_dict.items():
            age = (seed_time[batch_dict[nt]] - time).to(torch.float) / 86400.0
            out[nt] = self.lins[nt](self.pe(age))
        return out
