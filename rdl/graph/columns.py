"""Cells of any type real tables hold, made ready for PyTorch Frame and for hashing.

RelBench's files hold list columns (rel-amazon's ``category``: lists of strings, ``None`` or
``[]``), which parquet gives back as numpy arrays per cell; PyTorch Frame takes them as
lists (a numpy cell is taken for a category, and fails), and pandas cannot hash either.

* :func:`with_lists`: list-like cells as lists of strings (PyTorch Frame then infers
  ``multicategorical`` and encodes them), other columns untouched.
* :func:`hashable`: a column whose every cell pandas can hash (list-like cells as their
  JSON text), for the graph cache's fingerprint.
"""
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


def _as_list(v):
    if isinstance(v, LIST_TYPES):
        return [str(x) for x in v]
    return None  # missing


def with_lists(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each list column's cells as lists of strings (a copy only if needed)."""
    cols = [c for c in df.columns if is_list_column(df[c])]
    if not cols:
        return df
    return df.assign(**{c: df[c].map(_as_list) for c in cols})


def _text(v) -> str | None:
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
