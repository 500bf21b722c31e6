"""Calendars: a star schema's date dimension (``dim_date``: one row a day, week or month)
and the tables that reference it. A foreign key into a calendar is a time, and the loader
judges it as one:

* :func:`calendar_references`: a table without a time of its own, dated only by its key
  into a calendar (a sale's ``date_key``), would be static, every row seen by every seed:
  it stops, naming the declaration that times it through the calendar
  (:mod:`rdl.data.periods`, each row at the end of its day);
* :func:`later_days`: a timed table's key into a static calendar that names a day after
  the row's own time (a sale's ``ship_date_key``) shows a seed between the two, through
  the edge to that day's row, when it will ship: it stops. A calendar timed by its days
  shows each day's row once the day has come (the sampler's rule), so its keys pass.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.keys import comparable
from rdl.data.days import calendar_days
from rdl.data.leaks import LATER_SHARE
from rdl.data.messages import rows


def day_column(df: pd.DataFrame, pkey: str | None) -> str | None:
    """The column of days of a table keyed by ``pkey`` if it is a calendar (7 rows or
    more, a column of :func:`~rdl.data.days.calendar_days`), else None."""
    if pkey is None or len(df) < 7:
        return None
    return next((c for c in df.columns if c != pkey and pd.api.types.
                 is_datetime64_any_dtype(df[c]) and calendar_days(df[c])), None)


def days_of(tables: dict, frames: dict, ref: str) -> str | None:
    """:func:`day_column` of table ``ref`` of a schema being loaded."""
    r = tables.get(ref)
    return None if r is None or ref not in frames else day_column(frames[ref], r.pkey)


def calendar_references(tables: dict, frames: dict, calendars=()) -> None:
    """A table without a time of its own whose foreign key references a calendar (a date
    dimension: a column of :func:`calendar_days`), as a star schema's facts reference
    ``dim_date`` through ``date_key``, stops: its rows are dated, and as a static table
    every seed would see them all, later ones included. The schema times it through the
    calendar, each row at the end of its day (:mod:`rdl.data.periods`)."""
    for name, t in tables.items():
        if t.time is not None or name not in frames or name in calendars or any(
                pd.api.types.is_datetime64_any_dtype(s) for s in frames[name].dtypes):
            continue   # (times of its own: undeclared_time, or declared features)
        for col, ref in t.fkeys.items():
            day = None if col in t.composite else days_of(tables, frames, ref)
            if day is None:
                continue
            r = tables[ref]
            raise DataError(
                f"{t.where(col)}: references {ref!r}, a calendar (its {day!r}: one row a "
                f"day, week or month), but table {name!r} has no time: its rows are dated by "
                f"it, and as a static table every seed would see them all, later ones "
                f"included (a leak of the future). Time it through the calendar, each row at "
                f"the end of its period: time: {{column: {col}, calendar: {{table: {ref}, "
                f"period: {r.pkey}, start: {day}}}}}, and leave {col} out of its fkeys; "
                f"if {col} is no time of its rows (a later event, a due date), leave it out "
                f"of fkeys and drop it (stypes: {{{col}: drop}})")


def later_days(tables: dict, frames: dict, share: float = LATER_SHARE) -> None:
    """A timed table's foreign key into a static calendar whose day starts after the row's time
    in ``share`` of its rows or more (a sale's ``ship_date_key`` beside the day it was
    ordered) stops: through the edge to that day's row a seed between the two would see
    the day early. Dropped, or a plain number where it was known when the row began (a due
    day)."""
    for name, t in tables.items():
        if t.time is None or name not in frames or t.time not in frames[name]:
            continue
        df = frames[name]
        for col, ref in t.fkeys.items():
            day = None if col in t.composite or tables.get(ref) is None or tables[ref].time \
                else days_of(tables, frames, ref)
            if day is None:
                continue   # (a timed calendar's days are seen as they come: no leak)
            cal = frames[ref]
            values, keys = comparable(df[col], cal[tables[ref].pkey])
            at = pd.Index(keys).get_indexer(values)
            starts = np.where(at >= 0, cal[day].to_numpy()[np.maximum(at, 0)],
                              np.datetime64("NaT"))
            later = (at >= 0) & (starts > df[t.time].to_numpy())
            n, m = int(later.sum()), int((at >= 0).sum())
            if n == 0 or n < share * m:
                continue
            raise DataError(
                f"{t.where(col)}: {n} of {m} rows ({100 * n / m:.3g}%) reference a day of the "
                f"calendar {ref!r} after the row's own time ({t.time}; {rows(later)}): through "
                f"it a seed between the two would see that day early (a ship date: a leak of "
                f"the future). Time the calendar by its days (table {ref!r}: time: {day}): "
                f"a seed then sees a day's row once the day has come; or leave {col} out of "
                f"its fkeys and drop it (stypes: {{{col}: drop}}), or, known when the row "
                f"began (a due day), keep it out of fkeys as a plain number")
