"""One table's CSV file as a pandas frame, as warehouses export it (its parquet files:
:mod:`rdl.data.parquet`).

CSV files are read by pyarrow as RFC 4180 says: any size, values quoted with ``"``, line
breaks inside quoted values, ``""`` for a quote; compressed ones (``.csv.gz``) by their
name, a zip archive (``.zip``, as R and spreadsheets export) when it holds one file. What
exports add to that is taken care of here, each in one place:

* the encoding: UTF-8 (a byte-order mark or not), UTF-16 or UTF-32 with a byte-order
  mark; a file that is not valid UTF-8 is read as Windows-1252 (cp1252), else latin-1,
  and a warning says which;
* the delimiter: ``,``, or ``;``, tab or ``|`` when the header holds no comma but one of
  those, or splits every line alike where commas do not (:func:`reports.steadier`);
* the header: names stripped of spaces, an empty name becomes ``unnamed_<position>``
  (dropped when the column is empty too: a trailing delimiter), a repeated one (also when
  only its case differs: SQL does not tell them apart) ``<name>_2``, ``<name>_3``, ...;
* missing values: an empty field or one of :data:`NULLS`;
* rows with more or fewer fields than the header: one :class:`DataError` with their count
  and a few of them (a delimiter at the end of every data row is dropped instead).

Every column of a CSV file is read as text (pyarrow's type inference reports a bad value
by column number only); :func:`rdl.data.checks.numbers` then makes numbers of the columns
that hold only numbers. Nothing is ever written.
"""
from __future__ import annotations

import codecs
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from rdl.data import aligned, reports
from rdl.data.bad_rows import BadRows, undecodable
from rdl.data.database import DataError
from rdl.data.sources import input_stream as _input
from rdl.data.sources import member as _member
from rdl.data.sources import source as _source

log = logging.getLogger(__name__)

#: how exports write a missing value: empty, SQL's NULL, MySQL's and PostgreSQL's ``\N``,
#: pandas' ``NaN`` and ``<NA>``, Excel's ``#N/A``, MySQL's zero dates; not words that may
#: be values (``NA``: a country's code; ``None``, ``n/a``: a category's name)
NULLS = ["", "NULL", "null", "Null", "\\N", "NaN", "nan", "<NA>", "#N/A", "0000-00-00",
         "0000-00-00 00:00:00"]
#: a delimiter other than a comma is taken when the header has no comma but one of these
DELIMITERS = (";", "\t", "|", "\x01")   # \x01: Hive's text tables
_BOMS = [(codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF8, "utf8"),  # pyarrow skips a UTF-8 byte-order mark itself
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")]


def headers(found: list[Path], table: str, columns: list[str] | None = None) -> list[Header]:
    """The header of each CSV part of ``table`` (:func:`header`); ``columns``: the schema's
    names of a file without a header row (its first row is data).

    Raises:
        DataError: a part's columns are not the first part's, or not as many as
            ``columns``.
    """
    out = [header(p, f"{p} (table {table!r})") for p in found]
    if columns is not None:
        for p, h in zip(found, out):
            trailing = len(h.written) == len(columns) + 1 and not h.written[-1].strip()
            if len(h.written) != len(columns) and not trailing:   # (dbgen's: 1|a|b|)
                raise DataError(f"{p} (table {table!r}): its first row has {len(h.written)} "
                                f"fields, and the schema's columns: names {len(columns)} "
                                f"({columns[:8]}): name each field, in order")
            h.names, h.written, h.renamed, h.skip = list(columns), list(columns), {}, 0
            if h.layout is not None:   # (its first line was taken for a header)
                h.layout.names, h.layout.skip = list(columns), 0
    for p, h in zip(found[1:], out[1:]):
        if not set(h.names) & set(out[0].names):
            raise DataError(f"{p} (table {table!r}): columns {h.names} share none with those "
                            f"of {found[0].name}, {out[0].names}; export the parts with one header")
    warn_drift(f"{found[0].parent} (table {table!r})", found, [h.names for h in out])
    return out


def union(parts: list[Header]) -> Header:
    """One header of a table's parts: every column any of them has, in the order first seen."""
    names = list(dict.fromkeys(n for h in parts for n in h.names))
    written = list(dict.fromkeys(w for h in parts for w in h.written))
    return Header(names, written, {k: v for h in parts for k, v in h.renamed.items()})


def warn_drift(where: str, found: list[Path], names: list[list[str]]) -> None:
    """Warns where a table's parts do not all have the same columns (a column added to a
    daily export): each is read where it is, missing in the rows of the parts without it."""
    every = list(dict.fromkeys(n for part in names for n in part))
    lacking = {n: [p.name for p, part in zip(found, names) if n not in part] for n in every}
    lacking = {n: ps for n, ps in lacking.items() if ps}
    if lacking:
        log.warning("%s: its %d parts do not all have the same columns: %s; read as missing "
                    "in those parts' rows", where, len(found), "; ".join(
                        f"{n!r} missing in {len(ps)} ({', '.join(ps[:2])}{', ...' * (len(ps) > 2)})"
                        for n, ps in list(lacking.items())[:5]))


@dataclass
class Header:
    """A CSV file's header and how to read the rows below it."""

    names: list[str]                 # the columns as rdl names them
    written: list[str]               # as the file wrote them
    renamed: dict[str, str] = field(default_factory=dict)   # written (position) -> name
    encoding: str = "utf8"
    delimiter: str = ","
    escape: str | bool = False   # MySQL's exports write \" for a quote in a value
    skip: int = 1                # rows before the data: the header (none: columns: named)
    layout: aligned.Layout | None = None   # fields separated by blanks, not a delimiter


def header(path: Path, where: str) -> Header:
    """The header of CSV file ``path`` (its first row only).

    Raises:
        DataError: the file is empty (not even a header) or not readable as CSV.
    """
    if path.suffix.lower() == ".zip":
        _member(path, where)   # one file, or an error naming the table
    try:
        return _header(path, where, _bom_encoding(path))
    except OSError as e:   # (a .gz cut short, or no gzip at all)
        raise DataError(f"{where}: not readable: {e} (a compressed file cut short? export "
                        "it again)") from None


def _header(path: Path, where: str, encoding: str) -> Header:
    head = _head(path, encoding)   # the first 64 KB: a report's title, a text table's layout
    if (board := aligned.console(head)) is not None:   # (its bars would read as delimiters)
        log.info("%s: a database console's table, fields between bars", where)
        return Header(*unique_names(board.names), encoding, "|", layout=board)
    above = reports.preamble(head)
    opts = pacsv.ReadOptions(encoding=encoding, skip_rows=above)
    first = _first_row(path) if encoding in ("utf8", "cp1252", "latin-1") and not above \
        else None
    src = (lambda: pa.BufferReader(first)) if first is not None else (lambda: _source(path))
    # with data rows (UTF-16 or -32, whose rows reach the handler as UTF-8, or a header
    # past 1 MB), rows with other numbers of fields are skipped: read_csv reports them
    skip = None if first is not None else (lambda row: "skip")
    try:
        written = pacsv.open_csv(src(), read_options=opts, parse_options=_parse(",", skip)
                                 ).schema.names
        delimiter = ","
        if len(written) == 1:
            found = [d for d in DELIMITERS if d in written[0]]
            if found:
                delimiter = max(found, key=written[0].count)
                written = pacsv.open_csv(src(), read_options=opts,
                                         parse_options=_parse(delimiter, skip)).schema.names
            elif (lay := aligned.layout(head)) is not None:
                log.info("%s: fields separated by %s", where, "blanks" if lay.spans is None
                         else "their positions (fixed widths)")
                return Header(*unique_names(lay.names), encoding, " ", layout=lay)
        elif (d := reports.steadier(head.split("\n", above)[-1], written)) is not None:
            delimiter = d   # (commas in a value of the first row, a file without a header)
            written = pacsv.open_csv(src(), read_options=opts,
                                     parse_options=_parse(delimiter, skip)).schema.names
    except pa.ArrowInvalid as e:
        if "Empty CSV file" in str(e):
            raise DataError(f"{where}: the file is empty (0 bytes, not even a header row); "
                            "export the table again") from None
        if "UTF8" in str(e) and encoding == "utf8":
            return _header(path, where, _fallback(path))
        raise DataError(f"{where}: not a readable CSV file: {e}") from None
    except UnicodeError:   # (a header that is not UTF-8: cp1252's é in a name)
        if encoding == "utf8":
            return _header(path, where, _fallback(path))
        raise DataError(f"{where}: not a readable CSV file: its header is not {encoding}")
    except OSError as e:
        raise DataError(f"{where}: not a readable CSV file: {e}") from None
    except DataError as e:   # (aligned.layout)
        raise DataError(f"{where}: {e}") from None
    if delimiter != ",":
        log.info("%s: fields delimited by %r", where, delimiter)
    if above:
        log.info("%s: %d line(s) above the header left out (a report's title?)", where, above)
    if encoding not in ("utf8", "cp1252", "latin-1"):   # those two have their warning
        log.info("%s: read as %s (its byte-order mark says so)", where, encoding)
    return Header(*unique_names(written), encoding, delimiter, skip=above + 1)


def _first_row(path: Path, limit: int = 1 << 20) -> bytes | None:
    """The bytes of the file's first row, its header: up to its first line break outside
    quotes (an encoding that writes ``\\n`` and ``"`` as ASCII does). Parsed alone, the
    header is read before any data row: a data row then never reaches pyarrow's handler
    of rows with the wrong number of fields, which fails on bytes that are not UTF-8 (a
    cp1252 file delimited by ``;`` with decimal commas has such rows when read as if
    delimited by commas). None if no line break ends a row in the first ``limit`` bytes."""
    with _input(path) as f:
        data = f.read(limit)
    end = data.find(b"\n")
    while end >= 0 and data.count(b'"', 0, end) % 2:   # a line break inside quotes
        end = data.find(b"\n", end + 1)
    if end >= 0:
        return data[:end + 1]
    return data if len(data) < limit else None


def _head(path: Path, encoding: str, limit: int = 1 << 16) -> str:
    """The file's first ``limit`` bytes as text (a text table's layout is judged on them)."""
    with _input(path) as f:
        return f.read(limit).decode(encoding, errors="replace")


def unique_names(written: list[str], strip: bool = True) -> tuple[list[str], list[str], dict]:
    """Column names a table can have, for the names a file wrote: stripped of spaces (with
    ``strip``), ``unnamed_<position>`` for an empty one, ``<name>_2``, ``<name>_3`` for one
    repeated, also when only its case differs (SQL, DuckDB's too, does not tell ``Age``
    from ``age``: it would read the first for the second). Returns ``(names, written,
    renamed)``, as :class:`Header` holds them."""
    names, renamed, seen = [], {}, set()
    for i, w in enumerate(written, 1):
        name = (w.strip() if strip else w) or f"unnamed_{i}"
        base, k = name, 1
        while name.casefold() in seen:
            k += 1
            name = f"{base}_{k}"
        seen.add(name.casefold())
        names.append(name)
        if name != w:
            renamed[f"{w!r} (column {i})"] = name
    return names, list(written), renamed


def warn_renamed(where: str, renamed: dict, dropped=()) -> None:
    """The warning that lists the columns :func:`unique_names` renamed."""
    kept = {w: n for w, n in renamed.items() if n not in dropped}
    if kept:
        log.warning("%s: header names renamed: %s", where,
                    ", ".join(f"{w} -> {n!r}" for w, n in kept.items()))


def _bom_encoding(path: Path) -> str:
    with _input(path) as f:
        head = f.read(4)
    return next((enc for bom, enc in _BOMS if head.startswith(bom)), "utf8")


def _fallback(path: Path) -> str:
    """cp1252 if it decodes the whole file (5 of its bytes mean nothing), else latin-1."""
    with _input(path) as f:
        data = f.read()
    try:
        data.decode("utf-8")
        return "utf8"
    except UnicodeDecodeError as e:
        first = e.start
    try:
        data.decode("cp1252")
        encoding = "cp1252"
    except UnicodeDecodeError:
        encoding = "latin-1"
    line = data.count(b"\n", 0, first) + 1
    log.warning("%s: not UTF-8 (byte %d, line %d, is not): read as %s; if letters look "
                "wrong, save the file as UTF-8", path, first, line, encoding)
    return encoding


def _parse(delimiter: str, handler=None, escape: str | bool = False) -> pacsv.ParseOptions:
    return pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True, escape_char=escape,
                              invalid_row_handler=handler)


def _as_text(names: list[str]) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                null_values=NULLS, strings_can_be_null=True)


def read_csv(path: Path, where: str, h: Header | None = None) -> pd.DataFrame:
    """Every row of CSV file ``path``, every column as text (missing: ``None``).

    Raises:
        DataError: rows whose number of fields differs from the header's (how many, a few
            of them and what to do), or a file pyarrow cannot parse or decompress.
    """
    try:
        return _rows(path, where, h or header(path, where))
    except OSError as e:   # (a .gz cut short)
        raise DataError(f"{where}: not readable: {e} (a compressed file cut short? export "
                        "it again)") from None


def _rows(path: Path, where: str, h: Header) -> pd.DataFrame:
    names = list(h.names)
    if h.layout is not None:
        df = aligned.read(path, where, h.layout, h.encoding, NULLS).set_axis(names, axis=1)
    else:
        df = _delimited(path, where, h, names)
    df = reports.excel_text(reports.without_totals(reports.without_rule(df, where), where),
                            where)
    # the header again, in the rows: parts of an export joined with their headers (cat)
    again = np.ones(len(df), dtype=bool)
    for n, w in zip(names, h.written):   # the first column rules out nearly every row
        again &= df[n].eq(w.strip()).to_numpy(dtype=bool, na_value=False)
        if not again.any():
            break
    if again.any():
        at = np.flatnonzero(again)
        log.warning("%s: %s the header (rows %s, counted from the header, row 1: files "
                    "joined with their headers?): left out", where,
                    f"{len(at)} rows repeat" if len(at) > 1 else "1 row repeats",
                    ", ".join(str(i + 2) for i in at[:3]))
        df = df[~again].reset_index(drop=True)
    # an unnamed column holding nothing: a delimiter at the end of every line
    empty = [n for n, w in zip(names, h.written) if not w.strip() and df[n].isna().all()]
    warn_renamed(where, h.renamed, empty)
    return df.drop(columns=empty)


def _delimited(path: Path, where: str, h: Header, names: list[str]) -> pd.DataFrame:
    """A delimited file's rows, by pyarrow (see :func:`read_csv`)."""
    bad = BadRows(h.delimiter)

    def read(threads: bool, cols: list[str]) -> pa.Table:
        bad.__init__(h.delimiter)
        opts = pacsv.ReadOptions(encoding=h.encoding, column_names=cols, skip_rows=h.skip,
                                 use_threads=threads)
        with undecodable(bad):
            return pacsv.read_csv(_source(path), read_options=opts,
                                  parse_options=_parse(h.delimiter, bad, h.escape),
                                  convert_options=_as_text(cols))
    try:
        try:
            table = read(True, names)
        except pa.ArrowInvalid as e:
            if ("UTF8" not in str(e) and not bad.undecodable) or h.encoding != "utf8":
                raise
            h.encoding = _fallback(path)   # past the first block: bytes that are not UTF-8
            table = read(True, names)
        if bad.count and any('\\"' in r.text for r in bad.first):
            h.escape = "\\"   # quotes written \" (MySQL), not "" (RFC 4180): tried once
            table = read(True, names)
            if bad.count:
                h.escape = False
                table = read(True, names)
            else:
                log.info("%s: quotes in values escaped with a backslash (\\\")", where)
        if bad.count and bad.single and reports.is_footer(path, h.encoding, bad.texts):
            log.info("%s: %d line%s of a report's footer after the rows (%s): left out", where,
                     bad.count, "s" * (bad.count > 1), repr(bad.texts[0][:60]))
            bad.count = 0
        if bad.count and table.num_rows == 0 and bad.trailing:
            # a delimiter ends every data row but not the header: an empty last column
            table = read(True, names + ["__trailing__"]).drop_columns(["__trailing__"])
        elif bad.count:
            read(False, names)  # again, on one thread: pyarrow then numbers the rows
    except (pa.ArrowInvalid, UnicodeError) as e:
        raise DataError(f"{where}: not a readable CSV file: {e}") from None
    if bad.count:
        shown = "; ".join(f"row {r.number}: {r.text[:80]!r} ({r.actual_columns} fields)"
                          for r in bad.first)
        n = f"{bad.count} rows do not" if bad.count > 1 else "1 row does not"
        raise DataError(f"{where}: {n} have the header's {len(names)} fields, e.g. "
                        f"{shown} (rows counted from the header, row 1). Quote values that "
                        "hold the delimiter or a line break (\"a, b\"), or remove the extra "
                        "fields")
    if bad.footers:
        log.info("%s: a console's count of the rows after them left out", where)
    return table.to_pandas()


def columns_of(spec: dict, at: str) -> list[str] | None:
    """A schema's ``columns:``: the names of a CSV file's fields, in order, where it has no
    header row (PostgreSQL's ``COPY TO``, MySQL's ``INTO OUTFILE``, Redshift's ``UNLOAD``
    and SQL Server's ``bcp`` write none unless asked)."""
    cols = spec.get("columns")
    if cols is None:
        return None
    if not isinstance(cols, list) or not cols or len({str(c) for c in cols}) != len(cols):
        raise DataError(f"{at}: columns {cols!r}: the file's fields' names, in order, each once "
                        "(a list: [order_id, customer_id, ordered])")
    return [str(c) for c in cols]


def no_header(written: list[str]) -> bool:
    """Whether a file's header is a row of data: some names are numbers or times."""
    names = pd.Series(written, dtype=object)
    return bool(pd.to_numeric(names, errors="coerce").notna().any()
                or names.str.match(r"^\d{4}-\d\d-\d\d").any())
