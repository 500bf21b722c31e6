"""A folder of data files with the scripts that make their tables beside them: a warehouse
export's ``schema.sql``, TPC-H's ``dss.ddl`` (columns) and ``dss.ri`` (keys), a Kaggle
dataset's DDL. The draft (:mod:`rdl.data.draft`) takes from them what a database file
would declare: the keys (:class:`rdl.data.dbfile.Declared`) and, for files with no header
row, the names of their columns in order.

The scripts' tables and keys are made in SQLite once (:mod:`rdl.data.sqlscript`; their
rows, and the files they load, left out: the files are the data); a table is the
folder's whose name is the same, case aside (``CUSTOMER``, ``TPCD.CUSTOMER``:
``customer.tbl``), a column the file's of the same name, case aside. A script SQLite cannot run is left out, the draft's comment says why.
"""
from __future__ import annotations

import logging
import re
import sqlite3
from contextlib import closing
from pathlib import Path

from rdl.data import dbfile, sqlscript
from rdl.data.database import DataError

log = logging.getLogger(__name__)

#: what names a script of a table's DDL beside its files (TPC-H's dbgen: .ddl and .ri)
SUFFIXES = (".sql", ".ddl", ".ri")


def scripts(folder) -> list[Path]:
    """The DDL scripts beside a folder's data files, in name order: those that make or
    alter a table (a script of queries beside them is none)."""
    def ddl(p):
        with open(p, "rb") as f:
            return re.search(rb"(?i)\b(create|alter)\s+table\b", f.read(1 << 20)) is not None
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix.lower()
                  in SUFFIXES and not p.name.startswith((".", "_")) and ddl(p))


def beside(folder, tables) -> tuple[dbfile.Declared, dict[str, list[str]], str]:
    """The keys the DDL beside ``folder``'s files declares, each table's columns in order,
    by the folder's table names (``tables``), and why the DDL was left out (``""``: it
    was not); nothing where there is no DDL."""
    found = scripts(folder)
    if not found:
        return dbfile.Declared(), {}, ""
    try:
        db = dbfile.exported(folder, lambda p, out: sqlscript.run(
            p, Path(out) / "ddl.sqlite", found, with_rows=False), tag="ddl") / "ddl.sqlite"
        declared = dbfile.declared(db)
    except DataError as e:
        log.warning("%s: the DDL beside the files is left out: %s", folder, e)
        return dbfile.Declared(), {}, f"{', '.join(p.name for p in found)} left out: {e}"
    by_name = {t.casefold(): t for t in tables}
    with closing(sqlite3.connect(db)) as con:
        columns = {by_name[t.casefold()]: [c[1] for c in con.execute(
            f'PRAGMA table_info("{t}")')] for (t,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'") if t.casefold() in by_name}
    name = lambda t: by_name.get(t.casefold())   # noqa: E731
    out = dbfile.Declared(
        pkeys={name(t): k for t, k in declared.pkeys.items() if name(t)},
        fkeys={name(t): {c: name(r) for c, r in f.items() if name(r)}
               for t, f in declared.fkeys.items() if name(t)},
        notes={name(t): n for t, n in declared.notes.items() if name(t)})
    return out, columns, ""


def as_in(declared: dbfile.Declared, frames: dict) -> dbfile.Declared:
    """``declared`` with its columns named as the frames of the tables name them (case
    aside: the DDL's ``C_CUSTKEY``, the parquet file's ``c_custkey``)."""
    def col(t, c):
        cols = {str(x).casefold(): x for x in frames[t].columns} if t in frames else {}
        return ", ".join(cols.get(p.strip().casefold(), p.strip()) for p in c.split(","))
    return dbfile.Declared(
        pkeys={t: [col(t, c) for c in k] for t, k in declared.pkeys.items()},
        fkeys={t: {col(t, c): r for c, r in f.items()} for t, f in declared.fkeys.items()},
        notes=declared.notes)
