"""Any relational database in: a folder of parquet, CSV or JSON files and a YAML schema.

:func:`load_folder` reads one file per table (``<table>.parquet`` or ``<table>.csv``, or the
file the schema names; or a folder of its parts, ``<table>/``, or a wildcard's files) and
returns rdl's :class:`~rdl.data.Database`, re-indexed, with ``keys`` mapping each row
position back to the file's own id. The schema names, per table, its primary key, its
foreign keys (``{column: referenced_table}``; a table may reference itself), its time column
(none: a static table) and, optionally, column stypes::

    tables:
      users: {pkey: user_id, time: signup}
      posts:
        pkey: post_id
        time: created
        fkeys: {author_id: users, parent_id: posts}
        stypes: {length: numerical}
        formats: {edited: '%d%b%Y:%H:%M:%S'}   # times in a form rdl does not read alone
      votes:
        time: {column: WEEK_NO, unit: week, origin: 2020-01-06}   # week numbers
        fkeys: {voter_id: voters, post_id: posts}
      voters: {pkey: voter_id, implied: true}   # no file: the keys votes.voter_id holds
      flags: {time: {via: post_id}, fkeys: {post_id: posts}}   # each at its post's time
      rentals: {pkey: rental_id, time: rented, events: [returned]}   # a table of returns
      tips: {file: tips.tsv, time: at, columns: [post_id, at, amount]}   # no header row
    dangling: null        # foreign keys matching no row: null (RelBench), drop, fail or add
    untimed: fail         # a timed table's rows without a time: fail, or drop (RelBench)
    missing: ['?']        # words that mean missing, beyond rdl's (also per table)

A key of several columns is a list (``pkey: [origin, hour]``), a foreign key to it its
columns joined by commas (``fkeys: {"origin, hour": weather}``; :mod:`rdl.data.composite`).
Keys without their table (``implied:``, ``dangling: add``) become rows
(:mod:`rdl.data.implied`); times come from the rows referenced (:mod:`rdl.data.inherit`),
period numbers (:mod:`rdl.data.periods`) or dates and their times of day
(:mod:`rdl.data.clocks`), before any check; later events become tables (:mod:`rdl.data.events`).

Files are read by :mod:`rdl.data.files` (encodings, delimiters, header names, missing
values, numbers) and their values checked by :mod:`rdl.data.checks` (keys, times, finite
numbers). Everything is checked before the data is used, cheap checks (schema, files,
columns) before any file is read in full; each problem is one :class:`~rdl.data.DataError`
naming the file, the table, the column, the rows and what to do. A table of facts with a
column of times but no declared time stops (a leak of the future) unless the column's stype
says it is a plain feature; a static table with a column of whole numbers that looks like
period numbers gets a warning. Nothing is ever written.
"""
from __future__ import annotations

import difflib
import logging
from pathlib import Path

import pandas as pd
import torch_frame
import yaml

from rdl.data import (assembled, checks, clocks, composite as composite_key, dbfile, epochs,
                      events, files, implied, inherit, leaks, nested, parquet, periods,
                      row_numbers, sheets, sources, states, tallies, typed)
from rdl.data.calendars import calendar_references, later_days
from rdl.data.jsonl import is_json
from rdl.data.xmlrows import is_xml
from rdl.data.keys import check_references, map_foreign_keys, shared_key
from rdl.data.schema import TableSchema
from rdl.data.database import Database, DataError, EmptyTable, Table
from rdl.data.checks import (all_bool, check_finite, check_key, mask_missing, missing_words,
                             numbers, parse_numbers, without_repeats)
from rdl.data.clocks import looks_like_clock
from rdl.data.forms import read_formats
from rdl.data.times import looks_like_times, parse_times
from rdl.progress import bar, stage

log = logging.getLogger(__name__)

TABLE_KEYS = {"file", "pkey", "fkeys", "time", "stypes", "missing", "implied", "formats",
              "events", "columns", "clocks", "unnest", "assemble", "attributes"}
SCHEMA_KEYS = {"tables", "dangling", "missing", "dayfirst", "untimed"}
DANGLING = ("null", "drop", "fail", "add")
EXTENSIONS = (".parquet", ".csv", ".jsonl", ".json", ".xlsx", ".tsv", ".txt", ".csv.gz",
              *typed.SUFFIXES)   # a table's file when the schema names none
STYPES = {s.value for s in torch_frame.stype} | {"drop"}


def read_schema(schema, folder) -> tuple[dict[str, TableSchema], str]:
    """The tables of a schema file (or of an already parsed dict) and its dangling policy.

    Raises:
        DataError: the file is missing or not YAML, a key is unknown, a foreign key names
            an unknown table or one without a primary key, an stype is unknown.
    """
    folder = Path(folder)
    where = "schema"
    if not isinstance(schema, dict):
        path = Path(schema).expanduser()
        where = str(path)
        if not path.is_file():
            raise DataError(f"{path}: schema file missing (python -m rdl.data.draft "
                            f"{path.parent} drafts one from the folder's files)")
        try:
            schema = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            raise DataError(f"{path}: not valid YAML: {e}") from None
    tables_spec = schema.get("tables") if isinstance(schema, dict) else None
    if not isinstance(tables_spec, dict) or not tables_spec:
        raise DataError(f"{where}: expected a mapping with 'tables:' (table name -> pkey, fkeys, "
                        "time, stypes, file)")
    _no_unknown(schema, SCHEMA_KEYS, where)
    dangling, untimed = str(schema.get("dangling") or "null"), checks.untimed(schema, where)
    everywhere, dayfirst = _words(schema, where), schema.get("dayfirst")
    if dayfirst not in (None, True, False):
        raise DataError(f"{where}: dayfirst {dayfirst!r}: true (dates written 31/01/2024) or "
                        "false (01/31/2024), for columns whose every date reads both ways")
    tables = {}
    for name, spec in tables_spec.items():
        spec, name = spec or {}, str(name)
        at = f"{where}: table {name!r}"
        if not isinstance(spec, dict):
            raise DataError(f"{at}: expected a mapping of {sorted(TABLE_KEYS)}, got {spec!r}")
        _no_unknown(spec, TABLE_KEYS, at)
        for key in ("fkeys", "stypes"):
            if not isinstance(spec.get(key) or {}, dict):
                raise DataError(f"{at}: {key} must be a mapping (column: ...), got {spec[key]!r}")
        for key, wrong in (("time", list), ("pkey", dict)):
            if isinstance(spec.get(key), wrong):
                raise DataError(f"{at}: {key} {spec[key]!r}: one column" + (
                    ", or a list of the columns of a composite key" if key == "pkey"
                    else ", not several"))
        composite = dict(filter(None, (composite_key.parse(k, at) for k in
                                       [spec.get("pkey"), *(spec.get("fkeys") or {})])))
        named = lambda k: None if k is None else (  # noqa: E731
            composite_key.parse(k, at) or (str(k),))[0]
        file = folder / spec["file"] if spec.get("file") else _default_file(folder, name)
        stypes = {str(c): (None if s in (None, "drop") else str(s))
                  for c, s in (spec.get("stypes") or {}).items()}
        for col, st in stypes.items():
            if st is not None and st not in STYPES:
                raise DataError(f"{at}: column {col!r} has unknown stype {st!r}; one of "
                                f"{sorted(STYPES)} or null")
        via, seen_in, time = (inherit.parse(spec["time"], at) if isinstance(
            spec.get("time"), dict) and {"via", "seen_in"} & set(spec["time"]) else (
            None, None, spec.get("time")))
        period = (periods.parse_spec(spec["time"], at, set(map(str, tables_spec)))
                  if isinstance(time, dict) else None)
        t = tables[name] = TableSchema(
            name, file, named(spec.get("pkey")),
            {named(c): str(r) for c, r in (spec.get("fkeys") or {}).items()},
            period.column if period else None if time is None else str(time), stypes)
        t.composite, t.via, t.seen_in, t.untimed = composite, via, seen_in, untimed
        t.missing, t.period, t.dayfirst = [*everywhere, *_words(spec, at)], period, dayfirst
        t.implied = implied.parse(spec, at)
        t.formats = read_formats(spec, stypes, {t.pkey, *t.fkeys} - set(composite), at)
        t.events, t.columns = events.parse(spec, t, at), files.columns_of(spec, at)
        t.clocks, t.unnest = clocks.parse(spec, at), nested.parse(spec, at)
        t.assemble = assembled.parse(spec, at)
        if period and period.column in t.formats:
            raise DataError(f"{at}: {period.column!r} has a period (time: {{...}}) and a form "
                            "(formats:): keep one")
        t.key_only = t.implied and not spec.get("file") and not sources.parts(file)
        t.attributes, t.first = implied.parse_attributes(spec, at, t.key_only)
        implied.check_key_only(t, spec, at)
    nested.resolve(tables, where)
    check_references(tables, lambda t, col: f"{where}: table {t.name!r}: foreign key {col!r}")
    events.check_names(tables, where)
    inherit.resolve(tables, where)
    for t in tables.values():
        if t.implied and not any(t.name in s.fkeys.values() for s in tables.values()):
            raise DataError(f"{where}: table {t.name!r} is implied: true, but no foreign key "
                            f"references it: declare the columns that hold its keys (e.g. "
                            f"transactions: {{fkeys: {{{t.pkey}: {t.name}}}}})")
    return tables, dangling


def _words(spec: dict, where: str) -> list[str]:
    """A schema's (or table's) ``missing:``: the words its files write for a missing value
    beyond those rdl knows (``?``, ``unknown``)."""
    words = spec.get("missing") or []
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, list) or not all(isinstance(w, (str, int, float)) for w in words):
        raise DataError(f"{where}: missing: {spec['missing']!r}: expected a list of words that "
                        "mean a missing value (missing: ['?', unknown])")
    return [str(w) for w in words]


def _no_unknown(spec: dict, known: set, where: str) -> None:
    unknown = sorted(map(str, set(spec) - known))
    if unknown:
        raise DataError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(known)}")


def _default_file(folder: Path, name: str) -> Path:
    for ext in EXTENSIONS:
        if (folder / f"{name}{ext}").exists():
            return folder / f"{name}{ext}"
    # exported on Windows: USERS.CSV
    same = [p for p in folder.iterdir() if p.name.casefold() in
            {f"{name}{ext}".casefold() for ext in EXTENSIONS}] if folder.is_dir() else []
    if len(same) == 1:
        return same[0]
    if name and (folder / name).is_dir():   # the table's parts
        return folder / name
    return folder / f"{name}.parquet"  # missing: the error names it (and .csv)


def load_folder(path, schema=None, dangling: str | None = None) -> Database:
    """The database in folder ``path``, as ``schema`` (default ``<path>/schema.yaml``) says.

    Primary keys become row positions (timed tables sorted by time first, as RelBench
    does), foreign keys those positions; ``Database.keys`` gives each table's original ids.
    ``dangling`` (default: the schema's, else ``null``) decides what happens to foreign keys
    that match no row: ``null`` sets them missing (and logs how many), ``drop`` drops their
    rows (and, in turn, rows that pointed at those), ``fail`` raises, ``add`` adds a row
    for each key to the table it references (:mod:`rdl.data.implied`).

    Raises:
        DataError: see the module's docstring; one error, naming file, table, column and rows.
    """
    if path is None or str(path) in ("", "???"):
        raise DataError("no folder given: data=folder needs data.db.path=/folder/with/the/files "
                        "(and its schema.yaml, or data.db.schema=...)")
    folder = Path(path).expanduser()
    if dbfile.kind(folder):   # a SQLite or DuckDB file: its tables, exported once
        schema = dbfile.schema_beside(folder) if schema is None else schema
        if not isinstance(schema, dict) and not Path(schema).expanduser().is_file():
            raise DataError(f"{schema}: schema file missing (python -m rdl.data.draft {folder} "
                            "--write drafts it from the keys the database declares)")
        folder = dbfile.exported(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (data.db.path: a folder of parquet, CSV or JSON "
                        "files, or a SQLite or DuckDB database file)")
    tables, policy = read_schema(folder / "schema.yaml" if schema is None else schema, folder)
    policy = str(dangling) if dangling is not None else policy
    if policy not in DANGLING:
        raise DataError(f"dangling {policy!r}: expected one of {list(DANGLING)}")
    nested.export(tables)   # lists of rows as tables' files, written once into the cache
    # Cheap checks first: every file there, every named column in it.
    files_of = {name: t for name, t in tables.items() if not t.key_only}
    for t in files_of.values():   # (a workbook: its one sheet, as CSV)
        t.parts = [dbfile.sheet_as_csv(p, t.where()) if sheets.read_as_workbook(p)
                   else p for p in sources.parts(t.file)]
        if not t.parts:
            also = f" or {t.file.with_suffix('.csv').name}" if t.file.suffix == ".parquet" else ""
            what = ("no CSV, parquet or JSON file in it" if t.file.is_dir()
                    else "missing" + sources.near(t.file))
            raise DataError(f"{t.file}{also}: {what} (the data file of table {t.name!r})")
    headers = {name: files.headers(t.parts, name, t.columns) if sources.csv_parts(
        t.parts, t.where()) else None for name, t in files_of.items()}
    names = {name: _check_columns(t, headers[name]) for name, t in files_of.items()}
    moved = implied.check_attributes(tables, names)
    calendars = {name: periods.read_calendar(t.period, folder, tables)
                 for name, t in files_of.items() if t.period and t.period.calendar}
    reading = stage(f"reading and checking {len(files_of)} tables", log)
    frames = {name: _read(t, headers[name], calendars.get(name))
              for name, t in bar(files_of.items(), "reading", unit="table")}
    reading.end()
    events.split(tables, frames)
    used = {t.period.calendar.get("table") for t in files_of.values() if t.period}
    for name, t in files_of.items():
        if name not in used:   # a calendar's periods are no rows' times
            periods.warn_undeclared(t, frames[name])
    keys = stage("matching the foreign keys", log)
    inherit.take(tables, frames, policy)
    leaks.static_times(tables, frames, used)
    calendar_references(tables, frames, used)
    later_days(tables, frames)
    for t in tables.values():
        if inherit.sources(t):
            leaks.later_times(t, frames[t.name])
    frames = implied.complete(tables, frames, policy == "add")
    frames = {name: shared_key(tables[name], df) for name, df in frames.items()}
    frames, ids = map_foreign_keys(tables, frames, policy)
    db = Database({name: Table(frames[name], t.pkey, dict(t.fkeys), t.time)
                   for name, t in tables.items()},
                  keys={name: pd.Index(v) for name, v in ids.items()})
    db = db.reindex()
    leaks.future_references(db, lambda name, col: tables[name].where(col))
    leaks.rows_per_event(db, lambda name: tables[name].where())
    tallies.warn(db, tables)
    leaks.totals(db, lambda name, col: tables[name].where(col),
                 {name: t.stypes for name, t in tables.items()}, stypes_at=lambda *k: moved.get(k))
    keys.end()
    db.stypes = {name: dict(t.stypes) for name, t in tables.items() if t.stypes}
    db.clocks = {name: t.read_clocks for name, t in tables.items() if t.read_clocks}
    log.info("%s: %s", folder, ", ".join(f"{n} {len(t)} rows" for n, t in db))
    return db


# -- reading one table ------------------------------------------------------------------------
def _role(t: TableSchema, col: str) -> str:
    key = next((k for k, cols in t.composite.items() if col in cols), None)
    return ("primary key" if col == t.pkey else "foreign key" if col in t.fkeys
            else "time column" if col == t.time else "column with an stype" if key is None
            else f"column of the {'primary' if key == t.pkey else 'foreign'} key {key!r}")


def _check_columns(t: TableSchema, parts: list[files.Header] | None) -> list[str]:
    """Every column the schema names is in the file's header (or parquet schema), once;
    the columns it has."""
    if parts is None and t.columns:
        raise DataError(f"{t.where()}: columns: names a CSV file's fields where it has no header "
                        "row; a parquet or JSON file names its own")
    header = files.union(parts) if parts else parquet.header(t.parts, t.where(), t.base)
    columns = header.names
    assembled.check(t, columns)
    if (t.via is not None or t.seen_in is not None) and t.time in columns:
        inherit.clash(t)   # (before its values are read as the time's)
    for col in t.required():
        same = [w for w in header.written if w.strip().casefold() == col.casefold()]
        if len(same) > 1:
            raise DataError(f"{t.where(col)}: the header names the {_role(t, col)} {len(same)} "
                            f"times ({same}): which is it? Rename the others in the file")
        if col not in columns:
            near = difflib.get_close_matches(col, columns, n=1, cutoff=0.6) or [
                c for c in columns if c.casefold() == col.casefold()]
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            if files.no_header(header.written):
                hint += (" (the file's first row looks like data: add a header row of names, or"
                         " name its fields in the schema, in order: columns: [a, b, ...])")
            raise DataError(f"{t.where()}: {_role(t, col)} {col!r} missing{hint}; the file has "
                            f"{columns}")
    return columns


def _read(t: TableSchema, headers: list[files.Header] | None,
          calendar: tuple[pd.DataFrame, str] | None = None) -> pd.DataFrame:
    """A table's rows with parsed times (period numbers converted: ``calendar``, the
    rows of its calendar and their name) and numbers and a checked primary key."""
    keys = {c for c in (t.pkey, *t.fkeys) if c is not None} - set(t.composite)  # ids, as written
    infinite: dict = {}   # a column of text -> its words for infinite numbers (inf)
    if headers is not None:
        df = pd.concat([files.read_csv(p, f"{p} (table {t.name!r})", h)
                        for p, h in zip(t.parts, headers)], ignore_index=True)
    else:
        df = parquet.read(t.parts, t.where(), t.base, required=t.required(), dropped={
            c for c, st in t.stypes.items() if st is None and c not in t.events})
    df = row_numbers.without(df, t.required(), t.where())   # pandas' index, R's row names
    # text as a file wrote it: a CSV's every column, a JSON file's columns of text
    text = (list(df.columns) if headers is not None else [] if not (
        is_json(t.parts[0]) or is_xml(t.parts[0]) or t.unnest) else   # (JSON: "9.50")
            [c for c in df.columns if pd.api.types.is_string_dtype(df[c])])
    if text:
        df[text] = missing_words(df[text], t.where, t.missing)   # R's NA: numbers or times
        as_text = {c for c, st in t.stypes.items() if st not in (None, "numerical")}
        times = {c for c in text if c not in t.stypes and c not in keys
                 and looks_like_times(df[c])} | set(t.formats)
        df[text] = numbers(df[text], t.where, keep={t.time, *as_text, *times, *t.events},
                           keys=keys | t.key_columns(), infinite=infinite)
    elif t.missing:
        df = mask_missing(df, t.missing)
    df = checks.without_untimed(df, t.time, t.untimed, t.where)
    if len(df) == 0:
        raise EmptyTable(f"{t.where()}: the table is empty (0 rows)")
    for col in df.columns:
        s, st = df[col], t.stypes.get(col, "")
        if col in keys and col != t.time:
            if pd.api.types.is_string_dtype(s) or s.dtype == object:
                # CHAR(n) columns come padded with spaces: "C-10  " is key "C-10"
                df[col] = s.where(s.isna(), s.astype(str).str.strip())
            continue
        if st is None and col != t.time and col not in t.events:
            # dropped: the model never sees it; the task's SQL may, as times where they are
            if (col in text or pd.api.types.is_string_dtype(s)) and looks_like_times(s):
                try:
                    df[col] = parse_times(s, t.where(col), required=False, dayfirst=t.dayfirst)
                except DataError:
                    pass   # left as the file wrote it: nothing reads it as times
            continue
        if col == t.time and t.period:
            df[col] = t.period.times(s, t.where(col), *(calendar or ()))
        elif col == t.time or col in t.formats or col in t.events or st == "timestamp" or (
                pd.api.types.is_datetime64_any_dtype(s) or (st == "" and looks_like_times(s))):
            df[col] = parse_times(s, t.where(col), required=col == t.time,
                                  dayfirst=t.dayfirst, form=t.formats.get(col))
        elif col in t.clocks.values() or (st in ("", "numerical") and looks_like_clock(s)):
            df[col] = clocks.read(t, col, s)   # times of day: seconds since 00:00
        elif s.dtype == object and all_bool(s):
            # booleans with missing values (parquet's nullable bool): as 0/1 and NaN, which
            # PyTorch Frame reads (its inference takes the Python objects for embeddings)
            df[col] = s.astype("float64")
        elif st == "numerical" and not pd.api.types.is_numeric_dtype(s):
            df[col] = parse_numbers(s, t.where(col), schema=True)
        if st in ("", "numerical"):
            check_finite(df[col], t.where(col), infinite.get(col, ()))
    assembled.build(t, df)
    clocks.join(t, df)
    composite_key.add_ids(df, t.composite, t.where)
    if t.pkey is not None:
        df = without_repeats(df, t.pkey, t.where())
        check_key(df[t.pkey], t.where(t.pkey), composite=t.pkey in t.composite)
    epochs.date_numbers(t, df)
    epochs.epoch_numbers(t, df)
    leaks.undeclared_time(t, df)
    leaks.later_times(t, df)
    states.flags_of_later(t, df)
    return df
