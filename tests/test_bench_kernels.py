"""``python -m rdl.bench kernels``: the calls of Inductor's generated code, by kind."""
import torch

from rdl.bench.kernels import count_calls

WRAPPER = '''
cpp_fused_add_0 = async_compile.cpp_pybinding(...)

def call(args):
    buf0 = empty_strided_cpu((4, 4), (4, 1), torch.float32)
    extern_kernels.mm(arg0_1, arg1_1, out=buf0)
    cpp_fused_add_0(buf0, arg2_1)
    buf2 = torch.ops.aten.randint.low(-2147483648, 2147483648, [], dtype=torch.int32)
    aten.scatter_reduce_.two(buf3, 0, buf4, buf0, reduce='sum', include_self=True)
    triton_poi_fused_relu_1.run(buf0, buf5, 16, stream=stream0)
    return (buf0, )

def benchmark_compiled_module(times=10, repeat=10):
    extern_kernels.mm(a, b, out=c)
'''


def test_calls_are_counted_by_kind_in_the_wrapper_only():
    assert count_calls(WRAPPER) == {"generated": 2, "library": 1, "fallback": 1, "cpu_rng": 1}


def test_a_compiled_function_has_its_matmul_and_its_fused_pointwise_counted():
    from torch._inductor.utils import run_and_get_code

    def f(x, w, b):
        return ((x @ w).relu() * 2 + b).sum()

    x, w, b = torch.randn(8, 4), torch.randn(4, 3), torch.randn(3)
    _, codes = run_and_get_code(torch.compile(f, dynamic=True), x, w, b)
    counts = count_calls(codes[0])
    assert counts["library"] == 1 and 1 <= counts["generated"] <= 2, counts


def test_the_ops_benchmark_times_each_variant_of_one_model(rdl_cache, monkeypatch):
    """``python -m rdl.bench ops``: each variant is the model with its ops (the same
    parameters' values) and gets its rounds."""
    from rdl.bench import ops

    monkeypatch.setenv("RDL_CACHE", str(rdl_cache))
    overrides = ["debug=tiny", f"data.cache_dir={rdl_cache}"]
    _, mods = ops.modules("user-churn", list(ops.VARIANTS), True, overrides)
    flags = [(m.model.gnn.gnn.fused, m.model.gnn.encoder.fused, m.model.gnn.encoder.stacked,
              m.model.gnn.encoder.chunk_rows) for m in mods.values()]
    assert flags == [(False, False, False, 0), (True, True, False, 0),
                     (True, True, True, 0), (True, True, True, 1024)]
    states = [m.model.state_dict() for m in mods.values()]
    assert all(torch.equal(s[k], states[0][k]) for s in states[1:] for k in states[0])
    rows = ops.measure("user-churn", list(ops.VARIANTS), eager=True, batches=2, rounds=2,
                       overrides=overrides)
    assert [r["variant"] for r in rows] == ["per-type", "fused", "stacked", "chunked"]
    assert all(r["ms_a_step"] > 0 and r["rounds"] == 2 for r in rows)
    assert rows[0]["vs_per-type"] == 1


def test_ops_outside_the_graphs_and_autograds_copies_into_grad_are_counted():
    """``outside``: ops that make data outside every compiled graph (the graph's own are
    not counted again); ``grad_copies``: autograd's copies of a gradient whose strides
    are not its parameter's (``bmm(x, w.transpose(1, 2))`` gives ``w`` a transposed one,
    as it gave the stacked encoders' weights before ``rdl.nn.stacked.StackedLinear``)."""
    import torch.nn.functional as F

    from rdl.bench.kernels import outside_graphs

    w = torch.nn.Parameter(torch.randn(4, 3))
    x = torch.randn(5, 3)

    def f(x, w):
        return F.gelu(F.linear(x, w)).mul(3).sigmoid().sum()

    compiled = torch.compile(f, dynamic=True)

    def step(fn, transposed=False):
        def run():
            w.grad = None
            loss = torch.bmm(x[None], w[None].transpose(1, 2)).sum() if transposed \
                else fn(x, w)
            loss.backward()
        return run

    step(compiled)()                                   # compile outside the count
    copies_eager, eager = outside_graphs(step(f))
    copies_compiled, in_graph = outside_graphs(step(compiled))
    assert copies_eager == copies_compiled == 0
    # eager: the forward's and backward's ops (matmuls, gelu, its backward...); compiled:
    # only the backward's seed (``ones_like``'s fill), the rest runs inside the graphs
    assert {"mm", "gelu", "gelu_backward", "sigmoid"} <= set(eager)
    assert sum(in_graph.values()) <= 2 and "mm" not in in_graph
    assert outside_graphs(step(f, transposed=True))[0] == 1
