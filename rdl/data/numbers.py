"""Numbers as exports write them, in text columns of numbers that are not all plain.

Spreadsheets and warehouses format numbers for people: thousands separators
(``1,234,567.89``), decimal commas in German, French, ... locales (``1.234.567,89``,
``4752,32``), a currency sign (``$1,234.50``, ``12,50 €``), a percent sign (``12.5%``),
accounting parentheses for negatives (``(1,234.50)``) or a minus after them (SAP:
``1.234,56-``), a magnitude's letter (an analytics export's ``1.2K`` views, ``3.4M``
followers; an app store's ``19M`` and ``201k`` sizes). Read as text, such a column would train as categories or hashed words;
:func:`written_numbers` reads it as the numbers it holds where every value is written one
way, and says which way (the caller logs it). pandas reads none of these
(``pd.to_numeric``), hence this module.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

#: ``1,234,567.89`` (or Swiss ``1'234'567.89``): a comma before every three digits (a
#: leading 0 groups nothing)
GROUPED = re.compile(r"^[-+]?[1-9]\d{0,2}([,']\d{3})+(\.\d+)?$")
#: ``1 234 567.89``: a space (no-break, narrow no-break) before every three digits, a
#: decimal point
SPACED = re.compile("^[-+]?[1-9]\\d{0,2}([ \u00a0\u202f]\\d{3})+(\\.\\d+)?$")
#: a currency's ISO code before or after the numbers (``EUR 12.50``, ``12.50 USD``): only
#: these, not any three capitals (``KGS 12`` or ``INV 123`` are no amounts of money)
CURRENCIES = {"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "SEK", "NOK", "DKK",
              "PLN", "CZK", "HUF", "INR", "CNY", "RMB", "HKD", "SGD", "BRL", "MXN", "ZAR",
              "RUB", "TRY", "KRW", "ILS", "AED", "SAR", "THB", "IDR", "MYR", "PHP"}
_CODED = re.compile(r"^\s*(?P<a>[A-Z]{3})\s?(?P<x>[-+(]?\d.*?)\s*$|"
                    r"^\s*(?P<y>[-+(]?\d.*?)\s?(?P<b>[A-Z]{3})\s*$")
#: ``1.234.567,89``, ``1234,5`` or French ``1 234 567,89`` (a space, no-break or narrow
#: no-break, between groups): a decimal comma
DECIMAL_COMMA = re.compile("^[-+]?([1-9]\\d{0,2}([. \u00a0\u202f]\\d{3})+|\\d+)(,\\d+)?$")
_GROUPS = "[. \u00a0\u202f]"   # (replaced by a regex: 8 times str.translate's speed)
#: a number and a magnitude's letter (``1.5k``, ``2.3M``, ``4B``, ``1.2bn``)
SCALED = re.compile(r"^[-+]?\d+(\.\d+)?\s?([kKMBT]|bn)$")
MAGNITUDES = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9, "T": 1e12}
#: a number with a currency or percent sign before or after it, in parentheses, or with
#: a minus after it (SAP: ``1.234,56-``); a minus before the currency sign is Excel's
#: negative currency (``-$3.10``)
UNIT = re.compile(r"^\s*(?P<neg>\()?\s*(?:[-+]?(?P<pre>[$€£¥]))?\s*(?P<num>[-+]?\d[\d.,'\s]*"
                  r"(?:[eE][-+]?\d+)?)(?P<trail>-)?\s*(?P<post>[%$€£¥])?\s*(?(neg)\))\s*$")


def written_numbers(values: pd.Series, num: pd.Series | None = None
                    ) -> tuple[pd.Series, str, str] | None:
    """Text ``values`` (none missing) that are not all plain numbers, as numbers: ``(the
    numbers, how they are written, a value that shows it)``, or None where they are not
    all numbers written one way (``num``: ``pd.to_numeric`` of ``values``, where the caller
    has it).

    - thousands separators where every value that is no plain number has them;
    - else spaces between thousands with a decimal point (``1 234.50``);
    - else a decimal comma where every value is so written (a comma with three digits
      after it, in every value, is taken for thousands: ``1,500``);
    - else one currency's ISO code before or after every number (``EUR 12.50``);
    - else a magnitude's letter after every number that is not plain (``1.5k``, ``2.3M``:
      thousands, millions, ``B`` or ``bn`` billions, ``T`` trillions), where two letters
      occur, or plain numbers under 1,000 beside them (as a count is written for people:
      ``950``, ``1.2k``); one letter alone is a unit (gold's ``18K``), and stays text;
    - else a sign (one currency sign or ``%`` in the column) or parentheses around the
      numbers, or a minus after them, each number read as above; a value in parentheses
      or with a minus after it is negative.
    """
    num = pd.to_numeric(values, errors="coerce") if num is None else num
    rest = values[num.isna()]
    if not len(rest) or not _could_be(rest.iloc[:100]):
        return None
    if rest.str.match(GROUPED).all():
        return (pd.to_numeric(values.str.replace("[,']", "", regex=True)),
                "thousands separators", rest.iloc[0])
    if rest.str.match(SPACED).all():
        return (pd.to_numeric(values.str.replace("[ \u00a0\u202f]", "", regex=True)),
                "spaces between thousands", rest.iloc[0])
    if values.str.match(DECIMAL_COMMA).all():
        plain = values.str.replace(_GROUPS, "", regex=True).str.replace(",", ".", regex=False)
        return (pd.to_numeric(plain),
                "a decimal comma" if values.str.contains(",", regex=False).any()
                else "dots or spaces between thousands", rest.iloc[0])
    if (coded := _coded(values)) is not None:
        return coded
    if (scaled := _scaled(values, num)) is not None:
        return scaled
    if not values.str.match(UNIT).all():
        return None
    # each part taken off by plain string ops: a regular expression's groups (extract) cost
    # 3 s a million values, its match 0.1
    inner = values.str.strip()
    paren = inner.str.startswith("(")
    inner = inner.where(~paren, inner.str.slice(1, -1).str.strip())
    signs = [c for c in "$€£¥%" if inner.str.contains(c, regex=False).any()]
    if len(signs) > 1:
        return None
    if signs:
        inner = inner.str.replace(signs[0], "", regex=False).str.strip()
    trail = inner.str.endswith("-")
    inner = inner.where(~trail, inner.str.slice(0, -1))
    if not (signs or paren.any() or trail.any()):
        return None
    read = pd.to_numeric(inner, errors="coerce")
    how = []
    if read.isna().any():
        found = written_numbers(inner, read)
        if found is None:
            return None
        read, inner_how, _ = found
        how.append(inner_how)
    if signs:
        how.append(f"a {signs[0]!r} sign")
    if paren.any():
        how.append("parentheses for negatives")
    if trail.any():
        how.append("a minus after negatives")
    example = rest[rest.str.contains(r"[()$€£¥%]|\d-")]
    return (read * np.where(paren | trail, -1, 1), " and ".join(how),
            (example if len(example) else rest).iloc[0])


def _coded(values: pd.Series) -> tuple[pd.Series, str, str] | None:
    """Numbers with one currency's ISO code before or after each (``EUR 12.50``)."""
    if not values.iloc[:100].str.match(_CODED).all():
        return None   # (most columns, at their head: extract's groups cost 3 s a million)
    parts = values.str.extract(_CODED)
    code, inner = parts["a"].fillna(parts["b"]), parts["x"].fillna(parts["y"])
    if code.isna().any() or code.nunique() != 1 or code.iloc[0] not in CURRENCIES:
        return None
    read = pd.to_numeric(inner, errors="coerce")
    how = f"a {code.iloc[0]!r} code"
    if read.isna().any():
        found = written_numbers(inner.str.strip(), read)
        if found is None:
            return None
        read, how = found[0], f"{found[1]} and {how}"
    return read, how, values.iloc[0]


def _scaled(values: pd.Series, num: pd.Series) -> tuple[pd.Series, str, str] | None:
    """Numbers with a magnitude's letter (see :func:`written_numbers`)."""
    rest = values[num.isna()]
    if not rest.iloc[:100].str.match(SCALED).all() or not rest.str.match(SCALED).all():
        return None
    parts = rest.str.extract(r"^(?P<x>[-+]?[\d.]+)\s?(?P<m>\w+)$")
    plain = num.dropna()
    if parts["m"].map(MAGNITUDES).nunique() < 2 and not (len(plain) and (plain.abs() < 1000).all()):
        return None
    read = num.copy()
    read[rest.index] = pd.to_numeric(parts["x"]) * parts["m"].map(MAGNITUDES)
    return read, "a magnitude's letter (k, M, B)", rest.iloc[0]


def _could_be(values: pd.Series) -> bool:
    """Whether each of ``values`` (a few that are no plain number) is written as a number
    may be: most text columns fail at their first value, and then the column's every value
    is not matched against each way (three passes of regular expressions)."""
    return bool(values.str.match(GROUPED).all() or values.str.match(DECIMAL_COMMA).all()
                or values.str.match(UNIT).all() or values.str.match(SPACED).all()
                or values.str.match(_CODED).all() or values.str.match(SCALED).all())
