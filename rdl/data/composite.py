"""Keys made of several columns (composite keys), declared as the schema lists them.

Warehouses key many tables by several columns: a reading by ``(station, hour)``, a team
season by ``(year, team)``, a line by ``(order_id, line)``. A schema declares such a key as
a list, and a foreign key to it by its columns joined with commas, in the order of the
key it references (YAML takes no list as a mapping's key)::

    weather: {pkey: [origin, time_hour], time: time_hour}
    flights: {time: sched_dep, fkeys: {"origin, time_hour": weather}}

rdl gives each such key one column of its own, named by its columns (``origin,
time_hour``), holding one id per row (:func:`ids`): the columns' values joined with ``|``
(``JFK|2013-01-01 05:00:00``; a ``|`` in a value written ``\\|``), missing where any of
them is. That column is the key
everywhere after: foreign keys match it, predictions and a task's SQL show it. The
columns themselves stay in the table, read as any column (features).

The columns are not joined as the file writes them but as the values they are, written
one way whatever the file (a number ``7`` or ``7.0`` as ``7``, a time as
``2013-01-01 05:00:00``, or ``2013-01-01`` at midnight, text without the spaces ``CHAR(n)``
pads it with), so both sides of a foreign key agree however each file writes them: a
value's id depends on that value alone, never on the rest of its column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.database import DataError

SEP = "|"


def parse(value, at: str) -> tuple[str, list[str]] | None:
    """A key's name and columns when ``value`` (a schema's ``pkey``, or a ``fkeys`` key)
    names several columns (a list, or names joined with commas); None for one column."""
    if isinstance(value, (list, tuple)):
        cols = [str(c).strip() for c in value]
    elif isinstance(value, str) and "," in value:
        cols = [c.strip() for c in value.split(",")]
    else:
        return None
    if len(cols) < 2 or not all(cols) or len(set(cols)) < len(cols):
        raise DataError(f"{at}: key {value!r}: a composite key names two or more different "
                        "columns ([order_id, line]); one column is written alone (line)")
    return ", ".join(cols), cols


def check_arity(fkey: str, parts: dict[str, list[str]], ref_pkey: str,
                ref_parts: dict[str, list[str]], subject: str, ref: str) -> None:
    """A foreign key has as many columns as the key it references."""
    mine, theirs = len(parts.get(fkey, [fkey])), len(ref_parts.get(ref_pkey, [ref_pkey]))
    if mine != theirs:
        raise DataError(
            f"{subject} has {mine} column(s), the primary key {ref_pkey!r} of table {ref!r} "
            f"{theirs}: a foreign key names a column for each column of the key it "
            f"references, in its order (fkeys: {{\"a, b\": {ref}}})")


def add_ids(df: pd.DataFrame, keys: dict[str, list[str]], where) -> None:
    """A column of :func:`ids` in ``df`` for each composite key (name -> its columns);
    ``where(column)`` names the place in an error."""
    for key, cols in keys.items():
        if key in df.columns:
            raise DataError(f"{where(key)}: the file has a column named as the composite key "
                            f"{key!r} of columns {cols}: rename it in the file")
        df[key] = ids(df, cols)


def ids(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    """One id a row: the values of ``cols`` written one way each (the module's docstring)
    and joined with ``|``; missing where any value is."""
    written = [_written(df[c]) for c in cols]
    out = written[0].str.cat(written[1:], sep=SEP)
    return out.where(pd.concat([w.notna() for w in written], axis=1).all(axis=1))


def _written(s: pd.Series) -> pd.Series:
    """Each value of ``s`` as text that depends on the value alone."""
    if pd.api.types.is_datetime64_any_dtype(s):
        text = s.dt.strftime("%Y-%m-%d %H:%M:%S.%f")
        text = text.str.replace(r"\.0{6}$", "", regex=True).str.replace(
            r" 00:00:00$", "", regex=True)
        return text.astype("string").where(s.notna())
    if pd.api.types.is_bool_dtype(s):
        return s.astype("string")
    if pd.api.types.is_numeric_dtype(s):
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        whole = np.isfinite(v) & (v % 1 == 0) & (np.abs(v) < 2 ** 63)
        if pd.api.types.is_integer_dtype(s):
            text = s.astype("string")   # exact, beyond 2**53 too
        else:
            text = pd.Series(np.where(whole, np.where(whole, v, 0).astype("int64").astype(str),
                                      v.astype(str)), index=s.index, dtype="string")
        return text.where(s.notna())
    # a | inside a value is escaped, so that no two pairs of values join to one id
    return s.astype("string").str.strip().str.replace("\\", "\\\\", regex=False).str.replace(
        "|", "\\|", regex=False)
