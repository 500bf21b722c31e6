"""Text tables whose fields are separated by blanks, not by a delimiter, as older tools
write them (:mod:`rdl.data.files` reads the rest):

* **runs of blanks** between fields, padded to line up: a data archive's ``.txt``
  (CDNOW's ``" 00001 19970101  1   11.77"``), R's ``write.table`` (one space, text in
  quotes, a row name before each row under a header without one); every line splits into
  the header's number of fields;
* **fixed-width columns**, values that hold blanks aligned in columns (a report's
  ``New York``), a line of dashes under the header or none (SQL*Plus' and Db2's
  spools): the columns are the spans where some line has a character, found from the
  file's first lines.

* **a database console's table**: ``psql``'s (`` a | b `` over ``---+---``, ``(2 rows)``
  after), ``mysql``'s boxed one (``+---+---+`` rules around ``| a | b |`` rows) and a
  Markdown table (``|---|---|``): the fields between the bars, stripped; its rules and
  count of rows no rows.

None has a delimiter pyarrow could be given (a console's bars pad every value), so pandas' C reader reads them
(``sep=r"\\s+"``, ``read_fwf``), every field as text, as :func:`rdl.data.files.read_csv`
reads a CSV file's. A header of one field that holds runs of blanks, read as neither, stops
the load: it would be a table of one column of whole lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rdl.data.database import DataError
from rdl.data.reports import FOOTER
from rdl.data.sources import input_stream

#: a field between blanks: quoted (R's write.table; "" is a quote) or not
_FIELD = re.compile(r'"(?:[^"]|"")*"|\S+')
#: a line that underlines a header: dashes (and =, +) between blanks
_RULE = re.compile(r"^[\s\-=+|]*-[\s\-=+|]*$")
_SAMPLE = 200   # lines the layout is judged on


@dataclass
class Layout:
    """How a text table's fields are separated: by ``blanks``, or at ``spans``."""

    names: list[str]
    spans: list[tuple[int, int]] | None = None   # fixed widths: [start, end) of each column
    row_names: bool = False   # R's write.table: a row's number before it, none in the header
                              # (named rows, "Mazda RX4", are a column: row_names)
    skip: int = 1             # lines before the data: the header (and a rule under it)
    console: bool = False     # a console's table: fields between bars, rules around them
    boxed: bool = False       # its rows begin and end with a bar (mysql's, Markdown's)


def layout(head: str) -> Layout | None:
    """The layout of a text table from its first lines (``head``: text, its last line
    maybe cut), or None where its header is no blank-separated row of names."""
    lines = head.splitlines()[:_SAMPLE + 2]
    if len(lines) > 1 and not head.endswith(("\n", "\r")):
        lines = lines[:-1]   # cut by the sample's end
    if not lines or len(_FIELD.findall(lines[0])) < 2:
        return None
    header, rule = lines[0], len(lines) > 1 and bool(_RULE.match(lines[1]))
    data = [ln for ln in lines[1 + rule:] if ln.strip()]
    written = _FIELD.findall(header)
    names, quoted = [_unquote(f) for f in written], all(f[0] == '"' for f in written)
    counts = {len(_FIELD.findall(ln)) for ln in data}
    aligned = any("  " in ln.strip() for ln in [header, *data])
    if not rule and counts == {len(names)} and (aligned or len(names) > 2 or quoted):
        return Layout(names)
    numbered = [_unquote(_FIELD.match(ln.strip()).group()) for ln in data] == [
        str(i) for i in range(1, len(data) + 1)]
    if not rule and counts == {len(names) + 1} and (numbered or quoted):
        return Layout(names if numbered else ["row_names", *names], row_names=numbered)
    spans = _spans([lines[1]] if rule else [header, *data], header)
    if aligned and len(spans) >= 2 and data:
        return Layout([header[a:b].strip() for a, b in spans], spans=spans, skip=1 + rule)
    if aligned and not any(d in header for d in ",;\t|"):
        raise DataError("its header is one field holding runs of blanks, and its lines split "
                        "neither into as many fields nor into columns of fixed width: export "
                        "it with a delimiter (CSV)")
    return None


def read(path: Path, where: str, lay: Layout, encoding: str, nulls: list[str]) -> pd.DataFrame:
    """Every row of the text table ``path`` laid out as ``lay``, every field as text
    (missing: ``nulls``), with ``lay.names``' columns.

    Raises:
        DataError: a line that splits into another number of fields than the header's.
    """
    opts = dict(header=None, skiprows=lay.skip, dtype=str, keep_default_na=False,
                na_values=nulls, encoding=encoding)
    try:
        with input_stream(path) as f:
            if lay.console:
                return _read_console(f.read().decode(encoding), where, lay, nulls)
            if lay.spans is not None:
                return pd.read_fwf(f, colspecs=lay.spans, names=lay.names, **opts)
            df = pd.read_csv(f, sep=r"\s+", names=["__row__", *lay.names] if lay.row_names
                             else lay.names, quotechar='"', engine="c", **opts)
    except (pd.errors.ParserError, UnicodeError) as e:
        raise DataError(f"{where}: a text table whose fields are separated by blanks, but "
                        f"{e} (lines counted from 1, the header); quote values that hold "
                        "blanks, or export it with a delimiter (CSV)") from None
    return df.drop(columns="__row__") if lay.row_names else df


def _spans(lines: list[str], header: str) -> list[tuple[int, int]]:
    """The columns of fixed width: the [start, end) of each run of positions where some
    line has a character (a rule's dashes, else the header's and data's characters), a run
    without a name of the header joined to the one before it (a value's blank: ``Salt
    Lake City``), the first from the line's start and the last to its end; none if a run
    holds two names."""
    width = max(map(len, lines))
    used = [False] * width
    for ln in lines:
        for i, c in enumerate(ln):
            used[i] = used[i] or not c.isspace()
    spans, start = [], None
    for i, u in enumerate([*used, False]):
        if u and start is None:
            start = i
        elif not u and start is not None:
            spans.append((start, i))
            start = None
    names = [m.span() for m in _FIELD.finditer(header)]
    named = lambda a, b: sum(s < b and a < e for s, e in names)  # noqa: E731
    out = []
    for a, b in spans:
        if out and named(a, b) == 0:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    if not out or any(named(a, b) != 1 for a, b in out):
        return []
    out[0], out[-1] = (0, out[0][1]), (out[-1][0], 1 << 20)
    return out


def _unquote(field: str) -> str:
    return field[1:-1].replace('""', '"') if len(field) > 1 and field[0] == field[-1] == '"' \
        else field


#: a console's rule: runs of dashes joined by + or | (psql's ---+---, mysql's +---+---+,
#: a Markdown table's |---|:---:|)
_BARS = re.compile(r"^\s*[|+]?(?:\s*:?-+:?\s*[|+])+\s*:?-+:?\s*[|+]?\s*$|^\s*\+-+\+\s*$")


def console(head: str) -> Layout | None:
    """The layout of a console's table (see the module's docstring) from its first lines:
    a rule among the first three and, above it (psql, Markdown) or below it (mysql's box),
    a row of as many names between bars; else None."""
    lines = head.splitlines()[:3]
    at = next((i for i, ln in enumerate(lines) if _BARS.match(ln)), None)
    if at is None:
        return None
    row = at + 1 if at == 0 else at - 1   # (mysql's box: a rule above its header too)
    if row >= len(lines) or "|" not in lines[row]:
        return None
    boxed = lines[row].strip().startswith("|") and lines[row].strip().endswith("|")
    names = _bars(lines[row], boxed)
    if len(names) != len(re.findall(r"-+", lines[at])) or not all(names):
        return None
    return Layout(names, skip=row + 1, console=True, boxed=boxed)


def _bars(line: str, boxed: bool) -> list[str]:
    inner = line.strip()
    return [f.strip() for f in (inner[1:-1] if boxed else inner).split("|")]


def _read_console(text: str, where: str, lay: Layout, nulls: list[str]) -> pd.DataFrame:
    """The rows of a console's table: every line below the header but its rules, blank
    lines and count of rows (:data:`rdl.data.reports.FOOTER`), split at its bars."""
    rows, lines = [], text.splitlines()
    for n, ln in enumerate(lines[lay.skip:], start=lay.skip + 1):
        if not ln.strip() or _BARS.match(ln) or FOOTER.fullmatch(ln.strip()):
            continue
        fields = _bars(ln, lay.boxed)
        if len(fields) != len(lay.names):
            raise DataError(f"{where}: a console's table of {len(lay.names)} columns between "
                            f"bars, but line {n} has {len(fields)} fields: {ln[:80]!r} (a value "
                            "holding a bar, or a value on several lines); export it with a "
                            "delimiter (psql --csv, mysql --batch)")
        rows.append(fields)
    df = pd.DataFrame(rows, columns=lay.names, dtype=object)
    return df.mask(df.isin(["", *nulls]), None)
