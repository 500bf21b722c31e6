"""Which baseline a node model starts from (``data.tree_prior``): of every baseline the run
prints (``data.prior_from: all``: the constants, the last label, the label mean (last
``k``), the seasonal ones and the trees) the one best on val; or the trees only
(``trees``). The trees' candidate is the mean of both LightGBMs (``data.prior_trees: mean``,
:mod:`rdl.baselines.tree_mean`), or each LightGBM (``best``).

LightGBM on the entity's aggregated past is the strongest of them on most tasks, but not
on every one: where the train split holds a few weeks of a few thousand entities (a real
retail export with four train weeks, issue 50), the mean of a household's last four labels
was as good as the trees on val (spend MAE 44.32 against 44.85) and better on test (48.17
against 49.39), and a model that started from the trees ended behind it (49.88). The
model's output is a correction of its prior, and the correction's factor is chosen on val
(:mod:`rdl.families.node.correction`; 0: the prior alone), so starting from the baseline
best on val makes that baseline the floor on val.

**A simple baseline replaces the trees only where its val lead is more than noise**:
more than ``data.prior_margin`` standard errors of the difference, from a paired bootstrap
of the val rows (:func:`~rdl.baselines.scoring.paired_se`; 0: the best on val, whatever
its lead). The val score of the best of five simple candidates, one of them itself the
best of four ``k`` on val, is an optimistic estimate of it: on the tiny synthetic database
(79 val seeds) the label mean of the last two labels led LightGBM on val by 0.019 AUROC
and trailed it on test by 0.097 (``python -m rdl.train task=user-churn debug=tiny``). The
trees are the default because on every task of docs/results.md they lead the simple
baselines by far more than the noise; the bootstrap is drawn only where a simple baseline
wins on val.

One baseline, not a blend of several fitted on val: val already stops the trees, chooses
the depth-2 features, the checkpoint and the correction's factor, and a blend's weights
would be one more fit on its few thousand rows; the model itself is the learned
combination, with the chosen prior and what the other baselines read among its seed
features (the last label, the means of the last four and of all labels, the entity's
aggregates; :mod:`rdl.features.seed`).

A tie keeps the earlier of: the trees (LightGBM, LightGBM (depth 2)), then the simple
baselines in the order the run prints them; a NaN val score (one class in val) never wins.
"""
from __future__ import annotations

import logging
import math

import pandas as pd

from rdl.baselines.constant import constant_baselines
from rdl.baselines.history import history_baselines, monitor
from rdl.baselines.scoring import paired_se
from rdl.baselines.trees import to_prediction
from rdl.tasks import Task
from rdl.tasks.kinds import one_value
from rdl.training.data_settings import check_prior as check

log = logging.getLogger("rdl.preparation")

#: the values of ``data.prior_from``
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


def tree_candidates(fits: dict, trees: str = "mean") -> dict:
    """The LightGBMs of ``fits`` the prior is chosen among (``data.prior_trees``): ``mean``,
    the mean of depth 1 and 2 alone where it is there (:mod:`rdl.baselines.tree_mean`:
    on the synthetic user-churn the one better on val trailed depth 1 on the test weeks);
    ``best``, each fitted one, the better on val chosen. ``chained``: as ``mean`` here; the
    preparation replaces it with the mean weighted as the train split's chained weeks
    choose (:mod:`rdl.families.node.prior_weight`)."""
    from rdl.baselines.tree_mean import MEAN
    check("all", 0.0, trees)
    if trees in ("mean", "chained") and MEAN in fits:
        return {MEAN: fits[MEAN]}
    return {name: fit for name, fit in fits.items() if name != MEAN}


def choose(scores: dict[str, float]) -> str:
    """The candidate of the best val score (``val_scores``), the first of a tie; NaN never
    wins (all NaN: the first)."""
    return max(scores, key=lambda n: -math.inf if math.isnan(scores[n]) else scores[n])


def chosen_prior(task: Task, tables: dict[str, pd.DataFrame], history: pd.DataFrame,
                 fits: dict, among: str = "all", margin: float = 1.0, seed: int = 0) -> str:
    """The name of the baseline the model starts from: the best on val (:func:`val_scores`,
    :func:`choose`), where it is a simple baseline only if its val lead over the better
    LightGBM is more than ``margin`` standard errors (see the module's docstring); logged
    with every candidate's val score."""
    check(among, margin)
    if one_value(task, tables):   # (val cannot choose: the first of the trees)
        name = next(iter(fits))
        log.info("prior: %s, the trees (val's labels are one value)", name)
        return name
    scores = val_scores(task, tables, history, fits, among)
    trees = choose({name: scores[name] for name in fits})
    best = choose(scores)
    sign = 1.0 if task.monitor_mode == "max" else -1.0
    metric = monitor(task)
    every = ", ".join(f"{name} {sign * v:.5g}" for name, v in scores.items()
                      if not math.isnan(v))
    if best in fits or margin == 0:
        log.info("prior: %s, the best on val (%s) of %s", best, metric, every)
        return best
    from rdl.families.node.simple_prior import simple_prior
    val = {"train": tables["train"], "val": tables["val"]}
    simple = task.kind.from_raw(simple_prior(task, best, val, history, splits=("val",))["val"])
    fit = fits[trees]
    se = paired_se(task, metric, simple, to_prediction(task, fit.raw("val"), fit.bounds),
                   tables["val"], seed=seed)
    lead = scores[best] - scores[trees]
    chosen = best if lead > margin * se else trees
    log.info("prior: %s; of %s (val %s), %s leads %s by %.5g, %s %g standard error(s) "
             "(%.5g, paired bootstrap of the %d val rows)", chosen, every, metric, best,
             trees, lead, "more than" if chosen == best else "not more than", margin, se,
             len(tables["val"]))
    return chosen
