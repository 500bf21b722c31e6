"""Digests of a database's rows: what rdl's caches are keyed by.

:func:`column_digest` hashes a column's values in order; :func:`rows_digest` every row,
key and column of a :class:`~rdl.data.Database`. Hashing every row takes seconds at
scale (about 0.7 s per 4M fact rows here), so a database that rdl saves in its cache
keeps its digest beside its rows (``digest.json``, written with them,
:func:`rdl.data.stored.save`), and one loaded from there hands it on
(:meth:`~rdl.data.Database.digest`): a restart hashes no row.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from rdl.data.cells import hashable

#: bump when what :func:`rows_digest` hashes changes: stored digests of older ones unused
ROWS_VERSION = 1


def column_digest(s: pd.Series) -> bytes:
    """A digest of a column's values in order (not its index). Numbers, times and booleans
    are hashed as their bytes (a masked array's with its mask; the values under the mask
    zeroed), five times faster than pandas' per-row hash, which the rest (text, lists,
    objects: :func:`~rdl.data.cells.hashable`) still go through. Equal values, equal
    digest."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "biufmM":
        return _bytes_digest(s.to_numpy())
    masked = (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)
    if isinstance(s.array, masked):
        mask = s.isna().to_numpy()
        kind = s.dtype.numpy_dtype
        return _bytes_digest(s.to_numpy(dtype=kind, na_value=kind.type(0))) + _bytes_digest(mask)
    return hashlib.sha1(pd.util.hash_pandas_object(hashable(s), index=False)
                        .to_numpy().tobytes()).digest()


def _bytes_digest(a: np.ndarray) -> bytes:
    return hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).digest()


def shape(db) -> list:
    """Each table's name, keys, columns, dtypes and row count: what a stored digest is
    checked against before it is used (a database changed since has another shape)."""
    return json.loads(json.dumps(  # as digest.json keeps it
        [[name, tab.meta(), *tab.layout()] for name, tab in sorted(db.tables.items())]
        + [[name, len(keys), str(keys.dtype)] for name, keys in sorted(db.keys.items())]))


def rows_digest(db) -> str:
    """A digest of every row of every table of ``db``, its keys and columns, and the
    files' ids (:attr:`~rdl.data.Database.keys`)."""
    h = hashlib.sha1(repr((ROWS_VERSION, shape(db))).encode())
    for name, tab in sorted(db.tables.items()):
        for c in tab.df.columns:
            h.update(column_digest(tab.df[c]))
    for name, keys in sorted(db.keys.items()):
        h.update(name.encode())
        h.update(column_digest(pd.Series(keys)))
    return h.hexdigest()[:16]
