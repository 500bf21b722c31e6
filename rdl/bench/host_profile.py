"""Where the host's time goes in a training step: ``cProfile`` over one more epoch of the
step alone (``python -m rdl.bench e2e --host-profile``, the GPU check's rows).

On a GPU the step is bound by its host (docs/performance.md: 5 ms of kernels in a 31 ms
step): ``torch.profiler`` says how long the host took, not in which Python. This epoch
runs under Python's own profiler, after the row's timed epochs (its slowdown touches no
figure of theirs), on the step-alone batches where the row keeps them (no loader), and
reports per step:

- ``host_areas``: the profiled time by where it was spent, each function's own time
  (``tottime``) summed by package: Lightning, Dynamo's and Inductor's runtime
  (guards, the compiled graph's wrapper and its kernel launches), autograd, the
  optimiser, PyG, PyTorch Frame, rdl, torch's other Python, and C builtins (kernels
  launched, tensors made, ``{method ...}``);
- ``host_top``: the :data:`TOP` functions by own time: ``where`` (file:function), calls
  and ms a step, own and with what they call.

cProfile's own cost inflates every call a little; compare areas within a row.
"""
from __future__ import annotations

import cProfile
import pstats

import pytorch_lightning as pl
import torch

TOP = 15
#: (area, path fragments of its files), first match wins
AREAS = [("lightning", ("pytorch_lightning", "lightning_fabric", "lightning/")),
         ("dynamo/inductor runtime", ("torch/_dynamo", "torch/_inductor", "torch/_functorch",
                                      "torch/fx", "torchinductor_", "/tmp/")),
         ("autograd", ("torch/autograd",)),
         ("optimiser", ("torch/optim",)),
         ("pyg", ("torch_geometric",)),
         ("pytorch frame", ("torch_frame",)),
         ("rdl", ("/rdl/",)),
         ("torch (other python)", ("torch/",))]


def area(filename: str) -> str:
    """The area of a profiled function's file (:data:`AREAS`); ``builtins`` for C
    functions (cProfile's ``~``), ``other`` for the rest."""
    if filename == "~" or filename.startswith("<built-in"):
        return "builtins"
    name = filename.replace("\\", "/")
    for label, parts in AREAS:
        if any(p in name for p in parts):
            return label
    return "other"


def summarize_host(stats: pstats.Stats, steps: int, top: int = TOP) -> dict:
    """``host_areas`` and ``host_top`` per step (see the module's docstring)."""
    steps = max(steps, 1)
    areas, rows = {}, []
    for (file, line, fn), (_, calls, own, total, _) in stats.stats.items():
        areas[area(file)] = areas.get(area(file), 0.0) + own
        rows.append((own, total, calls, file, line, fn))
    rows.sort(reverse=True)
    short = lambda f: "/".join(f.replace("\\", "/").split("/")[-2:])  # noqa: E731
    return {
        "host_profiled_ms": 1000 * sum(areas.values()) / steps,
        "host_areas": {k: 1000 * v / steps
                       for k, v in sorted(areas.items(), key=lambda kv: -kv[1])},
        "host_top": [{"where": f"{short(f)}:{ln}:{fn}" if f != "~" else fn,
                      "calls": calls / steps, "own_ms": 1000 * own / steps,
                      "total_ms": 1000 * total / steps}
                     for own, total, calls, f, ln, fn in rows[:top]]}


class HostProfile(pl.Callback):
    """``cProfile`` over training epoch ``epoch``; ``result`` holds its summary after."""

    def __init__(self, epoch: int, device: torch.device):
        self.epoch, self.device = epoch, device
        self.prof, self.steps, self.result = None, 0, {}

    def on_train_epoch_start(self, trainer, module):
        if trainer.current_epoch == self.epoch:
            self.prof, self.steps = cProfile.Profile(), 0
            self.prof.enable()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if self.prof is not None:
            self.steps += 1

    def on_train_epoch_end(self, trainer, module):
        if self.prof is None:
            return
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)    # the host's wait for the device, in
        self.prof.disable()
        self.result = summarize_host(pstats.Stats(self.prof), self.steps)
        self.prof = None
