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
test; for every metric the runs score (a link task's MAP, precision and recall at k, and
what a baseline adds, such as a ranker's candidate recall) the mean ± standard error of
the model and of each baseline; then, metric by metric, per baseline the mean difference
over the weeks (positive: the model is better), its standard error and the weeks the model
wins. The table is also written to ``backtest.md`` in the folder. Any runs of
``rdl.train`` can be compared this way (a seed sweep too: ``seed=0,1,2``), as long as they
are of one task; a baseline is read by its name, whatever it is. Several folders (a task
on each database) give one row each (:mod:`rdl.backtest.overview`)::

    python -m rdl.backtest runs/user-churn runs/item-sales --out overview.md

``--split test`` averages the test weeks only: the val weeks chose the checkpoint, the
correction's factor and the depth-2 features, so only test weeks are unseen by every choice.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pandas as pd
from hydra.utils import get_class
from omegaconf import OmegaConf

from rdl.baselines.trees import DEPTH1, DEPTH2
from rdl.report import ARROW, decimals
from rdl.tasks import split_times


def read_runs(folder: Path) -> list[dict]:
    """Every run of ``rdl.train`` under ``folder``: its label (the overrides of a sweep
    job), task settings, val and test weeks, its metrics' directions and ``metrics.json``."""
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
        higher = directions(task.get("metrics"))
        if ran.exists():
            split = json.loads(ran.read_text())
            val, test = pd.Timestamp(split["val"]), pd.Timestamp(split["test"])
            monitor, mode = split["monitor"], split["monitor_mode"]
            higher.update({k: v for k, v in split.get("higher", {}).items() if v is not None})
        else:
            val, test = split_times(task.val_timestamp, task.test_timestamp,
                                    task.get("window", "7d"), int(cfg.get("backtest", 0)))
            monitor, mode = task.monitor, task.get("monitor_mode", "max")
        if higher.get(monitor) is None:
            higher[monitor] = mode == "max"
        runs.append({"run": run, "label": label, "task": metrics.get("task") or task.name,
                     "monitor": monitor, "higher": higher[monitor], "directions": higher,
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


def directions(metrics) -> dict[str, bool | None]:
    """Metric name -> whether higher is better, from the metrics of a run's config (their
    classes' ``higher_is_better``, as the report reads it: :func:`rdl.report.directions`);
    for runs that wrote no ``task.json`` with them. None where the class does not say or
    cannot be imported here."""
    out = {}
    for name, spec in (metrics or {}).items():
        try:
            out[name] = getattr(get_class(spec["_target_"]), "higher_is_better", None)
        except (ImportError, AttributeError, KeyError, TypeError, ValueError):
            out[name] = None
    return out


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
WEEKS = ("val", "test")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def scores(entry: dict) -> dict[str, dict[str, float]]:
    """An entry of ``metrics.json`` as ``{split: {metric: value}}``, numbers only. A key
    beside the splits that holds a number per split (a baseline's ``"candidate recall":
    {"val": 0.61, "test": 0.58}``) joins them as a metric of its own; anything else a
    baseline adds (its settings) is left out."""
    out = {s: {m: float(v) for m, v in (entry.get(s) or {}).items() if _number(v)}
           for s in WEEKS}
    for key, value in entry.items():
        if key not in WEEKS and isinstance(value, dict) and all(_number(value.get(s))
                                                                for s in WEEKS):
            for s in WEEKS:
                out[s].setdefault(key, float(value[s]))
    return out


def entries(metrics: dict) -> dict[str, dict]:
    """A run's model, its correction as trained where it was scaled on val, and its
    baselines (:func:`baselines`), each ``{split: {metric: value}}`` (:func:`scores`)."""
    by_scale = metrics["model"].get("correction", {}).get("by_scale", {})
    out = {"model": metrics["model"]}
    if "1" in by_scale:
        out[AS_TRAINED] = by_scale["1"]
    return {who: scores(res) for who, res in {**out, **baselines(metrics)}.items()}


def prior_of(metrics: dict, monitor: str, higher: bool) -> str | None:
    """The name of the baseline a node run's model started from: the model's ``prior``
    (chosen on val, :mod:`rdl.families.node.prior_choice`), or, in a run that
    does not name one (written before the choice, or without a prior), the LightGBM better
    on val in ``monitor`` (depth 1 where they tie); None where the run has neither."""
    name = metrics["model"].get("prior")
    if name in metrics:
        return name
    trees = [w for w in (DEPTH1, DEPTH2) if monitor in (metrics.get(w) or {}).get("val", {})]
    sign = 1.0 if higher else -1.0
    return max(trees, key=lambda w: sign * metrics[w]["val"][monitor], default=None)


def priors(runs: list[dict]) -> list[str]:
    """The lines of the table of the baseline each run's model started from, with the
    correction's factor and the model's lead over it in the monitored metric (runs that
    name their prior only: none is guessed); none where no run names one."""
    m, higher = runs[0]["monitor"], runs[0]["higher"]
    named = [r for r in runs if r["metrics"]["model"].get("prior") in r["metrics"]]
    if not named:
        return []
    values = [scores(r["metrics"][r["metrics"]["model"]["prior"]])[s].get(m)
              for r in named for s in WEEKS]
    digits = decimals(values, percent=False)
    rows = [["run", "test week", "prior", "factor", "model over it: val", "test"]]
    for r in named:
        model, name = r["metrics"]["model"], r["metrics"]["model"]["prior"]
        base, own = scores(r["metrics"][name]), scores(model)
        scale = model.get("correction", {}).get("scale")
        leads = [(1 if higher else -1) * (own[s][m] - base[s][m])
                 if m in own[s] and m in base[s] else None for s in WEEKS]
        rows.append([r["label"], str(r["test"]), name, "-" if scale is None else f"{scale:g}",
                     *("-" if v is None else f"{v:+.{digits}f}" for v in leads)])
    return ["", "The baseline each run's model started from (its prior, chosen on val) "
            "and the factor", f"of its correction kept on val; the model's lead over it in "
            f"{m}", "", *markdown(rows)]


def everyone(runs: list[dict]) -> list[str]:
    """The model and every baseline of any of the runs, in the order the runs name them."""
    return list(dict.fromkeys(w for r in runs for w in entries(r["metrics"])))


def metrics_of(runs: list[dict]) -> list[str]:
    """The metrics the runs score: the monitored one, the model's others, then those only
    a baseline reports (a ranker's candidate recall)."""
    model = [m for r in runs for s in WEEKS for m in entries(r["metrics"])["model"][s]]
    rest = [m for r in runs for res in entries(r["metrics"]).values() for s in WEEKS
            for m in res[s]]
    return list(dict.fromkeys([runs[0]["monitor"], *model, *rest]))


def differences(runs: list[dict], metric: str | None = None) -> dict[str, dict[str, list]]:
    """Per baseline and split, the model's lead in ``metric`` (default: the monitored one)
    in each run that scores both (positive: better)."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        m = metric or r["monitor"]
        up = r["directions"].get(m)
        if up is None:  # which way is better is not known: no lead
            continue
        sign = 1.0 if up else -1.0
        row = entries(r["metrics"])
        for who, res in list(row.items())[1:]:
            for split in WEEKS:
                if m in row["model"][split] and m in res[split]:
                    lead = sign * (row["model"][split][m] - res[split][m])
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


def mean_se(values: list[float], digits: int) -> str:
    """``mean ± standard error`` (one value: the value)."""
    mean = f"{statistics.fmean(values):.{digits}f}"
    if len(values) == 1:
        return mean
    return f"{mean} ± {statistics.stdev(values) / math.sqrt(len(values)):.{digits}f}"


#: marks the best of a run's model and baselines
BEST = "*"


def markdown(rows: list[list[str]]) -> list[str]:
    """A markdown table, its columns padded to one width (read in a terminal too); the
    first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    return [lines[0], "|" + "|".join("-" * (w + 2) for w in widths) + "|", *lines[1:]]


def _marked(shown: list[str | None], higher: bool | None) -> list[str]:
    """Cells as shown ("-": none), the best marked where the metric's direction is known."""
    numbers = [float(x.split(" ")[0]) if x else math.nan for x in shown]
    finite = [x for x in numbers if math.isfinite(x)]
    best = (max if higher else min)(finite) if finite and higher is not None else None
    return ["-" if x is None else x + (BEST if v == best else "") for x, v in zip(shown, numbers)]


def means(runs: list[dict], who: list[str], shown: list[str], way: dict,
          digits: dict) -> list[list[str]]:
    """Rows of (metric, model or baseline, val mean ± standard error, test's), the best mean
    of each metric marked; a baseline scored in k of the n runs says so."""
    rows = [["metric", "model or baseline", "val weeks", "test weeks"]]
    scored = [entries(r["metrics"]) for r in runs]
    for x in shown:
        values = {w: {s: [row[w][s][x] for row in scored if w in row and x in row[w][s]]
                      for s in WEEKS} for w in who}
        cells = {s: _marked([mean_se(values[w][s], digits[x]) if values[w][s] else None
                             for w in who], way[x]) for s in WEEKS}
        for i, w in enumerate(who):
            n = max(len(v) for v in values[w].values())
            if n:
                k = f" ({n} of {len(runs)})" if n < len(runs) else ""
                rows.append([f"{x} {ARROW[way[x]]}".rstrip(), w, cells["val"][i] + k,
                             cells["test"][i] + k])
    return rows


def table(runs: list[dict]) -> str:
    """The backtest as markdown, within 100 columns: the monitored metric of every run's
    model and baselines on val, then on test (the best of each run marked); each metric's
    mean ± standard error over the runs for the model and each baseline; then, metric by
    metric, the model's lead over each baseline with the weeks it won; then the baseline
    each node run's model started from (:func:`priors`)."""
    m, higher = runs[0]["monitor"], runs[0]["higher"]
    who, shown = everyone(runs), metrics_of(runs)
    way = {w: runs[0]["directions"].get(w) for w in shown}
    # the report's decimals (four significant digits: an MAE of 0.025 as 0.02464)
    digits = {x: decimals([res[s].get(x) for r in runs for res in entries(r["metrics"]).values()
                           for s in WEEKS], percent=False) for x in shown}
    lines = [f"# Backtest: {runs[0]['task']}, {m} "
             f"({'higher' if higher else 'lower'} is better), {len(runs)} runs"]
    for split in WEEKS:
        rows = [["run", f"{split} week", *who]]
        for r in runs:
            row = entries(r["metrics"])
            values = [row[w][split].get(m) if w in row else None for w in who]
            rows.append([r["label"], str(r[split]), *_marked(
                [None if v is None else f"{v:.{digits[m]}f}" for v in values], higher)])
        lines += ["", f"{m} {ARROW[higher]} on {split} ({BEST}: the best of the run)", "",
                  *markdown(rows)]
    lines += ["", f"Each metric's mean ± standard error over the runs ({BEST}: the best mean; "
              "k of n:", "in k of the n runs only)", ""]
    lines += markdown(means(runs, who, shown, way, digits))
    for x in shown:
        leads = differences(runs, x) if way[x] is not None else {}
        if not leads:
            continue
        lines += ["", f"The model's lead in {x} (positive: the model is better): mean ± "
                  "standard", "error over the runs (weeks won / weeks)", ""]
        rows = [["baseline", "val", "test", "all"]]
        for w, lead in leads.items():
            rows.append([w, *(summary(v, digits[x]) if v else "-" for v in
                              (lead["val"], lead["test"], lead["val"] + lead["test"]))])
        lines += markdown(rows)
    lines += priors(runs)
    return "\n".join(lines) + "\n"
