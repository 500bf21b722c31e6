"""Times written as the period they name, in text: a month (``2024-01``, ``01/2024``,
``Jan 2024``, R's tsibble's ``2024 Jan``, Excel's ``Jan-24``), a quarter (``2024-Q1``,
``Q1 2024``), an ISO week (``2024-W05``), a year (``"2024"``), as a monthly report's
``month`` or a budget's ``quarter`` column holds them.

pandas reads ``2024-01`` as 2024-01-01 00:00, the month's first instant: a row about
January (its revenue, its count of orders) would be seen by a seed on January 2nd, the
month still to come. Such a row is known once its period is over, so it is read as the
period's end, the next one's start (2024-02-01), as period numbers are
(:mod:`rdl.data.periods`, ``at: end``). To take the start, write the first day
(``2024-01-01``).
"""
from __future__ import annotations

import pandas as pd

#: (unit, pandas' period code, forms: (pattern, how to make it a period pandas reads))
_FORMS = (
    ("month", "M", ((r"\d{4}[-/.]\d{1,2}", lambda t: t.str.replace(r"[/.]", "-", regex=True)),
                    (r"\d{1,2}[-/.]\d{4}", lambda t: t.str.replace(
                        r"(\d{1,2})[-/.](\d{4})", r"\2-\1", regex=True)),
                    (r"[A-Za-z]{3,9}\.?[ -]\d{4}", lambda t: pd.to_datetime(
                        t.str.replace(r"\.?[ -]", " ", regex=True), format="mixed",
                        errors="coerce").dt.strftime("%Y-%m")),
                    # the year first (R's tsibble writes a yearmonth as 1939 Jan)
                    (r"\d{4}[ -][A-Za-z]{3,9}\.?", lambda t: pd.to_datetime(
                        t.str.replace(r"(\d{4})[ -]([A-Za-z]{3,9})\.?", r"\2 \1", regex=True),
                        format="mixed", errors="coerce").dt.strftime("%Y-%m")),
                    # Excel's mmm-yy (Jan-24: January 2024)
                    (r"[A-Za-z]{3}-\d{2}", lambda t: pd.to_datetime(
                        t.str.title(), format="%b-%y", errors="coerce").dt.strftime("%Y-%m")))),
    ("quarter", "Q", ((r"\d{4}[- ]?[Qq][1-4]", lambda t: t.str.replace(r"[- ]", "", regex=True)),
                      (r"[Qq][1-4][- ]?\d{4}", lambda t: t.str.replace(
                          r"[Qq]([1-4])[- ]?(\d{4})", r"\2Q\1", regex=True)))),
    # an ISO week (2024-W05, strftime's %G-W%V): its Monday, in the week ending on Sunday
    ("week", "W-SUN", ((r"\d{4}-?[Ww]\d{1,2}", lambda t: pd.to_datetime(
        t.str.upper().str.replace(r"(\d{4})-?W(\d{1,2})", r"\1-W\2-1", regex=True),
        format="%G-W%V-%u", errors="coerce").dt.strftime("%Y-%m-%d")),)),
    ("year", "Y", ((r"\d{4}", lambda t: t),)),
)


def read(text: pd.Series) -> tuple[pd.Series, str] | None:
    """``text`` (stripped, none missing) as its periods' ends and the unit's name, where
    every value is written as one period of one unit; else None."""
    if not len(text):
        return None
    for unit, code, forms in _FORMS:
        for pattern, periods in forms:
            if not text.iloc[:1000].str.fullmatch(pattern).all() or \
                    not text.str.fullmatch(pattern).all():   # (a column's head first: cheap)
                continue
            written = periods(text)
            try:
                ends = (pd.PeriodIndex(written.str.upper(), freq=code) + 1).to_timestamp()
            except (ValueError, TypeError, AttributeError):
                return None   # (a month 13: not a period; the times' rules say what)
            if ends.isna().any():
                return None
            return pd.Series(ends, index=text.index, dtype="datetime64[ns]"), unit
    return None
