"""Which baseline a node model starts from (``data.tree_prior``): the one best on val of
every baseline the run prints (``data.prior_from: all``): the constants, the last label, the
label mean (last ``k``) and both LightGBMs; or of the LightGBMs only (``trees``).

LightGBM on the entity's aggregated past is the strongest of them on most tasks, but not
on every one: where the train split holds a few weeks of a few thousand entities (a real
retail export with four train weeks, issue 50), the mean of a household's last four labels
was as good as the trees on val (spend MAE 44.32 against 44.85) and better on test (48.17
against 49.39), and a model that started from the trees ended behind it (49.88). The
model's output is a correction of its prior, and the correction's factor is chosen on val
(:mod:`rdl.families.node.correction`; 0: the prior alone), so starting from the baseline
best on val makes that baseline the floor on val.

One baseline, not a blend of several fitted on val: val already stops the trees, chooses
the depth-2 features, the checkpoint and the correction's factor, and a blend's weights
would be one more fit on its few thousand rows; the model itself is the learned
combination, with the chosen prior and what the other baselines read among its seed
features (the last label, the means of the last four and of all labels, the entity's
aggregates; :mod:`rdl.features.seed`).

A tie keeps the earlier of: LightGBM, LightGBM (depth 2), then the simple baselines in the
order the run prints them; a NaN val score (one class in val) never wins.
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from rdl.baselines.constant import constant_baselines
from rdl.baselines.history import history_baselines, monitor
from rdl.tasks import Task

log = logging.getLogger("rdl.preparation")

#: the values of ``data.prior_from``
AMONG = ("all", "trees")


def check(among: str) -> None:
    """One clear error where ``data.prior_from`` is not one of :data:`AMONG`."""
    if among not in AMONG:
        raise ValueError(f"data.prior_from={among!r}: expected one of {', '.join(AMONG)}")


def val_scores(task: Task, tables: dict[str, pd.DataFrame], history: pd.DataFrame,
               fits: dict, among: str = "all") -> dict[str, float]:
    """Each candidate's val score in the task's monitored metric, larger is better
    (``fits``: the LightGBM baselines by name, first; then the simple baselines the run
    prints, with ``among="all"``)."""
    check(among)
    scores = {name: fit.val_score() for name, fit in fits.items()}
    if among == "all":
        sign = 1.0 if task.monitor_mode == "max" else -1.0
        metric = monitor(task)
        printed = {**constant_baselines(task, tables), **history_baselines(task, tables, history)}
        scores.update({name: sign * res["val"][metric] for name, res in printed.items()})
    return scores


def choose(scores: dict[str, float]) -> str:
    """The candidate of the best val score (``val_scores``), the first of a tie; NaN never
    wins (all NaN: the first)."""
    return max(scores, key=lambda n: -math.inf if math.isnan(scores[n]) else scores[n])


def chosen_prior(task: Task, tables: dict[str, pd.DataFrame], history: pd.DataFrame,
                 fits: dict, among: str = "all") -> str:
    """The name of the baseline the model starts from (:func:`val_scores`, :func:`choose`),
    logged with every candidate's val score."""
    scores = val_scores(task, tables, history, fits, among)
    best = choose(scores)
    sign = 1.0 if task.monitor_mode == "max" else -1.0
    log.info("prior: %s, the best on val (%s) of %s", best, monitor(task), ", ".join(
        f"{name} {sign * v:.5g}" for name, v in scores.items() if not np.isnan(v)))
    return best
