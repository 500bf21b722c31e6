"""How rdl's data errors name a place and the rows at fault: ``file: table 't', column
'c'`` (:func:`where`), ``rows 3, 7, 9, ...`` (:func:`rows`), a value as the file wrote it
(:func:`show`), and how a schema declares a column's stype (``_stypes``); shared by the
checks of raw columns (:mod:`rdl.data.checks`) and of times (:mod:`rdl.data.times`)."""
from __future__ import annotations

import re

import numpy as np


def where(table: str, column: str, file=None) -> str:
    """``"<file>: table 't', column 'c'"`` (without the file if ``None``)."""
    return (f"{file}: " if file is not None else "") + f"table {table!r}, column {column!r}"


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def rows(bad, n: int = 3) -> str:
    """``rows 3, 7, 9, ...``: the first rows (0-based data rows) where ``bad`` is true."""
    at = np.flatnonzero(np.asarray(bad, dtype=bool))
    return ("row " if len(at) == 1 else "rows ") + ", ".join(map(str, at[:n])) + (
        ", ..." if len(at) > n else "")


def show(value) -> str:
    """A sample value as the user wrote it (numpy scalars as plain Python ones)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _stypes(where: str, stype: str = "numerical") -> str:
    """How a schema declares the stype of the column ``where`` names."""
    return (f"stypes: {{{_column(where)}: {stype}}} in the schema; "
            "stypes: numerical, categorical, text_embedded, timestamp, or null to drop it")


def _column(where: str) -> str:
    """The column ``where`` names (``<column>`` if none)."""
    col = re.search(r"column '([^']*)'", where)
    return col.group(1) if col else "<column>"
