"""A GPU's kernels generated on a machine without one, to be counted
(``python -m rdl.bench kernels --codegen triton``).

A step's kernel count is what bounds a GPU step by its host, and GPUs are lent rarely.
Inductor's C++ code for a CPU fuses differently from its Triton code for a GPU (Triton
splits some reductions in two, keeps others apart), so the CPU's count is a loose proxy.
But Inductor generates Triton for the CPU too (``cpu_backend="triton"``), through the same
scheduler and fusion rules a CUDA device gets, with the device's properties where they
matter (the multiprocessor count decides which reductions are split). :func:`triton_codegen`
sets that up: Triton code, the properties of a GPU (an H100's), rdl's model compiled
without its CPU options (:mod:`rdl.training.cpu_patches`), the backward compiled
with the forward (so that both are generated before anything runs) and no kernel run: the
first launch raises :class:`Stopped`, which the caller catches; the wrapper code is then
counted as a GPU's (:func:`rdl.bench.kernels.count_calls`).

Needs the ``triton`` package, which is not an rdl dependency (``pip install triton``; its
interpreter mode loads the kernels without compiling them for a device). Reaches into
private torch APIs (benchmark-only, opt-in): each that this torch lacks fails naming
itself.
"""
from __future__ import annotations

import os

#: an H100 SXM's properties as Inductor reads them (``torch.cuda.get_device_properties``)
GPU = dict(multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536,
           max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32)


class Stopped(Exception):
    """A generated kernel was launched: the code is generated, the step goes no further."""


def triton_codegen(gpu: dict | None = None) -> None:
    """Make this process's Inductor generate Triton code for CPU tensors as it would for
    the GPU ``gpu`` (properties as :data:`GPU`), compiling each backward with its forward,
    and stop at the first launch (:class:`Stopped`). For a fresh process: not undone."""
    os.environ["TRITON_INTERPRET"] = "1"      # kernels loaded as Python, not compiled
    try:
        import triton  # noqa: F401
    except ImportError:
        raise SystemExit("--codegen triton needs the triton package (pip install triton): "
                         "it is not an rdl dependency") from None
    try:
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config
        import torch.utils._triton as torch_triton
        from torch._inductor.runtime import hints, triton_heuristics
        for obj, name in ((inductor_config, "cpu_backend"),
                          (functorch_config, "force_non_lazy_backward_lowering"),
                          (torch_triton, "triton_hash_with_backend"),
                          (hints, "DeviceProperties"),
                          (triton_heuristics, "CachingAutotuner")):
            getattr(obj, name)
    except (ImportError, AttributeError) as e:
        import torch
        raise SystemExit(f"--codegen triton: torch {torch.__version__} lacks {e}") from None
    inductor_config.cpu_backend = "triton"
    functorch_config.force_non_lazy_backward_lowering = True
    # the backend's hash keys Inductor's caches; with no GPU there is no backend to ask
    torch_triton.triton_hash_with_backend = lambda: "rdl-no-gpu"
    props = hints.DeviceProperties(type="cpu", index=None, **(gpu or GPU))
    hints.DeviceProperties.create = classmethod(lambda cls, device: props)

    # rdl compiles a CPU model with its CPU options (the patches, ATen's random numbers):
    # compiled here as for a GPU
    import torch
    from rdl.training import compile as rdl_compile
    compile_for = rdl_compile._compile_for
    rdl_compile._compile_for = lambda model, device, *args: compile_for(
        model, torch.device("cuda") if device.type == "cpu" else device, *args)

    def stop(self, *args, **kwargs):
        raise Stopped(self.fn.__name__)

    triton_heuristics.CachingAutotuner.run = stop
