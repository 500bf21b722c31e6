"""Any RelBench database on disk, read as a :class:`~rdl.data.Database` with no schema to write.

RelBench keeps a database in one of two layouts, both read here (``data=relbench
data.db.path=DIR``):

* **1.x / 2.x** (``~/.cache/relbench/<dataset>/db/<table>.parquet``): each table's keys and
  time column are in its parquet schema's metadata (``pkey_col``,
  ``fkey_col_to_pkey_table``, ``time_col``, JSON), as RelBench's ``Table.save`` writes them.
* **3.x** (``<dataset>/manifest.yaml`` beside ``db/<table>.parquet``): the manifest's
  ``tables:`` hold each table's ``pkey``, ``time_col`` and ``fkeys``; it also holds the
  dataset's ``val_timestamp`` and ``test_timestamp`` (:func:`dataset_times`).

``DIR`` may be the dataset folder (holding ``db/``) or the ``db/`` folder itself. RelBench has
already re-indexed the keys (primary keys ``0..N-1`` in row order, foreign keys those
positions): rdl keeps them as they are, so row positions are RelBench's ids and predictions
report them. Foreign keys past the end of their table become missing, as RelBench's
``validate_and_correct_db`` makes them. Every problem is one :class:`DataError` naming the
file, the table and the column, found from the schemas before any table is read in full.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from rdl.data.database import Database, DataError, Table
from rdl.data.keys import check_references
from rdl.data.leaks import future_references

log = logging.getLogger(__name__)

MANIFEST = "manifest.yaml"
#: the parquet schema metadata RelBench 1.x/2.x writes per table
META_KEYS = ("pkey_col", "fkey_col_to_pkey_table", "time_col")
TIME_DTYPE = "datetime64[ns]"


def dataset_folder(path) -> tuple[Path, Path]:
    """``(dataset folder, db folder)`` of a RelBench path (either folder may be given)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise DataError(f"{path}: no such folder (data.db.path: a RelBench dataset folder, "
                        "holding db/ or manifest.yaml, or its db/ folder)")
    if (path / "db").is_dir():
        return path, path / "db"
    return path.parent, path


def manifest(dataset: Path) -> dict | None:
    """The 3.x dataset manifest of ``dataset`` (None: a 1.x/2.x folder)."""
    file = dataset / MANIFEST
    if not file.is_file():
        return None
    try:
        m = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        raise DataError(f"{file}: not valid YAML: {e}") from None
    if not isinstance(m, dict) or not isinstance(m.get("tables"), dict):
        raise DataError(f"{file}: expected RelBench's dataset manifest with 'tables:' "
                        "(table -> pkey, time_col, fkeys)")
    return m


def dataset_times(path) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The dataset's ``(val_timestamp, test_timestamp)`` where its folder says (a 3.x
    manifest), else None."""
    dataset, _ = dataset_folder(path)
    m = manifest(dataset)
    if m is None or "val_timestamp" not in m:
        return None
    return pd.Timestamp(m["val_timestamp"]), pd.Timestamp(m["test_timestamp"])


class TableSpec:
    """Where one table's rows are and what its keys are."""

    def __init__(self, name: str, file: Path, pkey: str | None, fkeys: dict[str, str],
                 time_col: str | None):
        self.name, self.file, self.pkey, self.fkeys, self.time_col = name, file, pkey, fkeys, time_col

    def where(self, col: str | None = None) -> str:
        return f"{self.file} (table {self.name!r}" + (f", column {col!r})" if col else ")")


def table_specs(dataset: Path, db_dir: Path) -> dict[str, TableSpec]:
    """Each table's spec, from the manifest (3.x) or the parquet metadata (1.x/2.x); the
    schemas only are read."""
    m = manifest(dataset)
    if m is not None:
        specs = {}
        for name, t in m["tables"].items():
            t = t or {}
            specs[name] = TableSpec(name, db_dir / f"{name}.parquet", t.get("pkey"),
                                    dict(t.get("fkeys") or {}), t.get("time_col"))
        return specs
    files = sorted(db_dir.glob("*.parquet"))
    if not files:
        raise DataError(f"{db_dir}: no parquet files and no {MANIFEST} beside it: not a "
                        "RelBench database folder")
    specs = {}
    for f in files:
        raw = _schema(f, f.stem).metadata or {}
        missing = [k for k in META_KEYS if k.encode() not in raw]
        if missing:
            raise DataError(f"{f}: its parquet schema lacks RelBench's metadata {missing} (and "
                            f"there is no {dataset / MANIFEST}); write it with RelBench's "
                            "Table.save, or read the folder with data=folder and a schema.yaml")
        try:
            meta = {k: json.loads(raw[k.encode()].decode()) for k in META_KEYS}
        except ValueError as e:
            raise DataError(f"{f}: bad RelBench metadata in the parquet schema: {e}") from None
        specs[f.stem] = TableSpec(f.stem, f, meta["pkey_col"],
                                  dict(meta["fkey_col_to_pkey_table"] or {}), meta["time_col"])
    return specs


def _schema(file: Path, name: str) -> pa.Schema:
    try:
        return pq.read_schema(file)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{file} (table {name!r}): not a readable parquet file: {e}") from None


def _check(specs: dict[str, TableSpec]) -> None:
    """Files, columns and references, from the schemas only (cheap)."""
    for t in specs.values():
        if not t.file.exists():
            raise DataError(f"{t.file}: missing (the file of table {t.name!r})")
    for t in specs.values():
        cols = _schema(t.file, t.name).names
        for col, role in [(t.pkey, "primary key"), (t.time_col, "time column"),
                          *((c, "foreign key") for c in t.fkeys)]:
            if col is not None and col not in cols:
                raise DataError(f"{t.where()}: {role} {col!r} missing; the file has {cols}")
    check_references(specs, lambda t, col: f"{t.where(col)}: foreign key")


def load_relbench(path) -> Database:
    """The RelBench database in ``path`` (see the module's docstring).

    Rows of a timed table without a time are dropped, with a warning (RelBench's loaders
    drop them too); a keyed table's ids then stay RelBench's (``Database.keys``).

    Raises:
        DataError: not a RelBench folder, a file or column missing, a primary key that is
            not ``0..N-1``, times that do not parse.
    """
    if path is None or str(path) in ("", "???"):
        raise DataError("no folder given: data=relbench needs data.db.path=/the/dataset "
                        "(RelBench's ~/.cache/relbench/<dataset>, or a folder with manifest.yaml)")
    dataset, db_dir = dataset_folder(path)
    specs = table_specs(dataset, db_dir)
    _check(specs)
    tables = {name: _read(t) for name, t in specs.items()}
    ids = _drop_untimed(specs, tables)
    for t in specs.values():
        df = tables[t.name].df
        for col, ref in t.fkeys.items():
            n = len(tables[ref])
            past = (df[col] >= n).fillna(False).to_numpy(dtype=bool) | (df[col] < 0).fillna(
                False).to_numpy(dtype=bool)
            if past.any():  # RelBench's validate_and_correct_db: dangling -> missing
                log.warning("%s: %d foreign keys match no %r row: set to missing",
                            t.where(col), int(past.sum()), ref)
                df[col] = df[col].mask(past)
    db = Database(tables, keys=ids)
    db.validate()
    future_references(db, lambda name, col: specs[name].where(col))
    log.info("%s: %s", dataset, ", ".join(f"{n} {len(t)} rows" for n, t in db))
    return db


def _read(t: TableSpec) -> Table:
    try:
        df = pq.read_table(t.file).to_pandas()
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{t.where()}: not a readable parquet file: {e}") from None
    if t.pkey is not None:
        key = df[t.pkey]
        if key.isna().any() or not np.array_equal(key.to_numpy(dtype="float64", na_value=np.nan),
                                                  np.arange(len(df))):
            raise DataError(f"{t.where(t.pkey)}: primary key is not 0..N-1 in row order (as "
                            "RelBench writes it); re-index the folder with RelBench, or read it "
                            "with data=folder and a schema.yaml")
        df[t.pkey] = np.arange(len(df))
    for col in t.fkeys:
        try:
            df[col] = df[col].astype("Int64")
        except (TypeError, ValueError) as e:
            raise DataError(f"{t.where(col)}: foreign key is not integer row positions as "
                            f"RelBench writes them ({df[col].dtype}): {e}") from None
    if t.time_col is not None:
        df[t.time_col] = _times(df[t.time_col], t)
    return Table(df, t.pkey, dict(t.fkeys), t.time_col)


def _times(s: pd.Series, t: TableSpec) -> pd.Series:
    if not pd.api.types.is_datetime64_any_dtype(s):
        parsed = pd.to_datetime(s.astype("string"), errors="coerce", format="ISO8601", utc=True)
        bad = parsed.isna() & s.notna()
        if bad.any():
            raise DataError(f"{t.where(t.time_col)}: {int(bad.sum())} of {len(s)} times do not "
                            f"parse as dates, e.g. {s[bad].iloc[0]!r}")
        s = parsed
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    return s.astype(TIME_DTYPE)   # missing times: rows dropped (_drop_untimed)


def _drop_untimed(specs: dict[str, TableSpec], tables: dict[str, Table]) -> dict[str, pd.Index]:
    """Drops the rows of timed tables that have no time, as RelBench does (its
    ``Database.upto`` keeps rows with a time up to the cut; rel-event's loader coerces bad
    times to missing), and says how many. A keyed table's rows are re-indexed: returns,
    per such table, RelBench's id of each row kept (``Database.keys``: predictions report
    them, task SQL sees them); references to a dropped row become missing."""
    ids = {}
    for name, t in specs.items():
        df = tables[name].df
        missing = df[t.time_col].isna().to_numpy() if t.time_col else None
        if missing is None or not missing.any():
            continue
        log.warning("%s: %d of %d rows have no time: dropped, as RelBench drops them "
                    "(first: row %d)", t.where(t.time_col), int(missing.sum()), len(df),
                    int(missing.argmax()))
        df = df[~missing].reset_index(drop=True)
        if t.pkey is not None:
            ids[name] = pd.Index(df[t.pkey].to_numpy())
            df[t.pkey] = np.arange(len(df))
        tables[name] = Table(df, t.pkey, dict(t.fkeys), t.time_col)
    for name, t in specs.items():
        df = tables[name].df
        for col, ref in t.fkeys.items():
            if ref not in ids:
                continue
            pos = ids[ref].get_indexer(df[col].to_numpy(dtype="float64", na_value=np.nan))
            gone = (pos < 0) & df[col].notna().to_numpy()
            if gone.any():
                log.warning("%s: %d references to %r rows dropped for their missing time: set "
                            "to missing", t.where(col), int(gone.sum()), ref)
            df[col] = pd.array(np.where(pos < 0, 0, pos), dtype="Int64")
            df.loc[pos < 0, col] = pd.NA
    return ids
