"""Row numbers a writer put in a table's first column, left out.

pandas' ``to_csv`` writes the frame's index unless told ``index=False``: a first column
with an empty name (``Unnamed: 0`` once read and written again by pandas, ``...1`` by
readr) holding 0, 1, 2, ...; R's ``write.csv`` writes its row names, 1, 2, 3, ..., under
``""``; ``to_parquet`` keeps an unnamed index that is not a plain range as
``__index_level_0__``; ``reset_index()`` makes it a column ``index``. As a feature
such a column is each row's position in the file, an id a model learns by heart (and,
in files written in time order, the time again); as the draft's primary key, noise. It
is left out where the schema does not name it, and the log says so; an R frame's row
names that are not numbers (``mtcars``' models) stay.
"""
from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

#: how writers name an unnamed first column: rdl's name for an empty one, pandas', readr's,
#: R's read.csv's and data.table's names when they read one, pandas' parquet name for an
#: unnamed index, and the names pandas' reset_index() and to_json(orient="table") give a
#: default index
UNNAMED = re.compile(r"unnamed_1|Unnamed: 0|\.\.\.1|X|V1|__index_level_0__|index|level_0")


def without(df: pd.DataFrame, named: list[str], where: str) -> pd.DataFrame:
    """``df`` without its first column where it is unnamed, not one of the ``named``
    columns (the schema's), and holds row numbers: whole numbers from 0 or 1, one more
    each row (each part of a table read from several files starts again), or, under
    parquet's ``__index_level_0__``, any index pandas kept."""
    if not len(df.columns) or not len(df):
        return df
    col = df.columns[0]
    if not UNNAMED.fullmatch(str(col)) or col in named:
        return df
    if col != "__index_level_0__" and not _counts(df[col]):
        return df
    log.warning("%s: its first column %r holds row numbers (a frame's index, written with "
                "it: pandas' to_csv without index=False, R's row names): left out", where, col)
    return without(df.drop(columns=[col]), named, where)   # (R: row names read and written)


def _counts(s: pd.Series) -> bool:
    """Whether ``s`` counts rows: 0 or 1 first, then one more each row, but where it
    starts again at 0 or 1."""
    n = pd.to_numeric(s, errors="coerce")
    if n.isna().any() or not (n % 1 == 0).all():
        return False
    v = n.to_numpy(dtype=np.int64)
    starts = np.r_[True, np.diff(v) != 1]
    return bool(np.isin(v[starts], (0, 1)).all())
