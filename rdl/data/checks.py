"""Checks of raw table columns, shared by rdl's loaders (Kaggle CSVs, folders of files).

Each check raises :class:`~rdl.data.DataError` with a message that names where the
column comes from (``where``, e.g. ``"customers.csv: table 'customer', column 'age'"``,
built by :func:`where`), how many rows are wrong and one bad value, so that a user can
find the rows in the file. Row numbers are 0-based data rows (the header not counted).
"""
from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.numbers import written_numbers

log = logging.getLogger(__name__)

#: the largest magnitude a feature may have: PyTorch Frame's tensors are float32
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: the times pandas holds at nanosecond resolution, which rdl's times use
TIME_MIN, TIME_MAX = pd.Timestamp.min.ceil("D"), pd.Timestamp.max.floor("D")
#: the text forms of times read, tried in order (pandas parses them); day-first and
#: month-first forms are both tried and must not both fit a column
TIME_FORMATS = ("ISO8601", "%Y/%m/%d", "%Y/%m/%d %H:%M:%S", "%m/%d/%Y", "%d/%m/%Y",
                "%m/%d/%Y %H:%M:%S", "%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%d/%m/%Y %H:%M",
                "%m/%d/%y", "%d/%m/%y", "%d.%m.%Y", "%d.%m.%Y %H:%M:%S",
                # Oracle's defaults: TIMESTAMP (05-JAN-23 10.00.00.000000 AM), and DATE
                # with NLS_DATE_FORMAT DD-MON-YYYY HH24:MI:SS
                "%d-%b-%y %I.%M.%S.%f %p", "%d-%b-%Y %H:%M:%S")
_LOOKS_LIKE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"
                              r"(Z|[+-]\d{2}(:?\d{2})?)?$")
#: integers beyond this lose digits as float64: such ids stay text (as the file wrote them)
EXACT_FLOAT = 2 ** 53
_PADDED = re.compile(r"^-?0\d")                               # 0042: a code, not a number
_OFFSET = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})$")


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


def check_finite(values: pd.Series, where: str) -> None:
    """Numbers a model can take: no infinity (``inf``, or a value too large for float64
    that a file wrote, ``1e400``) and none beyond float32, which PyTorch Frame's tensors
    use (it would make them infinite). Left in, one such value makes a column's mean and
    scale infinite and a model's outputs NaN, and training goes on without a word.

    Raises:
        DataError: naming ``where``, how many values, a few rows and what to do.
    """
    if not pd.api.types.is_float_dtype(values):
        return
    v = values.to_numpy(dtype="float64", na_value=np.nan)
    bad = np.isinf(v) | (np.abs(np.nan_to_num(v)) > FLOAT32_MAX)
    if bad.any():
        raise DataError(f"{where}: {int(bad.sum())} of {len(v)} values are infinite or beyond "
                        f"float32 (±3.4e38), e.g. {show(v[bad][0])} ({rows(bad)}); write them "
                        "empty (missing) or as finite numbers, or drop the column from the "
                        "schema's stypes (column: null)")


def looks_like_times(values: pd.Series, n: int = 1000) -> bool:
    """Whether a text column holds times: 90 % of its first ``n`` present values read as
    times (as PyTorch Frame's stype inference would take it, which then fails on the rest
    only when the graph is built). Text of digits only is no time (ids, amounts)."""
    if not (pd.api.types.is_string_dtype(values) or values.dtype == object):
        return False
    head = values.dropna().iloc[:n].astype(str).str.strip()
    if not len(head) or not (head.str.contains(r"\D").mean() >= 0.9
                             and head.str.contains(r"\d").mean() >= 0.9):
        return False   # words, or digits only
    if pd.to_numeric(head, errors="coerce").notna().mean() >= 0.9 or \
            written_numbers(head) is not None:
        return False   # numbers (-5, 1.5, 1e3, 1,234.5, 4752,32): pandas would read "-5" as
                       # the year -5, and "4752,32" as a day of the year 4752
    if head.str.match(_LOOKS_LIKE_TIME).mean() >= 0.9:
        return True
    return _read_times(head)[0].notna().mean() >= 0.9


def parse_times(raw: pd.Series, where: str, required: bool = True) -> pd.Series:
    """``raw`` (times of any unit or zone, dates, or text as :data:`TIME_FORMATS`) as
    ``datetime64[ns]`` in UTC without a zone; text without an offset is taken as UTC.

    Raises:
        DataError: values that are numbers (epoch or Excel serial numbers: their unit is
            anyone's guess), text that is no time (or could be day- or month-first), times
            outside :data:`TIME_MIN` .. :data:`TIME_MAX`, or (``required``) missing ones;
            naming ``where``, how many rows, a few of them and what to do.
    """
    s = raw
    if pd.api.types.is_bool_dtype(s) or (pd.api.types.is_numeric_dtype(s)
                                         and not pd.api.types.is_datetime64_any_dtype(s)):
        s = _date_keys(s, where)
    elif not pd.api.types.is_datetime64_any_dtype(s):
        s = _parse_text(s, where)
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    outside = ((s < TIME_MIN) | (s > TIME_MAX)).to_numpy(dtype=bool)
    if outside.any():
        raise DataError(f"{where}: {int(outside.sum())} of {len(s)} times are outside the "
                        f"years {TIME_MIN.year + 1} to {TIME_MAX.year - 1} that rdl's times hold, "
                        f"e.g. {s[outside].iloc[0]} ({rows(outside)}); a placeholder such as "
                        "9999-12-31 for 'never' or 0001-01-01 for 'unknown'? Write those empty "
                        + ("and drop the rows that have no time" if required
                           else "(missing)"))
    missing = s.isna().to_numpy()
    if required and missing.any():
        raise DataError(f"{where}: time missing in {int(missing.sum())} of {_rows(len(s))} "
                        f"({rows(missing)}); a timed table needs a time on every row")
    return s.astype("datetime64[ns]")


def _date_keys(s: pd.Series, where: str) -> pd.Series:
    """Numbers in a time column: a warehouse's date keys (20240131) where every one is a
    date written yyyymmdd; else (epoch seconds? Excel serial days?) an error."""
    v = s.dropna()
    if len(v) and (v % 1 == 0).all() and v.between(1000_01_01, 9999_12_31).all():
        parsed = pd.to_datetime(v.astype("int64").astype(str), format="%Y%m%d",
                                errors="coerce")
        if parsed.notna().all():
            log.info("%s: numbers read as dates written yyyymmdd (e.g. %s)", where,
                     show(v.iloc[0]))
            return parsed.reindex(s.index)
    _not_numbers(s, s.notna().to_numpy(), where)
    return pd.Series(pd.NaT, index=s.index, dtype="datetime64[ns]")


def _not_numbers(values: pd.Series, numbers, where: str) -> None:
    """Raises if any of ``numbers`` (a mask of ``values``) is set: times written as numbers."""
    if numbers.any():
        raise DataError(f"{where}: {int(numbers.sum())} of {len(values)} values are numbers, "
                        f"not times, e.g. {show(values[numbers].iloc[0])} ({rows(numbers)}): "
                        "epoch seconds? Excel serial days? Their unit is anyone's guess: "
                        "write them as ISO 8601 times (2024-01-31 or 2024-01-31 12:00:00), "
                        "or, for the table's time, declare the unit of numbers since 1970 "
                        f"(time: {{column: {_column(where)}, epoch: s}}, or ms, us, ns); "
                        f"if the column is no time, declare its stype ({_stypes(where)})")


def _read_times(text: pd.Series) -> tuple[pd.Series, list[str]]:
    """``text`` as UTC times in the first of :data:`TIME_FORMATS` (then any pandas infers
    from the first value) that reads every value, else the one that reads most; and the
    formats that read every value."""
    best, fits = None, []
    for fmt in (*TIME_FORMATS, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # "could not infer format": the NaT say it
            parsed = pd.to_datetime(text, format=fmt, errors="coerce", utc=True)
        if parsed.notna().all():
            if not fits:
                best = parsed
            fits.append(fmt or "inferred")
            if fmt == "ISO8601":
                break
        elif not fits and (best is None or parsed.notna().sum() > best.notna().sum()):
            best = parsed
    return best, fits


def _parse_text(raw: pd.Series, where: str) -> pd.Series:
    """Text (or dates) as times in UTC: the first of :data:`TIME_FORMATS` that reads every
    value; else the one that reads most, and the rest are reported."""
    text = raw.dropna().astype(str).str.strip()
    if len(text) and pd.to_numeric(text, errors="coerce").notna().all() and not \
            text.str.fullmatch(r"\d{4}").all():   # numbers, not years: no ISO 8601 time
        return _date_keys(pd.to_numeric(raw, errors="coerce"), where)
    best, fits = _read_times(text)
    if {"%m/%d", "%d/%m"} <= {fmt[:5] for fmt in fits}:
        raise DataError(f"{where}: times such as {text.iloc[0]!r} read both as month/day/year "
                        "and as day/month/year; write them as ISO 8601 (2024-01-31)")
    bad = best.isna()
    if bad.any():
        mask = np.zeros(len(raw), dtype=bool)
        mask[raw.index.get_indexer(text.index[bad])] = True
        if pd.to_numeric(text, errors="coerce").notna().all():   # numbers, all of them
            return _date_keys(pd.to_numeric(raw, errors="coerce"), where)
        if pd.to_numeric(text[bad], errors="coerce").notna().all():
            _not_numbers(pd.to_numeric(raw.where(mask), errors="coerce"), mask, where)
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} times do not parse as dates "
                        f"(such as 2024-01-31 or 2024-01-31 12:00:00), e.g. {text[bad].iloc[0]!r} "
                        f"({rows(mask)}); correct them or write them empty, or if the column "
                        f"is no time, declare its stype ({_stypes(where, 'categorical')})")
    if fits and fits[0] == "ISO8601":
        offset = text.str.contains(_OFFSET)
        if offset.any() and not offset.all():
            log.warning("%s: %d of %d times have no UTC offset (e.g. %r) and others do: those "
                        "without are taken as UTC", where, int((~offset).sum()), len(text),
                        text[~offset].iloc[0])
    return best.reindex(raw.index)


def _stypes(where: str, stype: str = "numerical") -> str:
    """How a schema declares the stype of the column ``where`` names."""
    return (f"stypes: {{{_column(where)}: {stype}}} in the schema; "
            "stypes: numerical, categorical, text_embedded, timestamp, or null to drop it")


def _column(where: str) -> str:
    """The column ``where`` names (``<column>`` if none)."""
    col = re.search(r"column '([^']*)'", where)
    return col.group(1) if col else "<column>"


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
            keys: set[str] = frozenset()) -> pd.DataFrame:
    """``df`` (text columns) with numbers for the columns, but those in ``keep``, whose
    every value is one: ``int64`` where all are whole and present, else ``float64``.
    Zero-padded codes (``0042``) and whole numbers that float64 cannot hold exactly (ids
    of many digits) stay text, as the file wrote them; numbers as exports format them
    (``1,234,567``, ``4752,32``, ``$12.50``, ``12.5%``: :mod:`rdl.data.numbers`) are numbers,
    but in ``keys``, where only thousands separators are (``1,20`` and ``1,2`` are two
    keys, not one number). ``where(col)``: how messages name a column."""
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
        whole = bool(np.isfinite(f).all()) and bool((f % 1 == 0).all())
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


#: words that mean missing where a column's other values are numbers or times (R's NA),
#: and are text elsewhere (NA: Namibia)
MISSING_WORDS = ("NA",)


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


def check_not_empty(df: pd.DataFrame, where: str) -> None:
    """A table needs rows: an empty one would fail later in unrelated places (no time range,
    no seeds).

    Raises:
        DataError: ``"<where>: no rows"``.
    """
    if len(df) == 0:
        raise DataError(f"{where}: no rows (the table is empty)")
