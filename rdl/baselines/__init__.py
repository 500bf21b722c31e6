"""Baselines printed beside the model in every run, scored by the task's own metrics.

Node tasks (:func:`node_baselines`): constants fitted on the train split (``constant.py``),
the entity's last label and the mean of its last k labels (``history.py``), and LightGBM on
a leak-free feature table of the entity, its label history and its child tables
(:mod:`rdl.features.table`, ``trees.py``), and on that table with the depth-2 features of
:mod:`rdl.features.deep` ("LightGBM (depth 2)"). Link tasks (:func:`link_baselines`, ``link.py``):
popularity and past links. Everything is derived from the task's labels and the schema.
"""
from __future__ import annotations

import pandas as pd

from rdl.baselines.constant import constant_baselines
from rdl.features.table import entity_features
from rdl.baselines.history import history_baselines
from rdl.baselines.link import link_baselines
from rdl.baselines.trees import TreeFit, fit_tree_baselines
from rdl.data.database import Database
from rdl.tasks import Task

__all__ = ["node_baselines", "link_baselines", "entity_features"]


def node_baselines(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                   strict: bool = False, history: pd.DataFrame | None = None,
                   trees: dict[str, TreeFit] | None = None, rows: dict | None = None,
                   deep=None) -> dict:
    """``{baseline: {split: {metric: value}}}`` for val and test: constants, last label,
    label mean (last k) and LightGBM (depth 1, and depth 2). ``strict``: the sampler's rule for child rows (a row
    at the seed time is visible only if ``strict`` is false). ``history``:
    :meth:`Task.history` of ``tables`` if already computed; ``trees``: the LightGBM
    baselines by name if already fitted (:func:`~rdl.baselines.trees.fit_tree_baselines`;
    else fitted here: depth 1, and depth 2 with ``deep``,
    :class:`~rdl.features.deep.DeepSettings`). ``rows``: split -> score the first ``n``
    rows only (those the model was scored on)."""
    history = task.history(tables) if history is None else history
    trees = trees or fit_tree_baselines(task, db, tables, history, strict, deep=deep)[0]
    tables = {**tables, **{s: tables[s].iloc[:n] for s, n in (rows or {}).items()}}
    return {**constant_baselines(task, tables),
            **history_baselines(task, tables, history),
            **{k: v for fit in trees.values() for k, v in fit.scores(rows).items()}}
