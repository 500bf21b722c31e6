"""The tree baselines over many weeks, no graph model: ``python -m rdl.bench trees
[--tasks user-churn item-sales] [--backtest 0 2 4 6 8] [--set KEY=VALUE ...]``.

For each task and each ``backtest=k`` (val and test ``k`` windows earlier, as ``rdl.train``
moves them), in this process: the split tables and label history, then LightGBM on
depth-1 features and on depth 1 and 2 (:func:`~rdl.baselines.trees.fit_tree_baselines`,
the run's ``data.deep_features``) and the label-history baselines, scored on val and test
by the task's monitored metric. Then per task the lead of depth 2 over depth 1 (positive:
depth 2 better) as mean +- standard error over every week scored, and weeks won. This is
the half of a backtest that needs no training: where deep features help the trees, and by
how much, on any database (``--set data=forum``).
"""
from __future__ import annotations

import argparse
import statistics
import time

from rdl.bench.report import load_average, report


def week_rows(task_name: str, back: int, overrides: list[str]) -> list[dict]:
    """One task at one ``backtest``: a row per split, each baseline's monitored metric."""
    from rdl.api import config, load_database, load_task
    from rdl.baselines.history import history_baselines, monitor
    from rdl.baselines.trees import fit_tree_baselines
    from rdl.features.deep import DeepSettings
    from rdl.families.node import NodeTask

    cfg = config(f"task={task_name}", f"backtest={back}", *overrides)
    db, task = load_database(cfg), load_task(cfg)
    if not isinstance(task, NodeTask):   # the node family's baselines
        raise SystemExit(f"task {task_name!r} is {task.kind.name}: the tree baselines are "
                         "node tasks' (leave it out of --tasks)")
    db = task.database(db)
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    history = task.history(tables)
    view = task.inputs(db.upto(task.test_time))
    start = time.perf_counter()
    fits, _ = fit_tree_baselines(task, view, tables, history, cfg.data.strict,
                                 deep=DeepSettings.of(cfg.data.deep_features) or DeepSettings())
    seconds = time.perf_counter() - start
    scores = {k: v for fit in fits.values() for k, v in fit.scores().items()}
    scores.update(history_baselines(task, tables, history))
    metric = monitor(task)
    return [{"task": task_name, "backtest": back, "split": s,
             "time": str((task.val_time if s == "val" else task.test_time).date()),
             "metric": metric, "mode": task.monitor_mode,
             **{name: res[s][metric] for name, res in scores.items()},
             "trees s": seconds} for s in ("val", "test")]


def lead(rows: list[dict], a: str, b: str) -> str:
    """``a``'s lead over ``b`` (positive: ``a`` better) as mean +- standard error, and wins."""
    sign = 1 if rows[0]["mode"] == "max" else -1
    d = [sign * (r[a] - r[b]) for r in rows]
    se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
    return f"{statistics.mean(d):+.5f} +- {se:.5f} ({sum(x > 0 for x in d)}/{len(d)})"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.bench trees",
                                description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=["user-churn", "item-sales"])
    p.add_argument("--backtest", type=int, nargs="+", default=[0, 2, 4, 6, 8])
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config overrides, e.g. data=forum or data.deep_features.top_k=10")
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-trees)")
    args = p.parse_args(argv)
    from rdl.baselines.trees import DEPTH1, DEPTH2

    rows, leads = [], []
    for task in args.tasks:
        mine = []
        for back in args.backtest:
            got = week_rows(task, back, args.set)
            for r in got:
                print(f"{task} backtest={back} {r['split']}: depth 1 {r[DEPTH1]:.5f}, "
                      f"depth 2 {r[DEPTH2]:.5f}", flush=True)
            mine += got
        rows += mine
        leads.append({"task": task, "metric": mine[0]["metric"], "weeks": len(mine),
                      "depth 2 over depth 1": lead(mine, DEPTH2, DEPTH1),
                      "depth 2 over last label": lead(mine, DEPTH2, "last label")})
    keys = list(dict.fromkeys(k for r in rows for k in r))
    out = report("trees", [{k: r.get(k, "") for k in keys} for r in rows], args.out,
                 header=f"Tree baselines per week ({' '.join(args.set) or 'default data'}), "
                        f"load average {load_average()}")
    report("trees-leads", leads, out, header="Leads over every week scored (val and test)")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
