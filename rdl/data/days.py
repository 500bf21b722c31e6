"""A calendar's days (a date dimension: one row a day, week or month), told apart from
tables of events, for the loader's checks (:mod:`rdl.data.calendars`) and the data's
time span (:attr:`rdl.data.database.Database.min_time`). Pandas only: every module of
:mod:`rdl.data` may read it."""
from __future__ import annotations

import pandas as pd


def calendar_days(s: pd.Series) -> bool:
    """Whether a column of times is a calendar's days: distinct, one a day, week or month
    without a gap (a date dimension's)."""
    days = s.dropna().sort_values()
    if len(days) < 3 or not days.is_unique or (days != days.dt.normalize()).any():
        return False
    months = days.dt.year * 12 + days.dt.month
    return days.diff().iloc[1:].nunique() == 1 or (
        (days.dt.day == 1).all() and (months.diff().iloc[1:] == 1).all())


def is_calendar(df: pd.DataFrame, pkey, time: str | None) -> bool:
    """Whether a table keyed by ``pkey`` (7 rows or more) is a calendar timed by its days
    (``time``, :func:`calendar_days`; TPC-DS's ``date_dim`` holds 1900 to 2100): its rows
    are no span of the data's."""
    if pkey is None or time is None or time not in df.columns or len(df) < 7:
        return False
    times = df[time]
    if len(df) > (times.max() - times.min()).days + 1:
        return False   # (more rows than days: no calendar; cheap, before sorting)
    return calendar_days(times)


def spanning(timed: list[tuple[pd.DataFrame, object, str]]) -> list[pd.Series]:
    """The time columns of ``timed`` tables (each ``(rows, key, time column)``) but the
    calendars' (:func:`is_calendar`), whose days are no span of the data's; all of them
    where each is one."""
    cols = [(df[time], is_calendar(df, pkey, time)) for df, pkey, time in timed]
    return [s for s, calendar in cols if not calendar] or [s for s, _ in cols]


def times_of_day(df: pd.DataFrame) -> bool:
    """Whether a table's rows are the times of a day (a time-of-day dimension: Kimball's
    ``DimTime``, TPC-DS's ``time_dim``, a row a second): 96 rows or more (a quarter hour
    each) with a whole-number column holding each hour 0 to 23 in as many rows. Its rows
    are no entities: a sale's second of the day is when it was, not who."""
    if len(df) < 96 or len(df) % 24:
        return False
    for col in df.columns:
        s = df[col]
        if pd.api.types.is_integer_dtype(s) and s.min() == 0 and s.max() == 23:
            counts = s.value_counts()
            if len(counts) == 24 and counts.nunique() == 1:
                return True
    return False
