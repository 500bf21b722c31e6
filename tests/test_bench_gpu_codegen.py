"""``python -m rdl.bench kernels --codegen triton``: a GPU's Triton code generated and
counted on the CPU (``rdl/bench/gpu_codegen.py``). Each case runs in a fresh interpreter:
the set-up patches its process for good."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

needs_triton = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import triton"], capture_output=True).returncode,
    reason="the triton package is not installed (not an rdl dependency)")


def python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


@needs_triton
def test_forward_and_backward_are_generated_as_triton_before_any_kernel_runs():
    proc = python("""
        import json, torch
        from rdl.bench.gpu_codegen import Stopped, triton_codegen
        triton_codegen()
        from torch._inductor.utils import run_and_get_code
        from rdl.bench.kernels import count_calls

        def f(x, w):
            return torch.nn.functional.layer_norm(x @ w, (w.shape[1],)).relu().sum()

        x = torch.randn(4096, 32, requires_grad=True)
        w = torch.randn(32, 64, requires_grad=True)
        g = torch.compile(f, dynamic=True)

        def step():
            try:
                g(x, w).backward()
            except Stopped as e:
                return str(e)

        stopped, codes = run_and_get_code(step)
        print(json.dumps({"stopped": stopped, "counts": [count_calls(c) for c in codes],
                          "triton": ["triton_" in c for c in codes],
                          "cpp": ["cpp_fused" in c for c in codes], "grad": x.grad is None}))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["stopped"].startswith("triton_")   # the forward's first kernel stopped it
    # the backward was generated with the forward, though nothing ran
    assert len(out["counts"]) == 2 and out["grad"]
    assert out["triton"] == [True, True] and out["cpp"] == [False, False]
    for counts in out["counts"]:
        assert counts["generated"] >= 1 and counts["library"] >= 1, counts


@needs_triton
@pytest.mark.slow   # (compiles the tiny model twice, a minute)
def test_rdls_model_is_generated_as_for_a_gpu_without_its_cpu_patches(rdl_cache):
    """The tiny user-churn model, as the benchmark counts it: rdl's CPU options (the
    scatters of ``graph_pass``, dropout's hash and ATen's random numbers) are a CPU's, not
    in a GPU's code; the CPU's own row has them."""
    code = """
        import json, sys
        from rdl.bench.kernels import measure
        print(json.dumps(measure("user-churn", "stacked", ["debug=tiny"], "cpu",
                                 codegen=sys.argv[1])))
    """
    rows = {}
    for codegen in ("triton", "device"):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), codegen],
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "RDL_CACHE": str(rdl_cache)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows[codegen] = json.loads(proc.stdout.splitlines()[-1])
    gpu, cpu = rows["triton"], rows["device"]
    assert gpu["graphs"] == cpu["graphs"] == 2
    # a GPU's graph draws its seeds once (one kernel, counted); the CPU's hashed dropout
    # draws one seed per dropout
    assert gpu["cpu_rng"] == 1 < cpu["cpu_rng"]
    assert gpu["kernels"] == gpu["generated"] + gpu["library"] + gpu["fallback"] + 1
    # Triton fuses less than Inductor's C++ (it splits reductions in two)
    assert gpu["generated"] > cpu["generated"], (gpu, cpu)
    assert gpu["grad_copies"] is None and cpu["grad_copies"] == 0


def test_without_triton_the_benchmark_says_what_it_needs():
    proc = python("""
        import sys
        sys.modules["triton"] = None          # as where it is not installed
        from rdl.bench.gpu_codegen import triton_codegen
        triton_codegen()
    """)
    assert proc.returncode == 1
    assert "--codegen triton needs the triton package (pip install triton)" in proc.stderr
    assert "Traceback" not in proc.stderr
