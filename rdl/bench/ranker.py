"""The LightGBM ranker over many weeks, no graph model: ``python -m rdl.bench ranker
[--tasks user-item-purchase] [--backtest 0 1 2 3 4] [--set KEY=VALUE ...]``.

For each link task and each ``backtest=k`` (val and test ``k`` windows earlier, as
``rdl.train`` moves them), in this process: the split tables, then the ranker
(:func:`~rdl.baselines.ranker.fit_ranker`, the run's ``data.ranker``, with its
``data.deep_features`` for the entity's and the item's rows) and the simple link
baselines (popularity, past links), scored on val and test with the task's monitored
metric, with the candidates' recall, the ranker's time and the peak memory of that step
(``VmHWM`` reset before it). Then per task the ranker's lead over each simple baseline as
mean +- standard error over every week scored, and weeks won, and the share of the ranker's
gain per feature family (pair, co-occurrence, parents, segments, popularity, source ranks,
the entity's row, the item's row). ``--set data.db.scale=1.0``
measures the ranker at H&M's full size; ``--set data=hm-kaggle data.db.path=DIR`` reads the
Kaggle files in ``DIR`` instead (the real ones, or the synthetic database written by
``python -m rdl.data.synthetic_hm.files DIR --scale 1.0``, which keeps the generator's
memory out of the process).
"""
from __future__ import annotations

import argparse
import time

from rdl.bench.report import load_average, report, reset_peak_rss, step_peak_rss_gib
from rdl.bench.trees import lead


def ranker_inputs(task_name: str, back: int, overrides: list[str]) -> tuple:
    """What a run gives the ranker for one link task at one ``backtest``: ``(cfg, task,
    database as the graph holds it, split tables, RankerSettings, DeepSettings)``."""
    from rdl.api import config, load_database, load_task
    from rdl.baselines.ranker import RankerSettings
    from rdl.families.link import LinkTask
    from rdl.features.deep import DeepSettings

    cfg = config(*(task_name.split() if "=" in task_name else [f"task={task_name}"]),
                 f"backtest={back}", *overrides)
    db, task = load_database(cfg), load_task(cfg)
    if not isinstance(task, LinkTask):
        raise SystemExit(f"{task_name!r} is {task.kind.name}: the ranker ranks link tasks")
    db = task.database(db)
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    view = task.inputs(db.upto(task.test_time))
    settings = RankerSettings.of(cfg.data.get("ranker")) or RankerSettings()
    return cfg, task, view, tables, settings, DeepSettings.of(cfg.data.get("deep_features"))


def week_rows(task_name: str, back: int, overrides: list[str]) -> list[dict]:
    """One link task at one ``backtest``: a row per split."""
    from rdl.baselines.link import link_baselines
    from rdl.baselines.ranker import NAME, fit_ranker

    cfg, task, view, tables, settings, deep = ranker_inputs(task_name, back, overrides)
    reset_peak_rss()
    start = time.perf_counter()
    fit = fit_ranker(task, view, tables, settings, cfg.data.strict, cfg.seed, deep=deep)
    seconds, peak = time.perf_counter() - start, step_peak_rss_gib()
    scores = {**fit.metrics(), **link_baselines(task, tables)}
    m = task.monitor
    return [{"task": task.name, "backtest": back, "split": s,
             "time": str((task.val_time if s == "val" else task.test_time).date()),
             "metric": m, "mode": task.monitor_mode, "seeds": len(tables[s]),
             **{name: res[s][m] for name, res in scores.items()},
             "candidate recall": scores[NAME][s]["candidate_recall"],
             "candidates per seed": round(fit.splits[s].per_seed, 1),
             "ranker s": round(seconds, 1), "peak GiB": round(peak, 2),
             "gain": fit.gain_shares()}
            for s in ("val", "test")]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.bench ranker",
                                description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=["user-item-purchase"],
                   help="task names, or 'experiment=<name>' for a task on its own database")
    p.add_argument("--backtest", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config overrides, e.g. data.db.scale=1.0 or data.ranker.past=50")
    p.add_argument("--out", default=None,
                   help="report folder (default outputs/bench/<time>-ranker)")
    args = p.parse_args(argv)
    from rdl.baselines.ranker import NAME

    rows, leads, gains = [], [], []
    for task in args.tasks:
        mine = []
        for back in args.backtest:
            got = week_rows(task, back, args.set)
            for r in got:
                print(f"{r['task']} backtest={back} {r['split']}: ranker {r[NAME]:.4f}, past "
                      f"links {r['past links']:.4f}, popularity "
                      f"{r['popularity (last window)']:.4f}, recall "
                      f"{r['candidate recall']:.3f}, {r['ranker s']} s, {r['peak GiB']} GiB",
                      flush=True)
            mine += got
        rows += mine
        fitted = [r.pop("gain") for r in mine][::2]   # one fit per week (its val and test rows)
        gains.append({"task": mine[0]["task"], **{
            k: f"{100 * sum(g.get(k, 0.0) for g in fitted) / len(fitted):.1f} %"
            for k in dict.fromkeys(k for g in fitted for k in g)}})
        leads.append({"task": mine[0]["task"], "metric": mine[0]["metric"],
                      "weeks": len(mine),
                      "ranker over past links": lead(mine, NAME, "past links"),
                      "ranker over popularity": lead(mine, NAME, "popularity (last window)")})
    out = report("ranker", rows, args.out,
                 header=f"LightGBM ranker per week ({' '.join(args.set) or 'default data'}), "
                        f"load average {load_average()}")
    report("ranker-leads", leads, out, header="Leads over every week scored (val and test)")
    report("ranker-gain", gains, out, header="The ranker's gain per feature family (where "
                                             "its signal sits), mean over the weeks")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
