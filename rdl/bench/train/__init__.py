"""Time rdl's training step, eager and compiled: ``python -m rdl.bench train``.

``python -m rdl.bench train [--tasks user-churn | all | TASK[:MODEL] ...]
[--variants eager dynamic ...] [--steps 20] [--warmup 3] [--threads N] [--device cuda|cpu]
[--set HYDRA_OVERRIDE ...] [--timeout S] [--profile] [--out DIR]``

Each (task, model) and each variant runs in a fresh subprocess (so compiled code held in
memory, peak memory and Dynamo's counters do not mix between rows). The parts:
``variants.py`` (the tasks and the variants: their Hydra overrides), ``measure.py`` (what
a child times and counts), ``runner.py`` (the child process, with cold compile caches),
``plot.py`` (the bar chart); this file parses the flags and builds the table.

``speedup_vs_eager`` is the eager row's ``ms/step`` over the row's (same task and model, same
run; blank without an eager row). The ``interleaved`` row's is the eager median of its own
process (``eager_ms``) over its compiled median: each timed compiled step is paired with an
eager step (the same module, its uncompiled model) on the same batch, the eager one second
and first by turns (ABBA, so that neither mode always finds the caches the other warmed),
the first eager step being its warm-up, so a machine whose speed drifts from minute to
minute (a shared one) slows both alike. A variant that fails (an exception, a crash, the
``--timeout``) leaves a row with the last line of its error in ``note``; reduce-overhead
(CUDA graphs) is listed as skipped on the CPU.

The table is printed and written (``train.md``, ``train.csv``) into the run folder (default
``outputs/bench/<time>-train``), with a bar chart ``train.png`` when matplotlib is installed
(``pip install -e '.[bench]'``), and each child's output in ``logs/`` there
(``--set compile.log=true`` puts the reason of every recompile and graph break in them).
On a shared machine, run it when the load is low: with every core in use by OpenMP, a busy
core stalls each parallel region (``--threads 1`` is less sensitive to it).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from rdl.bench.report import load_average, report, run_dir
from rdl.bench.train.measure import PROFILE_COLUMNS, measure
from rdl.bench.train.plot import plot
from rdl.bench.train.runner import RESULT, _run_child
from rdl.bench.train.variants import ALL_TASKS, VARIANTS, _task_models, _variant_slugs


def _fmt(x, nd: int = 2):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return round(x, nd) + 0  # + 0: no "-0"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:  # one variant, in this (fresh) process
        res = measure(**json.loads(argv[1]))
        print(RESULT + json.dumps(res), flush=True)
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench train",
                                description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="variants: " + ", ".join(
                                    f"{k} ({v[0]})" for k, v in VARIANTS.items()))
    p.add_argument("--tasks", nargs="+", default=["user-churn"],
                   help="TASK[:MODEL] items, or 'all' (" + " ".join(ALL_TASKS) + ")")
    p.add_argument("--variants", nargs="+", default=["all"], help="slugs or names (default all)")
    p.add_argument("--steps", type=int, default=20, help="timed steps (each of the two timings)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up steps (compilation)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads of each run (default: torch's default)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--set", nargs="+", default=[], metavar="OVERRIDE", dest="sets",
                   help="Hydra overrides for every variant, e.g. data=hm-tiny model.channels=16")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds a variant may take (default: no limit)")
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-train)")
    p.add_argument("--profile", action="store_true",
                   help="also profile the timed steps: host ms in matmul / RNG / other ops, "
                        "and on CUDA kernel ms and kernels per step")
    args = p.parse_args(argv)
    if args.steps < 1 or args.warmup < 1:
        p.error("--steps and --warmup must be at least 1")
    variants = _variant_slugs(args.variants)
    pairs = _task_models(args.tasks, args.sets)
    out = Path(args.out) if args.out else run_dir("train")
    out.mkdir(parents=True, exist_ok=True)
    cuda = torch.device(args.device).type == "cuda"

    load_start, date = load_average(), f"{dt.datetime.now():%Y-%m-%d %H:%M}"
    rows, info = [], {}
    for task, model in pairs:
        eager_ms = None
        for slug in variants:
            name, overrides, _, cuda_only = VARIANTS[slug]
            row = {"task": task, "model": model, "variant": name}
            if cuda_only and not cuda:
                res = {"note": "skipped: CUDA graphs need a CUDA device"}
            else:
                print(f"{task}:{model} {name} ...", flush=True)
                spec = {"task": task, "model": model, "variant": slug,
                        "overrides": [*args.sets, *overrides], "steps": args.steps,
                        "warmup": args.warmup, "threads": args.threads, "device": args.device,
                        "profile": args.profile}
                t = time.perf_counter()
                res = _run_child(spec, args.timeout, out / "logs" / f"{task}_{model}_{slug}.log")
                if "error" in res:
                    res = {"note": "failed: " + res["error"]}
                else:
                    info = info or res
                    loss = res["last_loss"]
                    res["note"] = "" if math.isfinite(loss) else "loss not finite"
                    print(f"    {res['ms/step']:.1f} ms/step ({res['ms/step+sampler']:.1f} with "
                          f"the sampler), compile {res['compile_s']:.1f} s, {res['graphs']} "
                          f"graphs, {res['graph_breaks']} breaks ({time.perf_counter() - t:.0f} s)",
                          flush=True)
            if slug == "eager" and "ms/step" in res:
                eager_ms = res["ms/step"]
            ms = res.get("ms/step")
            base = res.get("eager_ms", eager_ms)   # interleaved: its own eager steps
            row.update({
                "ms/step": _fmt(ms), "ms/step+sampler": _fmt(res.get("ms/step+sampler")),
                "speedup_vs_eager": _fmt(base / ms, 3) if base and ms else "",
                "eager_ms": _fmt(res.get("eager_ms")),
                "first_step_s": _fmt(res.get("first_step_s")),
                "compile_s": _fmt(res.get("compile_s")),
                "graphs": res.get("graphs", ""), "graph_breaks": res.get("graph_breaks", ""),
                "peak_mem_gib": _fmt(res.get("peak_mem_gib"), 3),
                "last_loss": _fmt(res.get("last_loss"), 5),
            })
            if args.profile:
                row.update({k: _fmt(res.get(k)) for k in PROFILE_COLUMNS
                            if cuda or "kernel" not in k})
            row["note"] = res.get("note", "")
            rows.append(row)

    threads = info.get("threads", args.threads or torch.get_num_threads())
    device = args.device + (f" ({info['device_name']})" if cuda and info else "")
    mem = "torch.cuda.max_memory_allocated" if cuda else "peak RSS of the process"
    header = (
        f"rdl train step, {date}: device {device}, torch {info.get('torch', torch.__version__)}, "
        f"{threads} thread(s), {os.cpu_count()} CPUs; overrides {args.sets or 'none'}"
        + (f", batch size {info['batch_size']}" if info else "")
        + f". Each row a fresh process with cold compile caches: {args.warmup} warm-up "
        f"step(s) (compile_s = first step - median), then medians over {args.steps} steps "
        "on pre-sampled batches (ms/step, sampler excluded) and over "
        f"{args.steps} steps drawing from the loader (ms/step+sampler). A step: batch to "
        "the device, forward + loss, backward, optimizer step. speedup_vs_eager = eager "
        "ms/step / row ms/step; graphs and graph_breaks are Dynamo's counts after all "
        f"steps; peak_mem_gib: {mem}. Load average (1/5/15 min) before: {load_start}, "
        f"after: {load_average()}."
        + (" prof_*: torch.profiler over the timed pre-sampled steps, per step: the host's "
           "self time in matrix products, random numbers (dropout) and all other ops"
           + ("; kernel time on the device and kernels launched" if cuda else "")
           + " (profiling slows the steps it sees; ms/step is timed without it)."
           if args.profile else ""))
    report("train", rows, out, header=header)
    plot(rows, out / "train.png", title=f"rdl train step, {device}, {threads} thread(s)")
