"""Time the H&M data: ``python -m rdl.bench data [--scale 0.02 1.0] [--seed 0] [--out DIR]
[--kaggle DIR]``.

For each scale, in a fresh subprocess (so peak memory does not mix between scales): time
:func:`rdl.data.synthetic_hm.generate`, :func:`rdl.data.hm.hm_database` and
:func:`rdl.data.stored.save` (parquet, into a temporary folder), then report rows, seconds,
rows/s and the process's peak resident memory.

``--kaggle DIR``: the Kaggle CSV files in ``DIR`` (written there first from the synthetic
generator at the first ``--scale`` if missing: the real format at the real size) as a user
starts on them, each step in a fresh process with an empty cache folder of its own:
``first start`` reads and checks the files (:func:`~rdl.data.kaggle.kaggle_hm_db`, which caches
the database) and builds the graph (:func:`~rdl.graph.build.make_graph`, cached too);
``cached start`` does the same again, from the caches; ``round trip`` checks that the files
give back the generator's database (same tables, same original ids).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rdl.bench.report import load_average, peak_rss_gib, report


def measure(scale: float, seed: int) -> dict:
    """Run the three steps once in this process and return one report row."""
    from rdl.data import synthetic_hm
    from rdl.data import stored
    from rdl.data.hm import hm_database

    t0 = time.perf_counter()
    frames = synthetic_hm.generate(seed=seed, scale=scale)
    t1 = time.perf_counter()
    db = hm_database(**frames)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rdl-bench-data-") as tmp:
        stored.save(db, Path(f"{tmp}/db"))
    t3 = time.perf_counter()
    n_c, n_a, n_t = (len(frames[k]) for k in ("customers", "articles", "transactions"))
    rows = n_c + n_a + n_t
    return {
        "scale": scale, "seed": seed, "customers": n_c, "articles": n_a, "transactions": n_t,
        "generate_s": t1 - t0, "hm_database_s": t2 - t1, "save_s": t3 - t2, "total_s": t3 - t0,
        "generate_rows_per_s": rows / (t1 - t0), "total_rows_per_s": rows / (t3 - t0),
        "peak_rss_gib": peak_rss_gib(),
    }


def kaggle_step(step: str, files: str, cache: str, scale: float, seed: int) -> dict:
    """One step of ``--kaggle`` in this process (see the module docstring)."""
    from rdl.data.hm import hm_database
    from rdl.data.kaggle import kaggle_hm_db
    from rdl.graph.build import make_graph

    t0 = time.perf_counter()
    if step == "round trip":
        from rdl.data import synthetic_hm
        want = hm_database(**synthetic_hm.generate(seed=seed, scale=scale))
        got = kaggle_hm_db(files, cache_dir=False)
        same = all(want[n].df.equals(got[n].df) for n, _ in want) and all(
            want.keys[n].equals(got.keys[n]) for n in want.keys)
        return {"step": step, "total_s": time.perf_counter() - t0, "same_database": same,
                "peak_rss_gib": peak_rss_gib()}
    from hydra.utils import instantiate

    from rdl.bench.train.variants import _compose
    data = _compose([]).data  # the column types and text embedder rdl.train uses
    db = kaggle_hm_db(files, cache_dir=cache)
    t1 = time.perf_counter()
    make_graph(db, instantiate(data.stypes, _convert_="all"), instantiate(data.text_embedder),
               cache_dir=f"{cache}/graphs")
    t2 = time.perf_counter()
    return {"step": step, "read_s": t1 - t0, "graph_s": t2 - t1, "total_s": t2 - t0,
            "transactions": len(db["transactions"]), "peak_rss_gib": peak_rss_gib()}


def kaggle(files: Path, scale: float, seed: int) -> list[dict]:
    """The ``--kaggle`` rows: each step in a fresh process."""
    from rdl.data.hm import KAGGLE

    rows = []
    if not all((files / f).exists() for f, _, _ in KAGGLE.values()):
        t = time.perf_counter()
        _child(["--write-kaggle", str(files), "--scale", str(scale), "--seed", str(seed)])
        rows.append({"step": f"write files (scale {scale:g})",
                     "total_s": time.perf_counter() - t})
    with tempfile.TemporaryDirectory(prefix="rdl-bench-kaggle-") as cache:
        for step in ("first start", "cached start", "round trip"):
            spec = json.dumps(dict(step=step, files=str(files), cache=cache, scale=scale,
                                   seed=seed))
            rows.append(json.loads(_child(["--kaggle-step", spec]).splitlines()[-1]))
            print(f"{step}: {rows[-1]['total_s']:.1f} s, peak {rows[-1]['peak_rss_gib']:.2f} "
                  "GiB", flush=True)
    return rows


def _child(args: list[str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "rdl.bench.data", *args], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout.strip()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.bench data", description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, nargs="+", default=[0.02, 1.0],
                   help="scales to time (1.0 = RelBench's rel-hm size)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-data)")
    p.add_argument("--kaggle", default=None, metavar="DIR",
                   help="time a start on the Kaggle CSV files in DIR (written there if missing)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kaggle-step", default=None, help=argparse.SUPPRESS)
    p.add_argument("--write-kaggle", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:   # one scale, in this (fresh) process: print the row as JSON
        print(json.dumps(measure(args.scale[0], args.seed)))
        return
    if args.kaggle_step:
        print(json.dumps(kaggle_step(**json.loads(args.kaggle_step))))
        return
    if args.write_kaggle:   # the same files write_kaggle writes, in bounded memory
        from rdl.data.synthetic_hm.files import write_kaggle_files
        write_kaggle_files(args.write_kaggle, args.seed, args.scale[0])
        return
    if args.kaggle:
        rows = kaggle(Path(args.kaggle), args.scale[0], args.seed)
        keys = list(dict.fromkeys(k for r in rows for k in r))
        report("data-kaggle", [{k: r.get(k, "") for k in keys} for r in rows], args.out,
               header=f"H&M Kaggle CSV files in {args.kaggle}: a user's first and cached start "
                      f"(each step in a fresh process), load average {load_average()}")
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
