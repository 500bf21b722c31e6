"""Whole numbers that are times since 1970, as event exports write them (GA4's
``event_timestamp`` in microseconds, Mixpanel's ``time`` in seconds, an app's
``created_at`` in milliseconds): read as numbers, they would escape every check of times
(:mod:`rdl.data.leaks`), so the loader stops on them until the schema says times
(``formats: {col: epoch_us}``) or numbers; the draft declares them.

Whole numbers named as dates whose every value is a date written ``yyyymmdd``
(``19970101``: a data archive's ``date``, SAP's ``BUDAT``) are read as those dates: no
number of another kind is a valid date in every row (a date dimension's ``date_key`` is
a key, and stays one)."""
from __future__ import annotations

import pandas as pd

from rdl.data.database import DataError
from rdl.data.names import name_words
from rdl.data.schema import TableSchema
from rdl.data.times import parse_times

#: the numbers of each unit that times since 1970 are, 1990 to 2040 (no two overlap)
EPOCH_RANGES = {u: (631_152_000 * f, 2_208_988_800 * f)
                for u, f in (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9))}
#: words of a column's name that say it holds times
TIME_NAMES = {"at", "ts", "dt", "time", "timestamp", "date", "datetime", "epoch", "when",
              "created", "updated", "modified"}
#: words of a column's name that say it holds days, and words that say it is a key
DATE_NAMES = {"date", "day", "dt", "datum", "fecha"}
KEY_NAMES = {"id", "key", "sk", "no", "nr", "num", "number", "code"}
#: a spreadsheet's serial days of 1990 to 2040 (1990-01-01 is day 32874; a fraction, the time)
EXCEL_RANGE = (32_874, 51_502)


class EpochNumbers(DataError):
    """Columns of numbers that are times since 1970 by their names and sizes; ``units``:
    column -> its unit (``ms``), as ``formats:`` would declare them (``epoch_ms``)."""

    def __init__(self, message: str, units: dict[str, str]):
        super().__init__(message)
        self.units = units


def form_of(unit: str) -> str:
    """How ``formats:`` declares numbers of ``unit`` (``epoch_ms``, ``excel``)."""
    return unit if unit == "excel" else f"epoch_{unit}"


def epoch_unit(name: str, values: pd.Series) -> str | None:
    """The unit (``s``, ``ms``, ``us``, ``ns``) of a column of numbers named as times
    (``created_at``, ``event_timestamp``, ``time``) whose every value is a time of 1990
    to 2040 in it; ``excel`` for one named as days (``order_date``, not a key) whose every
    value is a spreadsheet's serial day of those years (a date cell exported as its
    number); else None."""
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return None
    words = name_words(str(name)) or [str(name).casefold()]
    if not any(w in TIME_NAMES or w.startswith(("timestamp", "datetime")) for w in words):
        return None
    v = values.dropna()
    if not len(v):
        return None
    lo, hi = v.min(), v.max()
    if set(words) & DATE_NAMES and not set(words) & KEY_NAMES and \
            EXCEL_RANGE[0] <= lo and hi < EXCEL_RANGE[1]:
        return "excel"
    return next((u for u, (a, b) in EPOCH_RANGES.items() if a <= lo and hi <= b), None)


def date_numbers(t: TableSchema, df: pd.DataFrame) -> None:
    """Columns of whole numbers named as dates (not keys) whose every value is a date of
    1900-2100 written ``yyyymmdd``, with no stype or form declared, as those dates."""
    for c in df.columns:
        words = set(name_words(str(c))) or {str(c).casefold()}
        if c in t.stypes or c in t.formats or c in (t.pkey, t.time, *t.fkeys) or \
                not words & (TIME_NAMES | DATE_NAMES) or words & KEY_NAMES or \
                not pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c]):
            continue   # (by name and type first: no pass over a column not named so)
        v = df[c].dropna()
        if not len(v) or not v.between(1900_01_01, 2100_12_31).all():
            continue
        try:   # whole numbers, each a date yyyymmdd (times' date keys), or not dates at all
            df[c] = parse_times(df[c], t.where(c), required=False)   # (logs the reading)
        except DataError:
            continue


def epoch_numbers(t: TableSchema, df: pd.DataFrame) -> None:
    """Columns of whole numbers named as times and sized as times since 1970, with no
    stype or form declared, stop the load: read as numbers they would escape the checks
    of times (a fact table's time, a later event), and as a feature a seed would learn
    from a date as a number."""
    units = {c: u for c in df.columns if c not in t.stypes and c not in t.formats
             and c not in (t.pkey, t.time, *t.fkeys, *t.key_columns())
             and (u := epoch_unit(c, df[c]))}
    if not units:
        return
    col, unit = next(iter(units.items()))
    first, last = (pd.to_datetime(df[col].agg(f), unit="D", origin="1899-12-30") if
                   unit == "excel" else pd.to_datetime(df[col].agg(f), unit=unit)
                   for f in ("min", "max"))
    also = f"; also {sorted(set(units) - {col})[:5]}" if len(units) > 1 else ""
    raise EpochNumbers(
        f"{t.where(col)}: holds numbers named as times and sized as " + (
            "a spreadsheet's serial days (a date cell exported as its number)" if unit ==
            "excel" else f"{unit} since 1970") +
        f" ({first:%Y-%m-%d} to {last:%Y-%m-%d} read so{also}): declare "
        f"them times (formats: {{{', '.join(f'{c}: {form_of(u)}' for c, u in units.items())}}}; "
        f"the table's time too: time: {col}) or numbers (stypes: {{{col}: numerical}})", units)
