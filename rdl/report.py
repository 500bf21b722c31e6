"""The report a run of ``python -m rdl.train`` ends with: the model beside its baselines,
read at a glance, and ``metrics.json``, which holds every metric.

The printed table fits :data:`WIDTH` columns whatever the task's kind::

    user-churn: model vs baselines, backtest 2: val 2020-08-24, test 2020-08-31 (seed times)
               auroc ↑           average_precision ↑   accuracy ↑        f1 ↑
               val     test      val     test          val     test      val     test
    model      0.7086* 0.7073    0.8654* 0.8684        0.7618* 0.7661*   0.8595* 0.8622*
    LightGBM   0.7045  0.7144*   0.8650  0.8709*       0.7553  0.7566    0.8591  0.8597
    auroc, model vs the best baseline, LightGBM: val 0.0041 ahead, test 0.0071 behind
    the model corrects LightGBM, its prior chosen on val, its correction scaled by 1 on val
    auroc is monitored; ↑ higher is better, ↓ lower; * best in its column
    all metrics: <run>/metrics.json

The monitored metric (``task.monitor``) comes first, then as many of the others as fit; a
metric's direction is the metric's own (torchmetrics' ``higher_is_better``), else, for the
monitored one, the task's ``monitor_mode``. Metrics of ``task.kind.percent`` are shown in %.
The first line names the weeks scored: each run of a backtest sweep says which it is.
"""
from __future__ import annotations

import json
import logging
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from rdl.caching import write_atomic
from rdl.tasks.kinds import few_rows, one_value

log = logging.getLogger("rdl.train")

#: the widest line the report prints
WIDTH = 100
#: marks the best value of a column
BEST = "*"
#: baseline names longer than this are cut (with "…") to leave room for the metrics
NAME_WIDTH = 30
SPLITS = ("val", "test")
ARROW = {True: "↑", False: "↓", None: ""}
NBSP = "\xa0"  # textwrap does not break there


def directions(task) -> dict[str, bool | None]:
    """Metric name -> whether higher is better (None: not known), from each of the task's
    metrics; the monitored metric's from ``task.monitor_mode`` where its metric does not
    say."""
    higher = {name: getattr(metric, "higher_is_better", None)
              for name, metric in (getattr(task, "metrics", None) or {}).items()}
    if task.monitor and higher.get(task.monitor) is None:
        higher[task.monitor] = task.monitor_mode != "min"
    return higher


def when(time) -> str:
    """A split time as a date, with the time of day where it is not midnight."""
    t = pd.Timestamp(time)
    return str(t.date()) if t == t.normalize() else t.strftime("%Y-%m-%d %H:%M")


def heading(name: str, val_time=None, test_time=None, backtest: int = 0,
            eval_times: int = 1) -> str:
    """The report's first line: the task, and the weeks it scored (``backtest``: how many
    windows the split times were moved back)."""
    line = f"{name}: model vs baselines"
    weeks = []
    if backtest:
        weeks.append(f"backtest {backtest}")
    if val_time is not None and test_time is not None:
        times = "seed times" if eval_times == 1 else f"first of up to {eval_times} seed times"
        weeks.append(f"val {when(val_time)}, test {when(test_time)} ({times})")
    return line + (", " + ": ".join(weeks) if weeks else "")


def decimals(values, percent: bool) -> int:
    """Decimals that show a metric's values (all its rows and splits) with at least four
    significant digits in a typical one (their median: a baseline far off, such as a
    constant or the label a year before, takes none from the rest): 4 for values from 0.1
    up (AUROC, R2), 5 for an MAE of 0.025, at most 8; a metric in % has 2."""
    if percent:
        return 2
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    top = float(np.median(finite)) if finite else 0.0
    return 4 if top == 0 or top >= 0.1 else min(8, 3 - math.floor(math.log10(top)))


def _cell(value, percent: bool, digits: int) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.{digits}f}" if percent else f"{value:.{digits}f}"


def report_text(results: dict, name: str, monitor: str = "", mode: str = "max", *,
                higher: dict | None = None, percent=(), val_time=None, test_time=None,
                backtest: int = 0, eval_times: int = 1, metrics_path=None,
                caveat: str = "", width: int = WIDTH) -> str:
    """The report of ``results`` (``{who: {split: {metric: value}}}``, the model first).

    ``monitor``, ``mode``: the monitored metric, shown first, and ``max`` or ``min``;
    ``higher``: metric -> whether higher is better (None or missing: not known; the
    monitored metric's defaults to ``mode``); ``percent``: metrics shown in %; the times,
    ``backtest`` and ``eval_times``: what the heading says of the weeks
    (:func:`heading`); ``metrics_path``: where every metric is written; ``caveat``: a
    note printed first (:func:`few_rows`)."""
    higher = dict(higher or {})
    if monitor and higher.get(monitor) is None:
        higher[monitor] = mode != "min"
    found = [m for r in results.values() for s in SPLITS for m in r.get(s, {})]
    # the monitored metric, then the task's own order (``higher``'s), then the rest
    metrics = list(dict.fromkeys([*(m for m in higher if m in found), *found]))
    if monitor in metrics:
        metrics.remove(monitor)
        metrics.insert(0, monitor)
    who = list(results)
    labels = [w if len(w) <= NAME_WIDTH else w[:NAME_WIDTH - 1] + "…" for w in who]
    label_width = max(len(x) for x in labels)

    def value(w, split, m):
        v = results[w].get(split, {}).get(m)
        return None if v is None else float(v)

    digits = {m: decimals([value(w, sp, m) for w in who for sp in SPLITS], m in percent)
              for m in metrics}

    def column(m, split) -> list[str]:
        """A column's cells, the best value (as shown) marked."""
        shown = [_cell(value(w, split, m), m in percent, digits[m]) for w in who]
        numbers = [float(s) if s != "-" else math.nan for s in shown]
        finite = [x for x in numbers if math.isfinite(x)]
        best = None
        if finite and higher.get(m) is not None:
            best = max(finite) if higher[m] else min(finite)
        return [s + (BEST if x == best else " ") for s, x in zip(shown, numbers)]

    groups, used = [], label_width
    for m in metrics:
        title = f"{m} %" if m in percent else m
        title = f"{title} {ARROW[higher.get(m)]}".rstrip()
        val, test = column(m, "val"), column(m, "test")
        cell = max(len(x) for x in ("val", "test ", *val, *test))
        group = max(len(title), 2 * cell + 1)
        if groups and used + 3 + group > width:
            break
        groups.append((m, title, cell, group, val, test))
        used += 3 + group
    hidden = metrics[len(groups):]

    def line(first: str, parts: list[str]) -> str:
        return (first.ljust(label_width) + "".join("   " + p for p in parts)).rstrip()

    lines = [*_wrap(heading(name, val_time, test_time, backtest, eval_times), width),
             line("", [title.ljust(group) for _, title, _, group, _, _ in groups]),
             line("", [("val".ljust(cell) + " test").ljust(group)
                       for _, _, cell, group, _, _ in groups])]
    for i, label in enumerate(labels):
        lines.append(line(label, [(val[i].ljust(cell) + " " + test[i]).ljust(group)
                                  for _, _, cell, group, val, test in groups]))
    notes = [caveat]
    if monitor in metrics and len(who) > 1:
        notes.append(_lead(results, monitor, higher.get(monitor), monitor in percent,
                           digits[monitor]))
    notes.append(_prior(results.get("model", {})))
    legend = [f"{monitor} is monitored"] if monitor in metrics else []
    if any(higher.get(m) is not None for m in metrics[:len(groups)]):
        legend += ["↑ higher is better, ↓ lower", f"{BEST} best in its column"]
    notes.append("; ".join(legend))
    where = []
    if hidden:
        where.append("not shown: " + ", ".join(hidden))
    if metrics_path is not None:
        where.append(f"all metrics: {_short(metrics_path)}")
    notes.append("; ".join(where))
    for note in filter(None, "\n".join(notes).split("\n")):
        lines += _wrap(note, width)
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, where its words allow."""
    return [part.replace(NBSP, " ") for part in textwrap.wrap(
        text, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)]


def _lead(results: dict, m: str, higher: bool | None, percent: bool, digits: int) -> str:
    """How the model compares with the best baseline of each split in the monitored
    metric (ahead, behind, level), in the table's units; "" where it cannot be told."""
    leads = []  # (split, lead, best baseline)
    for split in SPLITS:
        model = results.get("model", {}).get(split, {}).get(m)
        scores = {w: r.get(split, {}).get(m) for w, r in results.items() if w != "model"}
        scores = {w: v for w, v in scores.items() if v is not None and math.isfinite(v)}
        if model is None or not math.isfinite(model) or not scores or higher is None:
            continue
        best = (max if higher else min)(scores, key=scores.get)
        lead = (model - scores[best]) * (1 if higher else -1) * (100 if percent else 1)
        if round(lead, digits) == 0:
            words = "level with"
        else:
            words = f"{abs(lead):.{digits}f} " + ("ahead of" if lead > 0 else "behind")
        leads.append((split, words, best.replace(" ", NBSP)))  # a name wraps whole
    if not leads:
        return ""
    head = f"{m} %" if percent else m
    if len({best for _, _, best in leads}) == 1:  # one baseline is the best of both splits
        return (f"{head}, model vs the best baseline, {leads[0][2]}: "
                + ", ".join(f"{split} {words.removesuffix(' of').removesuffix(' with')}"
                            for split, words, _ in leads))
    return (f"{head}, model vs the best baseline: "
            + ", ".join(f"{split} {words} {best}" for split, words, best in leads))


def _prior(model: dict) -> str:
    """What a node model started from (its ``prior``, chosen on val) and how much
    of its correction it kept (``correction``'s factor, chosen on val); "" if neither."""
    if not model.get("prior"):
        return ""
    scale = model.get("correction", {}).get("scale")
    kept = "" if scale is None else f", its correction scaled by {scale:g} on val"
    return (f"the model corrects {model['prior'].replace(' ', NBSP)}, its prior "
            f"{model.get('prior_by', 'chosen on val')}{kept}")


def _short(path) -> str:
    """``path`` relative to the working directory where it lies under it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def task_report(task, results: dict, metrics_path=None, caveat: str = "") -> str:
    """:func:`report_text` for ``task`` (an :class:`rdl.tasks.Task`): its name, monitored
    metric, metric directions, percent metrics and split times."""
    return report_text(results, task.name, task.monitor, task.monitor_mode,
                       higher=directions(task), percent=tuple(task.kind.percent),
                       val_time=getattr(task, "val_time", None),
                       test_time=getattr(task, "test_time", None),
                       backtest=getattr(task, "backtest", 0) or 0,
                       eval_times=getattr(task, "num_eval_timestamps", 1) or 1,
                       metrics_path=metrics_path, caveat=caveat)


def report(task, results: dict, out: Path, tables: dict | None = None) -> str:
    """Print the report of ``results`` for ``task`` and write ``out/metrics.json``
    (``{"task": name, who: {split: {metric: value}}}``); returns the text printed.
    ``tables``: the splits' labelled rows, whose thin splits the report names."""
    out = Path(out)
    text = task_report(task, results, out / "metrics.json", "\n".join(
        filter(None, (one_value(task, tables or {}), few_rows(task, tables or {})))))
    print(f"\n{text}\n")
    write_atomic(out / "metrics.json", json.dumps({"task": task.name, **results}, indent=2))
    log.info("metrics written to %s", out / "metrics.json")
    return text
