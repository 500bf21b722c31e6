"""Constant baselines: one prediction for every row, fitted on the train split.

- binary classification: the train positive rate (every AUROC is then 0.5);
- regression: zero, and the train median (the L1-optimal constant);
- multiclass classification: the train class frequencies.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.baselines.scoring import score, train_prior
from rdl.tasks import Task


def constant_baselines(task: Task, tables: dict[str, pd.DataFrame]) -> dict:
    """``{baseline: {split: {metric: value}}}`` for the constant baselines of ``task``."""
    train = tables["train"]
    if task.kind == "binary_classification":
        constants = {"constant (train rate)": train_prior(task, train)}
    elif task.kind == "regression":
        median = np.nanmedian(np.asarray(train[task.target_col], dtype=np.float64))
        constants = {"zero": np.array(0.0), "train median": np.array(median)}
    elif task.kind == "multiclass_classification":
        constants = {"constant (train class rates)": train_prior(task, train)}
    else:
        raise ValueError(f"task {task.name!r}: constant baselines are for node tasks, "
                         f"not {task.kind}")
    out = {}
    for name, value in constants.items():
        out[name] = {}
        for split in ("val", "test"):
            df = tables[split]
            out[name][split] = score(task, np.broadcast_to(value, (len(df), *value.shape)), df)
    return out
