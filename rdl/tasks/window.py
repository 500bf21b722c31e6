"""A task's window: a fixed duration (``7d``, ``12h``), or whole calendar months (``1mo``,
``3mo``, ``1q``, ``1y``).

A label at seed time ``t`` covers ``(t, t + window]``. Monthly or quarterly rows (a series'
value each month, dated its first day) need the calendar's months: 30 days from a split
time hold two month starts around February and none in some 31-day months, so a fixed
window's labels would be 0 or twice a month's value in a few percent of the windows.
pandas' durations have no month (a month is no fixed length), so a calendar window is
added here; DuckDB's ``INTERVAL '1 month'`` adds the same months to the SQL's seed times.

A calendar window's split times must fall on a day 28 or earlier: ``Jan 31 + 1 month`` is
Feb 28 or 29, and a window that ended on a month's last day would end on a different day
each month. Every rule of when a label has closed (:meth:`Task.closes`) and the trees'
windows take :func:`shift`; what only needs a length (``Task.delta``: the time since a
label in windows, the link ranker's retrieval windows, suggest's choice) takes a
calendar window's mean.
"""
from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd

#: a calendar window: a number and a unit of months, quarters or years
CALENDAR = re.compile(r"\s*(\d+)\s*(mo|months?|q|quarters?|y|years?)\s*", re.I)
MONTHS = {"m": 1, "q": 3, "y": 12}
#: a calendar month's mean length (the Gregorian year's twelfth)
MEAN_MONTH = pd.Timedelta(days=365.2425 / 12)


def months(window) -> int:
    """The calendar months of ``window`` (``1mo``: 1, ``1q``: 3, ``1y``: 12); 0 for a
    duration."""
    m = CALENDAR.fullmatch(str(window))
    return int(m.group(1)) * MONTHS[m.group(2)[0].lower()] if m else 0


def parse_window(window) -> pd.Timedelta:
    """A task window as a duration: a pandas duration such as ``7d`` or ``12h`` (days may be
    written ``d``, as every task YAML does, though pandas 3 deprecates that unit for ``D``);
    a calendar window's mean length (:data:`MEAN_MONTH` a month)."""
    if isinstance(window, pd.Timedelta):
        return window
    if n := months(window):
        return n * MEAN_MONTH
    return pd.Timedelta(re.sub(r"(?<=\d)d(?![a-z])", "D", str(window)))


def shift(times, window, k: int = 1):
    """``times`` (a time, a Series, an index or an array of them) moved ``k`` windows later
    (earlier where ``k`` is negative): by whole calendar months for a calendar window."""
    n = months(window)
    if not n:
        return times + k * parse_window(window)
    offset = pd.DateOffset(months=n * k)
    if isinstance(times, np.ndarray):
        return (pd.DatetimeIndex(times) + offset).to_numpy(dtype=times.dtype)
    return times + offset


def seasonal_lag(window) -> int | None:
    """The whole windows nearest a year, a label's season (the same window a year before):
    ``12 / n`` for a calendar window of ``n`` months that divide a year (``1mo``: 12,
    ``1q``: 4); for a duration the number of windows nearest a year (``7d``: 52, the same
    weekday; ``1d``: 365). None where a year holds fewer than two windows, or a calendar
    window does not divide it."""
    if n := months(window):
        return 12 // n if n < 12 and 12 % n == 0 else None
    k = round(pd.Timedelta(days=365.2425) / parse_window(window))
    return k if k >= 2 else None


def back_from(start, stop, window) -> list[pd.Timestamp]:
    """``start``, one window before it, and so on, down to ``stop`` (inclusive)."""
    if not months(window):
        return list(pd.date_range(start, stop, freq=-parse_window(window)))
    out, start, stop = [], pd.Timestamp(start), pd.Timestamp(stop)
    while (t := shift(start, window, -len(out))) >= stop:
        out.append(t)
    return out


def split_times(val_timestamp, test_timestamp, window, backtest: int = 0) -> tuple:
    """``(val time, test time)``, both moved ``backtest`` windows earlier."""
    return (shift(pd.Timestamp(val_timestamp), window, -backtest),
            shift(pd.Timestamp(test_timestamp), window, -backtest))


def check_split_time(window, time, setting: str) -> str | None:
    """Why ``time`` cannot be a split time of a calendar ``window`` (None: it can)."""
    t = pd.Timestamp(time)
    if months(window) and t.day > 28:
        return (f"{setting} {t.date()} with window {window!r}: a calendar window's split "
                f"times fall on a day 28 or earlier, so that each window ends on the same day "
                f"of its month (the first: {t.date().replace(day=1)})")
    return None


def calendar_day(times) -> int | None:
    """The day of the month on which split times of a calendar window fall, for events at
    ``times`` that are a month or a quarter apart (a series' values): their own day where
    every one is midnight on the same day, 28 or earlier; 1 where each is its month's last
    day (a seed on the 1st sees the month before). None for any other times, and for rows
    a year apart, which a fixed year moves off their day by one day in four years."""
    t = pd.DatetimeIndex(np.unique(np.asarray(times, dtype="datetime64[ns]")))
    if len(t) < 2 or (t != t.normalize()).any():
        return None
    gap = pd.Timedelta(np.median(np.diff(t.asi8)))
    if not pd.Timedelta(days=28) <= gap <= pd.Timedelta(days=92):
        return None
    if (t.day == t.day[0]).all() and t.day[0] <= 28:
        return int(t.day[0])
    return 1 if t.is_month_end.all() else None


def last_split(last, window, day: int = 1) -> pd.Timestamp:
    """The latest split time whose window closes by ``last``: for a calendar window, on
    ``day`` of its month; else ``last``'s day less one window."""
    last = pd.Timestamp(last)
    if not months(window):
        return last.floor("D") - parse_window(window)
    end = last.floor("D").replace(day=day)
    return shift(end if end <= last else shift(end, "1mo", -1), window, -1)


def sql_interval(window):
    """The SQL's ``$window``: an INTERVAL of DuckDB (whole months for a calendar window)."""
    if n := months(window):
        from duckdb.value.constant import IntervalValue
        return IntervalValue(f"{n} months")
    return dt.timedelta(seconds=parse_window(window).total_seconds())


def sql_text(window) -> str:
    """The window as an INTERVAL's text (``7 days 00:00:00``, ``1 months``), for a query
    that writes it in (``INTERVAL '{timedelta}'``)."""
    return f"{n} months" if (n := months(window)) else str(parse_window(window))
