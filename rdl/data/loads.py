"""Rows a script loads from files beside it, for :mod:`rdl.data.sqlscript`: psql's ``\\copy t
FROM 'file.csv' ...`` and PostgreSQL's ``COPY t FROM 'file' ...`` (AdventureWorks for
PostgreSQL's ``install.sql``), MySQL's ``LOAD DATA [LOCAL] INFILE 'file' INTO TABLE t
...``, SQL Server's ``BULK INSERT t FROM 'file' WITH (...)``. Each file is read with the
options its statement gives (the delimiter, quotes, a header's lines to skip, the
encoding, a column list) and its rows inserted into the table.

A file named by a path that is not there (``/var/lib/mysql-files/orders.csv``, SQL
Server's ``$(SqlSamplesSourceDataPath)Address.csv``) is looked for by its name beside the
script. Written by hand: the statements are each database's own, run by its server.
"""
from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from rdl.data.database import DataError
from rdl.data.dialects import NAME, copy_rows

_PG = re.compile(rf"(?is)^\\?copy\s+({NAME}(?:\s*\.\s*{NAME})*)\s*(?:\(([^)]*)\))?\s+FROM\s+"
                 r"(?:E?'((?:[^']|'')+)'|\"([^\"]+)\")(.*)$")
_MYSQL = re.compile(rf"(?is)^LOAD\s+DATA\s+(?:LOW_PRIORITY\s+|CONCURRENT\s+)?(?:LOCAL\s+)?"
                    rf"INFILE\s+'((?:[^'\\]|\\.)+)'\s+(?:REPLACE\s+|IGNORE\s+)?INTO\s+TABLE\s+"
                    rf"({NAME}(?:\s*\.\s*{NAME})*)(.*)$")
_MSSQL = re.compile(rf"(?is)^BULK\s+INSERT\s+({NAME}(?:\s*\.\s*{NAME})*)\s+FROM\s+'([^']+)'"
                    r"\s*(?:WITH\s*\((.*)\))?\s*$")


@dataclass(eq=False)
class Load:
    """A file's rows for a table, and how they are written."""
    table: str
    path: Path
    columns: list[str] | None = None
    delimiter: str = "\t"
    quote: str | None = None   # (None: no quoting; PostgreSQL's text format, MySQL's default)
    skip: int = 0
    encoding: str = "utf-8"
    escapes: bool = False      # (backslash escapes and \N for missing: PostgreSQL's text)


def _unquote(s: str) -> str:
    """A statement's string as its value: ``E'\\t'``, ``'\\t'`` (MySQL's escapes), ``','``."""
    return codecs.decode(s.replace("''", "'"), "unicode_escape") if "\\" in s else s.replace(
        "''", "'")


def _bare(name: str) -> str:
    return re.split(r"\s*\.\s*", name)[-1].strip('"`[]')


def parse(stmt: str, script: Path) -> Load | None:
    """The :class:`Load` of a statement that loads a file, else None (``COPY ... FROM
    stdin``'s rows are the script's own)."""
    if (m := _PG.match(stmt)) is not None:
        opts = m.group(5)
        csv_ = re.search(r"(?i)\bCSV\b|FORMAT\s*'?csv", opts) is not None
        load = Load(_bare(m.group(1)), _where((m.group(3) or m.group(4)).replace("''", "'"),
                                              script),
                    [c.strip().strip('"') for c in m.group(2).split(",")] if m.group(2) else None,
                    ",", '"', escapes=not csv_)
        if not csv_:
            load.delimiter, load.quote = "\t", None
        if (d := re.search(r"(?i)DELIMITER\s*(?:AS\s*)?E?'((?:[^']|'')+)'", opts)) is not None:
            load.delimiter = _unquote(d.group(1))
        if re.search(r"(?i)\bHEADER\b(?!\s*(false|off|0)\b)", opts):
            load.skip = 1
        if (e := re.search(r"(?i)ENCODING\s*'([^']+)'", opts)) is not None:
            load.encoding = e.group(1)
        return load
    if (m := _MYSQL.match(stmt)) is not None:
        opts, load = m.group(3), Load(_bare(m.group(2)), _where(_unquote(m.group(1)), script))
        fields = re.search(r"(?is)\b(?:FIELDS|COLUMNS)\b(.*?)(?=\bLINES\b|\bIGNORE\s+\d|\(|$)",
                           opts)   # (not LINES TERMINATED BY, a row's end)
        fields = fields.group(1) if fields else ""
        if (d := re.search(r"(?i)TERMINATED\s+BY\s+'((?:[^'\\]|\\.)+)'", fields)) is not None:
            load.delimiter = _unquote(d.group(1))
        if (q := re.search(r"(?i)ENCLOSED\s+BY\s+'((?:[^'\\]|\\.)+)'", fields)) is not None:
            load.quote = _unquote(q.group(1))
        if (n := re.search(r"(?i)IGNORE\s+(\d+)\s+(LINES|ROWS)", opts)) is not None:
            load.skip = int(n.group(1))
        if (c := re.search(r"\(([^()]*)\)\s*(SET\b.*)?$", opts, re.S)) is not None:
            load.columns = [x.strip().strip("`") for x in c.group(1).split(",")]
        if (e := re.search(r"(?i)CHARACTER\s+SET\s+(\w+)", opts)) is not None:
            load.encoding = {"utf8mb4": "utf-8", "utf8": "utf-8"}.get(e.group(1).lower(),
                                                                      e.group(1))
        return load
    if (m := _MSSQL.match(stmt)) is not None:
        opts, load = m.group(3) or "", Load(_bare(m.group(1)), _where(m.group(2), script))
        if (d := re.search(r"(?i)FIELDTERMINATOR\s*=\s*'([^']+)'", opts)) is not None:
            load.delimiter = _unquote(d.group(1))
        if (f := re.search(r"(?i)FIRSTROW\s*=\s*(\d+)", opts)) is not None:
            load.skip = int(f.group(1)) - 1
        if re.search(r"(?i)FORMAT\s*=\s*'CSV'", opts):
            load.quote = '"'
        if re.search(r"(?i)DATAFILETYPE\s*=\s*'widechar'", opts):
            load.encoding = "utf-16"
        return load
    return None


def _where(name: str, script: Path) -> Path:
    """A file a script names: as named (beside the script where relative), else by its
    name beside the script."""
    name = re.sub(r"^\$\([^)]*\)", "", name.strip())   # (sqlcmd's $(Folder)file.csv)
    path = Path(name) if Path(name).is_absolute() else script.parent / name
    return path if path.is_file() else script.parent / Path(name.replace("\\", "/")).name


def rows(load: Load, width: int, where: str) -> tuple[list[str] | None, list[list]]:
    """The columns and rows of a :class:`Load`'s file, each row ``width`` fields (the
    table's columns, or its list's); empty fields missing.

    Raises:
        DataError: the file is not there, or a row has another number of fields.
    """
    if not load.path.is_file():
        raise DataError(f"{where}: loads {load.path.name} into {load.table}: no such file "
                        f"beside the script ({load.path})")
    raw = load.path.read_bytes()
    try:
        text = raw.decode(load.encoding if load.encoding.lower() != "latin1" else "latin-1")
    except (UnicodeDecodeError, LookupError):
        text = raw.decode("cp1252", errors="replace")
    text = text.lstrip("\ufeff")
    lines = text.splitlines()[load.skip:]
    if load.escapes:
        out = copy_rows("\n".join(lines).replace(load.delimiter, "\t")
                        if load.delimiter != "\t" else "\n".join(lines))
    else:
        reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=load.delimiter[0],
                            quotechar=load.quote or '"',
                            quoting=csv.QUOTE_MINIMAL if load.quote else csv.QUOTE_NONE)
        out = [[None if v == "" or v == "\\N" else v for v in r] for r in reader if r]
    width = len(load.columns) if load.columns else width
    bad = [i for i, r in enumerate(out) if len(r) != width]
    if bad:
        raise DataError(f"{where}: {load.path.name}, line {bad[0] + load.skip + 1}: "
                        f"{len(out[bad[0]])} fields, where {load.table} has {width} columns "
                        f"({len(bad)} such rows)")
    return load.columns, out
