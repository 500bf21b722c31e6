"""Cells of any type real tables hold, made ready for PyTorch Frame and for hashing.

RelBench's files hold list columns (rel-amazon's ``category``: lists of strings, ``None`` or
``[]``), which parquet gives back as numpy arrays per cell; PyTorch Frame takes them as
lists (a numpy cell is taken for a category, and fails), and pandas cannot hash either.

* :func:`with_lists`: list-like cells as lists of strings (PyTorch Frame then infers
  ``multicategorical`` and encodes them), other columns untouched.
* :func:`multi_hot`: a list column as fixed-width 0/1 vectors over its most frequent
  categories, which the graph encodes as an ``embedding`` column: PyTorch Frame's own
  ``multicategorical`` encoder gathers rows with ``repeat_interleave`` over a symbolic size,
  which ``torch.compile(dynamic=True)`` cannot trace (torch 2.13).
* :func:`hashable`: a column whose every cell pandas can hash (list-like cells as their
  JSON text), for the graph cache's fingerprint.
"""
from __future__ import annotations

import pandas as pd

# where the database's digest needs them (rdl.data sits below rdl.graph)
from rdl.data.cells import LIST_TYPES, hashable, is_list_column  # noqa: F401


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


#: categories of a list column kept as multi-hot positions (the most frequent)
MAX_CATEGORIES = 64


def multi_hot(s: pd.Series, max_categories: int = MAX_CATEGORIES) -> pd.Series:
    """Each cell (a list, or missing) as a 0/1 list over the column's most frequent
    categories (ties in name order), one more position for any other category."""
    cells = s.map(_as_list)
    counts = cells.dropna().explode().dropna().value_counts()
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:max_categories]
    vocab = {c: i for i, c in enumerate(sorted(c for c, _ in ranked))}
    width = len(vocab) + 1

    def row(v):
        out = [0.0] * width
        for c in v or ():
            out[vocab.get(c, width - 1)] = 1.0
        return out
    return cells.map(row)
