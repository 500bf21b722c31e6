"""Oracle's scripts as SQL*Plus runs them (Oracle's sample schemas, ``hr_create.sql`` and
``hr_populate.sql``; a folder of them is one database: :mod:`rdl.data.sqlscript`), made
plain SQL for :mod:`rdl.data.sqlscript` to run into SQLite:

- :func:`plain`: SQL*Plus' own commands end at their line's end, not at ``;`` (``REM``,
  ``PROMPT``, ``SET``, ``SPOOL``, ``@file``, ``DEFINE``, ``ACCEPT``, ``WHENEVER``, ...):
  blanked; a block's ``BEGIN`` and ``DECLARE`` lines too, so that the ``INSERT``s of a
  block are statements of their own; a ``/`` line ends a statement; procedures,
  functions, triggers and packages (code, up to their ``/`` line) blanked whole.
- :func:`functions`: ``TO_DATE`` and ``TO_TIMESTAMP`` with Oracle's format masks (``'DD-MON-
  YYYY HH24.MI.SS.FF'``), written as ISO times; ``UTL_RAW.CAST_TO_RAW`` a blob.
- :func:`assignment`: a PL/SQL variable given text (``prod_details := '...' || chr(10) ||
  '...'``), which later ``INSERT``s name as a value (:func:`bound`).

Written by hand: no library on PyPI runs SQL*Plus scripts without an Oracle database.
"""
from __future__ import annotations

import re
from datetime import datetime

#: SQL*Plus' commands, each a line of its own (and a block's first line); those whose word
#: could name a column (COLUMN, VAR, SHOW, ...) only in their own forms, for a line of a
#: CREATE TABLE may begin with a column's name
_LINE = re.compile(
    r"(?im)^[ \t]*(?:(?:rem|remark|pro|prompt|set|spool|def|define|undef|undefine|acc|accept|"
    r"whenever|conn|connect|ttitle|btitle|exit|quit)\b[^\n]*|@@?[^\n]*|begin|declare|"
    r"(?:col|column)\s+[\w$#]+\s+(?:format|heading|new_value|noprint|print|clear|justify|"
    r"wrapped|truncated|word_wrapped|on|off)\b[^\n]*|(?:var|variable)\s+\w+\s+(?:number|"
    r"varchar2|char|nchar|clob|refcursor|binary_\w+)\b[^\n]*|show\s+(?:errors?|err|user|all|"
    r"parameters?|sga|release)\b[^\n]*|exec(?:ute)?\s+[\w.$]+\s*\([^\n]*|timing\s+(?:start|"
    r"stop|show)\b[^\n]*|clear\s+(?:breaks|columns|computes|screen|buffer|sql)\b[^\n]*|"
    r"break\s+on\b[^\n]*|sta(?:rt)?\s+\S+\.sql\b[^\n]*)[ \t]*\r?$")
#: code, never rows: up to its own ``/`` line
_CODE = re.compile(r"(?ims)^[ \t]*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:NON)?EDITIONABLE\s+)?"
                   r"(?:PROCEDURE|FUNCTION|TRIGGER|PACKAGE|TYPE)\b.*?^[ \t]*/[ \t]*\r?$")


def is_oracle(text: str) -> bool:
    """Whether a script is SQL*Plus' (its commands, a ``/`` line, Oracle's ``VARCHAR2``)."""
    head = text[:200_000]
    return re.search(r"(?im)^[ \t]*(rem|prompt)\s|^[ \t]*/[ \t]*\r?$|\bVARCHAR2\s*\(",
                     head) is not None


def plain(text: str) -> str:
    """The script as plain SQL (see the module), its lines where they were."""
    blank = lambda m: "\n" * m.group(0).count("\n")   # noqa: E731  (line numbers kept)
    text = _CODE.sub(blank, text)
    text = _LINE.sub("", text)
    return re.sub(r"(?m)^[ \t]*/[ \t]*\r?$", ";", text)


# -- Oracle's functions, as the SQLite connection's ---------------------------------------
_MASK = [("HH24", "%H"), ("HH12", "%I"), ("HH", "%I"), ("MI", "%M"), ("SS", "%S"),
         ("YYYY", "%Y"), ("RRRR", "%Y"), ("YY", "%y"), ("RR", "%y"), ("MONTH", "%B"),
         ("MON", "%b"), ("MM", "%m"), ("DD", "%d"), ("AM", "%p"), ("PM", "%p"),
         ("DY", "%a"), ("DAY", "%A")]


def _strptime_form(mask: str) -> str:
    """An Oracle format mask (``DD-MON-YYYY HH24.MI.SS.FF``) as ``strptime``'s."""
    out, i, mask = [], 0, re.sub(r'"([^"]*)"', r"\1", mask)   # ("T": a quoted letter)
    while i < len(mask):
        if mask[i:i + 2].upper() == "FF":
            out.append("%f")
            i += 2 + bool(re.match(r"\d", mask[i + 2:i + 3]))
            continue
        for code, form in _MASK:
            if mask[i:i + len(code)].upper() == code:
                out.append(form)
                i += len(code)
                break
        else:
            out.append(mask[i].replace("%", "%%"))
            i += 1
    return "".join(out)


def to_time(value, mask=None):
    """Oracle's ``TO_DATE``/``TO_TIMESTAMP``: ``value`` read by ``mask`` (or, with none, by
    its own form), as an ISO time; fractions past microseconds are cut."""
    if value is None:
        return None
    value = str(value).strip()
    if mask is None:
        import pandas as pd
        return str(pd.Timestamp(value))
    form = _strptime_form(str(mask))
    if "%f" in form:   # (nine digits of a fraction: strptime takes six)
        value = re.sub(r"(?<=[.,:])(\d{6})\d+", r"\1", value)
    return datetime.strptime(value.title() if "%b" in form or "%B" in form else value,
                             form).isoformat(sep=" ")


def functions(con) -> None:
    """Oracle's functions that sample data call, added to SQLite connection ``con``."""
    con.create_function("to_date", -1, to_time, deterministic=True)
    con.create_function("to_timestamp", -1, to_time, deterministic=True)
    con.create_function("cast_to_raw", 1, lambda v: None if v is None else str(v).encode(),
                        deterministic=True)
    con.create_function("chr", 1, lambda n: None if n is None else chr(int(n)),
                        deterministic=True)


# -- PL/SQL variables ---------------------------------------------------------------------
def assignment(stmt: str) -> tuple[str, str] | None:
    """``(name, expression)`` of a PL/SQL assignment ``name := expression``, else None."""
    m = re.match(r"(?s)^([A-Za-z_]\w*)\s*:=\s*(.+)$", stmt)
    return (m.group(1).lower(), m.group(2)) if m else None


def bound(stmt: str, names: set[str], literal: re.Pattern) -> str:
    """``stmt`` with each variable of ``names`` outside its strings a named parameter
    (``prod_details``: ``:prod_details``), for SQLite to take its value."""
    if not names:
        return stmt
    parts, last = [], 0
    for m in literal.finditer(stmt):   # (strings kept as they are)
        parts += [_names(stmt[last:m.start()], names), m.group(0)]
        last = m.end()
    return "".join(parts) + _names(stmt[last:], names)


def _names(text: str, names: set[str]) -> str:
    return re.sub(r"(?<![\w:.])([A-Za-z_]\w*)\b(?!\s*\()", lambda m: ":" + m.group(1).lower()
                  if m.group(1).lower() in names else m.group(1), text)
