"""Times as files write them (:func:`parse_times`): text in the forms databases,
warehouses and spreadsheets export (:data:`TIME_FORMATS`), date keys (``20240131``), and
the checks every time column gets; :func:`looks_like_times` says whether a text column is
one. The other checks of raw columns are in :mod:`rdl.data.checks`.

A day and a month written as numbers read either way (``01.02.2023``): a column is read in
the one order that reads all its values, and stops the load where both do (a dotted date,
as Germany and Russia write it, is day first). Nothing is guessed from the first value.
"""
from __future__ import annotations

import datetime
import logging
import re

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data import month_names, period_text
from rdl.data.clocks import CLOCK
from rdl.data.forms import INFERRED, TIME_MAX, TIME_MIN, declared, parse
from rdl.data.messages import _column, _rows, _stypes, rows, show
from rdl.data.numbers import written_numbers

log = logging.getLogger("rdl.data.checks")   # the checks' messages, in one place

def _week_day(m: re.Match) -> str:
    """An ISO week's day as its date (2024-W05-3: 2024-01-31); as written where there is
    no such week (2023-W53-1), for the times' error to name."""
    try:
        return datetime.date.fromisocalendar(*map(int, m.groups())).isoformat()
    except ValueError:
        return m.group(0)


#: dates with numbers for months, each with each of the clock times after it
_DATES = ("%Y/%m/%d", "%m/%d/%Y", "%d/%m/%Y", "%m/%d/%y", "%d/%m/%y", "%m-%d-%Y", "%d-%m-%Y",
          "%d.%m.%Y", "%d.%m.%y")
_CLOCKS = ("", " %H:%M:%S", " %H:%M", " %H:%M:%S.%f", " %I:%M:%S %p", " %I:%M %p",
           " %I:%M:%S.%f %p",          # SQL Server's 12-hour form with milliseconds
           " %H.%M.%S", " %H.%M")      # dotted clocks (Finland, Denmark, Italy)
#: the text forms of times read, tried in order (pandas parses them); day-first and
#: month-first forms are both tried and must not both fit a column
TIME_FORMATS = ("ISO8601", *(d + c for d in _DATES for c in _CLOCKS),
                # Oracle's defaults: TIMESTAMP (05-JAN-23 10.00.00.000000 AM), and DATE
                # with NLS_DATE_FORMAT DD-MON-YYYY HH24:MI:SS
                "%d-%b-%y %I.%M.%S.%f %p", "%d-%b-%Y %H:%M:%S",
                "%Y-%m-%d-%H.%M.%S.%f",     # Db2's TIMESTAMP as its exports write it
                "%d%b%Y:%H:%M:%S",          # SAS's DATETIME20. (05JAN2023:13:45:00)
                "%Y-%m-%d %H.%M.%S")
_DAY_MONTH = re.compile(r"\d{1,2}[/.\-]\d{1,2}[/.\-]\d")
#: numbers that are times: a warehouse's date keys, with the clock after them or not
_DIGITS = (("%Y%m%d", 1000_01_01, 9999_12_31),
           ("%Y%m%d%H%M", 1900_01_01_0000, 2100_12_31_2359),
           ("%Y%m%d%H%M%S", 1900_01_01_000000, 2100_12_31_235959))
_HEAD = 1000   # values a form is tried on before the whole column
_LOOKS_LIKE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"
                              r"(Z|[+-]\d{2}(:?\d{2})?)?$")
#: what a time writes beyond one number: two numbers apart, a date key's digits, a month's name
_TWO_NUMBERS = re.compile(r"\d\D+\d|\d{6}|(?i:\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|"
                          r"nov|dec)[a-z]*\b)")
#: what writes a date (a year, not an offset's +0100; a day, a month and a year; a date
#: key's digits; a month's name): a time without one is a time of day, dated today by pandas
_DATE_PART = re.compile(r"(?<![+\-\d:])\d{4}(?!\d)|\d{6}|\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2}|"
                        r"(?i:\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b)")
#: a span of times of day (opening hours, a shift: 09:00-17:00), which pandas would read as
#: a time today at an offset
_HOURS = re.compile(rf"{CLOCK.pattern}\s*[-–]\s*{CLOCK.pattern}")
_OFFSET = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})$")
_UTC = re.compile(r"\s*(?:UTC|GMT)$")           # BigQuery: 2023-01-05 13:45:00 UTC
#: forms written around a time that pandas reads once rewritten (:func:`_rewritten`): a
#: pattern, what it becomes, and what a value must hold to be tried (text, or a pattern)
_REWRITES = (
    # JavaScript's Date.toString(): Wed Jan 31 2024 10:00:00 GMT+0100 (Central European ...)
    (re.compile(r"^[A-Z][a-z]{2} (.+?) GMT([+-]\d{4})(?: \(.*\))?$"), r"\1 \2", "GMT"),
    # Go's time.String(): 2024-01-31 10:00:00 +0000 UTC (m=+0.0001, a clock's reading)
    (re.compile(r"( [+-]\d{4}) [A-Z]{2,5}(?: m=[+-][\d.]+)?$"), r"\1", " "),
    (_UTC, "+00:00", "U"),   # (GMT too: the only letters before the end, checked first)
    # 10:00AM, 10:00 a.m.: an hour of twelve without a blank, or dotted
    (re.compile(r"(?<=\d)\s*([AaPp])\.?\s?[Mm]\.?$"), r" \1M", None),
    # months named in another language (31 janv. 2024): as English names them
    (month_names.WRITTEN, month_names.english, month_names.FOREIGN),
    # an ISO week's day (2024-W05-3, strftime's %G-W%V-%u): its date
    (re.compile(r"^(\d{4})-?W(\d{2})-?([1-7])(?=$|[ T])"), _week_day, "W"))
_ZONE_NAME = re.compile(r"\s[A-Z]{3,5}$")        # 2023-01-05 13:45:00 EST
#: MySQL's "zero" date, its dummy for a date not known (as its drivers read it: missing)
_ZERO_DATE = re.compile(r"0000-00-00(?:[ T]00:00:00(?:\.0+)?)?")
#: PostgreSQL's placeholders for "never" and "since always"
_INFINITE = ("infinity", "-infinity", "+infinity")


class Placeholder(DataError):
    """A column's times outside the years rdl holds are all one value as written
    (``value``: ``9999-12-31``, a placeholder for 'never'), which ``missing:`` declares."""

    def __init__(self, message: str, value: str):
        super().__init__(message)
        self.value = value


def looks_like_times(values: pd.Series, n: int = 1000) -> bool:
    """Whether a text column holds times: 90 % of its first ``n`` present values read as
    times (as PyTorch Frame's stype inference would take it, which then fails on the rest
    only when the graph is built). Text of digits only is no time (ids, amounts)."""
    if not (pd.api.types.is_string_dtype(values) or values.dtype == object):
        return False
    head = _rewritten(values.dropna().iloc[:n].astype(str).str.strip())
    if not len(head) or not (head.str.contains(r"\D").mean() >= 0.9
                             and head.str.contains(r"\d").mean() >= 0.9):
        return False   # words, or digits only
    if pd.to_numeric(head, errors="coerce").notna().mean() >= 0.9 or \
            written_numbers(head) is not None:
        return False   # numbers (-5, 1.5, 1e3, 1,234.5, 4752,32): pandas would read "-5" as
                       # the year -5, and "4752,32" as a day of the year 4752
    if head.str.match(_LOOKS_LIKE_TIME).mean() >= 0.9:
        return True
    if head.str.contains(_DATE_PART).mean() < 0.9:
        return False   # no date: times of day, zoned (10:30Z) or spans (09:00-17:00), which
                       # pandas would date today (rdl.data.clocks)
    if head.str.contains(_TWO_NUMBERS).mean() < 0.9:
        return False   # a time writes a day and more (a month, a year, a clock): "Track 7"
    period = period_text.read(head)   # (Jan-24, Excel's mmm-yy; a year alone is a number)
    if period is not None and period[1] != "year":
        return True
    read = _read_times(head)[0]
    return read.notna().mean() >= 0.9 and not _yearless(read)


def _yearless(read: pd.Series) -> bool:
    """Whether times read from text have no year of their own (``31-Jan``, Excel's d-mmm;
    ``Jan 5``): pandas dates them in the year 1."""
    years = read.dropna().dt.year
    return bool(len(years)) and bool((years <= 1).mean() >= 0.9)


def _rewritten(text: pd.Series) -> pd.Series:
    """``text`` (stripped) with :data:`_REWRITES` made where its first values hold them:
    each a pass over the column only where some of them do."""
    head = text.iloc[:_HEAD]
    for pattern, becomes, hint in _REWRITES:   # (hint: text in a value, or what it holds)
        near = head if not isinstance(hint, str) else head[head.str.contains(hint,
                                                                              regex=False)]
        if any((hint if isinstance(hint, re.Pattern) else pattern).search(v) for v in near):
            text = text.str.replace(pattern, becomes, regex=True)
            head = text.iloc[:_HEAD]
    return text


def parse_times(raw: pd.Series, where: str, required: bool = True,
                dayfirst: bool | None = None, form: str | None = None) -> pd.Series:
    """``raw`` (times of any unit or zone, dates, or text as :data:`TIME_FORMATS`) as
    ``datetime64[ns]`` in UTC without a zone; text without an offset is taken as UTC.

    Raises:
        DataError: values that are numbers (epoch or Excel serial numbers: their unit is
            anyone's guess), text that is no time (or could be day- or month-first), times
            outside :data:`TIME_MIN` .. :data:`TIME_MAX`, or (``required``) missing ones;
            naming ``where``, how many rows, a few of them and what to do. A column that
            reads both day first and month first stops too, unless ``dayfirst`` (a
            schema's ``dayfirst:``) says which. With ``form`` (a schema's ``formats:``),
            values it does not read.
    """
    s = raw
    if form is not None:
        s = declared(raw, where, form)
    elif pd.api.types.is_bool_dtype(s) or (pd.api.types.is_numeric_dtype(s)
                                         and not pd.api.types.is_datetime64_any_dtype(s)):
        s = _date_keys(s, where)
    elif not pd.api.types.is_datetime64_any_dtype(s):
        s = _parse_text(s, where, dayfirst)
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    outside = ((s < TIME_MIN) | (s > TIME_MAX)).to_numpy(dtype=bool)
    if outside.any():
        written = raw[outside].astype(str).str.strip().unique()
        one = len(written) == 1 and not required
        message = (
            f"{where}: {int(outside.sum())} of {len(s)} times are outside the years "
            f"{TIME_MIN.year + 1} to {TIME_MAX.year - 1} that rdl's times hold, e.g. "
            f"{s[outside].iloc[0]} ({rows(outside)}); a placeholder such as 9999-12-31 for "
            "'never' or 0001-01-01 for 'unknown'? " + (
                f"Declare it missing (the table's missing: ['{written[0]}']) or write those "
                "empty" if one else "Write those empty " + (
                    "and drop the rows that have no time" if required else "(missing)")))
        raise Placeholder(message, written[0]) if one else DataError(message)
    missing = s.isna().to_numpy()
    if required and missing.any():
        raise DataError(f"{where}: time missing in {int(missing.sum())} of {_rows(len(s))} "
                        f"({rows(missing)}); a timed table needs a time on every row "
                        "(untimed: drop, at the schema's top, drops such rows)")
    return s.astype("datetime64[ns]")


def _date_keys(s: pd.Series, where: str) -> pd.Series:
    """Numbers in a time column: a warehouse's date keys where every one is a date written
    yyyymmdd (20240131), or one with its clock, yyyymmddHHMM or yyyymmddHHMMSS (SAP's
    timestamps); else (epoch seconds? Excel serial days?) an error."""
    v = s.dropna()
    if len(v) and (v % 1 == 0).all():
        for fmt, low, high in _DIGITS:
            if v.between(low, high).all():
                parsed = pd.to_datetime(v.astype("int64").astype(str), format=fmt,
                                        errors="coerce")
                if parsed.notna().all():
                    log.info("%s: numbers read as times written %s (e.g. %s)", where,
                             fmt.replace("%", ""), show(v.iloc[0]))
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
                        "or declare their unit: for the table's time (time: {column: "
                        f"{_column(where)}, epoch: s}}, or ms, us, ns, excel), for another "
                        f"column (formats: {{{_column(where)}: epoch_s}}, or excel, ...); "
                        f"if the column is no time, declare its stype ({_stypes(where)})")


def _read_times(text: pd.Series) -> tuple[pd.Series, list[str]]:
    """``text`` as UTC times in the first of :data:`TIME_FORMATS` that reads every value
    (else in what pandas infers, unless the values start with a day and a month as numbers,
    which it would read month first, or value by value), else in the one that reads most;
    and the forms that read every value.

    A form is tried on the whole column only if it reads all of its first values (or, where
    none does, reads the most of them): a column is read once or twice, not once a form."""
    head, read = text.iloc[:_HEAD], {}
    numeric = head.str.match(_DAY_MONTH).any()
    for form in (*TIME_FORMATS, INFERRED):
        if form == INFERRED and (numeric or len(head) in read.values()):
            break   # a form read them all: nothing is left to guess
        read[form] = int(parse(head, form).notna().sum())
        if form == "ISO8601" and read[form] == len(head):
            break
    best, fits = None, []
    most = max(read.values())
    if most == 0:   # no form reads any of the first values: no column of times
        return pd.Series(pd.NaT, index=text.index, dtype="datetime64[ns, UTC]"), fits
    for form in (f for f in read if read[f] == most):
        parsed = parse(text, form)
        if parsed.notna().all():
            if not fits:
                best = parsed
            fits.append(form)
            if form == "ISO8601":
                break
        elif not fits and (best is None or parsed.notna().sum() > best.notna().sum()):
            best = parsed
    return best, fits


def _day_first(form: str) -> bool | None:
    """Whether a form reads the day first (True), the month first (False), or neither."""
    return True if form[:2] == "%d" and form[3:5] == "%m" else (
        False if form[:2] == "%m" else None)


def _parse_text(raw: pd.Series, where: str, dayfirst: bool | None = None) -> pd.Series:
    """Text (or dates) as times in UTC: the first of :data:`TIME_FORMATS` that reads every
    value; else the one that reads most, and the rest are reported."""
    text = raw.dropna().astype(str).str.strip()
    zero = text.str.fullmatch(_ZERO_DATE)
    if zero.any():
        log.info("%s: %d of %d values are MySQL's zero date %r, read as missing", where,
                 int(zero.sum()), len(raw), text[zero].iloc[0])
        text = text[~zero]
    infinite = text.str.lower().isin(_INFINITE)
    if infinite.any():
        mask = np.zeros(len(raw), dtype=bool)
        mask[raw.index.get_indexer(text.index[infinite])] = True
        raise DataError(f"{where}: {int(infinite.sum())} of {len(raw)} values are "
                        f"{text[infinite].iloc[0]!r} ({rows(mask)}), a placeholder for "
                        "'never' or 'since always' that no time holds: write those empty "
                        "(missing; a column of its own can flag what they meant)")
    if len(text) and pd.to_numeric(text, errors="coerce").notna().all() and not \
            text.str.fullmatch(r"\d{4}").all():   # numbers, not years: no ISO 8601 time
        return _date_keys(pd.to_numeric(raw, errors="coerce"), where)
    if (period := period_text.read(text)) is not None:   # 2024-01: known once January ends
        log.info("%s: read as %ss (e.g. %r), each at its end: a row about a %s is known once "
                 "it is over (write a first day, 2024-01-01, for a start)", where, period[1],
                 text.iloc[0], period[1])
        return period[0].reindex(raw.index)
    if len(text) and text.iloc[:_HEAD].str.fullmatch(_HOURS).all():
        raise DataError(f"{where}: spans of times of day (e.g. {text.iloc[0]!r}), no times: "
                        "pandas would read 09:00-17:00 as 09:00 today at offset -17:00; "
                        f"declare its stype ({_stypes(where, 'categorical')})")
    if len(text) and not text.iloc[:_HEAD].str.contains(_DATE_PART).any() and \
            text.iloc[:_HEAD].str.contains(r"\d{1,2}:\d{2}").all():
        raise DataError(f"{where}: times of day without their date (e.g. {text.iloc[0]!r}); "
                        "join them to the column of their dates (clocks: {DATE_COLUMN: "
                        f"{_column(where)}}}), which is then the time; or read them as "
                        "seconds since midnight: declare no stype, or numerical")
    text = _rewritten(text)
    best, fits = _read_times(text)
    if _yearless(best):
        raise DataError(f"{where}: dates without their year, e.g. {text.iloc[0]!r} (a "
                        "spreadsheet's d-mmm): export them with their year (2024-01-31), or "
                        f"if the column is no time, declare its stype "
                        f"({_stypes(where, 'categorical')})")
    orders = {_day_first(f) for f in fits} - {None}
    if len(orders) == 2 and dayfirst is None:
        raise DataError(f"{where}: times such as {text.iloc[0]!r} read both as month/day/year "
                        "and as day/month/year; write them as ISO 8601 (2024-01-31), or say "
                        "which at the top of the schema (dayfirst: true for 31/01/2024, "
                        "false for 01/31/2024)")
    if len(orders) == 2:
        best = parse(text, next(f for f in fits if _day_first(f) == dayfirst))
    bad = best.isna()
    if bad.any() and not bad.all():   # a second form (a sheet's dates, some typed as text)
        rest, more = _read_times(text[bad])   # (read whole in a form rdl names, or not)
        more = more if more and more[0] != INFERRED and not _yearless(rest) else []
        ways = {_day_first(f) for f in more} - {None}
        if more and len(ways) == 2 and dayfirst is None:
            raise DataError(f"{where}: times such as {text[bad].iloc[0]!r} (beside others such "
                            f"as {text[~bad].iloc[0]!r}) read both as month/day/year and as "
                            "day/month/year; say which at the top of the schema (dayfirst: "
                            "true for 31/01/2024, false for 01/31/2024)")
        if more:
            rest = parse(text[bad], next(f for f in more if _day_first(f) == dayfirst)) \
                if len(ways) == 2 else rest
            log.warning("%s: %d of %d times are written in a second form (e.g. %r, beside %r): "
                        "read in it", where, int(bad.sum()), len(text), text[bad].iloc[0],
                        text[~bad].iloc[0])
            best = best.mask(bad, rest.reindex(best.index))
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
                        f"({rows(mask)}); " + ("a zone's name (EST or EDT? IST: India, "
                                               "Israel or Ireland?) is no offset: write the "
                                               "offset (-05:00) or UTC; " if
                                               text[bad].str.contains(_ZONE_NAME).all()
                                               else "") +
                        "correct them or write them empty, declare the form they are in "
                        f"(formats: {{{_column(where)}: '%d %b %Y %H:%M'}} in Python's strftime "
                        "codes), or if the column "
                        f"is no time, declare its stype ({_stypes(where, 'categorical')})")
    if fits and fits[0] == "ISO8601":
        offset = text.str.contains(_OFFSET)
        if offset.any() and not offset.all():
            log.warning("%s: %d of %d times have no UTC offset (e.g. %r) and others do: those "
                        "without are taken as UTC", where, int((~offset).sum()), len(text),
                        text[~offset].iloc[0])
    return best.reindex(raw.index)

