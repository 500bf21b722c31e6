"""The tree baselines over many weeks, no graph model: ``python -m rdl.bench trees
[--tasks user-churn item-sales] [--backtest 0 2 4 6 8] [--set KEY=VALUE ...]
[--without FEATURE ...]``.

For each task and each ``backtest=k`` (val and test ``k`` windows earlier, as ``rdl.train``
moves them), in this process: the split tables and label history, then LightGBM on
depth-1 features and on depth 1 and 2 (:func:`~rdl.baselines.trees.fit_tree_baselines`,
the run's ``data.deep_features``) and the label-history baselines, scored on val and test
by the task's monitored metric. Then per task the lead of depth 2 over depth 1 (positive:
depth 2 better) as mean +- standard error over every week scored, and weeks won. This is
the half of a backtest that needs no training: where deep features help the trees, and by
how much, on any database (``--set data=forum``). A third table says where the depth-2
trees find their signal: the share of their gain per family of features (the entity's own
row, its label history, its children at depth 1, and at depth 2 its parents, its
children's statistics, the child rows' parents, the grandchildren and its groups' labels),
mean over the weeks.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from rdl.bench.report import load_average, report


def week_rows(task_name: str, back: int, overrides: list[str],
              without: tuple[str, ...] = ()) -> list[dict]:
    """One task at one ``backtest``: a row per split, each baseline's monitored metric;
    ``without``: depth-1 features left out (``customer.c_first_name``), by name."""
    from rdl.api import config, data_settings, load_database, load_task
    from rdl.baselines.history import history_baselines, monitor
    from rdl.baselines.trees import DEPTH1, DEPTH2, choose_depth2, fit_tree_baselines
    from rdl.features.deep import DeepSettings
    from rdl.families.node import NodeTask
    from rdl.families.node.prepare import labelled
    from rdl.preparation import graph_database

    cfg = config(f"task={task_name}", f"backtest={back}", *overrides)
    db, task = load_database(cfg), load_task(cfg)
    if not isinstance(task, NodeTask):   # the node family's baselines
        raise SystemExit(f"task {task_name!r} is {task.kind.name}: the tree baselines are "
                         "node tasks' (leave it out of --tasks)")
    db = task.database(db)
    # the run's split tables: its train rows bounded as the run bounds them
    # (data.train_seeds, data.feature_cells: a wide warehouse's 3.6M rows filled 24 GiB),
    # and the run's view of the database: without the columns the schema drops
    settings = data_settings(cfg)
    given = labelled(task, db, settings,
                     {s: task.split_table(s, db) for s in ("train", "val", "test")})
    tables, history = given["tables"], given["history"]
    view = graph_database(task, db, settings)[0]
    start = time.perf_counter()
    deep = DeepSettings.of(cfg.data.deep_features) or DeepSettings()
    # with data.deep_features.select, the depth-2 trees on all features and the ones chosen
    # on val, side by side: one fit on all, then select_on_val as fit_tree_baselines runs it
    features = None
    if without:   # (the features fit_tree_baselines would make, less those)
        from rdl.features.table import entity_features
        features = {s: entity_features(task, view.upto(task.test_time), df, history,
                                       cfg.data.strict) for s, df in tables.items()}
        if missing := sorted(set(without) - set(features["train"].columns)):
            raise SystemExit(f"--without {' '.join(missing)}: no such depth-1 feature of task "
                             f"{task_name!r} (its own row's: {task.entity_table}.<column>)")
        features = {s: f.drop(columns=list(without)) for s, f in features.items()}
    fits, feats = fit_tree_baselines(task, view, tables, history, cfg.data.strict,
                                     deep=dataclasses.replace(deep, select=()),
                                     max_train_rows=cfg.data.tree_rows, features=features)
    seconds = time.perf_counter() - start
    scores = {k: v for fit in fits.values() for k, v in fit.scores().items()}
    if deep.select:   # as fit_tree_baselines chooses (on val, or data.deep_features.select_weeks)
        chosen, _ = choose_depth2(task, view, tables, history, cfg.data.strict, 0,
                                  fits[DEPTH1], fits[DEPTH2], feats[DEPTH2], deep, name=CHOSEN,
                                  max_train_rows=cfg.data.tree_rows)
        scores[CHOSEN] = chosen.scores()[chosen.name]
    scores.update(history_baselines(task, tables, history))
    metric = monitor(task)
    return [{"task": task_name, "backtest": back, "split": s,
             "time": str((task.val_time if s == "val" else task.test_time).date()),
             "metric": metric, "mode": task.monitor_mode,
             **{name: res[s][metric] for name, res in scores.items()},
             "trees s": seconds,
             "gain": gain_shares(fits, feats, task.entity_table, view[task.entity_table].fkeys)}
            for s in ("val", "test")]


#: the depth-2 trees on the features chosen (data.deep_features.select, on val or on
#: data.deep_features.select_weeks of train)
CHOSEN = "LightGBM (depth 2, chosen)"

#: the families of feature names (rdl/features/table.py, synthesis.py), in report order
FAMILIES = ("own row", "label history", "children", "parents", "children (depth 2)",
            "child rows' parents", "grandchildren", "groups")


def family(column: str, entity: str, depth1: set[str], keys: dict) -> str:
    """The family of a feature by its name (:mod:`rdl.features.names`): ``history.*`` and
    ``<entity>.<col>`` at depth 1, the paths to the entity's parents by its foreign keys
    ``keys`` (``<entity>>parent...``), ``group[...]``, ``child>parent...`` and
    ``child<grandchild...`` at depth 2 (a child's own aggregates otherwise)."""
    from rdl.features.names import up

    if column.startswith("history."):
        return "label history"
    if column in depth1:
        return "own row" if column.startswith(f"{entity}.") else "children"
    if column.startswith("group["):
        return "groups"
    if any(column.startswith(p) and column[len(p):][:1] in (".", "<")
           for p in (up(entity, keys, k) for k in keys)):
        return "parents"
    if ">" in column:
        return "child rows' parents"
    return "grandchildren" if "<" in column else "children (depth 2)"


def gain_shares(fits: dict, feats: dict, entity: str, keys: dict) -> dict[str, float]:
    """The depth-2 LightGBM's gain per feature family, as shares of its total gain
    (``keys``: the entity table's foreign keys)."""
    from rdl.baselines.trees import DEPTH1, DEPTH2

    depth1 = set(feats[DEPTH1]["train"].columns)
    out = dict.fromkeys(FAMILIES, 0.0)
    for column, g in fits[DEPTH2].importance("gain").items():
        out[family(column, entity, depth1, keys)] += float(g)
    total = sum(out.values()) or 1.0
    return {k: v / total for k, v in out.items()}


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
    p.add_argument("--without", nargs="*", default=[], metavar="FEATURE",
                   help="depth-1 features left out, e.g. customer.c_first_name (an ablation)")
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-trees)")
    args = p.parse_args(argv)
    from rdl.baselines.trees import DEPTH1, DEPTH2

    rows, leads, gains = [], [], []
    for task in args.tasks:
        mine = []
        for back in args.backtest:
            got = week_rows(task, back, args.set, tuple(args.without))
            for r in got:
                print(f"{task} backtest={back} {r['split']}: depth 1 {r[DEPTH1]:.5f}, "
                      f"depth 2 {r[DEPTH2]:.5f}"
                      + (f", chosen {r[CHOSEN]:.5f}" if CHOSEN in r else ""), flush=True)
            mine += got
        fitted = [r["gain"] for r in mine[::2]]  # one fit per backtest (its val and test rows)
        gains.append({"task": task, **{k: f"{100 * statistics.mean(g[k] for g in fitted):.1f} %"
                                       for k in FAMILIES}})
        rows += mine
        leads.append({"task": task, "metric": mine[0]["metric"], "weeks": len(mine),
                      "depth 2 over depth 1": lead(mine, DEPTH2, DEPTH1),
                      "depth 2 over last label": lead(mine, DEPTH2, "last label"),
                      **({"chosen over depth 1": lead(mine, CHOSEN, DEPTH1),
                          "chosen over depth 2": lead(mine, CHOSEN, DEPTH2)}
                         if CHOSEN in mine[0] else {})})
    keys = list(dict.fromkeys(k for r in rows for k in r if k != "gain"))
    out = report("trees", [{k: r.get(k, "") for k in keys} for r in rows], args.out,
                 header=f"Tree baselines per week ({' '.join(args.set) or 'default data'}), "
                        f"load average {load_average()}")
    report("trees-leads", leads, out, header="Leads over every week scored (val and test)")
    report("trees-gain", gains, out, header="Depth-2 LightGBM: share of its gain per feature "
                                            "family, mean over the backtests")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
