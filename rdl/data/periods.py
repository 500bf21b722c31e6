"""Times written as period numbers, converted to times before any check; and the warning
for a static table whose column of whole numbers looks like such a time.

A schema declares such a time as a mapping instead of a column's name::

    time: {column: WEEK_NO, unit: week, origin: 2020-01-06}   # week 1 starts on 2020-01-06
    time: {column: DAY, unit: day, origin: 2020-01-01, first: 0}   # day 0 is 2020-01-01
    time: {column: month_key, format: yyyymm}                 # 202401: January 2024
    time: {column: iso_week, format: yyyyww}                  # 202405: ISO week 5 of 2024
    time: {column: fiscal_period, calendar: fiscal.csv}       # its rows: period, start (end)
    time: {column: ts, epoch: ms}                             # milliseconds since 1970 (UTC)
    time: {column: d, epoch: excel}                           # a spreadsheet's serial days

``unit`` is day, week, month, quarter or year, counted from ``origin``, the start of period
``first`` (default 1). ``yyyyww`` weeks are ISO 8601's (from Monday; week 1 holds the
year's first Thursday). ``calendar`` is a file of the folder, or a table of the schema,
with a row per period: ``period`` and ``start`` (and ``end``; without it a period ends
where the next one starts), or other names: ``calendar: {file: f.csv, period: p, start:
s, end: e}``. ``epoch`` (s, ms, us or ns) reads numbers of that unit since 1970-01-01 UTC
as the instants they are (an event log's times; no period, no end); ``excel``, a
spreadsheet's serial days (:func:`rdl.data.forms.epoch_times`).

**Which instant.** A row about a period (a week's promotions, a month's sales) is complete,
and known, only once the period is over. Its time is therefore the period's **end** (its
start plus one period: the next period's start): no seed inside the period sees it, a seed
at its end or later does. ``at: start`` takes the start instead, for rows known as their
period begins (a plan, a price list set in advance): a seed inside the period then sees
them. The end is the default because it cannot leak; the start would let a seed on a
week's Wednesday see that week's Thursday.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rdl.data import assembled, files, parquet, sources
from rdl.data.messages import rows, show
from rdl.data.names import name_words
from rdl.data.forms import EPOCHS, epoch_times
from rdl.data.times import parse_times
from rdl.data.database import DataError
from rdl.data.keys import comparable

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

#: unit -> (days or months, how many)
UNITS = {"day": ("D", 1), "week": ("D", 7), "month": ("M", 1), "quarter": ("M", 3),
         "year": ("M", 12)}
FORMATS = ("yyyymm", "yyyyww")
AT = ("end", "start")
KEYS = {"column", "unit", "origin", "first", "format", "calendar", "at", "epoch"}
CALENDAR_KEYS = {"file", "table", "period", "start", "end"}
#: the most periods from the origin a time may lie (rdl's times span 1678 to 2261)
_MAX_DAYS, _MAX_MONTHS = 200_000, 6_000


@dataclass
class PeriodTime:
    """A time column written as period numbers, and how to make times of them."""

    column: str
    unit: str | None = None
    origin: pd.Timestamp | None = None
    first: int = 1
    format: str | None = None
    calendar: dict = field(default_factory=dict)   # file or table, period, start, end
    at: str = "end"
    epoch: str | None = None   # s, ms, us or ns since 1970-01-01 UTC, or excel: instants

    def declared(self) -> str:
        """How the schema declares it (messages name it)."""
        if self.epoch:
            return f"time: {{column: {self.column}, epoch: {self.epoch}}}"
        how = (f"unit: {self.unit}" if self.unit else f"format: {self.format}" if self.format
               else f"calendar: {self.calendar.get('file') or self.calendar['table']}")
        return f"time: {{column: {self.column}, {how}, at: {self.at}}}"

    def times(self, raw: pd.Series, where: str, calendar: pd.DataFrame | None = None,
              calendar_where: str = "") -> pd.Series:
        """``raw``'s periods as ``datetime64[ns]`` (the periods' ends, or starts), checked
        as any time column is (:func:`~rdl.data.times.parse_times`)."""
        if self.epoch:
            out = epoch_times(raw, where, self.epoch)
        elif self.calendar:
            out = _from_calendar(raw, where, self, calendar, calendar_where)
        else:
            n = _whole(raw, where, self)
            codes, uniq = pd.factorize(n)   # a few hundred periods of many rows: each once
            shift = int(self.at == "end")
            starts = (_counted(uniq, shift, self, where) if self.unit else
                      _yyyymm(uniq, shift, where) if self.format == "yyyymm" else
                      _yyyyww(uniq, shift, where))
            # code -1 (a missing period) takes the NaT appended last
            values = np.append(starts.to_numpy(dtype="datetime64[ns]"), np.datetime64("NaT"))
            out = pd.Series(values[codes], index=raw.index, dtype="datetime64[ns]")
        return parse_times(out, where, required=True)


def parse_spec(spec: dict, where: str, tables: set[str]) -> PeriodTime:
    """A schema's ``time:`` mapping as a :class:`PeriodTime`; ``where`` names the table,
    ``tables`` are the schema's (a calendar may be one).

    Raises:
        DataError: an unknown key, no column, not exactly one of unit, format and
            calendar, a unit without an origin, an origin that is no date, a bad value.
    """
    at = f"{where}: time {spec!r}"
    unknown = sorted(map(str, set(spec) - KEYS))
    if unknown:
        raise DataError(f"{at}: unknown key(s) {unknown}; expected some of {sorted(KEYS)}")
    if not isinstance(spec.get("column"), str):
        raise DataError(f"{at}: 'column:' names the column of period numbers (time: {{column: "
                        "WEEK_NO, unit: week, origin: 2020-01-06}})")
    how = [k for k in ("unit", "format", "calendar", "epoch") if spec.get(k) is not None]
    if len(how) != 1:
        raise DataError(f"{at}: give one of unit (with origin), format, calendar or epoch, "
                        f"not {how or 'none'}")
    if "epoch" in how:
        if str(spec["epoch"]) not in EPOCHS or set(spec) - {"column", "epoch"}:
            raise DataError(f"{at}: epoch {spec['epoch']!r}: one of {list(EPOCHS)}, the unit "
                            "of the numbers since 1970-01-01 UTC (excel: a spreadsheet's "
                            "serial days), and no other key (an epoch time is an instant, not "
                            "a period)")
        return PeriodTime(spec["column"], epoch=str(spec["epoch"]))
    p = PeriodTime(spec["column"], at=str(spec.get("at", "end")))
    if p.at not in AT:
        raise DataError(f"{at}: at {p.at!r}: one of {list(AT)} (the instant of a period a "
                        "row's time is; end: once the period is over, which cannot leak)")
    if "unit" in how:
        p.unit = str(spec["unit"])
        if p.unit not in UNITS:
            raise DataError(f"{at}: unit {p.unit!r}: one of {list(UNITS)}")
        try:
            p.origin = pd.Timestamp(str(spec.get("origin")))
        except ValueError:
            p.origin = pd.NaT
        if p.origin is pd.NaT or spec.get("origin") is None:
            raise DataError(f"{at}: origin {spec.get('origin')!r}: the date period "
                            f"{spec.get('first', 1)} starts on (origin: 2020-01-06)")
        if not isinstance(spec.get("first", 1), int):
            raise DataError(f"{at}: first {spec['first']!r}: the whole number of the period "
                            "that starts at the origin (default 1)")
        p.first = int(spec.get("first", 1))
    elif "format" in how:
        p.format = str(spec["format"])
        if p.format not in FORMATS:
            raise DataError(f"{at}: format {p.format!r}: one of {list(FORMATS)} (or unit: "
                            "with origin:, or calendar:)")
    else:
        p.calendar = _calendar(spec["calendar"], at, tables)
    return p


def _calendar(spec, at: str, tables: set[str]) -> dict:
    if isinstance(spec, str):
        spec = {"table": spec} if spec in tables else {"file": spec}
    if not isinstance(spec, dict) or len({"file", "table"} & set(spec)) != 1 \
            or set(spec) - CALENDAR_KEYS:
        raise DataError(f"{at}: calendar {spec!r}: a file of the folder or a table of the "
                        "schema, or {file: f.csv, period: p, start: s, end: e}")
    if spec.get("table") is not None and spec["table"] not in tables:
        raise DataError(f"{at}: calendar table {spec['table']!r} is not a table of the schema "
                        f"({sorted(tables)})")
    return {"period": "period", "start": "start", **{k: str(v) for k, v in spec.items()}}


def read_calendar(p: PeriodTime, folder: Path, tables: dict) -> tuple[pd.DataFrame, str]:
    """The calendar's rows, as its file holds them, and how messages name it."""
    if "table" in p.calendar:
        found = tables[p.calendar["table"]].parts
        where = tables[p.calendar["table"]].where()
    else:
        path = folder / p.calendar["file"]
        found, where = sources.parts(path), f"{path} (calendar of period times)"
        if not found:
            raise DataError(f"{where}: missing (time {{..., calendar: {p.calendar['file']}}} "
                            "names it: a CSV or parquet file with a row per period)")
    if sources.csv_parts(found, where):
        df = pd.concat([files.read_csv(f, where) for f in found], ignore_index=True)
    else:
        df = parquet.read(found, where)
    for role in ("period", "start"):
        if p.calendar[role] not in df.columns:
            raise DataError(f"{where}: no column {p.calendar[role]!r} (the {role} of each "
                            f"period); it has {list(df.columns)}: name them with calendar: "
                            "{file: ..., period: <column>, start: <column>}")
    return df, where


def _whole(raw: pd.Series, where: str, p: PeriodTime) -> pd.Series:
    """The period numbers of ``raw`` (text or numbers) as ``Int64``."""
    n = pd.to_numeric(raw, errors="coerce") if not pd.api.types.is_numeric_dtype(raw) else raw
    bad = (raw.notna() & (n.isna() | (n % 1 != 0))).to_numpy(dtype=bool)
    if bad.any():
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} values are not whole numbers, "
                        f"e.g. {show(raw[bad].iloc[0])} ({rows(bad)}), but the schema declares "
                        f"the column period numbers ({p.declared()})")
    return n.astype("Int64")


def _bad_values(uniq: np.ndarray, bad: np.ndarray, where: str, what: str) -> None:
    if bad.any():
        raise DataError(f"{where}: {int(bad.sum())} of the column's {len(uniq)} distinct values "
                        f"are not {what}, e.g. {show(uniq[bad][0])}")


def _counted(uniq, shift: int, p: PeriodTime, where: str) -> pd.Series:
    """Periods counted in ``p.unit`` from ``p.origin``, the start of period ``p.first``."""
    kind, step = UNITS[p.unit]
    k = (np.asarray(uniq, dtype=np.int64) - p.first + shift) * step
    _bad_values(np.asarray(uniq), np.abs(k) > (_MAX_DAYS if kind == "D" else _MAX_MONTHS),
                where, f"{p.unit}s that rdl's times (1678 to 2261) hold from origin "
                f"{p.origin.date()}")
    if kind == "D":
        return pd.Series(p.origin + pd.to_timedelta(k, "D"))
    return pd.Series([p.origin + pd.DateOffset(months=int(m)) for m in k], dtype="datetime64[ns]")


def _yyyymm(uniq, shift: int, where: str) -> pd.Series:
    v = np.asarray(uniq, dtype=np.int64)
    year, month = v // 100, v % 100
    _bad_values(v, (month < 1) | (month > 12) | (year < 1678) | (year > 2261), where,
                "yyyymm (a year and a month 01 to 12, as 202401)")
    months = year * 12 + month - 1 + shift
    return pd.Series(pd.to_datetime(pd.DataFrame({"year": months // 12, "month": months % 12 + 1,
                                                  "day": 1})))


def _yyyyww(uniq, shift: int, where: str) -> pd.Series:
    v = np.asarray(uniq, dtype=np.int64)
    text = pd.Series([f"{y:04d}-W{w:02d}-1" for y, w in zip(v // 100, v % 100)])
    start = pd.to_datetime(text, format="%G-W%V-%u", errors="coerce")
    iso = start.dt.isocalendar()
    bad = start.isna().to_numpy() | ((iso["year"] * 100 + iso["week"]).to_numpy() != v)
    _bad_values(v, bad, where, "yyyyww (a year and one of its ISO weeks, 01 to 52 or 53, as "
                "202405)")
    return start + pd.Timedelta(days=7 * shift)


def _last_end(starts: pd.Series) -> np.datetime64:
    """The end of a calendar's last period, its starts in order: where every period is as
    long as the others (days, weeks) that length after its start; where every one is a
    month (each start the first of the month after the last), the next month's first day;
    else unknown (NaT). A date dimension that ends on the data's last day is such."""
    if len(starts) < 2 or starts.isna().any():
        return np.datetime64("NaT")
    steps = starts.diff().iloc[1:]
    if steps.nunique() == 1:
        return (starts.iloc[-1] + steps.iloc[0]).to_datetime64()
    months = starts.dt.year * 12 + starts.dt.month
    if (starts == starts.dt.normalize()).all() and (starts.dt.day == 1).all() and \
            (months.diff().iloc[1:] == 1).all():
        return (starts.iloc[-1] + pd.DateOffset(months=1)).to_datetime64()
    return np.datetime64("NaT")


def _from_calendar(raw: pd.Series, where: str, p: PeriodTime, cal: pd.DataFrame,
                   cal_where: str) -> pd.Series:
    """Each row's period looked up in the calendar: its end (or start)."""
    c = p.calendar
    cal_time = lambda col: parse_times(cal[col], f"{cal_where}, column {col!r}")  # noqa: E731
    start = cal_time(c["start"])
    if "end" in c and c["end"] not in cal.columns:
        raise DataError(f"{cal_where}: no column {c['end']!r} (the end of each period); it has "
                        f"{list(cal.columns)}")
    end_col = c.get("end", "end")
    mine, periods = comparable(raw, cal[c["period"]])
    dup = pd.Series(periods).duplicated(keep=False).to_numpy()
    if dup.any():
        raise DataError(f"{cal_where}, column {c['period']!r}: {int(dup.sum())} rows share a "
                        f"period, e.g. {show(periods[dup][0])} ({rows(dup)}); a calendar has one "
                        "row per period")
    if end_col in cal.columns:
        end = cal_time(end_col).to_numpy()
    else:   # a period ends where the next one starts; the last one's, as the others do
        order = np.argsort(start.to_numpy(), kind="stable")
        end = np.full(len(start), np.datetime64("NaT"), dtype="datetime64[ns]")
        end[order[:-1]] = start.to_numpy()[order[1:]]
        end[order[-1:]] = _last_end(start.iloc[order].reset_index(drop=True))
    pos = pd.Index(periods).get_indexer(mine)
    unknown = raw.notna().to_numpy() & (pos < 0)
    if unknown.any():
        raise DataError(f"{where}: {int(unknown.sum())} of {len(raw)} periods are not in the "
                        f"calendar {cal_where}, e.g. {show(raw[unknown].iloc[0])} "
                        f"({rows(unknown)}); it has {len(periods)} periods, e.g. "
                        f"{', '.join(show(x) for x in periods[:3])}")
    value = np.append(end if p.at == "end" else start.to_numpy(), np.datetime64("NaT"))
    out = value[pos]   # -1 (a missing period) takes the NaT appended last
    open_ended = (pos >= 0) & pd.isna(out)
    if open_ended.any():
        raise DataError(f"{where}: {int(open_ended.sum())} rows are in period "
                        f"{show(raw[open_ended].iloc[0])} ({rows(open_ended)}), the calendar's "
                        f"last, whose end is unknown ({cal_where}): add the period after it, or "
                        "an 'end' column, to the calendar (or declare at: start)")
    return pd.Series(out, index=raw.index, dtype="datetime64[ns]")


# -- the warning for period numbers not declared -----------------------------------------
#: words of a column's name that say it counts periods (WEEK_NO, yearWeek, fiscal_period)
PERIOD_WORDS = {"day": "day", "week": "week", "wk": "week", "weekno": "week", "month": "month",
                "mth": "month", "yearweek": "yyyyww", "yearmonth": "yyyymm",
                "yyyymm": "yyyymm", "yyyyww": "yyyyww", "quarter": "quarter", "qtr": "quarter",
                "period": "period", "fiscal": "period"}


def looks_like(name: str, values: pd.Series) -> str | None:
    """The declaration that would make a column of whole numbers a time, if its name or
    its values say it counts periods (``yyyymm`` and ``yyyyww`` values say so alone)."""
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return None
    said = next((PERIOD_WORDS[w] for w in name_words(name) if w in PERIOD_WORDS), None)
    if said is None and not 190001 <= values.min() <= values.max() <= 210053:
        return None   # no period's name, no yyyymm values: cheaply ruled out
    v = values.dropna()
    if not len(v) or not (v % 1 == 0).all():
        return None
    v = v.astype(np.int64)
    year, low = v // 100, v % 100
    dated = bool(year.between(1900, 2100).all() and (low >= 1).all())
    if dated and (low <= 12).all() and (said or v.nunique() >= 3):
        return f"time: {{column: {name}, format: yyyymm}}"
    if dated and (low <= 53).all() and (said or v.nunique() >= 3):
        return f"time: {{column: {name}, format: yyyyww}}"
    if said is None or v.min() < 0:
        return None
    unit = (said if said in UNITS else "month" if v.max() <= 12 else "week" if v.max() <= 53
            else "day")
    first = int(v.min())
    return (f"time: {{column: {name}, unit: {unit}, origin: <the first day of {unit} {first}>"
            + (f", first: {first}}}" if first != 1 else "}")
            + (" (or calendar: <a file of period, start>)" if said == "period" else ""))


def warn_undeclared(t, df: pd.DataFrame) -> None:
    """Warns of a static table whose column of whole numbers looks like period numbers
    (its name or its values): every seed would see all of its rows, its later periods'
    too. A column with a declared stype is a plain feature, said so."""
    if t.time is not None:
        return
    parts = assembled.find(df.drop(columns=[*t.stypes, t.pkey, *t.fkeys], errors="ignore"))
    for name, cols in parts.items():
        log.warning("%s: the table has no time, so every seed will see all of its %d rows, "
                    "those of later days too (a leak of the future), but its columns %s look "
                    "like the parts of a date. If they are the rows' time, declare it: %s and "
                    "time: %s (docs/data.md); if they are plain features, declare their stypes "
                    "(stypes: {%s})", t.where(), len(df), cols, assembled.declared({name: cols}),
                    name, ", ".join(f"{c}: numerical" for c in cols))
    for col in df.columns:
        if col in t.stypes or col == t.pkey or col in t.fkeys or any(
                col in cols for cols in parts.values()):
            continue
        declare = looks_like(str(col), df[col])
        if declare:
            v = df[col].dropna()
            log.warning("%s: the table has no time, so every seed will see all of its %d rows, "
                        "those of later periods too (a leak of the future), but the column's "
                        "whole numbers (%s to %s) look like period numbers. If they are the "
                        "rows' time, declare it: %s (a period's rows then count from its end; "
                        "docs/data.md); if the column is a plain feature, declare its stype "
                        "(stypes: {%s: numerical})", t.where(col), len(df), show(v.min()),
                        show(v.max()), declare, col)
