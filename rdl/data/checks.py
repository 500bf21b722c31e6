"""Checks of raw table columns, shared by rdl's loaders (Kaggle CSVs, folders of files).

Each check raises :class:`~rdl.data.DataError` with a message that names where the
column comes from (``where``, e.g. ``"customers.csv: table 'customer', column 'age'"``,
built by :func:`where`), how many rows are wrong and one bad value, so that a user can
find the rows in the file. Row numbers are 0-based data rows (the header not counted).
"""
from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.messages import _rows, _stypes, rows, show
from rdl.data.names import name_words
from rdl.data.numbers import written_numbers
from rdl.data.times import looks_like_times

log = logging.getLogger(__name__)

#: the largest magnitude a feature may have: PyTorch Frame's tensors are float32
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: integers beyond this lose digits as float64: such ids stay text (as the file wrote them)
EXACT_FLOAT = 2 ** 53
_PADDED = re.compile(r"^-?0\d")                               # 0042: a code, not a number


def check_key(keys: pd.Series, where: str, composite: bool = False) -> None:
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
        shared = keys[dup]
        examples = ", ".join(f"{show(v)} ({rows(keys.to_numpy() == v, 2)})"
                             for v in shared.drop_duplicates().iloc[:3])
        raise DataError(f"{where}: primary key duplicated: {_rows(int(dup.sum()))} share "
                        f"{shared.nunique()} values, e.g. {examples}. A primary key names one "
                        "row: " + ("those rows agree in every column of the key: add the "
                                   "column that tells them apart to it, or drop the repeats"
                                   if composite else "if the table's key is made of several "
                                   "columns, declare them all (pkey: [order_id, line])")
                        + ", or declare no pkey (a table of facts)")


def without_repeats(df: pd.DataFrame, key: str, where: str) -> pd.DataFrame:
    """``df`` without the rows that repeat another in every column where its key
    ``key`` repeats (exports of overlapping days, parts written twice): the same row, not
    two rows with one key, which :func:`check_key` stops on. A warning counts them."""
    if not df[key].duplicated().any():
        return df
    again = df.duplicated(keep="first").to_numpy()
    if again.any():
        log.warning("%s: %d rows repeat another row in every column (overlapping exports?): "
                    "read once (%s)", where, int(again.sum()), rows(again))
        df = df[~again].reset_index(drop=True)
    return df


class Infinite(DataError):
    """A column's values a model cannot take (:func:`check_finite`); ``words``: how a
    text file wrote its infinite ones (``inf``, ``Infinity``), which ``missing:`` can
    declare missing (empty where the file writes nothing: numbers too large)."""

    def __init__(self, message: str, count: int, words: list[str]):
        super().__init__(message)
        self.count, self.words = count, words


def check_finite(values: pd.Series, where: str, written: list[str] = ()) -> None:
    """Numbers a model can take: no infinity (``inf``, or a value too large for float64
    that a file wrote, ``1e400``) and none beyond float32, which PyTorch Frame's tensors
    use (it would make them infinite). Left in, one such value makes a column's mean and
    scale infinite and a model's outputs NaN, and training goes on without a word.
    ``written``: the words a text file wrote for the infinite ones (:func:`numbers`).

    Raises:
        Infinite: naming ``where``, how many values, a few rows and what to do.
    """
    if not pd.api.types.is_float_dtype(values):
        return
    v = values.to_numpy(dtype="float64", na_value=np.nan)
    bad = np.isinf(v) | (np.abs(np.nan_to_num(v)) > FLOAT32_MAX)
    if bad.any():
        words = [w for w in written if not re.search(r"\d", w)]   # (not 1e400)
        declare = f", declare them missing (missing: [{', '.join(words)}])" if words else ""
        raise Infinite(f"{where}: {int(bad.sum())} of {len(v)} values are infinite or beyond "
                       f"float32 (±3.4e38), e.g. {show(v[bad][0])} ({rows(bad)}); write them "
                       f"empty (missing) or as finite numbers{declare}, or drop the column "
                       "from the schema's stypes (column: null)", int(bad.sum()), words)


def _bad(parsed: pd.Series, raw: pd.Series) -> pd.Series:
    """Rows with a value that did not parse (missing values are not bad)."""
    return parsed.isna() & raw.notna()


def _fail(raw: pd.Series, bad: pd.Series, where: str, expected: str, advice: str = "") -> None:
    if bad.any():
        first = int(bad.to_numpy().argmax())
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} values are not {expected}, "
                        f"e.g. {show(raw.iloc[first])} (row {first}){advice}")


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


def parse_numbers(raw: pd.Series, where: str, integer: bool = False,
                  schema: bool = False) -> pd.Series:
    """``raw`` (text) as numbers: ``float64``, or with ``integer`` ``int64`` (``Int64``
    where values are missing); missing values stay missing. ``schema``: the column's stype
    is a schema's, which the error then says how to change.

    Raises:
        DataError: some values are not numbers (with ``integer``: not whole numbers);
            names ``where``, the count and a sample.
    """
    parsed = pd.to_numeric(raw, errors="coerce")
    if _bad(parsed, raw).any():
        found = written_numbers(raw.dropna().astype(str).str.strip())
        if found is not None:
            log.info("%s: numbers with %s (e.g. %r)", where, found[1], found[2])
            parsed = found[0].reindex(raw.index)
    bad = _bad(parsed, raw)
    _fail(raw, bad, where, "numbers", (
        "; write them empty if they mean missing (or name the word in the schema's missing: "
        f"list), or declare another stype ({_stypes(where, 'categorical')})") if schema else "")
    if not integer:
        return parsed.astype("float64")
    _fail(raw, parsed.notna() & (parsed % 1 != 0), where, "whole numbers")
    return parsed.astype("Int64" if parsed.isna().any() else "int64")


def numbers(df: pd.DataFrame, where, keep: set[str] = frozenset(),
            keys: set[str] = frozenset(), infinite: dict | None = None) -> pd.DataFrame:
    """``df`` (text columns) with numbers for the columns, but those in ``keep``, whose
    every value is one: ``int64`` where all are whole and present, else ``float64``.
    Zero-padded codes (``0042``) and whole numbers that float64 cannot hold exactly (ids
    of many digits) stay text, as the file wrote them; numbers as exports format them
    (``1,234,567``, ``4752,32``, ``$12.50``, ``12.5%``: :mod:`rdl.data.numbers`) are numbers,
    but in ``keys``, where only thousands separators are (``1,20`` and ``1,2`` are two
    keys, not one number). ``where(col)``: how messages name a column; ``infinite``, where
    given, gets each column's words for its infinite values (``inf``), as written."""
    for col in df.columns:
        if col in keep:
            continue
        values = df[col].dropna()
        if not len(values) or values.str.match(_PADDED).any():
            continue
        num = pd.to_numeric(values, errors="coerce")
        if num.isna().any():
            found = written_numbers(values, num)
            if found is not None and col in keys and found[1] != "thousands separators":
                continue   # ids, as the file wrote them
            if found is None:
                _mixed(values, num, where(col))
                continue
            num = found[0]
            log.info("%s: numbers with %s (e.g. %r)", where(col), found[1], found[2])
        f = num.astype("float64")
        finite = np.isfinite(f)
        if infinite is not None and not finite[f.notna()].all():
            infinite[col] = sorted(set(values[~finite & f.notna()].str.strip()))
        whole = bool(finite.all()) and bool((f % 1 == 0).all())
        complete = len(values) == len(df)
        if whole and complete and bool(num.between(-2 ** 63, 2 ** 63 - 1).all()):
            df[col] = num.astype("int64").reindex(df.index)
        elif whole and bool((f.abs() > EXACT_FLOAT).any()) and bool(
                values.str.fullmatch(r"[-+]?\d+").all()):
            continue  # ids of more digits than float64 (or int64) holds: kept as text
        else:
            df[col] = f.reindex(df.index)
    return df


def _mixed(values: pd.Series, num: pd.Series, where: str) -> None:
    """Warns of a column of numbers with a few values that are not (read as text)."""
    text = num.isna()
    if text.mean() < 0.5:
        log.warning("%s: %d of %d values are not numbers (e.g. %r): the column is read as "
                    "text (categories); write them empty if they mean missing, or declare "
                    "the column's stype", where, int(text.sum()), len(values),
                    values[text].iloc[0])


#: words that mean missing where a column's other values are numbers or times (R's NA;
#: a spreadsheet's failed formulas, as its CSV export writes them), and are text elsewhere
#: (NA: Namibia)
MISSING_WORDS = ("NA", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#NULL!", "#ERROR!",
                 "N/A", "n/a", "None", "none", "(null)", "#N/A N/A",   # reports, str(None)
                 "-", "--", "?", ".")   # reports' dashes, UCI's '?', SAS's and Stata's '.'


def missing_words(df: pd.DataFrame, where, declared=()) -> pd.DataFrame:
    """``df`` (text columns) with the ``declared`` words (the schema's ``missing:``) missing
    everywhere, and :data:`MISSING_WORDS` missing in each column whose other values are all
    numbers or all times. ``where(col)``: how messages name a column."""
    if declared:
        df = df.mask(df.isin(list(declared)))
    for col in df.columns:
        s = df[col]
        if not (pd.api.types.is_string_dtype(s) or s.dtype == object):
            continue
        words = s.isin(MISSING_WORDS)
        rest = s[~words].dropna()
        if not words.any() or not len(rest):
            continue
        text = rest.astype(str).str.strip()
        if pd.to_numeric(text.str.replace(",", "", regex=False), errors="coerce").notna().all() \
                or looks_like_times(rest):
            log.info("%s: %d values %s read as missing (the others are numbers or times)",
                     where(col), int(words.sum()), sorted(set(s[words])))
            df[col] = s.mask(words)
    return df


UNTIMED = ("fail", "drop")


def untimed(schema: dict, where: str) -> str:
    """A schema's ``untimed:``: what becomes of a timed table's rows without a time:
    ``fail`` (the default: the loader stops, naming them) or ``drop`` (dropped, counted
    in a warning, as RelBench drops them; references to them then dangle: ``dangling:``)."""
    policy = str(schema.get("untimed") or "fail")
    if policy not in UNTIMED:
        raise DataError(f"{where}: untimed {policy!r}: expected one of {list(UNTIMED)} (what "
                        "becomes of a timed table's rows without a time)")
    return policy


def without_untimed(df: pd.DataFrame, time: str | None, policy: str, where) -> pd.DataFrame:
    """``df`` without its rows whose ``time`` (as the file writes it: a date, a date key,
    a period number) is missing, where the schema says ``untimed: drop``; a warning says
    how many (``where(column)`` names the place)."""
    if policy != "drop" or time is None or time not in df.columns:
        return df
    missing = df[time].isna().to_numpy()
    if not missing.any():
        return df
    log.warning("%s: %d of %d rows have no time: dropped (untimed: drop; %s)", where(time),
                int(missing.sum()), len(df), rows(missing))
    return df[~missing].reset_index(drop=True)


def check_not_empty(df: pd.DataFrame, where: str) -> None:
    """A table needs rows: an empty one would fail later in unrelated places (no time range,
    no seeds).

    Raises:
        DataError: ``"<where>: no rows"``.
    """
    if len(df) == 0:
        raise DataError(f"{where}: no rows (the table is empty)")


def all_bool(s: pd.Series) -> bool:
    """Whether every value of an object column is a bool (the first decides cheaply)."""
    v = s.dropna()
    return len(v) > 0 and isinstance(v.iloc[0], (bool, np.bool_)) and v.map(type).isin(
        (bool, np.bool_)).all()


def mask_missing(df: pd.DataFrame, words) -> pd.DataFrame:
    """``df`` (typed columns: a parquet or JSON file's) with the schema's missing ``words``
    missing: values equal to one, and in columns of times, times equal to one read as a
    time (``missing: ['9999-12-31']``, a placeholder for 'never')."""
    out = df.mask(df.isin(list(words)))
    times = [t for t in pd.to_datetime(pd.Series(list(words), dtype=object), errors="coerce",
                                       format="ISO8601") if not pd.isna(t)]
    for col in out.columns:
        if times and pd.api.types.is_datetime64_any_dtype(out[col]) \
                and getattr(out[col].dt, "tz", None) is None:
            out[col] = out[col].mask(out[col].isin(times))
    return out


def is_identifier(values: pd.Series) -> bool:
    """Whether a column is an identifier: of 1,000 values or more, 99 % distinct and each
    one word (a UUID, an email, a SKU, a customer's code), a vector of its own for each
    row as a feature, which a model learns by heart and which says nothing of a new row."""
    v = values.dropna()
    return len(v) >= 1000 and v.nunique() >= 0.99 * len(v) and \
        not v.astype(str).str.contains(r"\s").any()


def numbered(col: str, values: pd.Series) -> bool:
    """Whether a column of numbers is named as one that names a row, no quantity
    (``ss_ticket_number``, ``order_no``, ``line_id``)."""
    words = name_words(col)
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) \
        and bool(words) and words[-1] in ("number", "num", "no", "nr", "id", "sk", "key")


def identifiers(df: pd.DataFrame, skip=()) -> dict[str, str]:
    """The draft's stypes for ``df``'s text identifiers (:func:`is_identifier`) but ``skip``
    (its keys and times): column -> why it is dropped."""
    return {c: f"every value distinct and one word (e.g. {df[c].dropna().iloc[0]!r}): an "
               "identifier, which a model learns by heart" for c in df.columns
            if c not in skip and (pd.api.types.is_string_dtype(df[c]) or df[c].dtype == object)
            and is_identifier(df[c])}
