"""Time the depth-2 feature synthesis: ``python -m rdl.bench dfs [--scale 0.02 1.0]
[--tasks user-churn item-sales] [--splits train val test] [--set KEY=VALUE ...]``.

For each scale and task, in a fresh subprocess (peak memory of one row alone): the task's
split tables on the synthetic H&M database at that scale (``data.db.scale``; generated and
cached as ``rdl.train`` does), then per split the depth-1 feature table
(:func:`~rdl.features.table.entity_features`) and the depth-2 features
(:func:`~rdl.features.deep.deep_features`) with the configured ``data.deep_features``:
rows, features, seconds, and the process's peak resident memory. ``--set`` adds config
overrides (``data.deep_features.top_k=10``).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from rdl.bench.report import load_average, peak_rss_gib, report


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
    setup = time.perf_counter() - t0
    settings = DeepSettings.of(cfg.data.deep_features) or DeepSettings()
    rows = []
    for split in splits:
        df = tables[split]
        t = time.perf_counter()
        one = entity_features(task, view, df, history)
        t1 = time.perf_counter()
        two = deep_features(task, view, df, history, settings=settings)
        t2 = time.perf_counter()
        rows.append({"scale": scale, "task": task_name, "split": split, "rows": len(df),
                     "depth 1 features": one.shape[1], "depth 1 s": t1 - t,
                     "depth 2 features": two.shape[1], "depth 2 s": t2 - t1,
                     "depth 2 rows/s": len(df) / max(t2 - t1, 1e-9),
                     "data and labels s": setup, "peak GiB": peak_rss_gib()})
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
                      f"peak {r['peak GiB']:.2f} GiB", flush=True)
            rows += got
    report("dfs", rows, args.out,
           header=f"Depth-2 feature synthesis on synthetic H&M (each scale and task in a fresh "
                  f"process), load average {load_average()}")


if __name__ == "__main__":
    main(sys.argv[1:])
