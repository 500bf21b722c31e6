"""Cells of any type real tables hold: list-like cells (RelBench's list columns, which
parquet gives back as a numpy array per cell) told apart, and any column made hashable
(list-like cells as their JSON text), for the database's digest (:mod:`rdl.data.digest`)
and the graph's (:mod:`rdl.graph.columns` turns such columns into features)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

LIST_TYPES = (list, tuple, np.ndarray)


def is_list_column(s: pd.Series) -> bool:
    """Whether an object column holds list-like cells (its first non-missing one decides)."""
    if s.dtype != object:
        return False
    for v in s:
        if isinstance(v, LIST_TYPES):
            return True
        if v is not None and not (isinstance(v, float) and np.isnan(v)):
            return False
    return False


def _text(v) -> str | None:
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, LIST_TYPES):
        return json.dumps([x.item() if isinstance(x, np.generic) else x for x in v], default=str)
    return None if v is None else repr(v)


def hashable(s: pd.Series) -> pd.Series:
    """``s`` as pandas can hash it: list-like cells (or any cell of an object column that
    is not hashable) as text."""
    if s.dtype != object:
        return s
    try:
        pd.util.hash_pandas_object(s.head(1000), index=False)
        if not is_list_column(s):
            return s
    except TypeError:
        pass
    return s.map(_text)
