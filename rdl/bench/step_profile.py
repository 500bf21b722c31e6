"""One more epoch's steps under ``torch.profiler``, summarised per step: the host's wall
time, the device's kernels and copies, the kernels by kind and the most launched
(:class:`StepProfiler`, :func:`summarize`; the profiled columns of ``python -m rdl.bench
e2e`` and of the GPU check)."""
from __future__ import annotations

import time

import pytorch_lightning as pl
import torch

from rdl.bench.alone import sync as _sync


class StepProfiler(pl.Callback):
    """Lightning callback: ``torch.profiler`` over ``steps`` whole loop iterations of
    epoch ``epoch`` (from the start of its second batch: the loader's fetch, the step and
    every hook), summarised per step by :func:`summarize`. ``steps`` 0: none (no epoch
    runs under the profiler, whose cost would fall on the epoch's other measures)."""

    def __init__(self, device: torch.device, epoch: int, steps: int):
        self.device, self.epoch, self.steps = device, epoch, steps
        self.prof, self.result, self._n = None, {}, 0

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if self.steps <= 0 or trainer.current_epoch != self.epoch:
            return
        if batch_idx == 1:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + (
                [ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
            _sync(self.device)
            self.prof = profile(activities=acts)
            self.prof.__enter__()
            self._t = time.perf_counter()
        elif self.prof is not None and batch_idx == 1 + self.steps:
            self._stop()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if self.prof is not None and trainer.current_epoch == self.epoch:
            self._n += 1

    def on_train_epoch_end(self, trainer, module):
        if self.prof is not None:
            self._stop()

    def _stop(self):
        _sync(self.device)
        wall = time.perf_counter() - self._t
        self.prof.__exit__(None, None, None)
        self.result = summarize(self.prof, wall, max(self._n, 1), self.device)
        self.prof = None


#: device events that copy or fill memory rather than compute (the profiler's names)
COPIES = ("Memcpy", "Memset")
#: ranges torch.profiler shows on the device's timeline (a torch that does not flag them)
ANNOTATIONS = ("Optimizer.", "enumerate(DataLoader)", "ProfilerStep#", "## ")
#: kernels :func:`summarize` lists by device time
TOP = 12
#: host-side calls that start work on the GPU: a kernel, or a whole CUDA graph
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
            "cudaGraphLaunch", "cudaLaunchCooperativeKernel")


def summarize(prof, wall_s: float, steps: int, device: torch.device) -> dict:
    """Per step: the host's wall time under the profiler (``host_ms``), the operators it
    dispatched (``ops``), and on CUDA the device's time (``device_ms``), of which the
    compute kernels' (``kernel_ms``, ``kernels`` run) and the copies' and fills'
    (``copy_ms``, ``copies``: memcpy and memset), the launches the host made and the CUDA
    graphs it replayed, the :data:`TOP` kernels by device time (``top_kernels``: name,
    runs and ms a step), the kernels by kind (``kernel_kinds``, :func:`kernel_kind`) and
    the :data:`TOP` most launched (``frequent_kernels``: where a count above the goal
    comes from). A step whose host time is far above its device time is bound by the
    host. On every device, the compiled code a step enters (:func:`compiled_calls`)."""
    from torch.autograd import DeviceType
    events = prof.events()
    out = {"host_ms": 1000 * wall_s / steps,
           "ops": sum(e.name.startswith("aten::") for e in events) / steps,
           **compiled_calls(events, steps)}
    if device.type == "cuda":
        # A record_function range (Lightning's "Optimizer.step#Adam.step" around forward,
        # backward and update; the loader's "enumerate(DataLoader)#...") is drawn on the
        # device's timeline too: it is no kernel, and it spans the step (the H200 check of
        # 2026-11-28 counted a 50-75 ms one into every step's device time).
        on_device = [e for e in events if e.device_type == DeviceType.CUDA
                     and not _annotation(e)]
        copies = [e for e in on_device if e.name.startswith(COPIES)]
        kernels = [e for e in on_device if not e.name.startswith(COPIES)]
        out["device_ms"] = sum(map(_device_us, on_device)) / 1000 / steps
        out["kernel_ms"] = sum(map(_device_us, kernels)) / 1000 / steps
        out["kernels"] = len(kernels) / steps
        out["copy_ms"] = sum(map(_device_us, copies)) / 1000 / steps
        out["copies"] = len(copies) / steps
        out["launches"] = sum(e.name.startswith(LAUNCHES) for e in events) / steps
        out["graph_replays"] = sum(e.name.startswith("cudaGraphLaunch") for e in events) / steps
        # a CUDA graph recorded inside the window: a new shape or path, not a replay
        out["captures"] = sum(e.name.startswith("cudaStreamBeginCapture") for e in events)
        out["top_kernels"] = top_kernels(on_device, steps)
        out["frequent_kernels"] = top_kernels(kernels, steps, by="runs")
        kinds = {}
        for e in kernels:
            kinds[kernel_kind(e.name)] = kinds.get(kernel_kind(e.name), 0) + 1 / steps
        out["kernel_kinds"] = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
    return out


#: the profiler's names for Dynamo entering a compiled frame (``Torch-Compiled Region:
#: FRAME/COMPILE``) and for AOTAutograd running a compiled graph's forward
REGION, GRAPH = "Torch-Compiled Region", "CompiledFunction"


def compiled_calls(events, steps: int) -> dict:
    """Per step, Dynamo's compiled regions entered (``regions``) and compiled graphs run
    with their backward (``graph_calls``: AOTAutograd's forwards), and how many frames the
    regions belong to (``frames``; torch names a region ``FRAME/COMPILE``). A model
    compiled whole enters one region and runs one graph in each mode; more means graph
    breaks, or Dynamo compiling the frames a model calls one by one (as it does once it
    gives up on the model's own: its recompile limit). Inductor's partitions of one graph
    (CUDA graphs around what it cannot record) add neither: only ``graph_replays``. The
    GPU check of 2026-12-04 saw 28 graphs' backwards a step under cProfile and 56 CUDA
    graph replays, and could not tell which."""
    regions = [e.name for e in events if e.name.startswith(REGION)]
    frames = {r.rsplit(":", 1)[-1].strip().split("/")[0] for r in regions}
    return {"regions": len(regions) / steps,
            "graph_calls": sum(e.name == GRAPH for e in events) / steps,
            "frames": len(frames)}


#: a kernel's kind by its name: (kind, what its name holds), first match wins
KINDS = (("triton", ("triton_",)), ("matmul", ("gemm", "gemv", "xmma", "cutlass", "cublas")),
         ("optimiser", ("multi_tensor_apply",)), ("reduce", ("reduce_kernel",)),
         ("index/scatter", ("index", "scatter", "gather")),
         ("elementwise", ("elementwise_kernel",)))


def kernel_kind(name: str) -> str:
    """Which kind a CUDA kernel is (:data:`KINDS`; ``other`` where none matches): a
    compiled step's Triton kernels against the library's that Inductor did not fuse."""
    low = name.lower()
    return next((kind for kind, marks in KINDS if any(m in low for m in marks)), "other")


def top_kernels(on_device: list, steps: int, top: int | None = None,
                by: str = "time") -> list[dict]:
    """The device's events grouped by name, most device time (``by="runs"``: most runs)
    first: ``name`` (cut to 160 characters), ``per_step`` (runs a step) and ``ms`` (a
    step)."""
    runs, us = {}, {}
    for e in on_device:
        runs[e.name] = runs.get(e.name, 0) + 1
        us[e.name] = us.get(e.name, 0.0) + _device_us(e)
    key = us.get if by == "time" else runs.get
    names = sorted(us, key=key, reverse=True)[:top or TOP]
    return [{"name": n[:160], "per_step": runs[n] / steps, "ms": us[n] / 1000 / steps}
            for n in names]


def _annotation(event) -> bool:
    """Whether a device event is a user's range (``record_function``), not device work."""
    return bool(getattr(event, "is_user_annotation", False)) or event.name.startswith(
        ANNOTATIONS)


def _device_us(event) -> float:
    return getattr(event, "self_device_time_total", getattr(event, "self_cuda_time_total", 0))
