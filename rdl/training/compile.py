"""``torch.compile`` for rdl's models and optimiser steps, and a count of what it did.

The compiled path promises: one graph per model and mode (train, eval), no graph breaks,
no recompiles when batch shapes or the learning rate change. Dynamic shapes are on from
the first call, equal sizes are not tied, and no size reaching the model is 0 or 1, so a
batch with an empty node type, one node, or two node types of the same size reuses the
graph.
"""
from __future__ import annotations

import functools
import logging
import operator
import types
from dataclasses import dataclass, field
from typing import Callable

import sympy
import torch
import torch._inductor.config as inductor_config
import torch.fx.experimental._config as fx_config
from torch import Tensor
from torch._dynamo.utils import counters

# Shape settings while tracing: two sizes that happen to be equal at the first call
# ("duck shaping") must not be assumed equal for ever, or a later batch recompiles.
# Dynamo bakes a size of 0 or 1 into the graph as a constant (and Inductor cannot compile
# this model with unbacked sizes), so a batch with an empty node type or a single node
# would recompile; every node type therefore gets PAD extra rows and every edge type PAD
# extra edges between them (``InputRows``, :func:`pad_inputs`), and loaders never make a batch of one
# seed, or a much smaller one than the rest (``rdl.training.datamodule.TailMergingBatchSampler``).
PAD = 2
log = logging.getLogger(__name__)
SHAPE_SETTINGS = dict(use_duck_shape=False)


@dataclass
class CompileOptions:
    """What to compile and how (``compile.*`` in the config).

    Args:
        enabled: compile the model (off: eager).
        optimizer: compile the optimiser step too.
        log: report every recompile and graph break as it happens, with its reason (like
            ``TORCH_LOGS=recompiles,graph_breaks``).
        kwargs: passed to ``torch.compile`` for the model (``dynamic``, ``mode``,
            ``fullgraph``, ``backend``).
    """
    enabled: bool = True
    optimizer: bool = True
    log: bool = False
    kwargs: dict = field(default_factory=lambda: {"dynamic": True})

    @classmethod
    def of(cls, value) -> "CompileOptions":
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls(enabled=value)
        return cls(**(value or {}))


def _no_size_guard_in_cpu_sums() -> None:
    """Inductor's C++ backend sums float32 over more than 4096 values with a cascade helper
    (for precision) and over fewer without, and decides it with a *guard* on the size. A
    dynamic size that crosses 4096 (the article rows of one evaluation batch against the
    next) then recompiles the graph. Written here because no Inductor setting turns that
    guard off: a sum whose size is not known when compiling always uses the helper (as
    precise; a sum of fewer than 4096 values is one chunk of it). A sum of a fixed size
    (a layer norm over 128 channels) is left to Inductor: it needs no guard, and the helper
    would slow down its short inner loop.
    """
    from torch._inductor.codegen import cpp

    kernel = getattr(cpp, "CppKernel", None)
    need = getattr(kernel, "need_use_acc_helper", None)
    if need is None or getattr(need, "_rdl", False):
        return

    @functools.wraps(need)
    def need_use_acc_helper(self, reduction_type, dtype, use_scalar):
        if reduction_type == "sum" and dtype == torch.float and self.call_ranges is not None:
            size = functools.reduce(operator.mul, self.call_ranges[self.reduction_depth:], 1)
            if sympy.sympify(size).free_symbols:  # a dynamic size
                return True
        return need(self, reduction_type, dtype, use_scalar)

    need_use_acc_helper._rdl = True
    kernel.need_use_acc_helper = need_use_acc_helper
    _tag_cache_keys("rdl-cpp-sum-helper-dynamic")


def _fast_cpu_mask_stores() -> None:
    """Inductor's C++ backend keeps a boolean vector as ``at::vec::VecMask<T, N>`` and
    stores it with ``VecMask::store(bool*)``, which converts through a 32-lane
    ``Vectorized<bool>`` with scalar loops: about 10 ns per element on this machine's AVX2,
    ten times the scalar code it replaces. A training graph stores such masks for every
    ReLU and dropout (what the backward pass needs), and that made the compiled user-churn
    step slower than eager. Written here because no Inductor setting changes it: a mask is
    stored as its raw lanes into a small array, then as ``bool`` in a loop the C++ compiler
    vectorises. Contiguous stores only; the rest is Inductor's own code.
    """
    from torch._inductor.codegen import cpp
    from torch._inductor.codegen.cpp_utils import cexpr_index
    from torch._inductor.utils import IndentedBuffer

    kernel = getattr(cpp, "CppVecKernel", None)
    get_store_line = getattr(kernel, "_get_store_line", None)
    if get_store_line is None or getattr(get_store_line, "_rdl", False):
        return

    @functools.wraps(get_store_line)
    def _get_store_line(self, value, var, index, dtype, accu_store=False):
        tiling_var = self.itervars[self.tiling_idx]
        if (dtype != torch.bool or accu_store
                or self._try_get_const_stride(index, tiling_var) != 1):
            return get_store_line(self, value, var, index, dtype, accu_store)
        # decltype(mask[0]) is Vectorized<T>: the lane type T and the count N of vectors.
        count = "_S" if self.tail_size is None else cexpr_index(self.num_elems)
        code = IndentedBuffer()
        code.writelines([
            "{",
            f"    using _V = decltype({value}[0]);",
            "    using _T = typename _V::value_type;",
            f"    constexpr int _S = decltype({value})::size();",
            "    __at_align__ _T _lanes[_S];",
            f"    at::vec::VectorizedN<_T, _S / _V::size()>({value}).store(_lanes);",
            f"    bool* _out = {var} + {cexpr_index(index)};",
            f"    for (int _i = 0; _i < {count}; _i++) _out[_i] = _lanes[_i] != _T(0);",
            "}",
        ])
        return code

    _get_store_line._rdl = True
    kernel._get_store_line = _get_store_line
    _tag_cache_keys("rdl-cpp-mask-store")


def _tag_cache_keys(tag: str) -> None:
    """Inductor's caches do not see a code generator change: tag their keys, or a graph
    compiled and cached without it comes back."""
    cc = torch.compiler.config
    if tag not in cc.cache_key_tag:
        cc.cache_key_tag = f"{cc.cache_key_tag};{tag}" if cc.cache_key_tag else tag


def compile_model(model: torch.nn.Module, **kwargs) -> Callable:
    """``torch.compile(model, dynamic=True, **kwargs)``, traced under :data:`SHAPE_SETTINGS`.
    Call it with :func:`pad_inputs`.

    On the CPU, random ops call PyTorch's kernels instead of Inductor's generated
    random-number code, which was no faster there (rdl's own dropout uses neither when
    compiled: :class:`rdl.nn.encoder.Dropout`). On CUDA, Inductor's own is the faster one
    and is kept. Float32 sums of a dynamic size are generated without a size guard
    (:func:`_no_size_guard_in_cpu_sums`), boolean masks are stored fast
    (:func:`_fast_cpu_mask_stores`).
    """
    _no_size_guard_in_cpu_sums()
    _fast_cpu_mask_stores()
    compiled = torch.compile(model, **{"dynamic": True, **kwargs})

    @functools.wraps(model.forward)
    def forward(*args, **kw):
        cpu = args[-1].device.type == "cpu"  # seed_time: where the batch is
        with fx_config.patch(**SHAPE_SETTINGS), inductor_config.patch(fallback_random=cpu):
            return compiled(*args, **kw)

    return forward


def compile_optimizer_step(optimizer: torch.optim.Optimizer, **kwargs) -> None:
    """Compile ``optimizer.step`` in place (call before creating its LR scheduler).

    The closure that Lightning passes (forward and backward, already compiled) runs
    outside; the update itself is one compiled graph that reads the LR tensor, so a
    scheduler changing it needs no recompile. PyTorch breaks the graph once, on purpose,
    where the optimiser creates its state. A fused optimiser (``fused=True``) is one
    kernel already and is left as it is.
    """
    if optimizer.defaults.get("fused"):
        log.info("optimizer is fused (one kernel already): its step is not compiled")
        return
    step = torch.compile(optimizer.step, **kwargs)

    @functools.wraps(optimizer.step)
    def compiled_step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        step()
        return loss

    # A bound method, as LR schedulers expect (they wrap ``step.__func__``).
    optimizer.step = types.MethodType(compiled_step, optimizer)


def set_logging(enabled: bool) -> None:
    """Report recompiles (with the guard that failed) and graph breaks (with the reason)."""
    if enabled:
        torch._logging.set_logs(recompiles=True, graph_breaks=True)


def stats() -> dict[str, int]:
    """What Dynamo did in this process so far: graphs compiled, graph breaks, frames traced."""
    return {
        "graphs": int(counters["stats"]["unique_graphs"]),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "frames": int(counters["frames"]["total"]),
    }


def pad_inputs(tf_dict: dict, edge_index_dict: dict, time_dict: dict, batch_dict: dict,
               seed_time: Tensor, num_nodes: dict) -> tuple:
    """The model's inputs completed for ``PAD`` pad nodes per node type, which follow the
    ``num_nodes[t]`` nodes of the batch (their rows are in ``tf``: see
    :class:`~rdl.graph.transforms.InputRows`): ``PAD`` edges between pad nodes for every
    edge type, and a time and a seed for each pad node (the first seed's: as old as it).

    Pad nodes send messages only to each other, so no real node's output changes; a
    node-level output ``[N_t + PAD, ...]`` keeps its real nodes first.
    """
    edge_index_dict = {
        (src, rel, dst): torch.cat([ei, torch.stack([
            torch.arange(num_nodes[src], num_nodes[src] + PAD, device=ei.device),
            torch.arange(num_nodes[dst], num_nodes[dst] + PAD, device=ei.device)])], dim=1)
        for (src, rel, dst), ei in edge_index_dict.items()}
    time_dict = {nt: torch.cat([t, seed_time[:1].expand(PAD)]) for nt, t in time_dict.items()}
    batch_dict = {nt: torch.cat([b, b.new_zeros(PAD)]) for nt, b in batch_dict.items()}
    return tf_dict, edge_index_dict, time_dict, batch_dict, seed_time
