"""Times in the form a schema declares for a column (``formats:``): Python's strftime
codes (``'%d%b%Y:%H:%M:%S'``), or the unit of numbers since 1970 or a spreadsheet's serial
days; and how pandas reads a form (:func:`parse`), which :mod:`rdl.data.times` tries
its forms with.

**Which instant.** A form without a day (``'%Y-%m'``, ``'%b %Y'``, ``'%Y'``) names a
period: a row about it is known once it is over, so it is read as the period's end, the
next one's start, as a period written in text is (:mod:`rdl.data.period_text`). A form
with a week but no weekday (``'%Y-W%W'``) stops: no day can be read from it.
"""
from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.messages import rows, show

log = logging.getLogger("rdl.data.checks")   # the checks' messages, in one place

#: the times pandas holds at nanosecond resolution, which rdl's times use
TIME_MIN, TIME_MAX = pd.Timestamp.min.ceil("D"), pd.Timestamp.max.floor("D")
#: beyond the formats: what pandas infers (``Jan 5, 2023``, RFC 2822's ``Thu, 05 Jan 2023
#: 13:45:00 +0000``), where no value starts with a day and a month as numbers
INFERRED = "inferred"


def parse(text: pd.Series, form: str) -> pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "could not infer format": the NaT say it
        return pd.to_datetime(text, format=None if form == INFERRED else form,
                              errors="coerce", utc=True)


#: units of numbers as times (``epoch:``, and ``epoch_<unit>`` in ``formats:``): seconds,
#: ... since 1970-01-01 UTC, or Excel's serial days (since 1899-12-30, as Excel for
#: Windows and LibreOffice count them; a fraction is the time of day)
EPOCHS = ("s", "ms", "us", "ns", "excel")
#: the same as ``formats:`` names them
EPOCH_FORMS = ("epoch_s", "epoch_ms", "epoch_us", "epoch_ns", "excel")


def epoch_times(raw: pd.Series, where: str, unit: str) -> pd.Series:
    """Numbers of ``unit`` (:data:`EPOCHS`) as times (missing ones stay missing)."""
    num = pd.to_numeric(raw, errors="coerce")
    bad = (num.isna() & raw.notna()).to_numpy()
    since = "since 1970" if unit != "excel" else "(Excel's serial days)"
    if bad.any():
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} values are not numbers of "
                        f"{unit} {since} (epoch: {unit}), e.g. {show(raw[bad].iloc[0])} "
                        f"({rows(bad)})")
    excel = unit == "excel"
    origin = pd.Timestamp("1899-12-30") if excel else pd.Timestamp("1970-01-01")
    per_second = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9, "excel": 1 / 86400}[unit]
    lo, hi = ((t.value - origin.value) / 1e9 * per_second for t in (TIME_MIN, TIME_MAX))
    far = ((num < lo) | (num > hi)).to_numpy()
    if far.any():
        raise DataError(f"{where}: {int(far.sum())} of {len(raw)} values, as {unit} {since} "
                        f"(epoch: {unit}), lie beyond the years 1678 to 2261 that rdl's times "
                        f"hold, e.g. {show(num[far].iloc[0])} ({rows(far)}): another unit?")
    out = (pd.to_datetime(num, unit="D", origin=origin) if excel
           else pd.to_datetime(num, unit=unit))
    if excel:
        out = out.dt.round("ms")   # a day's fraction in binary: 0.5 s off at most
    elif out.max() < pd.Timestamp("1971-01-01"):   # seconds declared as ms, ms as us, ...
        log.warning("%s: every time, as %s since 1970 (epoch: %s), is in 1970 (the latest %s):"
                    " another unit?", where, unit, unit, out.max())
    return out


def declared(raw: pd.Series, where: str, form: str) -> pd.Series:
    """Values in the form a schema declares for the column (``formats: {col: form}``)."""
    if form in EPOCH_FORMS:
        return epoch_times(raw, where, form.removeprefix("epoch_"))
    if pd.api.types.is_datetime64_any_dtype(raw):
        raise DataError(f"{where}: the schema declares the form {form!r}, but the file holds "
                        "times, not text: drop the column from formats:")
    present = raw.dropna()
    if pd.api.types.is_float_dtype(present) and (present % 1 == 0).all():
        present = present.astype("int64")    # 20230105, read as a number where one is missing
    text = present.astype(str).str.strip()
    parsed = parse(text, form)
    bad = parsed.isna()
    if bad.any():
        mask = np.zeros(len(raw), dtype=bool)
        mask[raw.index.get_indexer(text.index[bad])] = True
        raise DataError(f"{where}: {int(bad.sum())} of {len(raw)} values are not in the form "
                        f"the schema declares ({form!r}), e.g. {text[bad].iloc[0]!r} "
                        f"({rows(mask)}); correct them, write them empty, or declare the "
                        "form they are in (Python's strftime codes)")
    unit = period_of(form)
    if unit is not None:   # a month or a year: known once it is over
        parsed = parsed + pd.DateOffset(**{f"{unit}s": 1})
        log.info("%s: its form %r names %ss, each read at its end (the next one's start): a "
                 "row about a %s is known once it is over", where, form, unit, unit)
    return parsed.reindex(raw.index)


def _codes(form: str) -> set[str]:
    """The strftime codes of a form (``'%Y-%m'``: Y and m)."""
    return set(re.findall(r"%[-#]?([A-Za-z])", form))


def period_of(form: str) -> str | None:
    """The period a strftime form names where it writes no day: ``month`` (``'%Y-%m'``),
    ``year`` (``'%Y'``); None for a day or finer."""
    codes = _codes(form)
    if codes & set("djaAwucxUWV"):
        return None
    return "month" if codes & set("mbB") else "year" if codes & set("YyG") else None


def read_formats(spec: dict, stypes: dict, keys: set, at: str) -> dict[str, str]:
    """A table's ``formats:`` (column: the form its times are written in, in Python's
    strftime codes: ``'%d%b%Y:%H:%M:%S'``), checked before any file is read.

    Raises:
        DataError: not a mapping, a form without a code or one that cannot read a time it
            writes, a column that is a key or declared other than a timestamp.
    """
    formats = spec.get("formats") or {}
    if not isinstance(formats, dict):
        raise DataError(f"{at}: formats must be a mapping (column: '%d/%m/%Y %H:%M'), got "
                        f"{formats!r}")
    out = {}
    for col, form in formats.items():
        col, here = str(col), f"{at}: formats: {col!r}"
        if form in EPOCH_FORMS:
            pass   # numbers: since 1970 in that unit, or a spreadsheet's serial days
        elif not isinstance(form, str) or "%" not in form:
            raise DataError(f"{here}: {form!r} is no form of times: write it in Python's "
                            "strftime codes, e.g. '%d/%m/%Y %H:%M' or '%Y%m%d'; numbers: "
                            "epoch_s, epoch_ms, epoch_us, epoch_ns (since 1970) or excel")
        elif _codes(form) & set("UWV") and not _codes(form) & set("aAwu"):
            raise DataError(f"{here}: {form!r} writes a week without its weekday, which no "
                            "day can be read from: add one (-%u, with the week's first day "
                            "written 1), or declare the table's time time: {column: ..., "
                            "format: yyyyww} (ISO weeks)")
        else:
            sample = pd.Timestamp("2023-01-05 13:45:06.123456", tz="UTC")
            try:
                back = parse(pd.Series([sample.strftime(form)]), form).iloc[0]
            except ValueError:
                back = pd.NaT
            if pd.isna(back):
                raise DataError(f"{here}: {form!r} does not read back the times it writes (as "
                                f"{sample.strftime(form)!r}): check its codes")

        if col in keys:
            raise DataError(f"{here}: the column is a key, matched as written: a form is for "
                            "columns of times")
        if stypes.get(col, "timestamp") != "timestamp":
            raise DataError(f"{here}: the column is declared {stypes[col] or 'dropped'} in "
                            "stypes: a form says it holds times (stype timestamp)")
        out[col] = form
    return out


