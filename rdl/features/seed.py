"""Seed features: each seed entity's aggregated past as one vector, an input of node models.

The GNN sees a seed's past through sampled neighbours: at most ``num_neighbors`` of its
rows, each on its own. What a tabular engineer computes first, how many rows the entity
had in each of the last 1, 4 and 12 windows, their sums, the days since its last row and
its own label history, is not in any one sampled row and is hard to count from a
fixed-size sample of them. This module gives the model those aggregates directly: the
label-history and child-table columns of the leak-free feature table
(:func:`~rdl.features.table.entity_features`, the same one the LightGBM baseline is
fitted on; the entity's own columns are left out, its table encoder has them), so that
the model starts from everything the trees see and adds what the graph holds. RelBench's
strongest rel-hm entries combine the same kind of aggregates with a GNN.

Each column is scaled as :class:`~rdl.nn.encoder.RobustLinearEncoder` scales a table's
numbers, ``asinh((x - median) / s)`` (:mod:`rdl.scaling`), with statistics of the train split; a missing value
(no row yet, no earlier label) becomes 0 and sets an indicator column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from rdl.features.table import entity_features
from rdl.data.database import Database
from rdl.scaling import iqr_scale, robust_asinh
from rdl.tasks import Task


def seed_features(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                  history: pd.DataFrame, strict: bool = False,
                  features: dict[str, pd.DataFrame] | None = None
                  ) -> tuple[dict[str, Tensor], list[str]]:
    """Per split, a ``[len(tables[split]), F]`` float tensor of the rows' seed features, and
    the ``F`` column names. ``db`` must hold no row from after the test time (the
    graph's view of it); ``history``: :meth:`Task.history` of ``tables``; ``features``:
    the splits' feature tables without the entity's own columns, if already computed."""
    if features is None:
        features = {s: entity_features(task, db, df, history, strict, own=False)
                    for s, df in tables.items()}
    raw = {s: numeric(df) for s, df in features.items()}
    train = raw["train"]
    # A column with no train value teaches the model nothing, and its val values would be
    # inputs it never trained on (the prior where no train block had enough earlier labels
    # for trees, on a small database): left out.
    cols = [c for c in train.columns if train[c].notna().any() or not len(train)]
    x = train[cols].to_numpy(dtype=np.float64)
    center = np.nanmedian(x, axis=0) if len(x) else np.zeros(len(cols))
    q1, q3 = (np.nanpercentile(x, q, axis=0) if len(x) else np.zeros(len(cols)) for q in (25, 75))
    std = np.nanstd(x, axis=0) if len(x) else np.ones(len(cols))
    scale = iqr_scale(q1, q3, np.where(std > 0, std, 1.0))
    center, scale = np.nan_to_num(center), np.nan_to_num(scale, nan=1.0)
    # An indicator only for columns the train split has missing values in.
    flagged = [j for j in range(len(cols)) if np.isnan(x[:, j]).any()]
    names = cols + [f"{cols[j]}.missing" for j in flagged]
    out = {}
    for split, df in raw.items():
        v = df[cols].to_numpy(dtype=np.float64)
        missing = np.isnan(v)
        z = np.nan_to_num(robust_asinh(v, center, scale), nan=0.0)
        out[split] = torch.from_numpy(np.hstack([z, missing[:, flagged]]).astype(np.float32))
    return out, names


def numeric(X: pd.DataFrame) -> pd.DataFrame:
    """The numeric columns of a feature table (a categorical one, such as a multiclass
    task's last label, is also one-hot elsewhere in it as class frequencies)."""
    return X[[c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])
              and not isinstance(X[c].dtype, pd.CategoricalDtype)]]
