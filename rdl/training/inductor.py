"""rdl's changes to Inductor's CPU code: one graph pass and two code-generator fixes.

Opt-in through ``compile.cpu_patches`` and imported only then
(:mod:`rdl.training.cpu_patches` decides, and guards the torch version): this module
reaches into Inductor's private internals. :func:`options` returns the Inductor options
for ``torch.compile(options=...)`` that switch them on for rdl's compiled model alone:
an :class:`RdlCpuPass` as ``post_grad_custom_post_pass``, which rewrites the graph and
marks the compilation for the code-generator fixes (installed once, they change nothing
in a compilation without the mark).

Each was found in the profile of the compiled user-churn train step on a 2-core CPU
(``docs/compile.md``), and each applies only to tensors on the CPU:

- ``graph_pass``: accumulating index writes become ``scatter_add``, and ``addmm`` becomes
  a matrix product whose bias is added in the kernel that reads it.
- ``sum_guard``: no recompile when a float32 sum's size crosses 4096.
- ``mask_stores``: boolean masks stored ten times faster.
"""
from __future__ import annotations

import functools
import math
import operator

import sympy
import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files
from torch._inductor.pattern_matcher import (Arg, CallFunction, KeywordArg, Match,
                                             PatternMatcherPass, register_graph_pattern)
from torch.fx.experimental.symbolic_shapes import statically_known_true

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float64)
_patterns = PatternMatcherPass(pass_name="rdl_cpu_graph_pass")


class RdlCpuPass(CustomGraphPass):
    """Inductor's ``post_grad_custom_post_pass`` for rdl's compiled model: rewrites two
    patterns of the post-grad graph where their tensors are on the CPU (``graph_pass``),
    and marks the compilation for the code-generator fixes that are on (``mask_stores``,
    ``sum_guard``). A pass already set by the user (``previous``) runs first.

    1. ``index_put(x, [index], values, accumulate=True)`` (also the masked and unsafe
       forms) becomes ``scatter_add`` along dim 0 with the index expanded over the other
       dims. The backward passes of ``index_select``, ``x[index]`` and ``embedding`` are
       such writes: every gather of node features or rows, and every categorical column.
       Inductor generates them as a compare-and-swap loop per element, which two threads
       adding into the same rows make slower still (8321 x 128 values into 512 rows:
       5.6 ms; into an embedding of 3 rows: 10 ms); ATen's CPU ``scatter_add`` with an
       expanded index sorts the index and sums each row in one thread, without atomics
       (0.3-1.3 ms), and Inductor calls it for ``scatter_add`` on the CPU
       (``config.cpp.fallback_scatter_reduce_sum``).
    2. ``addmm(bias, a, b)`` becomes ``a @ b + bias``, float32 and float64 only. ATen's
       ``addmm`` into an output buffer first copies the broadcast bias into all of it,
       then the GEMM reads it back: every ``Linear`` wrote its output twice (the
       compiled user-churn step spent 25 ms a step in these copies). Unfused, the bias
       is added in the fused kernel that reads the product anyway. Inductor does the
       same on GPUs only (``unfuse_bias_add_to_pointwise``).

    Written here because no Inductor setting does either on the CPU. Both are exact up to
    float rounding order (a sum in another order; the bias added after the product).
    """

    def __init__(self, graph_pass: bool = True, mask_stores: bool = True,
                 sum_guard: bool = True, previous=None):
        self.graph_pass, self.mask_stores, self.sum_guard = graph_pass, mask_stores, sum_guard
        self.previous = previous

    def __call__(self, graph: torch.fx.Graph) -> None:
        previous = self.previous
        for p in previous if isinstance(previous, (list, tuple)) else [previous]:
            if p is not None:
                p(graph)
        if self.graph_pass:
            _patterns.apply(graph)

    def uuid(self) -> bytes:
        """The cache key: this file, which fixes are on, and the user's pass. Inductor's
        caches do not see a code generator change otherwise."""
        flags = f"{self.graph_pass}{self.mask_stores}{self.sum_guard}".encode()
        previous = self.previous
        prev = [p.uuid() if hasattr(p, "uuid") else repr(p)
                for p in (previous if isinstance(previous, (list, tuple)) else [previous])]
        return get_hash_for_files((__file__,)) + flags + repr(prev).encode()


def _marked(fix: str) -> bool:
    """Whether the compilation under way is rdl's with ``fix`` on (options set the pass
    in Inductor's config for its duration, backward graph included)."""
    p = inductor_config.post_grad_custom_post_pass
    return isinstance(p, RdlCpuPass) and getattr(p, fix)


def _meta(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _same(a, b) -> bool:
    """Sizes equal without adding a guard (a guard here would mean a recompile later)."""
    return len(a) == len(b) and all(statically_known_true(x == y) for x, y in zip(a, b))


def _as_scatter_add(x: torch.fx.Node, indices, values: torch.fx.Node) -> bool:
    """An accumulating ``index_put`` that ``scatter_add`` does: float ``x`` on the CPU,
    one integer index on dim 0, values of the shape the write takes."""
    if len(indices) != 1:
        return False
    xv, iv, vv = _meta(x), _meta(indices[0]), _meta(values)
    return (xv is not None and iv is not None and vv is not None
            and xv.device.type == "cpu" and xv.dtype in FLOATS and vv.dtype == xv.dtype
            and xv.dim() >= 1 and iv.dtype in (torch.int64, torch.int32)
            and _same(vv.shape, (*iv.shape, *xv.shape[1:])))


def _scatter_add(x, index, values):
    """``x.index_put([index], values, accumulate=True)`` as ``scatter_add`` on dim 0."""
    n, width = x.shape[0], math.prod(x.shape[1:])
    index = index.reshape(-1).long()
    index = torch.where(index < 0, index + n, index)     # index_put's negative indices
    v = values.reshape(index.shape[0], width)
    out = x.reshape(n, width).scatter_add(0, index.unsqueeze(1).expand(-1, width), v)
    return out.reshape(x.shape)


def _check_index_put(match: Match) -> bool:
    x, indices, values = match.output_node().args[:3]
    return _as_scatter_add(x, indices, values)


def _check_masked(match: Match) -> bool:
    x, _, indices, values = match.output_node().args
    return _as_scatter_add(x, indices, values)


@register_graph_pattern(CallFunction(aten.index_put.default, Arg(), Arg(), Arg(), True),
                        pass_dict=_patterns, extra_check=_check_index_put)
@register_graph_pattern(CallFunction(aten._unsafe_index_put.default, Arg(), Arg(), Arg(), True),
                        pass_dict=_patterns, extra_check=_check_index_put)
def _index_put(match: Match, x, indices, values):
    match.replace_by_example(_scatter_add, [x, indices[0], values])


@register_graph_pattern(
    CallFunction(aten._unsafe_masked_index_put_accumulate.default, Arg(), Arg(), Arg(), Arg()),
    pass_dict=_patterns, extra_check=_check_masked)
def _masked_index_put(match: Match, x, mask, indices, values):
    def repl(x, mask, index, values):   # as ATen's decomposition: clamp, then mask
        n = x.shape[0]
        return _scatter_add(x, index.clamp(-n, n - 1), torch.where(mask, values, 0))

    match.replace_by_example(repl, [x, mask, indices[0], values])


def _check_addmm(match: Match) -> bool:
    inp = _meta(match.kwargs["inp"])
    return inp is not None and inp.device.type == "cpu" and inp.dtype in FLOATS


@register_graph_pattern(
    CallFunction(aten.addmm, KeywordArg("inp"), Arg(), Arg(), beta=KeywordArg("beta"),
                 alpha=KeywordArg("alpha")),
    pass_dict=_patterns, extra_check=_check_addmm)
def _addmm(match: Match, mat1, mat2, *, inp, alpha, beta):
    def repl(inp, mat1, mat2):
        out = mat1 @ mat2 if alpha == 1 else alpha * (mat1 @ mat2)
        if beta == 0:       # addmm ignores inp then, NaN included
            return out
        return out + (inp if beta == 1 else beta * inp)

    match.replace_by_example(repl, [inp, mat1, mat2])


def no_size_guard_in_cpu_sums() -> None:
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

    kernel = cpp.CppKernel
    need = kernel.need_use_acc_helper
    if getattr(need, "_rdl", False):
        return

    @functools.wraps(need)
    def need_use_acc_helper(self, reduction_type, dtype, use_scalar):
        if (_marked("sum_guard") and reduction_type == "sum" and dtype == torch.float
                and self.call_ranges is not None):
            size = functools.reduce(operator.mul, self.call_ranges[self.reduction_depth:], 1)
            if sympy.sympify(size).free_symbols:  # a dynamic size
                return True
        return need(self, reduction_type, dtype, use_scalar)

    need_use_acc_helper._rdl = True
    kernel.need_use_acc_helper = need_use_acc_helper


def fast_cpu_mask_stores() -> None:
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

    kernel = cpp.CppVecKernel
    get_store_line = kernel._get_store_line
    if getattr(get_store_line, "_rdl", False):
        return

    @functools.wraps(get_store_line)
    def _get_store_line(self, value, var, index, dtype, accu_store=False):
        if not _marked("mask_stores"):
            return get_store_line(self, value, var, index, dtype, accu_store)
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


FIXES = {"mask_stores": fast_cpu_mask_stores, "sum_guard": no_size_guard_in_cpu_sums}
#: the Inductor methods the fixes replace: (module, class, method)
PATCHED = (("torch._inductor.codegen.cpp", "CppVecKernel", "_get_store_line"),
           ("torch._inductor.codegen.cpp", "CppKernel", "need_use_acc_helper"))


def uninstall() -> None:
    """Put Inductor's own methods back (each fix installs its method once, at the first
    compile that asks for it). Graphs compiled before keep the code they were given."""
    import importlib
    for module, cls, name in PATCHED:
        try:
            owner = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError):
            continue
        method = owner.__dict__.get(name)
        if getattr(method, "_rdl", False):
            setattr(owner, name, method.__wrapped__)


def options(graph_pass: bool = True, mask_stores: bool = True,
            sum_guard: bool = True) -> tuple[dict, dict[str, str]]:
    """Inductor options that switch the patches on for one ``torch.compile``, and the
    patches that could not be applied, each with why (an Inductor internal that this
    torch lacks or has changed). Options rather than Inductor's global config: other
    compiled code in the process is left as it is; ``torch.compile`` applies options to
    the backward graph too, which is compiled later, during the first ``backward()``."""
    wanted = {"graph_pass": graph_pass, "mask_stores": mask_stores, "sum_guard": sum_guard}
    failed = {}
    for name, install in FIXES.items():
        if wanted[name]:
            try:
                install()
            except (AttributeError, ImportError) as e:
                wanted[name], failed[name] = False, f"{type(e).__name__}: {e}"
    if not any(wanted.values()):
        return {}, failed
    return {"post_grad_custom_post_pass": RdlCpuPass(
        **wanted, previous=inductor_config.post_grad_custom_post_pass)}, failed
