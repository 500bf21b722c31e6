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
