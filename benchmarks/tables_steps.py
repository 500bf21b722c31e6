"""Where the tables stage's memory goes: each step of the split tables and the label history
of a task on Kaggle-shaped H&M files, with its seconds and the process's peak resident
memory while it ran (the peak reset before each step, ``/proc/self/clear_refs``).

    python benchmarks/tables_steps.py FILES [--task user-churn] [--limit 1GB]

The steps are :meth:`rdl.tasks.Task.make_table`'s, one by one, on a plain DuckDB connection
of one thread (as before ``rdl/duck.py``), or with ``--limit`` DuckDB's memory limit and a
spill folder (as ``rdl.duck.connect`` makes them). docs/performance.md, the cost curve.
"""
from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import time
from pathlib import Path

import duckdb
import pandas as pd

from rdl.bench.report import reset_peak_rss, step_peak_rss_gib


def rss_gib() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 2**20


class step:
    """``with step(name):`` prints the step's seconds, and its peak above its start."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.start = rss_gib()
        reset_peak_rss()
        self.t = time.perf_counter()

    def __exit__(self, *exc):
        peak = step_peak_rss_gib()
        print(f"{self.name:45s} {time.perf_counter() - self.t:7.1f} s  peak {peak:5.2f} GiB "
              f"(+{peak - self.start:5.2f} above its start)", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", help="a folder of the H&M Kaggle CSV files")
    p.add_argument("--task", default="user-churn")
    p.add_argument("--limit", default=None, help="DuckDB's memory_limit (none: DuckDB's default)")
    args = p.parse_args()

    from rdl.api import config, data_settings, load_database, load_task
    from rdl.preparation import task_database
    from rdl.tasks import SPLITS, TIMESTAMPS
    from rdl.tasks.ids import register, to_rows

    cfg = config(f"task={args.task}", "data=hm-kaggle", f"data.db.path={args.files}",
                 f"output_dir={tempfile.mkdtemp()}")
    task, settings = load_task(cfg), data_settings(cfg)
    with step("the database (from its cache)"):
        db = task_database(task, load_database(cfg), settings)
    tables = {}
    for split in SPLITS:
        cut = {"train": task.val_time, "val": task.test_time, "test": None}[split]
        with step(f"{split}: the database cut"):
            view = task.inputs(db if cut is None else db.upto(cut))
        times = task.timestamps(split, db)
        spill = tempfile.TemporaryDirectory()
        con = duckdb.connect(config={"threads": 1, **({"memory_limit": args.limit,
                                                       "temp_directory": spill.name}
                                                      if args.limit else {})})
        with step(f"{split}: registered in DuckDB"):
            register(con, view)
            con.register(TIMESTAMPS, pd.DataFrame({"timestamp": pd.to_datetime(times)}))
        window = dt.timedelta(seconds=task.delta.total_seconds())
        with step(f"{split}: the SQL ({len(times)} seed times)"):
            result = con.execute(task.sql_path.read_text(), {"window": window})
        with step(f"{split}: its result to pandas"):
            df = result.df()
        con.close()
        spill.cleanup()
        with step(f"{split}: ids to rows, dtypes, sorted ({len(df)} rows)"):
            e = task.entity_col
            df[e] = to_rows(df[e], view, task.entity_table, "")
            df = df.dropna(subset=[e]).astype({"timestamp": "datetime64[s]", e: "int64"})
            tables[split] = df.sort_values(["timestamp", e], kind="stable")
        del df, view
    with step("the label history"):
        task.history({s: df.reset_index(drop=True) for s, df in tables.items()})


if __name__ == "__main__":
    main()
