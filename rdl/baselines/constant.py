"""Constant baselines: one prediction for every row, fitted on the train split.

- binary classification: the train positive rate (every AUROC is then 0.5);
- regression: zero, and the train median (the L1-optimal constant);
- multiclass classification: the train class frequencies.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.baselines.scoring import score
from rdl.features.labels import train_prior
from rdl.tasks import Task


def constant_baselines(task: Task, tables: dict[str, pd.DataFrame]) -> dict:
    """``{baseline: {split: {metric: value}}}`` for the constant baselines of ``task``."""
    train_prior(task, tables["train"])  # the train split has labels
    constants = task.kind.constants(np.asarray(tables["train"][task.target_col],
                                               dtype=np.float64))
    out = {}
    for name, value in constants.items():
        out[name] = {}
        for split in ("val", "test"):
            df = tables[split]
            out[name][split] = score(task, np.broadcast_to(value, (len(df), *value.shape)), df)
    return out
