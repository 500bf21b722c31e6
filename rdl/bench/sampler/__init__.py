"""Time rdl's temporal sampler on the synthetic H&M graph: ``python -m rdl.bench sampler``.

``python -m rdl.bench sampler [--scale 1.0] [--batch-size 512] [--fanout 128 64]
[--batches 50] [--threads 1] [--timestamp 2020-08-31] [--device cpu] [--out DIR]``

1. Loads the synthetic H&M database (``rdl.data.hm.load_hm``, cached) and builds the graph
   as training does (``make_graph`` on the database cut at the test time, with the stypes
   and text embedder of ``conf/data/hm.yaml``; cached).
2. Seeds: (a) ``user-churn`` customers and (b) ``item-sales`` articles of the train table
   at one train timestamp (``Task.make_table`` on the train cut for that one timestamp:
   the rows of ``split_table("train", db)`` at that time), with the timestamp as seed time.
3. For each setting (churn, article) and strategy (uniform, last), in a fresh subprocess
   (so peak memory does not mix): load the sampling graph (edge indices, node times),
   build the sampler's index (timed), sample ``--batches`` batches of ``--batch-size``
   seeds after 3 warm-up batches, with ``torch.set_num_threads(--threads)``. Rows:
   seeds/s, sampled nodes/s, ms per batch, nodes and edges per batch, peak RSS of that
   process (sampling graph + index + sampling), index build seconds.
4. The train-step comparison at the default config (``conf/data/hm.yaml``,
   ``conf/model/sage.yaml``, user-churn, in a fresh subprocess): the sampler's time per
   batch, the loader's (sampling + feature slicing + labels, what ``NodeLoader`` yields
   with ``num_workers=0``) and the compiled model's train step (forward, backward, Adam
   step; ``torch.compile(model, dynamic=True)``), medians over 20 batches after warm-up,
   all at torch's default thread count, as in training (``--train-threads`` to change).
   On a shared machine, run it when the load is low: with every core in use by OpenMP,
   a busy core stalls each parallel region (the step slows down several times).

Both tables are printed and written (Markdown and CSV) into the run folder
(default ``outputs/bench/<time>-sampler``).

The parts: ``inputs.py`` (steps 1-2: configs, graph, seeds, batches), ``sampling.py``
(step 3, one sampling process), ``train_step.py`` (step 4); this file parses the flags,
runs each measurement in its subprocess and writes the tables.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rdl.bench.report import load_average, report, run_dir
from rdl.bench.sampler.inputs import SETTINGS
from rdl.bench.sampler.sampling import STRATEGIES, measure_sampling
from rdl.bench.sampler.train_step import measure_train_step


def _worker(argv: list[str]) -> dict | list:
    spec = json.loads(argv[0])
    if spec.pop("kind") == "train":
        return measure_train_step(**spec)
    return measure_sampling(**spec)


def _run_worker(spec: dict) -> dict | list:
    proc = subprocess.run([sys.executable, "-m", "rdl.bench.sampler", "--worker", json.dumps(spec)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{spec} failed:\n{proc.stderr[-5000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:  # one configuration, in this (fresh) process
        print(json.dumps(_worker(argv[1:])))
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench sampler",
                                description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=1.0, help="synthetic H&M scale (1.0: full size)")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--fanout", type=int, nargs="+", default=[128, 64])
    p.add_argument("--batches", type=int, default=50, help="timed batches per configuration")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the sampling runs")
    p.add_argument("--timestamp", default="2020-08-31", help="the train seed time")
    p.add_argument("--device", default="cpu", help="where the sampler's index lives")
    p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    p.add_argument("--no-train-step", action="store_true", help="skip the train-step comparison")
    p.add_argument("--no-sampling", action="store_true", help="only the train-step comparison")
    p.add_argument("--train-threads", type=int, default=None,
                   help="torch threads of the train-step comparison (default: torch's default)")
    p.add_argument("--out", default=None,
                   help="report folder (default outputs/bench/<time>-sampler)")
    args = p.parse_args(argv)
    out = Path(args.out) if args.out else run_dir("sampler")
    out.mkdir(parents=True, exist_ok=True)

    if not args.no_sampling:
        _sampling_table(args, out)
    if not args.no_train_step:
        _train_step_table(args, out)


def _sampling_table(args, out: Path) -> None:
    load_start = load_average()
    with tempfile.TemporaryDirectory(prefix="rdl-bench-sampler-") as tmp:
        print(f"scale {args.scale}: loading the database and the graph ...", flush=True)
        info = _run_worker_prepare(args.scale, args.timestamp, tmp)
        print(f"  database {info['load_db_s']:.1f} s, graph {info['graph_s']:.1f} s, seeds "
              f"{info['seeds']} ({info['seeds_s']:.1f} s), peak {info['peak_rss_gib']:.2f} GiB",
              flush=True)
        rows = []
        for setting in args.settings:
            for strategy in args.strategies:
                spec = {"kind": "sample", "folder": tmp, "setting": setting, "strategy": strategy,
                        "batch_size": args.batch_size, "fanout": args.fanout,
                        "batches": args.batches, "threads": args.threads, "device": args.device}
                row = _run_worker(spec)
                rows.append(row)
                print(f"  {setting:8s} {strategy:8s} {row['seeds/s']:10.0f} seeds/s "
                      f"{row['ms/batch']:7.2f} ms/batch  index {row['index_build_s']:.1f} s  "
                      f"peak {row['peak_rss_gib']:.2f} GiB", flush=True)
    load_end = load_average()
    n = info["num_nodes"]
    header = (f"rdl TemporalSampler on the synthetic H&M graph, scale {args.scale} "
              f"({n.get('customer', 0):,} customers, {n.get('article', 0):,} articles, "
              f"{n.get('transactions', 0):,} transactions; seeds at {args.timestamp}: "
              f"{info['seeds']}), batch {args.batch_size}, fan-out {args.fanout}, "
              f"{args.threads} thread(s), device {args.device}; each row a fresh process "
              f"(peak RSS: sampling graph + index + sampling). Graph build/load "
              f"{info['graph_s']:.1f} s. Load average (1/5/15 min) before: {load_start}, "
              f"after: {load_end}; {os.cpu_count()} CPUs.")
    report("sampler", rows, out, header=header)


def _train_step_table(args, out: Path) -> None:
    print("train-step comparison at the default config ...", flush=True)
    load_start = load_average()
    res = _run_worker({"kind": "train", "threads": args.train_threads})
    rows = res["rows"]
    header = ("Sampling vs the compiled model's train step of `python -m rdl.train "
              "task=user-churn` (its data, model and compile settings; num_workers=0), "
              f"medians over {rows[0]['steps']} batches after warm-up "
              f"(datamodule setup {res['datamodule_setup_s']:.1f} s, compilation and "
              f"warm-up {res['compile_warmup_s']:.1f} s). Load average (1/5/15 min) before: "
              f"{load_start}, after: {load_average()}.")
    report("sampler-train-step", rows, out, header=header)


def _run_worker_prepare(scale: float, timestamp: str, folder: str) -> dict:
    """``prepare`` in a subprocess: its peak memory stays out of the sampling rows."""
    code = ("import json, sys; from pathlib import Path; "
            "from rdl.bench.sampler.inputs import prepare; "
            "print(json.dumps(prepare(float(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))))")
    proc = subprocess.run([sys.executable, "-c", code, str(scale), timestamp, folder],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"preparing the graph failed:\n{proc.stderr[-5000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
