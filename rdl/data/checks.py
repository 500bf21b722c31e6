"""Checks of raw table columns, shared by rdl's loaders (Kaggle CSVs, folders of files).

Each check raises :class:`~rdl.data.DataError` with a message that names where the
column comes from (``where``, e.g. ``"customers.csv: table 'customer', column 'age'"``,
built by :func:`where`), how many rows are wrong and one bad value, so that a user can
find the rows in the file. Row numbers are 0-based data rows (the header not counted).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.database import DataError


def where(table: str, column: str, file=None) -> str:
    """``"<file>: table 't', column 'c'"`` (without the file if ``None``)."""
    return (f"{file}: " if file is not None else "") + f"table {table!r}, column {column!r}"


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def show(value) -> str:
    """A sample value as the user wrote it (numpy scalars as plain Python ones)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def check_key(keys: pd.Series, where: str) -> None:
    """A primary key must be filled in and unique in every row.

    A missing key would otherwise turn an integer column into floats and cut every row
    that references the key's row off from it, without a word.

    Raises:
        DataError: naming ``where``, the number of rows without a key (and the first
            one), or the number of rows sharing a key, of keys shared, and one of them.
    """
    missing = keys.isna().to_numpy()
    if missing.any():
        first = int(missing.argmax())
        raise DataError(f"{where}: primary key missing in {int(missing.sum())} of "
                        f"{_rows(len(keys))} (first: row {first}); every row needs a key")
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        raise DataError(f"{where}: primary key duplicated: {_rows(int(dup.sum()))} share "
                        f"{keys[dup].nunique()} values, e.g. {show(keys[dup].iloc[0])}")


def _bad(parsed: pd.Series, raw: pd.Series) -> pd.Series:
    """Rows with a value that did not parse (missing values are not bad)."""
    return parsed.isna() & raw.notna()


def _fail(raw: pd.Series, bad: pd.Series, where: str, expected: str) -> None:
    if bad.any():
        first = int(bad.to_numpy().argmax())
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} values are not {expected}, "
                        f"e.g. {show(raw.iloc[first])} (row {first})")


def parse_dates(raw: pd.Series, where: str, format: str | None = "%Y-%m-%d") -> pd.Series:
    """``raw`` (text) as ``datetime64[ns]``; missing values stay ``NaT``.

    Raises:
        DataError: some values are not dates in ``format`` (``None``: any pandas parses);
            names ``where``, the count and a sample.
    """
    if pd.api.types.is_datetime64_any_dtype(raw):
        return raw.astype("datetime64[ns]")
    parsed = pd.to_datetime(raw, format=format, errors="coerce")
    _fail(raw, _bad(parsed, raw), where, f"dates ({format or 'any format'})")
    return parsed.astype("datetime64[ns]")


def parse_numbers(raw: pd.Series, where: str, integer: bool = False) -> pd.Series:
    """``raw`` (text) as numbers: ``float64``, or with ``integer`` ``int64`` (``Int64``
    where values are missing); missing values stay missing.

    Raises:
        DataError: some values are not numbers (with ``integer``: not whole numbers);
            names ``where``, the count and a sample.
    """
    parsed = pd.to_numeric(raw, errors="coerce")
    bad = _bad(parsed, raw)
    _fail(raw, bad, where, "numbers")
    if not integer:
        return parsed.astype("float64")
    _fail(raw, parsed.notna() & (parsed % 1 != 0), where, "whole numbers")
    return parsed.astype("Int64" if parsed.isna().any() else "int64")


def check_not_empty(df: pd.DataFrame, where: str) -> None:
    """A table needs rows: an empty one would fail later in unrelated places (no time range,
    no seeds).

    Raises:
        DataError: ``"<where>: no rows"``.
    """
    if len(df) == 0:
        raise DataError(f"{where}: no rows (the table is empty)")
