"""Time the depth-2 feature synthesis: ``python -m rdl.bench dfs [--scale 0.02 1.0]
[--tasks user-churn item-sales] [--splits train val test] [--set KEY=VALUE ...]``.

For each scale and task, in a fresh subprocess (peak memory of one row alone): the task's
split tables on the synthetic H&M database at that scale (``data.db.scale``; generated and
cached as ``rdl.train`` does), then per split the depth-1 feature table
(:func:`~rdl.features.table.entity_features`) and the depth-2 features
(:func:`~rdl.features.deep.deep_features`) with the configured ``data.deep_features``:
rows, features, seconds, and peak resident memory: of the data and labels, of each step
alone (the peak reset before it, ``/proc/self/clear_refs``; the step's peak includes the
data it starts from), and of the whole process. ``--set`` adds config
overrides (``data.deep_features.top_k=10``).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from rdl.bench.report import load_average, report, reset_peak_rss, step_peak_rss_gib


def measure(scale: float, task_name: str, splits: list[str], overrides: list[str]) -> list[dict]:
    """The rows of one (scale, task), in this process."""
    from rdl.api import config, load_database, load_task
    from rdl.features.deep import DeepSettings, deep_features
    from rdl.features.table import entity_features

    cfg = config(f"task={task_name}", f"data.db.scale={scale}", *overrides)
    t0 = time.perf_counter()
    db, task = load_database(cfg), load_task(cfg)
    view = task.inputs(db.upto(task.test_time))
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    history = task.history(tables)
    setup, setup_peak = time.perf_counter() - t0, step_peak_rss_gib()
    # resetting VmHWM resets getrusage's maximum too: the process's peak is kept here
    process_peak = setup_peak
    settings = DeepSettings.of(cfg.data.deep_features) or DeepSettings()
    rows = []
    for split in splits:
        df = tables[split]
        reset_peak_rss()  # each step's own peak: what it holds beside the data and labels
        t = time.perf_counter()
        one = entity_features(task, view, df, history)
        t1, one_peak = time.perf_counter(), step_peak_rss_gib()
        reset_peak_rss()
        two = deep_features(task, view, df, history, settings=settings)
        t2, two_peak = time.perf_counter(), step_peak_rss_gib()
        n_one, n_two = one.shape[1], two.shape[1]
        del one, two  # the next split's steps start without them
        rows.append({"scale": scale, "task": task_name, "split": split, "rows": len(df),
                     "depth 1 features": n_one, "depth 1 s": t1 - t,
                     "depth 2 features": n_two, "depth 2 s": t2 - t1,
                     "depth 2 rows/s": len(df) / max(t2 - t1, 1e-9),
                     "data and labels s": setup, "data and labels peak GiB": setup_peak,
                     "depth 1 peak GiB": one_peak, "depth 2 peak GiB": two_peak,
                     "peak GiB": (process_peak := max(process_peak, one_peak, two_peak))})
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.bench dfs", description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, nargs="+", default=[0.02, 1.0],
                   help="synthetic H&M scales (1.0 = RelBench's rel-hm size)")
    p.add_argument("--tasks", nargs="+", default=["user-churn", "item-sales"])
    p.add_argument("--splits", nargs="+", default=["train", "val", "test"])
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config overrides, e.g. data.deep_features.top_k=10")
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-dfs)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(measure(**spec)))
        return
    rows = []
    for scale in args.scale:
        for task in args.tasks:
            spec = json.dumps(dict(scale=scale, task_name=task, splits=args.splits,
                                   overrides=args.set))
            proc = subprocess.run([sys.executable, "-m", "rdl.bench.dfs", "--worker", spec],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"{task} at scale {scale} failed:\n{proc.stderr[-3000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            for r in got:
                print(f"scale {scale} {task} {r['split']}: {r['rows']} rows, "
                      f"{r['depth 2 features']} features in {r['depth 2 s']:.1f} s, "
                      f"peak {r['depth 2 peak GiB']:.2f} GiB "
                      f"(process {r['peak GiB']:.2f})", flush=True)
            rows += got
    report("dfs", rows, args.out,
           header=f"Depth-2 feature synthesis on synthetic H&M (each scale and task in a fresh "
                  f"process), load average {load_average()}")


if __name__ == "__main__":
    main(sys.argv[1:])
