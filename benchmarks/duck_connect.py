"""What a DuckDB database a query costs against a cursor of one kept open:
``python benchmarks/duck_connect.py [--queries N] [--task T] [--set KEY=VALUE ...]``.

rdl's feature synthesis (the trees' and the ranker's depth-2 features) runs hundreds of
small queries a run. Each had a new in-memory database with rdl's settings
(``rdl.duck.connect``: one thread, the memory limit, a spill folder); each is now a cursor
of one database kept open while the synthesis runs (``rdl.duck.shared``, ``cursor``). Prints the mean milliseconds a query
both ways (a small aggregate over a registered frame), then the LightGBM ranker of a link
task (``--task``, a name or overrides; ``--set`` overrides, default ``debug=tiny``) both ways:
the queries, the seconds, and whether its scores are equal. docs/performance.md,
"2026-12-05: a database a query".
"""
from __future__ import annotations

import argparse
import contextlib
import tempfile
import time

import numpy as np
import pandas as pd

from rdl import duck


def per_query(way, queries: int, frame: pd.DataFrame) -> float:
    start = time.perf_counter()
    for _ in range(queries):
        with way() as con:
            con.register("f", frame)
            con.execute("SELECT g, sum(x) FROM f GROUP BY g").df()
    return (time.perf_counter() - start) / queries * 1e3


def ranker(way, task_name: str, overrides: list[str]):
    """The LightGBM ranker of ``task_name`` (its depth-2 features, then the trees) with
    ``way`` as rdl's cursor: (seconds, queries, its val and test scores)."""
    from rdl.baselines.ranker import fit_ranker
    from rdl.bench.ranker import ranker_inputs

    count = [0]

    @contextlib.contextmanager
    def counted(ordered: bool = False):
        count[0] += 1
        with way(ordered=ordered) as con:
            yield con
    _, task, db, tables, settings, deep = ranker_inputs(task_name, 0, overrides)
    made, duck.cursor = duck.cursor, counted
    try:
        start = time.perf_counter()
        fit = fit_ranker(task, db, tables, settings, deep=deep)
        return time.perf_counter() - start, count[0], fit.scores
    finally:
        duck.cursor = made


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--task", default="user-item-purchase", help="a link task")
    p.add_argument("--set", nargs="*", default=["debug=tiny"],
                   help="overrides (KEY=VALUE; default debug=tiny, H&M's tiny database)")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"g": rng.integers(0, 50, 1000), "x": rng.random(1000)})
    kept = duck.cursor
    print(f"a database a query   {per_query(duck.connect, args.queries, frame):6.2f} ms a query")
    with duck.shared():
        print(f"a cursor a query     {per_query(kept, args.queries, frame):6.2f} ms a query")
    overrides = [f"data.cache_dir={tempfile.mkdtemp()}", *args.set]
    runs = {name: ranker(way, args.task, overrides)
            for name, way in [("a database a query", duck.connect), ("a cursor a query", kept)]}
    for name, (s, n, _) in runs.items():
        print(f"{args.task} ranker, {name:20s} {s:6.2f} s, {n} queries")
    (_, _, before), (_, _, after) = runs.values()
    for split in before:
        np.testing.assert_array_equal(after[split], before[split])
    print("the ranker's scores are equal, value for value")

if __name__ == "__main__":
    main()
