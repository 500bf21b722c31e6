"""LightGBM on the leak-free feature table of :mod:`rdl.baselines.features`.

Gradient-boosted trees fitted on the train split (at most :data:`MAX_TRAIN_ROWS` rows, a
seeded sample of them if there are more), early-stopped on the val split, and scored on
val and test with the task's own metrics. The objective follows the task: ``binary``,
``multiclass``, or for regression ``l1`` when the task monitors MAE (``l2`` otherwise).
Regression boosts from the entity's last visible label (the *last label* baseline) rather
than from a constant: the trees learn the change from last time, which a heavy-tailed
target (sales) needs, and where ``l1`` boosting from a constant converges slowly.
LightGBM's own training API is used (its scikit-learn wrappers would need scikit-learn).

Each split's features are computed on the database as the model's graph holds it (rows up
to the test time); the visibility rules of :func:`~rdl.baselines.features.entity_features`
keep every seed from seeing anything after its own time.
"""
from __future__ import annotations

import logging
import os
import re
import time

import numpy as np
import pandas as pd

from rdl.baselines.features import entity_features
from rdl.baselines.history import last_label, monitor
from rdl.baselines.scoring import num_classes, score, train_prior
from rdl.data.database import Database
from rdl.tasks import Task

log = logging.getLogger(__name__)

MAX_TRAIN_ROWS = 200_000
#: Early stopping watches the LightGBM metric matching the task's monitor, if there is one
#: (else the objective's own metric).
STOPPING_METRIC = {"mae": "l1", "mse": "l2", "rmse": "rmse", "auroc": "auc",
                   "average_precision": "average_precision"}
PARAMS = dict(learning_rate=0.05, num_leaves=31, min_data_in_leaf=20, bagging_fraction=0.8,
              bagging_freq=1, feature_fraction=0.8, lambda_l2=1.0, deterministic=True,
              force_row_wise=True, verbosity=-1)
ROUNDS, PATIENCE = 2000, 50


def lightgbm_baseline(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                      history: pd.DataFrame | None = None, strict: bool = False,
                      seed: int = 0, max_train_rows: int = MAX_TRAIN_ROWS) -> dict:
    """``{"LightGBM": {split: {metric: value}}}`` for val and test."""
    import lightgbm

    start = time.perf_counter()
    history = task.history(tables) if history is None else history
    view = db.upto(task.test_time)
    train = tables["train"]
    if len(train) > max_train_rows:
        train = train.sample(n=max_train_rows, random_state=seed).sort_index()
    frames = {"train": train, "val": tables["val"], "test": tables["test"]}
    if len(frames["val"]) == 0:
        raise ValueError(f"task {task.name!r}: LightGBM needs val rows to stop early on")
    X = {s: _lightgbm_names(entity_features(task, view, df, history, strict))
         for s, df in frames.items()}
    y = {s: df[task.target_col].to_numpy(dtype=np.float64) for s, df in frames.items()}
    # Regression boosts from the last label; classification from LightGBM's own start.
    base = {s: last_label(task, df, history, train_prior(task, tables["train"]))
            if task.kind == "regression" else None for s, df in frames.items()}
    featurised = time.perf_counter()

    params = dict(PARAMS, seed=seed, num_threads=threads())
    if task.kind == "regression":
        params["objective"] = "l1" if task.monitor == "mae" else "l2"
    elif task.kind == "binary_classification":
        params["objective"] = "binary"
    elif task.kind == "multiclass_classification":
        params.update(objective="multiclass", num_class=num_classes(task))
    else:
        raise ValueError(f"task {task.name!r}: LightGBM is a baseline for node tasks, "
                         f"not {task.kind}")
    if metric := STOPPING_METRIC.get(monitor(task)):
        params["metric"] = metric
    train_set = lightgbm.Dataset(X["train"], y["train"], init_score=base["train"])
    val_set = lightgbm.Dataset(X["val"], y["val"], reference=train_set, init_score=base["val"])
    model = lightgbm.train(params, train_set, num_boost_round=ROUNDS, valid_sets=[val_set],
                           callbacks=[lightgbm.early_stopping(PATIENCE, first_metric_only=True,
                                                              verbose=False)])

    out = {}
    for s in ("val", "test"):
        # Values, the positive-class probability or class probabilities (N, num_classes).
        pred = model.predict(X[s], num_iteration=model.best_iteration)
        out[s] = score(task, pred if base[s] is None else pred + base[s], frames[s])
    end = time.perf_counter()
    log.info("LightGBM baseline: %.1f s (features %.1f s, fit and predict %.1f s); %d trees, "
             "%d train rows x %d features", end - start, featurised - start, end - featurised,
             model.best_iteration, len(train), X["train"].shape[1])
    return {"LightGBM": out}


def threads() -> int:
    """Two threads where the machine has cores to spare, else one: OpenMP threads on a
    small, busy machine wait on each other (ten times slower than one thread, measured on
    two cores)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 if (cores or 1) >= 8 else 1


def _lightgbm_names(X: pd.DataFrame) -> pd.DataFrame:
    """Feature names without the characters LightGBM refuses (JSON punctuation)."""
    return X.rename(columns=lambda c: re.sub(r'[\[\]{}":,]', "_", str(c)))
