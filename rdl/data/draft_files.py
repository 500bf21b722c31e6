"""Which files of a folder are its tables (:func:`tables_of`: a file each, a folder of
parts, a month's files as one) and each read as the loader reads it, with what the draft
must declare for that (:func:`read_table`: a header's names, the forms of times), for
:mod:`rdl.data.draft`."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from rdl.data import assembled, clocks, epochs, files, lakes, nested, pgdump, sheets, sources
from rdl.data.checks import Infinite
from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.data.leaks import LATER_SHARE
from rdl.data.times import Placeholder


def tables_of(folder: Path) -> dict[str, str]:
    """The folder's tables: name -> its file or folder of parts (relative); files whose
    names differ only in their numbers (a month's export each: ``sales_2024_01.csv``, ...)
    one table, by the wildcard naming them alone (``sales_*_*.csv``)."""
    found = [p for p in sorted(folder.iterdir())
             if not p.name.startswith((".", "_")) and p.name != "schema.yaml" and \
             not sources.is_notes(p) and (
                 (p.is_file() and not sources.unnamed(p) and (  # (a README: no table)
                     sources.is_csv(p) or sources.is_parquet(p) or sheets.is_workbook(p)))
                 or (p.is_dir() and not pgdump.is_archive(p)   # (pg_dump -Fd: a database)
                     and (lakes.kind(p) or sources.parts(p))))]
    alike: dict[str, list[Path]] = {}
    for p in found:
        if p.is_file():
            alike.setdefault(re.sub(r"\d+", "*", p.name), []).append(p)
    single = {stem(p.name) for p in found if p.is_file()}
    out = {}
    for p in found:
        pattern = re.sub(r"\d+", "*", p.name)
        name = re.sub(r"^[_\-. ]+|[_\-. ]+$", "", re.sub(r"[_\-. ]*\*", "", stem(pattern)))
        if p.is_file() and len(alike[pattern]) > 1 and name and name not in single and \
                sorted(folder.glob(pattern)) == alike[pattern]:
            out.setdefault(name, pattern)
        else:
            out.setdefault(stem(p.name) if p.is_file() else p.name, p.name)
    return out


def stem(file: str) -> str:
    """A file's table name: its name without its compression and data suffixes
    (``dim.tags.csv.gz``: ``dim.tags``)."""
    name = re.sub(r"\.(gz|bz2|zst|lz4|zip)$", "", file, flags=re.I)
    return re.sub(r"\.(csv|tsv|txt|psv|tbl|dat|parquet|pq|jsonl|ndjson|json|xlsx|xlsm|orc|arrow|"
                  r"feather|ipc|avro|sas7bdat|xpt|dta|sav|zsav|por|xls|xml)$", "", name, flags=re.I)


def read_table(folder: Path, name: str, file: str, given: dict, named=None) -> pd.DataFrame:
    """A table as the loader reads it, with what it needs declared kept in ``given[name]``:
    a CSV file's fields named ``column_1``, ... where its first row is data (no header; or
    as ``named`` names them, the DDL's: :mod:`rdl.data.ddl`), the forms of numbers
    that are times since 1970 by their names and sizes, and the words for never (a
    date's placeholder) or infinite numbers (``inf``) that mean missing."""
    spec = {"file": file}
    found = sources.parts(folder / file)
    lists = nested.lists_in(found)   # lists of objects: tables of their own (unnest:)
    if lists:
        spec["stypes"] = {c: None for c in lists}
    if found and all(map(sources.is_csv, found)):
        written = files.header(found[0], f"{found[0]} (table {name!r})").written
        if files.no_header(written):
            spec["columns"] = [f"column_{i}" for i in range(1, len(written) + 1)]
            if named and len(named) in (len(written), len(written) - 1):   # (- 1: a last |)
                spec["columns"][:len(named)] = named
    infinite = 0   # values read as missing by the words the file writes for infinity
    for _ in range(8):   # a column's numbers of times, or its placeholder time, at a time
        try:
            db = load_folder(folder, {"tables": {name: spec}})
            df, joined = db[name].df, clocks.dates_of(db[name].df, db.clocks.get(name, []))
            parts = {} if "assemble" in spec else later_parts(df, assembled.find(df))
            if not joined and not parts:
                break
            if parts:   # a date in parts, a column each, and no other time: read again, made
                spec["assemble"] = parts
            spec["clocks"] = {**spec.get("clocks", {}), **joined}   # read again, joined
        except epochs.EpochNumbers as e:
            spec["formats"] = {c: epochs.form_of(u) for c, u in e.units.items()}
        except Placeholder as e:
            if e.value in spec.setdefault("missing", []):
                raise
            spec["missing"].append(e.value)
        except Infinite as e:   # inf: declared missing (no model takes it), read again
            if not e.words or set(e.words) <= set(spec.get("missing", [])):
                raise
            spec["missing"] = [*spec.get("missing", []), *e.words]
            infinite += e.count
    else:
        df = load_folder(folder, {"tables": {name: spec}})[name].df
    if "columns" in spec and not written[-1].strip() and df[spec["columns"][-1]].isna().all():
        df = df.drop(columns=spec["columns"].pop())   # a delimiter ends each line (dbgen's)
    given[name] = {**{k: v for k, v in spec.items() if k != "file"}, "lists": lists,
                   "infinite": infinite}
    return df


def later_parts(df: pd.DataFrame, found: dict) -> dict:
    """``found`` (:func:`rdl.data.assembled.find`), where ``df`` has times of its own
    (the row's time among them), only the moments after those in 1 % of rows or more (a
    player's death beside his debut, in the Lahman databank's people): numbers there tell
    each seed a future (the year a player dies). A birth's parts stay numbers."""
    times = df.select_dtypes(include="datetime").min(axis=1)
    if times.isna().all():
        return found
    out = {}
    for name, cols in found.items():
        parts = df[cols[:3]].set_axis(["year", "month", "day"][:len(cols[:3])], axis=1)
        if not all(map(pd.api.types.is_numeric_dtype, parts.dtypes)):
            continue   # (a month's name: no later moment told apart here)
        moment = pd.to_datetime(parts.assign(day=parts.get("day", 1)), errors="coerce")
        known = moment.notna() & times.notna()
        if known.any() and (moment[known] > times[known]).mean() >= LATER_SHARE:
            out[name] = cols
    return out


def unnested(folder: Path, tables: dict, read_as: dict, pkeys: dict):
    """(table, its column of lists, the table of their elements, its rows) for each table
    with lists of objects and a key of one column: the elements as the loader reads them
    (without the key to their table, which ``unnest:`` gives)."""
    for name, spec in list(read_as.items()):
        for col in spec.get("lists") or []:
            child = f"{name}_{col}"
            if name not in pkeys or child in tables:
                continue
            parent = {**{k: v for k, v in spec.items() if k not in ("lists", "infinite")},
                      "file": tables[name], "pkey": pkeys[name]}
            try:
                db = load_folder(folder, {"tables": {name: parent,
                                                     child: {"unnest": {name: col}}}})
            except DataError:
                continue   # (the draft says what it could not read where it can)
            yield name, col, child, db[child].df.drop(columns=list(db[child].fkeys))
