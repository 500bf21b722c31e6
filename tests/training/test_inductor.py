"""rdl's changes to Inductor's CPU code (``compile.cpu_patches``): compiled results equal
eager ones, the generated code is what each change promises, each switch turns its change
off, other compiled code in the process is left alone, and where a patch cannot apply
(untested torch, a missing internal) it says so once and stays off."""
from __future__ import annotations

import pytest
import torch
import torch._inductor.config as inductor_config
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

from rdl.training import cpu_patches
from rdl.training.compile import compile_model, stats

pytestmark = pytest.mark.skipif(cpu_patches.torch_release() not in cpu_patches.TESTED,
                                reason="the CPU patches apply on the tested torch releases only")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    cpu_patches._warned.clear()
    with inductor_config.patch(fx_graph_cache=False):
        yield
    torch._dynamo.reset()


def inductor():
    from rdl.training import inductor
    return inductor


class _Gathers(torch.nn.Module):
    """Every kind of gather whose gradient is an accumulating index write: index_select
    (message passing), x[index] (negative indices too), embedding with a padding row; and
    one such write in the forward pass (``_unsafe_index_put``)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(3, 16, padding_idx=0)   # a tiny vocabulary: contended
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x, src, rows, cats, seed_time):
        h = self.lin(x).relu()
        msg = h.index_select(0, src)                    # [E, 16]
        out = msg.sum(0) + h[rows].sum(0) + self.emb(cats).sum((0, 1))
        summed = torch.ops.aten._unsafe_index_put(torch.zeros_like(h), [src], msg, True)
        return out + (summed * h).sum(0) + seed_time.sum()


def _inputs(n=40, e=300):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(n, 16, generator=g), torch.randint(0, n, (e,), generator=g),
            torch.randint(-n, n, (e,), generator=g), torch.randint(0, 3, (e, 2), generator=g),
            torch.ones(3))


def _grads(model, forward, args):
    model.zero_grad(set_to_none=True)
    x = args[0].clone().requires_grad_()
    out = forward(x, *args[1:])
    (out * torch.arange(16.0)).sum().backward()
    return [out.detach(), x.grad] + [p.grad for p in model.parameters()]


@pytest.mark.skipif(torch.get_num_threads() == 1,
                    reason="on one thread Inductor generates scatter_add itself (no contention)")
def test_accumulating_index_writes_become_aten_scatter_add():
    """The gradients of the gathers match eager, and the compiled backward holds no atomic
    add: each write is ATen's scatter (Inductor's own code adds element by element with a
    compare-and-swap loop, 5-10x slower on the CPU)."""
    torch.manual_seed(0)
    model, args = _Gathers(), _inputs()
    want = _grads(model, model, args)
    f = compile_model(model)
    got, code = run_and_get_code(lambda: _grads(model, f, args))
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)
    forward, backward = code[0], code[-1]
    assert "atomic_add" not in forward and "atomic_add" not in backward
    assert forward.count("aten.scatter_reduce_.two(") == 1          # _unsafe_index_put
    # index_select, x[rows] and embedding: three calls of ATen's scatter in the backward
    assert backward.count("aten.scatter_reduce_.two(") == 3


def test_addmm_is_a_product_and_a_fused_bias():
    """Linear layers on the CPU compile to ``mm`` with the bias added in the next kernel
    (ATen's ``addmm`` into a buffer copies the broadcast bias first); same values."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32),
                                torch.nn.ReLU(), torch.nn.Linear(32, 8))

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, x, seed_time):
            return self.m(x)

    w = Wrap()
    x = torch.randn(50, 16, requires_grad=True)
    want = w(x, torch.ones(2))
    want.sum().backward()
    want_grad = [p.grad.clone() for p in w.parameters()]
    w.zero_grad()
    f = compile_model(w)
    got, code = run_and_get_code(lambda: f(x, torch.ones(2)))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    got.sum().backward()
    for p, g in zip(w.parameters(), want_grad):
        torch.testing.assert_close(p.grad, g, atol=1e-4, rtol=1e-4)
    forward = code[0]
    assert "extern_kernels.addmm" not in forward and "extern_kernels.mm" in forward


def test_the_pass_leaves_other_writes_alone():
    """Integer tensors and several index tensors keep Inductor's own lowering (and stay
    correct)."""
    def f(x, i, j, v, seed_time):
        return (x.index_put([i, j], v, accumulate=True),
                x.long().index_put([i], v.long().unsqueeze(1).expand(-1, x.shape[1]),
                                   accumulate=True))

    g = torch.Generator().manual_seed(0)
    x, i = torch.zeros(6, 4), torch.randint(0, 6, (20,), generator=g)
    j, v = torch.randint(0, 4, (20,), generator=g), torch.randn(20, generator=g)
    want = f(x, i, j, v, None)
    options, _ = inductor().options()
    got, code = run_and_get_code(torch.compile(f, dynamic=True, options=options), x, i, j, v, None)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert "scatter_reduce_" not in "\n".join(code)   # neither write became a scatter_add


def test_a_users_pass_still_runs_and_the_global_config_is_untouched():
    """rdl's pass is an option of its own compiled model: a pass the user set globally runs
    first, and stays the global setting."""
    class Mine(torch._inductor.custom_graph_pass.CustomGraphPass):
        calls = 0

        def __call__(self, graph):
            Mine.calls += 1

        def uuid(self):
            return "mine"

    mine = Mine()
    # code generated for two threads (a pytest worker may run on one): with one, Inductor
    # keeps its own scatter-sum lowering, as no atomics contend (torch/_inductor/utils.py)
    with inductor_config.patch(post_grad_custom_post_pass=mine, **{"cpp.threads": 2}):
        model, args = _Gathers(), _inputs()
        _, code = run_and_get_code(lambda: _grads(model, compile_model(model), args))
        assert inductor_config.post_grad_custom_post_pass is mine
    assert Mine.calls == 2       # forward and backward graphs
    assert "aten.scatter_reduce_.two(" in code[-1]   # and rdl's pass ran after it


def test_other_compiled_code_is_left_alone():
    """After rdl's model compiled with every patch, a plain ``torch.compile`` elsewhere in
    the process gets Inductor's own code (no rdl mask store, no rewrite)."""
    _, code = run_and_get_code(compile_model(_Masks()), *MASK_ARGS)
    assert "_lanes[_S]" in "\n".join(code)
    torch._dynamo.reset()
    _, code = run_and_get_code(torch.compile(_Masks(), dynamic=True), *MASK_ARGS)
    assert "_lanes[_S]" not in "\n".join(code)


MASK_ARGS = (torch.randn(64, 32), torch.randint(0, 6, (64, 32)), torch.randn(64, 32).double(),
             torch.randn(7))


def test_each_switch_turns_its_patch_off():
    model, args = _Gathers(), _inputs()
    _, code = run_and_get_code(lambda: _grads(model, compile_model(model, {"graph_pass": False}),
                                              args))
    assert "aten.scatter_reduce_.two(" not in "\n".join(code)
    torch._dynamo.reset()
    # the others still apply without it; mask_stores switched off alone
    _, code = run_and_get_code(compile_model(_Masks(), {"graph_pass": False}), *MASK_ARGS)
    assert "_lanes[_S]" in "\n".join(code)
    torch._dynamo.reset()
    _, code = run_and_get_code(compile_model(_Masks(), {"mask_stores": False}), *MASK_ARGS)
    assert "_lanes[_S]" not in "\n".join(code)


def test_an_untested_torch_warns_once_and_applies_nothing(monkeypatch):
    monkeypatch.setattr(cpu_patches, "TESTED", ("1.0",))
    with pytest.warns(cpu_patches.CpuPatchWarning, match="tested on torch 1.0 only") as rec:
        options, applied = cpu_patches.prepare(cpu_patches.CpuPatches())
        assert cpu_patches.prepare(cpu_patches.CpuPatches()) == ({}, set())
    assert (options, applied) == ({}, set()) and len(rec) == 1
    _, code = run_and_get_code(compile_model(_Masks()), *MASK_ARGS)
    assert "_lanes[_S]" not in "\n".join(code)


@pytest.mark.parametrize("attr,patch", [("CppVecKernel._get_store_line", "mask_stores"),
                                        ("CppKernel.need_use_acc_helper", "sum_guard")])
def test_a_missing_internal_is_named(monkeypatch, attr, patch):
    """As on a torch whose Inductor lacks what a patch changes: that patch is named in one
    warning and left off; the others still apply."""
    from torch._inductor.codegen import cpp
    cls, name = attr.split(".")
    monkeypatch.delattr(getattr(cpp, cls), name)
    with pytest.warns(cpu_patches.CpuPatchWarning, match=f"cannot apply {patch} "):
        options, applied = cpu_patches.prepare(cpu_patches.CpuPatches())
    assert patch not in applied and "graph_pass" in applied
    assert not getattr(options["post_grad_custom_post_pass"], patch)


class _Sum(torch.nn.Module):
    def forward(self, x, seed_time):
        return x.sum(0) + seed_time.sum()


@pytest.mark.parametrize("sum_guard", [True, False])
def test_a_sum_over_a_size_crossing_4096_does_not_recompile(sum_guard):
    """Inductor's C++ backend picks how to sum float32 by a guard on size > 4096; the
    article rows of evaluation batches cross it (an ID-GNN run recompiled). Switched off,
    Inductor's guard is back."""
    f = compile_model(_Sum(), {"sum_guard": sum_guard})
    for n in (3000, 5000, 100, 9000):
        x = torch.randn(n, 8)
        want = x.double().sum(0).float() + 3
        torch.testing.assert_close(f(x, torch.ones(3)), want, atol=1e-3, rtol=1e-4)
    assert stats()["graphs"] == (1 if sum_guard else 2)


class _Masks(torch.nn.Module):
    """Boolean outputs from float, float64, int64 and bfloat16 comparisons, one of them
    transposed (not contiguous along the vectorised loop)."""

    def forward(self, x, i, d, seed_time):
        return (x > 0.1, i >= 3, (2 * x).relu() <= 0.5, d < 0, x.bfloat16() > 0, x.t() > 0,
                seed_time > 0)


@pytest.mark.parametrize("shape", [(1000, 128), (13, 37), (5, 3)])
def test_compiled_boolean_stores_equal_eager(shape):
    """rdl replaces how Inductor's C++ code stores boolean vectors (ten times faster);
    every lane and every loop tail must still be stored as eager stores it."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g)
    args = (x, torch.randint(0, 6, shape, generator=g), torch.randn(shape, generator=g).double(),
            torch.randn(7, generator=g))
    f = compile_model(_Masks())
    got, code = run_and_get_code(f, *args)
    for want, out in zip(_Masks()(*args), got):
        assert out.dtype == torch.bool and torch.equal(out, want)
    assert "_lanes[_S]" in "\n".join(code)  # the fast store is in the generated code
