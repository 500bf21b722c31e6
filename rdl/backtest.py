"""Rolling-origin evaluation: is a model's lead over its baselines more than one week's luck?

A task scores the model on one val and one test window. On the default synthetic
database these hold about 1,500 customers (user-churn), and the model's lead over
LightGBM moved by up to 0.003 AUROC (standard deviation) from week to week
(docs/results.md), as much as the leads themselves. One week cannot tell a model that
is better from one that was lucky. A *backtest* repeats
the run with both split times moved back (``backtest=k``: ``k`` task windows earlier;
the labels, graph and baselines are cut at the moved times as at the real ones, so
nothing after a moved test window is read) and compares the model with each baseline
over every week scored::

    python -m rdl.train -m task=user-churn backtest=0,2,4,6,8
    python -m rdl.backtest multirun/2026-11-25/10-00-00

This prints, for the task's monitored metric, each run's model and baselines on val and
test, then per baseline the mean difference over the weeks (positive: the model is
better), its standard error and the weeks the model wins; the table is also written to
``backtest.md`` in the folder. Any runs of ``rdl.train`` can be compared this way (a
seed sweep too: ``seed=0,1,2``), as long as they are of one task. Several folders (a task
on each database) give one row each: the model, both LightGBMs and the best simple
baseline as mean ± standard error, and the model's leads::

    python -m rdl.backtest runs/user-churn runs/item-sales --out overview.md

``--split test`` averages the test weeks only: the val weeks chose the checkpoint, the
correction's factor and the depth-2 features, so only test weeks are unseen by every choice.
"""
from __future__ import annotations

if __name__ == "__main__":   # python -m rdl.backtest: before torch is imported (rdl/threads.py)
    from rdl.threads import at_start
    at_start()

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from rdl.baselines.trees import DEPTH1, DEPTH2
from rdl.caching import write_atomic
from rdl.report import decimals
from rdl.tasks import split_times


def read_runs(folder: Path) -> list[dict]:
    """Every run of ``rdl.train`` under ``folder``: its label (the overrides of a sweep
    job), task settings, val and test weeks, and ``metrics.json``."""
    runs = []
    for path in sorted(folder.rglob("metrics.json"), key=_job_order):
        run = path.parent
        config = run / ".hydra" / "config.yaml"
        if not config.exists():
            raise FileNotFoundError(f"{run}: has metrics.json but no .hydra/config.yaml: not a "
                                    "run of python -m rdl.train")
        cfg = OmegaConf.load(config)
        overrides = run / ".hydra" / "overrides.yaml"
        label = list(OmegaConf.load(overrides)) if overrides.exists() else []
        task, metrics = cfg.task, json.loads(path.read_text())
        ran = run / "task.json"  # the task as run (a RelBench task's times are its folder's)
        if ran.exists():
            split = json.loads(ran.read_text())
            val, test = pd.Timestamp(split["val"]), pd.Timestamp(split["test"])
            monitor, mode = split["monitor"], split["monitor_mode"]
        else:
            val, test = split_times(task.val_timestamp, task.test_timestamp,
                                    task.get("window", "7d"), int(cfg.get("backtest", 0)))
            monitor, mode = task.monitor, task.get("monitor_mode", "max")
        runs.append({"run": run, "label": label, "task": metrics.get("task") or task.name,
                     "monitor": monitor, "higher": mode == "max",
                     "val": val.date(), "test": test.date(), "metrics": metrics})
    if not runs:
        raise FileNotFoundError(f"{folder}: no metrics.json under it (run python -m rdl.train "
                                "-m ... backtest=0,2,4 first, and pass its sweep folder)")
    # A run is named by the overrides that set it apart from the others (a sweep's values).
    shared = set.intersection(*(set(r["label"]) for r in runs))
    for r in runs:
        r["label"] = " ".join(o for o in r["label"] if o not in shared) or r["run"].name
    runs.sort(key=lambda r: r["test"], reverse=True)  # latest weeks first (stable: seeds)
    tasks = sorted({r["task"] for r in runs})
    if len(tasks) > 1:
        raise ValueError(f"{folder}: holds runs of several tasks {tasks}; compare one task "
                         "at a time (pass the folder of one task's sweep)")
    return runs


def _job_order(path: Path):
    """Hydra's job folders (0, 1, ..., 10) in numeric order."""
    name = path.parent.name
    return (str(path.parent.parent), int(name) if name.isdigit() else math.inf, name)


def baselines(metrics: dict) -> dict[str, dict]:
    """A run's baselines by their short names: without what their names say in brackets
    ("constant (train rate)": "constant"), so that the table fits 100 columns and the label
    mean, whose ``k`` is chosen on each run's val split ("label mean (last 16)"), is one
    baseline over the runs; where two names would become one, only the label mean's ``k``
    goes."""
    names = [who for who in metrics if who not in ("task", "model")]
    short = {who: re.sub(r" \([^()]*\)$", "", who) for who in names}
    if len(set(short.values())) < len(names):
        short = {who: re.sub(r" \(last \d+\)$", "", who) for who in names}
    return {short[who]: metrics[who] for who in names}


#: the model with its correction of the tree prior as trained, where the run scaled it on
#: val (rdl/families/node/correction.py): what the scaling changed
AS_TRAINED = "model as trained"


def entries(metrics: dict) -> dict[str, dict]:
    """A run's model, its correction as trained where it was scaled on val, and its
    baselines (:func:`baselines`), each ``{split: {metric: value}}``."""
    by_scale = metrics["model"].get("correction", {}).get("by_scale", {})
    out = {"model": metrics["model"]}
    if "1" in by_scale:
        out[AS_TRAINED] = by_scale["1"]
    return {**out, **baselines(metrics)}


def differences(runs: list[dict]) -> dict[str, dict[str, list[float]]]:
    """Per baseline and split, the model's lead in each run (positive: better)."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        m, sign = r["monitor"], 1.0 if r["higher"] else -1.0
        model = r["metrics"]["model"]
        for who, res in list(entries(r["metrics"]).items())[1:]:
            for split in ("val", "test"):
                lead = sign * (model[split][m] - res[split][m])
                out.setdefault(who, {"val": [], "test": []})[split].append(lead)
    return out


def summary(values: list[float], digits: int = 4) -> str:
    """``mean ± standard error (wins/n)`` (one value: ``value (wins/1)``), with ``digits``
    decimals."""
    n, mean = len(values), statistics.fmean(values)
    wins = sum(v > 0 for v in values)
    if n == 1:  # one run: no spread to show
        return f"{mean:+.{digits}f} ({wins}/1)"
    return (f"{mean:+.{digits}f} ± {statistics.stdev(values) / math.sqrt(n):.{digits}f} "
            f"({wins}/{n})")


#: marks the best of a run's model and baselines
BEST = "*"


def markdown(rows: list[list[str]]) -> list[str]:
    """A markdown table, its columns padded to one width (read in a terminal too); the
    first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    return [lines[0], "|" + "|".join("-" * (w + 2) for w in widths) + "|", *lines[1:]]


def table(runs: list[dict]) -> str:
    """The backtest as markdown, within 100 columns: the monitored metric of every run's
    model and baselines on val, then on test (the best of each run marked), then the
    model's lead over each baseline."""
    m, higher = runs[0]["monitor"], runs[0]["higher"]
    who = list(entries(runs[0]["metrics"]))
    arrow = "↑" if higher else "↓"
    # the report's decimals (four significant digits: an MAE of 0.025 as 0.02464)
    digits = decimals([res[split][m] for r in runs
                       for res in entries(r["metrics"]).values()
                       for split in ("val", "test")], percent=False)
    lines = [f"# Backtest: {runs[0]['task']}, {m} "
             f"({'higher' if higher else 'lower'} is better), {len(runs)} runs"]
    for split in ("val", "test"):
        rows = [["run", f"{split} week", *who]]
        for r in runs:
            row = entries(r["metrics"])
            values = [row[w][split][m] if w in row else None for w in who]
            shown = [None if v is None else f"{v:.{digits}f}" for v in values]
            finite = [float(x) for x in shown if x is not None and math.isfinite(float(x))]
            best = (max if higher else min)(finite) if finite else None
            rows.append([r["label"], str(r[split]),
                         *("-" if x is None else x + (BEST if float(x) == best else "")
                           for x in shown)])
        lines += ["", f"{m} {arrow} on {split} ({BEST}: the best of the run)", "",
                  *markdown(rows)]
    lines += ["", f"The model's lead in {m} (positive: the model is better): mean ± standard",
              "error over the runs (weeks won / weeks)", ""]
    rows = [["baseline", "val", "test", "all"]]
    for w, lead in differences(runs).items():
        rows.append([w, summary(lead["val"], digits), summary(lead["test"], digits),
                     summary(lead["val"] + lead["test"], digits)])
    lines += markdown(rows)
    return "\n".join(lines) + "\n"


#: which of a run's two scores the overview averages: val weeks are where the checkpoint,
#: the correction's factor and the depth-2 features were chosen, so ``test`` is the
#: measure that no choice saw
SPLITS = {"both": slice(None), "val": slice(0, None, 2), "test": slice(1, None, 2)}


def overview(sweeps: dict[str, list[dict]], split: str = "both") -> str:
    """One row per sweep (a task on a database): the monitored metric of the model, of both
    LightGBMs and of the best simple baseline (the one best on val over the runs, so that
    the test weeks do not choose it), each as mean ± standard error over the val and test
    scores (``split``: ``both``, or only ``val`` or ``test`` ones); then the model's lead
    over each and over its tree prior (in each run the LightGBM better on val, as
    :mod:`rdl.preparation` chooses it: what the graph model adds to where it starts) and
    that of the model as trained over the depth-2 LightGBM (where every run scaled its
    correction on val), with weeks won, and whether its lead over the depth-2 LightGBM is
    more than one standard error either way."""
    prior = "the LightGBM better on val"
    head = ["sweep", "metric", "weeks", "model", DEPTH2, DEPTH1, "best simple",
            f"model over {DEPTH2}", f"{AS_TRAINED} over {DEPTH2}", f"model over {DEPTH1}",
            f"model over {prior}", f"{DEPTH2} over {DEPTH1}", "model over best simple",
            "model vs depth 2"]
    rows = [head]
    for name, runs in sweeps.items():
        m, sign = runs[0]["monitor"], 1.0 if runs[0]["higher"] else -1.0
        scores: dict[str, list[float]] = {}
        for r in runs:
            row = entries(r["metrics"])
            for who, res in row.items():
                scores.setdefault(who, []).extend(res[s][m] for s in ("val", "test"))
            if trees := [w for w in (DEPTH1, DEPTH2) if w in row]:  # a tie: depth 1, as there
                chosen = max(trees, key=lambda w: sign * row[w]["val"][m])
                scores.setdefault(prior, []).extend(row[chosen][s][m] for s in ("val", "test"))
        if len(scores.get(AS_TRAINED, [])) != len(scores["model"]):  # not in every run
            scores.pop(AS_TRAINED, None)
        simple = [w for w in scores
                  if w not in ("model", AS_TRAINED, prior) and not w.startswith(DEPTH1)]
        # scores alternate val, test: choose the best simple baseline on its val scores
        best = max(simple, key=lambda w: sign * statistics.fmean(scores[w][::2]),
                   default=None)
        digits = decimals([v for vs in scores.values() for v in vs], percent=False)
        scores = {who: v[SPLITS[split]] for who, v in scores.items()}

        def cell(who):
            if who not in scores:
                return "-"
            v = scores[who]
            se = statistics.stdev(v) / math.sqrt(len(v))
            return f"{statistics.fmean(v):.{digits}f} ± {se:.{digits}f}"

        def lead(a, b):
            if a not in scores or b not in scores:
                return "-", None
            d = [sign * (x - y) for x, y in zip(scores[a], scores[b])]
            return summary(d, digits), d

        weeks = {r[s] for r in runs for s in ("val", "test") if split in (s, "both")}
        ahead, d = lead("model", DEPTH2)
        verdict = "-"
        if d is not None and len(d) > 1:
            se = statistics.stdev(d) / math.sqrt(len(d))
            mean = statistics.fmean(d)
            verdict = "ahead" if mean > se else "behind" if mean < -se else "level"
        rows.append([name, m, f"{len(scores['model'])} ({len(weeks)} distinct)",
                     cell("model"), cell(DEPTH2), cell(DEPTH1),
                     "-" if best is None else f"{best}: {cell(best)}", ahead,
                     lead(AS_TRAINED, DEPTH2)[0], lead("model", DEPTH1)[0],
                     lead("model", prior)[0], lead(DEPTH2, DEPTH1)[0],
                     "-" if best is None else lead("model", best)[0], verdict])
    over = {"both": "val and test scores", "val": "val scores only",
            "test": "test scores only"}[split]
    lines = [f"# Backtests of several sweeps: mean ± standard error over each sweep's {over};",
             "# leads positive where the first is better (weeks won / weeks)",
             "", *markdown(rows)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    script = Path(sys.argv[0]).name   # rdl-backtest, or backtest.py under python -m
    prog = script if script == "rdl-backtest" else "python -m rdl.backtest"
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    p.add_argument("folders", type=Path, nargs="+", metavar="folder",
                   help="a sweep folder of python -m rdl.train -m (or any folder holding runs "
                   "of one task); several: one row each (a task on a database)")
    p.add_argument("--out", type=Path, default=None, help="where to write the table "
                   "(default: FOLDER/backtest.md; several folders: only printed)")
    p.add_argument("--split", choices=list(SPLITS), default="both", help="several folders: "
                   "average val and test scores (both), or only one; test is the measure no "
                   "choice on val has seen")
    args = p.parse_args(argv)
    try:
        names = [f.name for f in args.folders]
        if len(set(names)) < len(names):  # two sweeps of one name: their whole paths
            names = [str(f) for f in args.folders]
        sweeps = {n: read_runs(f) for n, f in zip(names, args.folders)}
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    if len(sweeps) == 1:
        (folder,), (runs,) = args.folders, sweeps.values()
        text = table(runs)
        print(text)
        write_atomic(args.out or folder / "backtest.md", text)
        return
    text = overview(sweeps, args.split)
    print(text)
    if args.out:
        write_atomic(args.out, text)


if __name__ == "__main__":
    main()
