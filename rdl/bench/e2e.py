"""Whole training epochs, loader included: ``python -m rdl.bench e2e``.

``python -m rdl.bench e2e [--tasks user-churn | TASK[:MODEL] ...] [--variants eager dynamic]
[--workers 0 1] [--epochs 3] [--batches 40] [--host-overhead] [--device cpu|cuda]
[--set HYDRA_OVERRIDE ...] [--profile STEPS] [--no-alone] [--host-profile] [--timeout S]
[--out DIR]``

What a user's run does, timed: Lightning's ``Trainer.fit`` over ``--epochs`` epochs of
``--batches`` training batches each, the Trainer, logger and callbacks as ``rdl.train``
configures them (progress bar, CSV logger, LR monitor, resume state) but without
validation and checkpoints, with the loader as configured (``--workers``:
``data.num_workers``; 0 samples in the training process, between steps). A callback times each epoch from its first batch's start
to its end (on CUDA after a synchronise) and counts its seeds. ``seeds/s`` is over the
epochs after the first (the first pays for compiling and for starting the workers), and
``first_epoch_s`` is reported beside it, and ``graphs_timed``: graphs compiled during the
timed epochs (then their time is partly a compile's, not a step speed). Each row runs in a
fresh process with cold compile caches (:mod:`rdl.bench.train.runner`). ``--profile``
adds one epoch whose first steps run under ``torch.profiler`` (:func:`rdl.bench.step_profile.summarize`). Then,
unless ``--no-alone``, the same loader alone and the same step alone, each timed as the
epochs are (``loader_seeds_per_s``, ``step_seeds_per_s``), and which of them bounds the row
(``bound``: ``loader``, ``step`` or ``neither``; :mod:`rdl.bench.alone`). ``--host-profile``
adds one more epoch of the step under ``cProfile``: where the host's time goes, by area and
function (:mod:`rdl.bench.host_profile`).

``--host-overhead`` adds, per variant, a row of a tiny model (16 channels, one layer, four
neighbours, 64 seeds a batch): there a step is almost all host work (Python, dispatch,
Lightning, the loader), which is what bounds a GPU step of the full model: on a CPU the row
stands in for that regime. ``vs eager`` and ``vs main-process loader`` are ratios to rows of
the same run (same task, model and size).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pytorch_lightning as pl
import torch

from rdl.bench.alone import LoaderAlone, bound, replayable, seeds_of
from rdl.bench.alone import sync as _sync
from rdl.bench.host_profile import HostProfile
from rdl.bench.report import load_average, peak_rss_gib, report, run_dir
from rdl.bench.step_profile import StepProfiler
from rdl.bench.turns import Gate
from rdl.settings import duckdb_settings
from rdl.training.process import for_process
from rdl.training.compile import stats

#: static-shape buckets (rdl/conf/experiment/buckets.yaml's settings)
BUCKETS = ["compile.enabled=true", "compile.kwargs.dynamic=false",
           "data.buckets={count:3,headroom:0.05,probe:16}"]
#: slug: (name, overrides)
VARIANTS = {
    "eager": ("eager", ["compile.enabled=false"]),
    "dynamic": ("compile dynamic=True", ["compile.enabled=true", "compile.kwargs.dynamic=true"]),
    "reduce-overhead": ("compile reduce-overhead (CUDA)",
                        ["compile.enabled=true", "+compile.kwargs.mode=reduce-overhead"]),
    "buckets": ("compile dynamic=False, buckets", BUCKETS),
    "reduce-overhead+buckets": ("compile reduce-overhead, buckets (CUDA)",
                                [*BUCKETS, "+compile.kwargs.mode=reduce-overhead"]),
    # the model's own ops (rdl/nn/fused.py, rdl/nn/stacked.py): fused without stacked
    # encoders, per edge and node type (the CPU's default), fused and stacked
    # (experiment=gpu's)
    "dynamic-fused": ("compile dynamic=True, fused ops, encoders per table",
                      ["compile.enabled=true", "model.fused=true",
                       "model.stacked_encoders=false"]),
    "dynamic-per-type": ("compile dynamic=True, ops per type",
                         ["compile.enabled=true", "model.fused=false",
                          "model.stacked_encoders=false"]),
    "dynamic-stacked": ("compile dynamic=True, fused ops, stacked encoders",
                        ["compile.enabled=true", "model.fused=true",
                         "model.stacked_encoders=true"]),
    # the stacked encoders over chunks of 1,024 rows, each table padded to whole chunks,
    # not to the largest table (a third of the padded arithmetic on user-churn)
    "dynamic-chunked": ("compile dynamic=True, fused ops, encoders in chunks",
                        ["compile.enabled=true", "model.fused=true",
                         "model.stacked_encoders=1024"]),
    # batches sampled and built on the GPU (data.sampler.device), in the training process
    "dynamic-device-sampler": ("compile dynamic=True, sampler on the GPU (CUDA)",
                               ["compile.enabled=true", "data.sampler.device=cuda"]),
    # float32 products on tensor cores (TF32; matmul_precision): the stacked encoders'
    # weight gradients were half a compiled GPU step's kernel time on 2026-12-04
    "dynamic-tf32": ("compile dynamic=True, TF32 matmuls (CUDA)",
                     ["compile.enabled=true", "matmul_precision=high"]),
    # batches received from the workers by shared-memory file name, not one file
    # descriptor a tensor (benchmarks/loader_receive.py: 14.5 -> 4.1 ms a batch on a CPU)
    "dynamic-file-system": ("compile dynamic=True, workers share by file name",
                            ["compile.enabled=true", "sharing_strategy=file_system"]),
    # each tensor of a worker's batch shared on its own, as before data.pack_batches
    "dynamic-unpacked": ("compile dynamic=True, batches not packed",
                         ["compile.enabled=true", "data.pack_batches=false"]),
    # packed until the transfer: one copy of the batch's buffer to the GPU, not one a tensor
    "dynamic-packed-to-device": ("compile dynamic=True, one copy a batch",
                                 ["compile.enabled=true", "data.pack_batches=device"]),
    # Inductor's options through torch.compile's own ``options``: the compiled step's
    # kernels launched from C++, not Python (a packed user-churn step on 2026-12-04: 262
    # Triton launches, 6.8 ms of host time under cProfile), and independent kernels
    # launched as one (combo kernels)
    "dynamic-cpp-wrapper": ("compile dynamic=True, launches from C++",
                            ["compile.enabled=true", "+compile.kwargs.options={cpp_wrapper:true}"]),
    "dynamic-combo-kernels": ("compile dynamic=True, combo kernels",
                              ["compile.enabled=true",
                               "+compile.kwargs.options={combo_kernels:true}"]),
    # each reduction in one kernel: a parameter's gradient summed over a batch's rows is two
    # kernels where Inductor splits it (the GPU proxy: 354 kernels a user-churn step, 285
    # unsplit; python -m rdl.bench kernels --codegen triton)
    "dynamic-unsplit": ("compile dynamic=True, reductions unsplit",
                        ["compile.enabled=true",
                         "+compile.kwargs.options={split_reductions:false}"]),
}
#: variants that replay CUDA graphs: skipped on a CPU
CUDA_ONLY = ("reduce-overhead", "reduce-overhead+buckets", "dynamic-device-sampler",
             "dynamic-tf32")
#: the host-overhead row's model and loader
TINY = ["model.channels=16", "model.num_layers=1", "model.encoder_layers=1",
        "data.num_neighbors=[4]", "data.batch_size=64"]
RESULT = "RDL_BENCH_E2E_RESULT "
#: what :func:`~rdl.bench.step_profile.summarize` reports of a profiled step
PROFILED = ("host_ms", "device_ms", "kernel_ms", "copy_ms", "ops", "kernels", "copies",
            "launches", "graph_replays", "captures", "regions", "graph_calls", "frames")
#: seeds/s together (the loader and the step, as a run trains), each alone, what bounds
TOGETHER_ALONE = ("seeds_per_s", "loader_seeds_per_s", "step_seeds_per_s", "bound",
                  "loader_workers")


class EpochClock(pl.Callback):
    """Lightning callback: wall time, seeds and Dynamo's graph count of every training
    epoch. Before the first timed epoch (after ``warm`` epochs) the row waits for its turn
    (:class:`~rdl.bench.turns.Gate`), which ends with the training."""

    def __init__(self, device: torch.device, warm: int = 1, gate: Gate | None = None):
        self.device, self.warm, self.gate = device, warm, gate or Gate(None)
        self.epochs, self._t, self._seeds = [], None, 0

    def on_train_start(self, trainer, module):
        self._t = time.perf_counter()   # the first epoch includes what precedes its batch

    def on_train_epoch_start(self, trainer, module):
        if trainer.current_epoch == self.warm:
            self.gate.wait()

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if self._t is None:
            self._t = time.perf_counter()
        self._seeds += seeds_of(batch, module)

    def on_train_epoch_end(self, trainer, module):
        _sync(self.device)
        self.epochs.append((time.perf_counter() - self._t, self._seeds, stats()["graphs"]))
        self._t, self._seeds = None, 0

    def on_train_end(self, trainer, module):
        self.gate.done()


def run_callbacks(cfg) -> list[pl.Callback]:
    """The callbacks ``cfg`` configures (the run's progress bar among them:
    ``experiment=gpu``'s refreshes every 25 steps, Lightning's default every step) but
    those that need validation or write checkpoints."""
    from hydra.utils import get_class, instantiate
    from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
    # by class, before any is made: a checkpoint's folder is the run's, which a row has not
    return [instantiate(c) for c in (cfg.get("callbacks") or {}).values()
            if not issubclass(get_class(c._target_), (ModelCheckpoint, EarlyStopping))]


def measure(task: str, model: str, variant: str, overrides: list[str], workers: int | None,
            epochs: int, batches: int, device: str, profile: int = 0,
            gate: str | None = None, alone: bool = True, host_profile: bool = False) -> dict:
    """Train ``epochs`` epochs of ``batches`` batches in this process (the first untimed),
    then with ``profile`` > 0 one more epoch whose first ``profile`` steps are profiled
    (:class:`StepProfiler`), then with ``alone`` the loader alone and ``epochs`` epochs of
    the step alone (:mod:`rdl.bench.alone`), then with ``host_profile`` one more epoch
    under ``cProfile`` (:mod:`rdl.bench.host_profile`); one report row. ``workers`` None: the
    config's loader workers. ``gate``: this row's :class:`~rdl.bench.turns.Gate` (timed
    epochs wait for their turn)."""
    from hydra.utils import instantiate

    from rdl.bench.train.variants import _compose
    from rdl.api import build

    with tempfile.TemporaryDirectory(prefix="rdl-bench-e2e-") as tmp:
        loader = [] if workers is None else [f"data.num_workers={workers}"]
        cfg = _compose([f"task={task}", f"model={model}", *loader,
                        *overrides, *VARIANTS[variant][1], f"trainer.default_root_dir={tmp}",
                        f"logger.save_dir={tmp}"])
        pl.seed_everything(cfg.seed, workers=True, verbose=False)
        dev = torch.device(device)
        # This process runs one row: set up as rdl.train's main() sets up a run's.
        for_process(keep_freed_memory=cfg.get("keep_freed_memory", True) and dev.type == "cpu",
                    compile_log=cfg.compile.log, threads=cfg.get("threads", "auto"),
                    verbose=True, duckdb=duckdb_settings(cfg),
                    matmul_precision=cfg.get("matmul_precision"),
                    sharing_strategy=cfg.get("sharing_strategy"))
        _, dm, module = build(cfg)
        clock = EpochClock(dev, warm=1, gate=Gate(gate))
        prof = StepProfiler(dev, epochs, profile)
        start = epochs + (profile > 0)         # the first epoch of the step alone
        apart = LoaderAlone(replayable(dm), dev, start, epochs, batches)
        last = start + epochs * alone           # the host-profiled epoch, if any
        host = HostProfile(last if host_profile else -1, dev)
        keep = run_callbacks(cfg)
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        trainer = instantiate(cfg.trainer, accelerator=dev.type, devices=1,
                              max_epochs=last + host_profile,
                              limit_train_batches=batches, limit_val_batches=0,
                              num_sanity_val_steps=0, enable_checkpointing=False,
                              logger=instantiate(cfg.logger),
                              callbacks=[clock, prof, apart, host, *keep])
        trainer.fit(module, datamodule=dm)
        dm.teardown()
    compiled = module.compile_options.enabled
    together = _timed(clock, 0, epochs, batches, compiled)
    step = _timed(clock, start, epochs, batches, compiled) if alone else {}
    peak = ((apart.peak if apart.peak is not None else torch.cuda.max_memory_allocated(dev))
            if dev.type == "cuda" else None)
    return {"first_epoch_s": clock.epochs[0][0], **together,
            "graphs": stats()["graphs"] if compiled else 0,
            "graph_breaks": stats()["graph_breaks"] if compiled else 0,
            **apart.result,
            "step_seeds_per_s": step.get("seeds_per_s"), "step_alone_ms": step.get("step_ms"),
            "step_graphs_timed": step.get("graphs_timed"),
            "bound": bound(together["seeds_per_s"], apart.result.get("loader_seeds_per_s"),
                           step.get("seeds_per_s")),
            "peak_gib": peak / 2**30 if peak is not None else peak_rss_gib(),
            "turn": clock.gate.turn, "threads": torch.get_num_threads(),
            "cudagraph_skips": _cudagraph_skips(), **prof.result,
            **host.result}


def _timed(clock: EpochClock, first: int, epochs: int, batches: int, compiled: bool) -> dict:
    """Seeds/s and times of the clock's epochs ``first + 1`` to ``first + epochs - 1``
    (epoch ``first`` untimed), and the graphs compiled meanwhile (their time is then
    partly a compile's, not a step speed)."""
    warm, rest = clock.epochs[first], clock.epochs[first + 1:first + epochs]
    secs, seeds = sum(e[0] for e in rest), sum(e[1] for e in rest)
    return {"epoch_s": secs / max(len(rest), 1),
            "step_ms": 1000 * secs / max(len(rest) * batches, 1),
            "seeds_per_s": seeds / secs if secs else float("nan"),
            "graphs_timed": rest[-1][2] - warm[2] if compiled and rest else 0}


def _cudagraph_skips() -> int:
    """Compiled graphs that reduce-overhead ran without CUDA graphs (the row's log says
    why: Inductor's "skipping cudagraphs due to ...")."""
    from torch._dynamo.utils import counters
    return int(counters["inductor"]["cudagraph_skips"])


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:
        print(RESULT + json.dumps(measure(**json.loads(argv[1]))), flush=True)
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench e2e", description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=["user-churn"],
                   help="TASK or TASK:MODEL (default model: the task's)")
    p.add_argument("--variants", nargs="+", default=["eager", "dynamic", "reduce-overhead"],
                   choices=list(VARIANTS))
    p.add_argument("--workers", type=int, nargs="+", default=[0, 1],
                   help="data.num_workers values (0: the loader in the training process)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batches", type=int, default=40, help="training batches per epoch")
    p.add_argument("--host-overhead", action="store_true", help="add the tiny-model rows")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--set", nargs="*", default=[], dest="sets", metavar="OVERRIDE")
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="profile STEPS steps of one more epoch (host, device, launches)")
    p.add_argument("--no-alone", dest="alone", action="store_false",
                   help="leave out the loader alone and the step alone (rdl.bench.alone)")
    p.add_argument("--host-profile", action="store_true",
                   help="one more epoch under cProfile: the host's time by area and function "
                        "(rdl.bench.host_profile)")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.epochs < 2:
        p.error("--epochs must be at least 2 (the first epoch is not timed)")

    from rdl.bench.train.runner import _run_child
    from rdl.bench.train.variants import _task_models

    out = Path(args.out) if args.out else run_dir("e2e")
    sizes = [("full", [])] + ([("host overhead", TINY)] if args.host_overhead else [])
    rows = []
    for task, model in _task_models(args.tasks, args.sets):
        for size, extra in sizes:
            base = {}
            for variant in args.variants:
                if variant in CUDA_ONLY and args.device != "cuda":
                    continue  # CUDA graphs: nothing to replay on a CPU
                for workers in args.workers:
                    spec = dict(task=task, model=model, variant=variant, workers=workers,
                                overrides=[*args.sets, *extra], epochs=args.epochs,
                                batches=args.batches, device=args.device,
                                profile=args.profile, alone=args.alone,
                                host_profile=args.host_profile)
                    label = f"{task}:{model} {size} {variant} workers={workers}"
                    print(f"{label} ...", flush=True)
                    t = time.perf_counter()
                    res = _run_child(spec, args.timeout, out / "logs" / f"{len(rows):02d}.log",
                                     module="rdl.bench.e2e", result=RESULT)
                    row = {"task": task, "model": model, "size": size, "variant": variant,
                           "workers": workers, **{k: res.get(k) for k in
                                                  (*TOGETHER_ALONE, "epoch_s",
                                                   "first_epoch_s", "graphs", "graphs_timed")},
                           **{k: res[k] for k in PROFILED if k in res},
                           "note": res.get("error", "")}
                    if res.get("seeds_per_s"):
                        base[(variant, workers)] = res["seeds_per_s"]
                    rows.append(row)
                    print(f"    {res.get('seeds_per_s') or 0:.0f} seeds/s "
                          f"({time.perf_counter() - t:.0f} s)", flush=True)
            for row in rows:
                if (row["task"], row["model"], row["size"]) != (task, model, size):
                    continue
                own, eager = row["seeds_per_s"], base.get(("eager", row["workers"]))
                main_loader = base.get((row["variant"], 0))
                row["vs_eager"] = own / eager if own and eager else None
                row["vs_main_process_loader"] = own / main_loader if own and main_loader else None
    report("e2e", rows, out, header=(
        f"Whole training epochs ({args.epochs} of {args.batches} batches; seeds/s over all "
        f"but the first), device {args.device}, torch {torch.__version__}, load average "
        f"{load_average()}\n\n`python -m rdl.bench e2e {' '.join(argv)}`"))


if __name__ == "__main__":
    main(sys.argv[1:])
