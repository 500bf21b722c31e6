"""Whole training epochs, loader included: ``python -m rdl.bench e2e``.

``python -m rdl.bench e2e [--tasks user-churn | TASK[:MODEL] ...] [--variants eager dynamic]
[--workers 0 1] [--epochs 3] [--batches 40] [--host-overhead] [--device cpu|cuda]
[--set HYDRA_OVERRIDE ...] [--timeout S] [--out DIR]``

What a user's run does, timed: Lightning's ``Trainer.fit`` over ``--epochs`` epochs of
``--batches`` training batches each, the Trainer, logger and callbacks as ``rdl.train``
configures them (progress bar, CSV logger, LR monitor, resume state) but without
validation and checkpoints, with the loader as configured (``--workers``:
``data.num_workers``; 0 samples in the training process, between steps). A callback times each epoch from its first batch's start
to its end (on CUDA after a synchronise) and counts its seeds. ``seeds/s`` is over the
epochs after the first (the first pays for compiling and for starting the workers), and
``first_epoch_s`` is reported beside it. Each row runs in a fresh process with cold compile
caches (:mod:`rdl.bench.train.runner`).

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

from rdl.bench.report import load_average, report, run_dir

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
}
#: variants that replay CUDA graphs: skipped on a CPU
CUDA_ONLY = ("reduce-overhead", "reduce-overhead+buckets")
#: the host-overhead row's model and loader
TINY = ["model.channels=16", "model.num_layers=1", "model.encoder_layers=1",
        "data.num_neighbors=[4]", "data.batch_size=64"]
RESULT = "RDL_BENCH_E2E_RESULT "


class EpochClock(pl.Callback):
    """Lightning callback: wall time and seeds of every training epoch."""

    def __init__(self, device: torch.device):
        self.device, self.epochs, self._t, self._seeds = device, [], None, 0

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if self._t is None:
            self._t = time.perf_counter()
        store = batch[module.entity] if hasattr(module, "entity") else None
        n = getattr(store, "seed_time", None) if store is not None else None
        # A batch padded to a static shape counts its real seeds (``batch_size``).
        self._seeds += (int(store.batch_size) if "batch_size" in store else int(n.numel())
                        ) if n is not None else 0

    def on_train_epoch_end(self, trainer, module):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.epochs.append((time.perf_counter() - self._t, self._seeds))
        self._t, self._seeds = None, 0


def measure(task: str, model: str, variant: str, overrides: list[str], workers: int,
            epochs: int, batches: int, device: str) -> dict:
    """Train ``epochs`` epochs of ``batches`` batches in this process; one report row."""
    from hydra.utils import instantiate

    from rdl.bench.train.variants import _compose
    from rdl.train import build
    from rdl.training.compile import stats

    with tempfile.TemporaryDirectory(prefix="rdl-bench-e2e-") as tmp:
        cfg = _compose([f"task={task}", f"model={model}", f"data.num_workers={workers}",
                        *overrides, *VARIANTS[variant][1], f"trainer.default_root_dir={tmp}",
                        f"logger.save_dir={tmp}"])
        pl.seed_everything(cfg.seed, workers=True, verbose=False)
        _, dm, module = build(cfg)
        dev = torch.device(device)
        clock = EpochClock(dev)
        # The configured callbacks but those that need validation or write checkpoints.
        keep = [instantiate(c) for name, c in (cfg.get("callbacks") or {}).items()
                if name in ("resume", "lr_monitor")]
        trainer = instantiate(cfg.trainer, accelerator=dev.type, devices=1, max_epochs=epochs,
                              limit_train_batches=batches, limit_val_batches=0,
                              num_sanity_val_steps=0, enable_checkpointing=False,
                              logger=instantiate(cfg.logger), callbacks=[clock, *keep])
        trainer.fit(module, datamodule=dm)
        dm.teardown()
    (first_s, _), rest = clock.epochs[0], clock.epochs[1:]
    secs, seeds = sum(s for s, _ in rest), sum(n for _, n in rest)
    return {"first_epoch_s": first_s, "epoch_s": secs / max(len(rest), 1),
            "seeds_per_s": seeds / secs if secs else float("nan"),
            "graphs": stats()["graphs"] if module.compile_options.enabled else 0}


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
                                batches=args.batches, device=args.device)
                    label = f"{task}:{model} {size} {variant} workers={workers}"
                    print(f"{label} ...", flush=True)
                    t = time.perf_counter()
                    res = _run_child(spec, args.timeout, out / "logs" / f"{len(rows):02d}.log",
                                     module="rdl.bench.e2e", result=RESULT)
                    row = {"task": task, "model": model, "size": size, "variant": variant,
                           "workers": workers, **{k: res.get(k) for k in
                                                  ("seeds_per_s", "epoch_s", "first_epoch_s",
                                                   "graphs")},
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
