"""A database in one file: SQLite (``.sqlite``, ``.db``: what apps, Kaggle datasets and
sample databases such as Chinook or Sakila ship as), DuckDB (``.duckdb``) or an Excel
workbook of a table per sheet (:mod:`rdl.data.sheets`), read as the folder loader reads
exported files, with the keys the file declares (a workbook declares none).

``data=folder data.db.path=shop.sqlite`` (or ``.duckdb``): each table is exported once into
rdl's cache (:func:`exported`: SQLite's as CSV files, its values as SQLite stores them,
dates as text, which the CSV reader parses as it parses any export's; DuckDB's as parquet,
its types kept), written beside and renamed, keyed by the file's path, size and time of
change, and read by :func:`rdl.data.folder.load_folder` with the schema beside the file
(``shop.schema.yaml``, or ``data.db.schema``). ``python -m rdl.data.draft shop.sqlite``
drafts that schema from the primary and foreign keys the file declares
(:func:`declared`; SQLite does not enforce foreign keys unless asked, so references that
match no row are handled as any export's), guessing, as for files, only what it does not
declare: times, and keys of tables that declare none.

The standard library's ``sqlite3`` reads SQLite (DuckDB's SQLite extension is a download
at run time, which rdl never does). A BLOB column (images, files) is left out of the
export, with a warning naming it.
"""
from __future__ import annotations

import atexit
import csv
import hashlib
import logging
import re
import shutil
import sqlite3
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rdl.data import pgdump, sheets, sqlscript
from rdl.data.database import DataError

log = logging.getLogger(__name__)

#: bump when the exported files change (part of the cache entry's name)
EXPORT_VERSION = 1
SUFFIXES = (".sqlite", ".sqlite3", ".db", ".db3", ".duckdb", ".ddb")


def kind(path) -> str | None:
    """``"sqlite"``, ``"duckdb"``, ``"xlsx"``, ``"sql"`` (a script, or a folder of them:
    :func:`rdl.data.sqlscript.scripts_in`) or ``"pgdump"`` (:mod:`rdl.data.pgdump`, a file
    or a folder) when ``path`` is such a database file (by its first bytes, whatever its
    suffix; a workbook by its suffix and contents, a script by its suffix), else None."""
    path = Path(path)
    if pgdump.is_archive(path):
        return "pgdump"
    if path.is_dir() and sqlscript.scripts_in(path):
        return "sql"
    if not path.is_file():
        return None
    if sheets.is_workbook(path):
        return "xlsx"
    if sqlscript.is_script(path):
        return "sql"
    with open(path, "rb") as f:
        head = f.read(16)
    if head == b"SQLite format 3\x00":
        return "sqlite"
    if head[8:12] == b"DUCK":
        return "duckdb"
    return None


def within(folder) -> str:
    """What to say of the database files in a folder that holds no table's file: ``""``
    where it holds none (a folder of scripts is itself one: :func:`kind`)."""
    found = sorted(p for p in Path(folder).iterdir() if kind(p) in ("sqlite", "duckdb", "pgdump"))
    if not found:
        return ""
    return (f" (database files: {', '.join(p.name for p in found[:5])}: draft one of them, "
            f"python -m rdl.data.draft {found[0]})")


def schema_beside(path) -> Path:
    """The schema file of database file ``path``: ``<stem>.schema.yaml`` beside it (a
    folder of scripts: its ``schema.yaml``)."""
    path = Path(path)
    return path / "schema.yaml" if path.is_dir() else path.with_name(f"{path.stem}.schema.yaml")


@dataclass
class Declared:
    """The keys a database file declares: ``pkeys`` table -> its key's columns;
    ``fkeys`` table -> {column (a composite's joined by ``", "``): referenced table};
    ``notes`` table -> (column, what of it could not be used), for the draft's comments."""
    pkeys: dict[str, list[str]] = field(default_factory=dict)
    fkeys: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def keys_in(self, frames: dict) -> tuple[dict, dict, dict]:
        """The declared primary keys that hold in the rows of ``frames``: a single
        column's (table -> (column, why)), composites (table -> columns), and notes on
        those that do not (SQLite lets NULL into some, a file may be damaged)."""
        single, composite, notes = {}, {}, {}
        for t, cols in self.pkeys.items():
            if t not in frames or not set(cols) <= set(frames[t].columns):
                continue
            v = frames[t][cols]
            bad = int((v.isna().any(axis=1) | v.duplicated(keep=False)).sum())
            if bad:
                notes[t] = (cols[0], f"the declared primary key ({', '.join(cols)}) is missing or "
                            f"repeated in {bad} of {len(v)} rows: not used")
                continue
            # (a partitioned table's key holds the partition's time: payment_id, payment_date)
            rest = [c for c in cols if not pd.api.types.is_datetime64_any_dtype(v[c])]
            if 0 < len(rest) < len(cols) and not (v[rest].isna().any(axis=1)
                                                  | v[rest].duplicated(keep=False)).any():
                why = (f"the primary key the database declares, ({', '.join(cols)}), less its "
                       f"times: {', '.join(rest)} alone unique in every row")
                cols = rest
            else:
                why = "the primary key the database declares"
            if len(cols) == 1:
                single[t] = (cols[0], why)
            else:
                composite[t] = cols
        return single, composite, notes


# -- what the file declares ----------------------------------------------------------------
def _sqlite(path: Path):
    """A read-only connection, closed when the ``with`` block ends."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return closing(con)
    except sqlite3.DatabaseError as e:
        raise DataError(f"{path}: not a readable SQLite database: {e}") from None


def _sqlite_tables(con) -> list[str]:
    """The tables of rows: not SQLite's own, nor a full-text index's (virtual, and the
    shadow tables it keeps its index in; PRAGMA table_list says which, SQLite 3.37 on)."""
    names = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")]
    try:
        kinds = {r[1]: r[2] for r in con.execute("PRAGMA table_list") if r[0] == "main"}
    except sqlite3.DatabaseError:   # older SQLite: virtual tables' shadows stay
        return names
    return [n for n in names if kinds.get(n, "table") == "table"]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlite_keys(con, tables: list[str]) -> tuple[dict, list]:
    """Each table's primary key, and the foreign keys ``(table, columns, ref, ref's
    columns or None for its primary key)``, as SQLite's pragmas give them."""
    pkeys, refs = {}, []
    for t in tables:
        cols = con.execute(f"PRAGMA table_info({_quote(t)})").fetchall()
        pk = [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5] > 0]
        if pk:
            pkeys[t] = pk
        by_id: dict[int, list] = {}
        for row in con.execute(f"PRAGMA foreign_key_list({_quote(t)})").fetchall():
            by_id.setdefault(row[0], []).append(row)
        for rows in by_id.values():
            rows.sort(key=lambda r: r[1])
            to = [r[4] for r in rows]
            refs.append((t, [r[3] for r in rows], rows[0][2], None if None in to else to))
    return pkeys, refs


def _duckdb_keys(con) -> tuple[dict, list]:
    pkeys, refs = {}, []
    rows = con.execute("SELECT * FROM duckdb_constraints() WHERE constraint_type IN "
                       "('PRIMARY KEY', 'FOREIGN KEY')").df()
    for _, r in rows.iterrows():
        cols = list(r["constraint_column_names"])
        if r["constraint_type"] == "PRIMARY KEY":
            pkeys[r["table_name"]] = cols
            continue
        ref = r.get("referenced_table")
        to = list(r.get("referenced_column_names") or [])
        if not isinstance(ref, str):   # older DuckDB: read from the constraint's text
            m = re.search(r'REFERENCES\s+"?([^"(]+?)"?\s*\(([^)]*)\)', r["constraint_text"])
            if not m:
                continue
            ref, to = m.group(1).split(".")[-1], [c.strip(' "') for c in m.group(2).split(",")]
        refs.append((r["table_name"], cols, ref, to or None))
    return pkeys, refs


def declared(path) -> Declared:
    """The primary and foreign keys database file ``path`` declares. A foreign key names
    its table's primary key; where the referenced table declares none, the referenced
    columns are its key (SQL references only unique columns); a reference to other
    columns than the key is noted, not used (rdl's foreign keys reference keys)."""
    path = Path(path)
    if kind(path) == "xlsx":
        return Declared()
    if kind(path) in ("sql", "pgdump"):
        path = _script_db(path)
    if kind(path) == "sqlite":
        with _sqlite(path) as con:
            pkeys, refs = _sqlite_keys(con, _sqlite_tables(con))
    else:
        with _duckdb(path) as con:
            pkeys, refs = _duckdb_keys(con)
    out = Declared(pkeys=dict(pkeys))
    for t, cols, ref, to in refs:
        if to is not None and ref not in out.pkeys:
            out.pkeys[ref] = to
        key = out.pkeys.get(ref)
        if key is None or (to is not None and to != key) or len(key) != len(cols):
            out.notes.setdefault(t, []).append((cols[0],
                f"{', '.join(cols)}: declared REFERENCES {ref}({', '.join(to or ['?'])}), "
                f"not {ref}'s primary key ({', '.join(key or ['none'])}): not a foreign key here"))
            continue
        out.fkeys.setdefault(t, {})[", ".join(cols)] = ref
    return out


# -- the export ------------------------------------------------------------------------------
def _duckdb(path: Path):
    import duckdb

    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        raise DataError(f"{path}: not a DuckDB database this DuckDB ({duckdb.__version__}) "
                        f"reads: {e}") from None


def _file_name(table: str, where: Path) -> str:
    if "/" in table or "\\" in table or table.startswith((".", "_")) or table == "schema":
        raise DataError(f"{where}: table {table!r}: a name rdl cannot export as a file "
                        "(rename the table)")
    return table


def export(path, folder) -> Path:
    """Database file ``path``'s tables into ``folder``: ``<table>.csv`` for SQLite (its
    values as stored: a whole number as its digits, a real as Python writes it back, text
    as is, NULL empty), ``<table>.parquet`` for DuckDB."""
    path, folder = Path(path), Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if kind(path) == "xlsx":
        return sheets.export(path, folder)
    if kind(path) in ("sql", "pgdump"):
        path = _script_db(path)
    if kind(path) == "duckdb":
        with _duckdb(path) as con:
            found = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT "
                                "internal ORDER BY table_name, schema_name").fetchall()
            names = [t for _, t in found]
            for schema, t in found:   # a name in two schemas: <schema>.<table> (sales.orders)
                name = t if names.count(t) == 1 else f"{schema}.{t}"
                target = folder / f"{_file_name(name, path)}.parquet"
                con.execute(f"COPY (SELECT * FROM {_quote(schema)}.{_quote(t)}) TO "
                            f"'{str(target).replace(chr(39), chr(39) * 2)}' (FORMAT parquet)")
        return folder
    with _sqlite(path) as con:
        for t in _sqlite_tables(con):
            _sqlite_table(con, t, folder / f"{_file_name(t, path)}.csv", path)
    return folder


def _sqlite_table(con, table: str, target: Path, where: Path) -> None:
    cur = con.execute(f"SELECT * FROM {_quote(table)}")
    names = [d[0] for d in cur.description]
    rows = cur.fetchmany(10_000)
    declared = {i for i, c in enumerate(con.execute(f"PRAGMA table_info({_quote(table)})"))
                if "BLOB" in (c[2] or "").upper()}
    binary = {i for row in rows for i, v in enumerate(row) if isinstance(v, bytes)}
    # (binary of 16 bytes or fewer in a column not declared BLOB: a key's UUID, as hex)
    short = {i for i in binary - declared
             if all(len(r[i]) <= 16 for r in rows if isinstance(r[i], bytes))}
    blobs = (declared | binary) - short
    if blobs:
        log.warning("%s: table %r: BLOB column(s) %s left out (binary data, not features)",
                    where, table, [names[i] for i in sorted(blobs)])
    keep = [i for i in range(len(names)) if i not in blobs]
    with open(target, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([names[i] for i in keep])
        while rows:
            w.writerows([["" if row[i] is None or isinstance(row[i], bytes) and i not in short
                          else row[i].hex() if isinstance(row[i], bytes) else row[i]
                          for i in keep] for row in rows])
            rows = cur.fetchmany(10_000)


_temporary: list[str] = []


def exported(path, write=None, tag: str = "") -> Path:
    """The folder of database file ``path``'s exported tables (``write(path, folder)``
    writes them; default :func:`export`): exported once into rdl's cache
    (``<cache>/dbfiles/<digest>/<file's name>``, so that messages name a table's file as
    ``shop.sqlite/orders.csv``; written beside and renamed), again when the file changes;
    into a temporary folder (removed at exit) where the cache is not writable."""
    from rdl import caching, paths

    write = write or export
    path = Path(path).expanduser().resolve()
    stamp = [(p.name, p.stat().st_size, p.stat().st_mtime_ns)   # (a folder's: its files', but
             for p in (sorted(path.iterdir()) if path.is_dir() else [path])   # its schema)
             if p.is_file() and not p.name.endswith("schema.yaml")]
    digest = hashlib.sha1(f"{path}|{stamp}|{EXPORT_VERSION}|{tag}".encode()).hexdigest()[:12]
    root = paths.cache_dir() / "dbfiles"
    folder = root / digest / path.name
    if folder.is_dir():
        return folder
    if not caching.writable(folder.parent):
        tmp = Path(tempfile.mkdtemp(prefix=f"rdl-{path.stem}-")) / path.name
        _temporary.append(tmp.parent)
        tmp.mkdir()
        write(path, tmp)
        return tmp
    with caching.atomic_dir(folder, keep_first=True) as tmp:
        write(path, tmp)
    log.info("%s: its tables exported to %s (once; read from there)", path, folder)
    return folder


def _script_db(path: Path) -> Path:
    """SQL script ``path`` (or a pg_dump archive's, :mod:`rdl.data.pgdump`) run into a
    SQLite file once (:mod:`rdl.data.sqlscript`)."""
    def write(p, out):
        script = pgdump.to_script(p, Path(out) / "dump.sql") if kind(p) == "pgdump" else p
        sqlscript.run(script, Path(out) / "script.sqlite")
        if script != p:
            script.unlink()
    return exported(path, write, tag="sqlite") / "script.sqlite"


def sheet_as_csv(path, where: str) -> Path:
    """A workbook that is one table of a folder, as a CSV file (its one sheet, exported
    once as :func:`exported` does)."""
    sheet = sheets.one_sheet(Path(path), where)
    name = Path(path).stem
    folder = exported(path, lambda p, out: sheets.write_sheet(p, sheet, Path(out) / f"{name}.csv",
                                                              where), tag="sheet")
    return folder / f"{name}.csv"


@atexit.register
def _remove_temporary() -> None:
    for tmp in _temporary:
        shutil.rmtree(tmp, ignore_errors=True)
