"""Time the synthetic H&M data: ``python -m rdl.bench data --scale 0.02 1.0 [--seed 0] [--out DIR]``.

For each scale, in a fresh subprocess (so peak memory does not mix between scales): time
:func:`rdl.data.synthetic_hm.generate`, :func:`rdl.data.hm.hm_database` and
:meth:`Database.save` (parquet, into a temporary folder), then report rows, seconds,
rows/s and the process's peak resident memory.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

from rdl.bench.report import peak_rss_gib, report


def measure(scale: float, seed: int) -> dict:
    """Run the three steps once in this process and return one report row."""
    from rdl.data import synthetic_hm
    from rdl.data.hm import hm_database

    t0 = time.perf_counter()
    frames = synthetic_hm.generate(seed=seed, scale=scale)
    t1 = time.perf_counter()
    db = hm_database(**frames)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rdl-bench-data-") as tmp:
        db.save(f"{tmp}/db")
    t3 = time.perf_counter()
    n_c, n_a, n_t = (len(frames[k]) for k in ("customers", "articles", "transactions"))
    rows = n_c + n_a + n_t
    return {
        "scale": scale, "seed": seed, "customers": n_c, "articles": n_a, "transactions": n_t,
        "generate_s": t1 - t0, "hm_database_s": t2 - t1, "save_s": t3 - t2, "total_s": t3 - t0,
        "generate_rows_per_s": rows / (t1 - t0), "total_rows_per_s": rows / (t3 - t0),
        "peak_rss_gib": peak_rss_gib(),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.bench data", description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, nargs="+", default=[0.02, 1.0],
                   help="scales to time (1.0 = RelBench's rel-hm size)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-data)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:   # one scale, in this (fresh) process: print the row as JSON
        print(json.dumps(measure(args.scale[0], args.seed)))
        return
    rows = []
    for scale in args.scale:
        proc = subprocess.run(
            [sys.executable, "-m", "rdl.bench.data", "--worker", "--scale", str(scale),
             "--seed", str(args.seed)], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"scale {scale} failed:\n{proc.stderr}")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"scale {scale}: {rows[-1]['total_s']:.1f} s, peak {rows[-1]['peak_rss_gib']:.2f} GiB",
              flush=True)
    report("data", rows, args.out,
           header="Synthetic H&M: generate + hm_database + parquet save (each scale in a fresh process)")


if __name__ == "__main__":
    main(sys.argv[1:])
