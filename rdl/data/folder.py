"""Any relational database in: a folder of parquet or CSV files described by a YAML schema.

:func:`load_folder` reads one file per table (``<table>.parquet`` or ``<table>.csv``, or the
file the schema names) and returns rdl's :class:`~rdl.data.Database`, re-indexed, with
``keys`` mapping each row position back to the file's own id. The schema names, per table,
its primary key, its foreign keys (``{column: referenced_table}``; a table may reference
itself), its time column (none: a static table) and, optionally, column stypes::

    tables:
      users: {pkey: user_id, time: signup}
      posts:
        pkey: post_id
        time: created
        fkeys: {author_id: users, parent_id: posts}
        stypes: {length: numerical}
    dangling: null        # foreign keys matching no row: null (RelBench), drop or fail

Everything is checked before the data is used, cheap checks (schema, files, columns) before
any file is read in full; each problem is one :class:`~rdl.data.DataError` naming the
file, the table, the column and how many rows. Nothing is ever written.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import torch_frame
import yaml

from rdl.data.database import Database, DataError, Table
from rdl.data.checks import check_key, parse_numbers, show

log = logging.getLogger(__name__)

TABLE_KEYS = {"file", "pkey", "fkeys", "time", "stypes"}
SCHEMA_KEYS = {"tables", "dangling"}
DANGLING = ("null", "drop", "fail")
STYPES = {s.value for s in torch_frame.stype} | {"drop"}
TIME_DTYPE = "datetime64[ns]"


class TableSchema:
    """One table of a schema: where its rows are and what its columns mean."""

    def __init__(self, name: str, file: Path, pkey: str | None, fkeys: dict[str, str],
                 time: str | None, stypes: dict[str, str | None]):
        self.name, self.file, self.pkey, self.fkeys = name, file, pkey, fkeys
        self.time, self.stypes = time, stypes

    def where(self, col: str | None = None) -> str:
        """``file (table 't', column 'c')``: how errors name a place."""
        return f"{self.file} (table {self.name!r}" + (f", column {col!r})" if col else ")")

    def required(self) -> list[str]:
        """The columns the schema names (keys, time, declared stypes)."""
        cols = [self.pkey, *self.fkeys, self.time, *self.stypes]
        return list(dict.fromkeys(c for c in cols if c is not None))


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
            raise DataError(f"{path}: schema file missing")
        try:
            schema = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            raise DataError(f"{path}: not valid YAML: {e}") from None
    tables_spec = schema.get("tables") if isinstance(schema, dict) else None
    if not isinstance(tables_spec, dict) or not tables_spec:
        raise DataError(f"{where}: expected a mapping with 'tables:' (table name -> pkey, fkeys, "
                        "time, stypes, file)")
    _no_unknown(schema, SCHEMA_KEYS, where)
    dangling = str(schema.get("dangling") or "null")
    tables = {}
    for name, spec in tables_spec.items():
        spec = spec or {}
        at = f"{where}: table {name!r}"
        if not isinstance(spec, dict):
            raise DataError(f"{at}: expected a mapping of {sorted(TABLE_KEYS)}, got {spec!r}")
        _no_unknown(spec, TABLE_KEYS, at)
        for key in ("fkeys", "stypes"):
            if not isinstance(spec.get(key) or {}, dict):
                raise DataError(f"{at}: {key} must be a mapping (column: ...), got {spec[key]!r}")
        file = folder / spec["file"] if spec.get("file") else _default_file(folder, name)
        stypes = {str(c): (None if s in (None, "drop") else str(s))
                  for c, s in (spec.get("stypes") or {}).items()}
        for col, st in stypes.items():
            if st is not None and st not in STYPES:
                raise DataError(f"{at}: column {col!r} has unknown stype {st!r}; one of "
                                f"{sorted(STYPES)} or null")
        tables[name] = TableSchema(str(name), file, spec.get("pkey"),
                                   {str(c): str(r) for c, r in (spec.get("fkeys") or {}).items()},
                                   spec.get("time"), stypes)
    for t in tables.values():
        if t.pkey is not None and t.pkey in t.fkeys:
            raise DataError(f"{where}: table {t.name!r}: column {t.pkey!r} is both its primary "
                            "key and a foreign key; give the table a key of its own")
        for col, ref in t.fkeys.items():
            if ref not in tables:
                raise DataError(f"{where}: table {t.name!r}: foreign key {col!r} references "
                                f"unknown table {ref!r} (tables: {sorted(tables)})")
            if tables[ref].pkey is None:
                raise DataError(f"{where}: table {t.name!r}: foreign key {col!r} references "
                                f"table {ref!r}, which has no primary key")
    return tables, dangling


def _no_unknown(spec: dict, known: set, where: str) -> None:
    unknown = sorted(map(str, set(spec) - known))
    if unknown:
        raise DataError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(known)}")


def _is_csv(path: Path) -> bool:
    """``x.csv``, or compressed: ``x.csv.gz`` (pyarrow reads it by its name)."""
    s = path.suffixes
    return s[-1:] == [".csv"] or (s[-2:-1] == [".csv"] and s[-1] in (".gz", ".bz2", ".zst", ".lz4"))


def _default_file(folder: Path, name: str) -> Path:
    for ext in (".parquet", ".csv"):
        if (folder / f"{name}{ext}").exists():
            return folder / f"{name}{ext}"
    return folder / f"{name}.parquet"  # missing: the error names it (and .csv)


def load_folder(path, schema=None, dangling: str | None = None) -> Database:
    """The database in folder ``path``, as ``schema`` (default ``<path>/schema.yaml``) says.

    Primary keys become row positions (timed tables sorted by time first, as RelBench
    does), foreign keys those positions; ``Database.keys`` gives each table's original ids.
    ``dangling`` (default: the schema's, else ``null``) decides what happens to foreign keys
    that match no row: ``null`` sets them missing (and logs how many), ``drop`` drops their
    rows (and, in turn, rows that pointed at those), ``fail`` raises.

    Raises:
        DataError: see the module's docstring; one error, naming file, table, column and rows.
    """
    if path is None or str(path) in ("", "???"):
        raise DataError("no folder given: data=folder needs data.db.path=/folder/with/the/files "
                        "(and its schema.yaml, or data.db.schema=...)")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (data.db.path: a folder of parquet or CSV "
                        "files)")
    tables, policy = read_schema(folder / "schema.yaml" if schema is None else schema, folder)
    policy = str(dangling) if dangling is not None else policy
    if policy not in DANGLING:
        raise DataError(f"dangling {policy!r}: expected one of {list(DANGLING)}")
    # Cheap checks first: every file there, every named column in it.
    for t in tables.values():
        if not t.file.exists():
            also = f" or {t.file.with_suffix('.csv').name}" if t.file.suffix == ".parquet" else ""
            raise DataError(f"{t.file}{also}: missing (the data file of table {t.name!r})")
    for t in tables.values():
        columns = _columns(t)
        for col in t.required():
            if col not in columns:
                role = ("primary key" if col == t.pkey else "foreign key" if col in t.fkeys
                        else "time column" if col == t.time else "column with an stype")
                raise DataError(f"{t.where()}: {role} {col!r} missing; the file has {columns}")
    frames = {name: _read(t) for name, t in tables.items()}
    frames, ids = _map_foreign_keys(tables, frames, policy)
    db = Database({name: Table(frames[name], t.pkey, dict(t.fkeys), t.time)
                   for name, t in tables.items()},
                  keys={name: pd.Index(v) for name, v in ids.items()})
    db = db.reindex()
    db.stypes = {name: dict(t.stypes) for name, t in tables.items() if t.stypes}
    log.info("%s: %s", folder, ", ".join(f"{n} {len(t)} rows" for n, t in db))
    return db


# -- reading one table ------------------------------------------------------------------------
def _columns(t: TableSchema) -> list[str]:
    """The column names of a table's file, from its header or parquet schema only."""
    if _is_csv(t.file):
        try:  # the first block only
            return list(pacsv.open_csv(t.file).schema.names)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{t.where()}: not a readable CSV file: {e}") from None
    try:
        return list(pq.read_schema(t.file).names)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{t.where()}: not a readable parquet file: {e}") from None


def _read(t: TableSchema) -> pd.DataFrame:
    """A table's rows with parsed times and numbers and a checked primary key."""
    df = _read_csv(t) if _is_csv(t.file) else pq.read_table(t.file).to_pandas()
    if len(df) == 0:
        raise DataError(f"{t.where()}: the table is empty (0 rows)")
    for col in df.columns:
        s = df[col]
        if isinstance(s.dtype, pd.DatetimeTZDtype):  # one clock for every time: UTC
            df[col] = s.dt.tz_convert("UTC").dt.tz_localize(None)
        elif s.dtype == object and _all_bool(s):
            # booleans with missing values (parquet's nullable bool): as 0/1 and NaN, which
            # PyTorch Frame reads (its inference takes the Python objects for embeddings)
            df[col] = s.astype("float64")
    if t.time is not None:
        df[t.time] = _parse_times(df[t.time], t)
    for col, st in t.stypes.items():
        if st == "numerical" and not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = parse_numbers(df[col], t.where(col))
    if t.pkey is not None:
        check_key(df[t.pkey], t.where(t.pkey))
    return df


def _all_bool(s: pd.Series) -> bool:
    """Whether every value of an object column is a bool (the first decides cheaply)."""
    v = s.dropna()
    return len(v) > 0 and isinstance(v.iloc[0], (bool, np.bool_)) and v.map(type).isin(
        (bool, np.bool_)).all()


def _read_csv(t: TableSchema) -> pd.DataFrame:
    """A CSV file, every column read as text first (pyarrow's type inference reports a bad
    value by column number only), then numbers where every value is one."""
    columns = _columns(t)
    opts = pacsv.ConvertOptions(column_types={c: pa.string() for c in columns},
                                null_values=[""], strings_can_be_null=True)
    try:
        df = pacsv.read_csv(t.file, convert_options=opts).to_pandas()
    except pa.ArrowInvalid as e:
        raise DataError(f"{t.where()}: not a readable CSV file: {e}") from None
    for col in df.columns:
        if col == t.time or t.stypes.get(col, "numerical") != "numerical":
            continue  # declared otherwise: kept as text
        values = df[col].dropna()
        if values.str.match(r"-?0\d").any():
            continue  # zero-padded codes ("0042") stay text, as the file wrote them
        num = pd.to_numeric(values, errors="coerce")
        if len(values) and num.notna().all():
            full = pd.to_numeric(df[col])
            integral = full.notna().all() and (full % 1 == 0).all()
            df[col] = full.astype("int64") if integral else full.astype("float64")
    return df


def _parse_times(s: pd.Series, t: TableSchema) -> pd.Series:
    if not pd.api.types.is_datetime64_any_dtype(s):
        if pd.api.types.is_numeric_dtype(s):  # epoch numbers: their unit is anyone's guess
            parsed = pd.Series(pd.NaT, index=s.index, dtype=TIME_DTYPE)
        else:  # ISO 8601; offsets (+01:00, Z) converted to UTC
            parsed = pd.to_datetime(s.astype("string"), errors="coerce", format="ISO8601",
                                    utc=True)
        bad = parsed.isna() & s.notna()
        if bad.any():
            raise DataError(f"{t.where(t.time)}: {int(bad.sum())} of {len(s)} times do not parse "
                            f"as dates (such as 2024-01-31 or 2024-01-31 12:00:00), e.g. "
                            f"{show(s[bad].iloc[0])}")
        s = parsed
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    if s.isna().any():
        raise DataError(f"{t.where(t.time)}: time missing in {int(s.isna().sum())} of {len(s)} "
                        "rows (a timed table needs a time on every row)")
    return s.astype(TIME_DTYPE)


# -- foreign keys -------------------------------------------------------------------------------
def _comparable(values: pd.Series, other: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Key values of two columns in one form: numbers as integers where they all are, and
    text where either side is text (a CSV's ``"0042"`` is not the number 42)."""
    def norm(s):
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            v = s.dropna()
            return s.astype("Int64") if (v % 1 == 0).all() else s.astype("float64")
        return s
    a, b = norm(values), norm(other)
    if pd.api.types.is_numeric_dtype(a) != pd.api.types.is_numeric_dtype(b):
        a, b = a.astype("string"), b.astype("string")
    return a.to_numpy(dtype=object, na_value=None), b.to_numpy(dtype=object, na_value=None)


def _map_foreign_keys(tables: dict[str, TableSchema], frames: dict[str, pd.DataFrame],
                      policy: str) -> tuple[dict[str, pd.DataFrame], dict[str, np.ndarray]]:
    """Frames with primary keys as positions ``0..N-1`` and foreign keys as the positions
    they match (``Int64``, dangling ones handled by ``policy``), and each table's original
    primary-key values."""
    while True:
        positions, dropped = {}, False
        for name, t in tables.items():
            df = frames[name]
            for col, ref in t.fkeys.items():
                values, keys = _comparable(df[col], frames[ref][tables[ref].pkey])
                pos = pd.Index(keys).get_indexer(values)
                dangling = df[col].notna().to_numpy() & (pos < 0)
                positions[name, col] = pos
                n = int(dangling.sum())
                if n == 0:
                    continue
                what = (f"{t.where(col)}: {n} of {len(df)} rows have a foreign key matching no "
                        f"{ref!r} row, e.g. {values[dangling][0]!r}")
                if policy == "fail":
                    raise DataError(what + " (dangling: fail)")
                if policy == "null":
                    log.warning("%s: set to missing (dangling: null)", what)
                    continue
                log.warning("%s: dropped (dangling: drop)", what)
                df = frames[name] = df[~dangling].reset_index(drop=True)
                dropped = True
                if len(df) == 0:
                    raise DataError(f"{t.where()}: no row left after dropping those with "
                                    "dangling foreign keys")
        if not dropped:  # a dropped row may be what another row pointed at: map again
            break
    out, ids = {}, {}
    for name, t in tables.items():
        df = frames[name].copy()
        for col in t.fkeys:
            pos = positions[name, col]
            df[col] = pd.array(np.where(pos < 0, 0, pos), dtype="Int64")
            df.loc[pos < 0, col] = pd.NA
        if t.pkey is not None:
            ids[name] = df[t.pkey].to_numpy()
            df[t.pkey] = np.arange(len(df))
        out[name] = df
    return out, ids
