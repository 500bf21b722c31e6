"""Evaluation compiled or eager: what ``compile.eval=auto`` weighs, on one device:
``python -m rdl.bench evaluation [--tasks user-churn ...] [--device cuda|cpu]
[--batches 20] [--repeat 3] [--set OVERRIDE ...] [--out DIR]``.

Evaluation's graph is a compile of its own; ``compile.eval=auto`` compiles it only where a
run evaluates :data:`~rdl.training.compile.EVAL_BATCHES` batches or more. Per task this
times the first compiled evaluation call (the compile, cold or from Inductor's cache as
the machine has it), then each of up to ``--batches`` val batches ``--repeat`` times
through the compiled and the eager model, alternated (neither always second, on caches
the other left warm), the device synchronised around each: the medians, and the batches
after which the compile has paid (``even_after``: first call over the saving a batch).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from itertools import islice
from pathlib import Path

import torch

from rdl.bench.report import report, run_dir


def timed(fn, args, kwargs, device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    with torch.no_grad():
        fn(*args, **kwargs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def measure(cfg, device: torch.device, batches: int, repeat: int) -> dict:
    """One row: the module ``cfg`` makes, on ``device``, over its first val batches."""
    from rdl.api import build
    from rdl.training.compile import EVAL_BATCHES

    _, dm, module = build(cfg)
    module.to(device).eval()
    inputs = [module.inputs(b.to(device)) for b in islice(dm.val_dataloader(), batches)]
    first = timed(module.forward_fn, *inputs[0], device)
    compiled, eager = [], []
    for r in range(repeat):
        for args, kwargs in inputs:
            pair = [(compiled, module.forward_fn), (eager, module.model)]
            for times, fn in pair[::-1] if r % 2 else pair:
                times.append(timed(fn, args, kwargs, device))
    c, e = statistics.median(compiled), statistics.median(eager)
    return {"task": cfg.task.name, "device": device.type, "batches": len(inputs),
            "seeds": cfg.data.batch_size, "first_call_s": first, "compiled_ms": c * 1e3,
            "eager_ms": e * 1e3, "eager_vs_compiled": e / c,
            "even_after": first / (e - c) if e > c else float("inf"),
            "auto_threshold": EVAL_BATCHES}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m rdl.bench evaluation",
                                description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=["user-churn"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batches", type=int, default=20, help="val batches at most")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--set", nargs="*", default=[], metavar="OVERRIDE")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.batches < 1 or args.repeat < 1:
        p.error("--batches and --repeat must be positive")
    from hydra import compose, initialize_config_dir

    from rdl.paths import CONF_DIR
    from rdl.settings import process_settings
    from rdl.training.process import configured

    device, rows = torch.device(args.device), []
    for task in args.tasks:
        with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", [f"task={task}", *args.set])
        with configured(**process_settings(cfg)):
            rows.append(measure(cfg, device, args.batches, args.repeat))
        print(rows[-1], flush=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    report("evaluation", rows, Path(args.out) if args.out else run_dir("evaluation"),
           header=f"Evaluation compiled against eager on {name}, torch {torch.__version__}"
                  f"\n\n`python -m rdl.bench evaluation {' '.join(argv)}`")


if __name__ == "__main__":
    main()
