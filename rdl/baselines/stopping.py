"""What LightGBM's early stopping watches where val cannot say: every val label one value
(a week in which nobody churned, a month with no survey, :func:`rdl.tasks.kinds.one_value`).

Every metric then prefers the fewest trees: AUROC is one number for any scores (LightGBM
gives 1.0) and a loss is least for the constant that matches, so the trees stopped at
one or two and the baseline predicted about the same for everyone, the prior of the model
too (it is the trees on such a split, :mod:`rdl.families.node.prior_choice`). Instead the
train split's latest seed time whose labels differ is held out to stop on, and the trees
are fitted again on every train row for the rounds it chose. LightGBM's own early stopping
takes no rows other than those given; choosing which is the task's time order, rdl's."""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import pandas as pd

from rdl.tasks import Task
from rdl.tasks.kinds import one_value

log = logging.getLogger("rdl.baselines.trees")   # (the fit's own lines, beside its stage)


def held_out(task: Task, train: pd.DataFrame, val: pd.DataFrame) -> np.ndarray | None:
    """The train rows to stop on, as a mask, where every val label is one value: those of
    the latest seed time (not the only one) whose labels are not; None: stop on val."""
    if not one_value(task, {"val": val}):
        return None
    times, y = train[task.time_col].to_numpy(), train[task.target_col]
    for t in np.unique(times)[::-1][:-1]:
        rows = times == t
        if y[rows].nunique() > 1:
            return rows
    return None


def stopped_on_train(task: Task, train: tuple, held: np.ndarray, seed: int, fit: Callable,
                     name: str):
    """The booster of ``fit`` (:func:`rdl.baselines.trees.train_trees`, passed in: that
    module calls this one) on every row of ``train`` ``(X, y, base)``, with as many trees as
    early stopping on the ``held`` rows chose when fitted on the others."""
    def rows(mask):
        return tuple(None if v is None else v[mask] for v in train)
    X, y, base = rows(~held)
    stopped = fit(task, X, y, base, seed, valid=rows(held))
    rounds = max(1, int(stopped.best_iteration or 0))
    log.info("%s: every val label one value: %d trees, stopped on the train split's latest "
             "seed time (%d rows), fitted again on every train row", name, rounds,
             int(held.sum()))
    return fit(task, *train, seed, rounds=rounds)
