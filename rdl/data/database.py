"""Table and Database: the relational input of rdl, as small plain objects.

A :class:`Table` is a pandas frame plus its keys and time column; a :class:`Database`
is a dict of named tables. Times are pandas datetimes (``datetime64``); primary keys
are, after :meth:`Database.reindex`, the row positions ``0..N-1`` and foreign keys
point at them (``<NA>`` where the referenced row does not exist), as in RelBench.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rdl import caching

log = logging.getLogger(__name__)

META_FILE = "metadata.json"
#: a saved table's file (Arrow IPC, uncompressed: read at the speed of the disk, where
#: parquet took 26 s to decode at four times rel-hm's size); ``.parquet``: rdl's older saves
TABLE_SUFFIX = ".arrow"
KEYS_SUFFIX = ".keys" + TABLE_SUFFIX
#: the rows' digest, written with them (:mod:`rdl.data.digest`)
DIGEST_FILE = "digest.json"


class DataError(ValueError):
    """Bad input data: the message names the file, table or column and what is wrong."""


@dataclass
class Table:
    """One table: ``df`` plus its primary key, foreign keys and time column.

    Args:
        df: the rows.
        pkey: primary-key column, or ``None`` (e.g. transactions).
        fkeys: foreign-key column -> name of the table it references.
        time_col: the row's time (``datetime64``), or ``None`` for static tables.
    """

    df: pd.DataFrame
    pkey: str | None = None
    fkeys: dict[str, str] = field(default_factory=dict)
    time_col: str | None = None

    def __len__(self) -> int:
        return len(self.df)

    def upto(self, t: pd.Timestamp) -> Table:
        """Rows with time <= ``t`` (all rows of a static table)."""
        if self.time_col is None:
            return self
        times = self.df[self.time_col]
        if times.is_monotonic_increasing:
            # rows in time order (an event log, as most are written): the first ones, a
            # slice that shares the rows (pandas' copy-on-write) instead of a copy of them
            # (at four times rel-hm's size, 2.5 GB of transactions in every process)
            return self._with(self.df.iloc[:int(times.searchsorted(t, side="right"))])
        return self._with(self.df[times <= t])

    def from_(self, t: pd.Timestamp) -> Table:
        """Rows with time >= ``t`` (all rows of a static table)."""
        if self.time_col is None:
            return self
        return self._with(self.df[self.df[self.time_col] >= t])

    def _with(self, df: pd.DataFrame) -> Table:
        return Table(df.reset_index(drop=True), self.pkey, dict(self.fkeys), self.time_col)

    @property
    def feature_cols(self) -> list[str]:
        """Columns that are node features: all but the keys."""
        keys = {self.pkey, *self.fkeys}
        return [c for c in self.layout()[0] if c not in keys]

    def meta(self) -> dict:
        return {"pkey": self.pkey, "fkeys": self.fkeys, "time_col": self.time_col}

    def layout(self) -> tuple[list[str], list[str], int]:
        """``(columns, dtypes as text, rows)``."""
        return list(map(str, self.df.columns)), list(map(str, self.df.dtypes)), len(self.df)

    def column(self, name: str) -> pd.Series:
        """One column's values."""
        return self.df[name]


class StoredTable(Table):
    """A table of a database saved in rdl's cache (:meth:`Database.load`), its rows read
    from its file the first time they are asked for (``df``); its layout (columns, dtypes,
    rows) known from the saved digest until then. A start whose prepared data and graph
    are cached needs the database's schema and digest, not its rows, until the baselines
    after training: at four times rel-hm's size the rows are 7 GiB and 9 s to read."""

    def __init__(self, df: pd.DataFrame | None = None, pkey: str | None = None,
                 fkeys: dict[str, str] | None = None, time_col: str | None = None, *,
                 path: Path | None = None,
                 layout: tuple[list[str], list[str], int] | None = None):
        # (Table's arguments first: ``type(table)(df, pkey, fkeys, time_col)`` makes a table)
        self._path = None if path is None else Path(path)
        self._df, self._layout = None, layout
        super().__init__(df, pkey, dict(fkeys or {}), time_col)

    @property
    def df(self) -> pd.DataFrame:
        if self._df is None and self._path is not None:
            self._df = read_table(self._path)
        return self._df

    @df.setter
    def df(self, value: pd.DataFrame | None) -> None:
        self._df = value

    @property
    def read(self) -> bool:
        """Whether the rows are in memory (read, or given)."""
        return self._df is not None or self._path is None

    def __repr__(self) -> str:   # (the dataclass's would read the rows to show them)
        return (f"StoredTable({str(self._path)!r}, rows={len(self)}, pkey={self.pkey!r}, "
                f"fkeys={self.fkeys!r}, time_col={self.time_col!r}, read={self.read})")

    def __len__(self) -> int:
        return self._layout[2] if not self.read else len(self._df)

    def layout(self) -> tuple[list[str], list[str], int]:
        return (tuple(map(list, self._layout[:2])) + (self._layout[2],) if not self.read
                else super().layout())

    def column(self, name: str) -> pd.Series:
        """One column's values: read alone from the file while the rows are not read."""
        return super().column(name) if self.read else read_table(self._path, [name])[name]

    def release(self) -> None:
        """Drops the rows, where they can be read again from the file."""
        if self._path is not None:
            self._df = None


@dataclass
class Database:
    """Named tables linked by foreign keys. ``keys``: after :meth:`reindex`, per table with
    a primary key the original key of each row position (predictions report them).
    ``stypes``: per table, column stypes its source declares (a schema file); the data
    config's ``stypes`` override them."""

    tables: dict[str, Table]
    keys: dict[str, pd.Index] = field(default_factory=dict)
    stypes: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: ``(digest, shape)`` of the rows as rdl's cache keeps them, where this database was
    #: saved there or loaded from there (:meth:`digest`)
    stored_digest: tuple | None = field(default=None, init=False, compare=False, repr=False)

    def __getitem__(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no table {name!r} in the database; it has {sorted(self.tables)}") from None

    def __iter__(self):
        return iter(self.tables.items())

    @property
    def min_time(self) -> pd.Timestamp:
        """The first time of any timed row (:class:`DataError` if there is none)."""
        return min(t.df[t.time_col].min() for t in self._timed())

    @property
    def max_time(self) -> pd.Timestamp:
        """The last time of any timed row (:class:`DataError` if there is none)."""
        return max(t.df[t.time_col].max() for t in self._timed())

    def _timed(self) -> list[Table]:
        # Empty tables have no time range (NaT, which pandas then fails on far away).
        timed = [t for _, t in self if t.time_col and t.df[t.time_col].notna().any()]
        if not timed:
            names = sorted(n for n, t in self if t.time_col)
            raise DataError("the database has no timed rows" + (
                f": table(s) {names} are empty" if names else " (no table has a time column)"))
        return timed

    def upto(self, t) -> Database:
        """The database as it was known at time ``t`` (rows with time <= t).

        A row may reference a row from its future (a post dated before its author's
        signup): at ``t`` that row does not exist yet, so the reference is missing, as a
        dangling one (re-indexed, a timed table's rows up to ``t`` are its first ones).
        """
        t = pd.Timestamp(t)
        tables = {n: tab.upto(t) for n, tab in self}
        for name, tab in tables.items():
            for col, ref in tab.fkeys.items():
                n = len(tables[ref])
                if n == len(self.tables[ref]) or self.tables[ref].pkey is None:
                    continue
                future = (tab.df[col] >= n).fillna(False).to_numpy(dtype=bool)
                if future.any():
                    df = tab.df.assign(**{col: tab.df[col].astype("Int64").mask(future)})
                    tab = tables[name] = Table(df, tab.pkey, dict(tab.fkeys), tab.time_col)
        # the files' ids stay: the rows kept are each table's first (positions unchanged)
        return Database(tables, keys=dict(self.keys))

    def from_(self, t) -> Database:
        t = pd.Timestamp(t)
        return Database({n: tab.from_(t) for n, tab in self})

    def validate(self) -> None:
        """Raise :class:`DataError` if a key, a time column or a reference is wrong."""
        for name, tab in self:
            columns, dtypes, _ = tab.layout()
            for col in [tab.pkey, tab.time_col, *tab.fkeys]:
                if col is not None and col not in columns:
                    raise DataError(f"table {name!r}: column {col!r} named in its keys is missing")
            if tab.time_col and not dtypes[columns.index(tab.time_col)].startswith("datetime64"):
                raise DataError(
                    f"table {name!r}: time column {tab.time_col!r} has dtype "
                    f"{dtypes[columns.index(tab.time_col)]}, expected datetime64")
            # (a table rdl saved and has not read: its keys were checked before it was saved)
            unread = isinstance(tab, StoredTable) and not tab.read
            if tab.pkey and not unread and tab.df[tab.pkey].duplicated().any():
                raise DataError(f"table {name!r}: primary key {tab.pkey!r} has duplicate values")
            for col, ref in tab.fkeys.items():
                if ref not in self.tables:
                    raise DataError(f"table {name!r}: foreign key {col!r} references unknown table {ref!r}")
                if self.tables[ref].pkey is None:
                    raise DataError(f"table {name!r}: foreign key {col!r} references table {ref!r}, "
                                    "which has no primary key")

    def reindex(self) -> Database:
        """Map primary keys to ``0..N-1`` and foreign keys through the same map.

        Foreign keys that reference no row become ``<NA>`` (pandas ``Int64``). Tables with a
        primary key and a time column are first sorted by time, as RelBench does.
        """
        self.validate()
        tables, maps = {}, {}
        for name, tab in self:
            df = tab.df
            if tab.pkey is not None:
                if tab.time_col is not None:
                    df = df.sort_values(tab.time_col, kind="stable")
                maps[name] = pd.Index(df[tab.pkey].to_numpy())
                df = df.assign(**{tab.pkey: range(len(df))})
            tables[name] = Table(df.reset_index(drop=True), tab.pkey, dict(tab.fkeys), tab.time_col)
        for name, tab in tables.items():
            for col, ref in tab.fkeys.items():
                pos = maps[ref].get_indexer(tab.df[col].to_numpy())  # -1: no such row
                tab.df[col] = pd.array(pos, dtype="Int64")
                tab.df.loc[pos < 0, col] = pd.NA
        return Database(tables, keys={n: self.keys[n][k] if n in self.keys else k
                                      for n, k in maps.items()})

    def release(self) -> None:
        """Drops the rows of the tables read from rdl's cache (:class:`StoredTable`: read
        again from their files when next asked for). After preparation a run's graph and
        prepared data are mapped from their caches; the rows are needed again only by the
        baselines after training (at four times rel-hm's size, 7 GiB held through it)."""
        for _, tab in self:
            if isinstance(tab, StoredTable):
                tab.release()

    # -- digest ------------------------------------------------------------------------
    def digest(self) -> str:
        """A digest of every row, column and key (:func:`rdl.data.digest.rows_digest`):
        the one stored with the rows where this database was saved to or loaded from
        rdl's cache and its tables keep the shape they had then, else hashed. (rdl makes
        new tables rather than change a database's frames in place, which a stored
        digest could not see where the shape stays.)"""
        from rdl.data.digest import rows_digest, shape
        if self.stored_digest is not None and self.stored_digest[1] == shape(self):
            return self.stored_digest[0]
        return rows_digest(self)

    # -- storage -----------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write one file per table, one per table's original keys (:attr:`keys`), the
        rows' digest (``digest.json``) and ``metadata.json``.

        The files are written to a temporary folder beside ``path`` (``metadata.json``
        last) that is renamed into place at the end, so a crash never leaves a half-written
        database; the temporaries of writers that died are removed first
        (:func:`rdl.caching.remove_stale`).
        """
        from rdl.data.digest import ROWS_VERSION, shape
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        caching.remove_stale(path.parent)
        with caching.atomic_dir(path) as tmp:
            for name, tab in self:
                write_table(tab.df, tmp / f"{name}{TABLE_SUFFIX}")
            for name, keys in self.keys.items():  # the files' ids (predictions report them)
                write_table(pd.DataFrame({"key": keys}), tmp / f"{name}{KEYS_SUFFIX}")
            digest, rows = self.digest(), shape(self)
            (tmp / DIGEST_FILE).write_text(json.dumps(
                {"version": ROWS_VERSION, "digest": digest, "shape": rows}))
            meta = {name: tab.meta() for name, tab in self}
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        self.stored_digest = (digest, rows)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Database:
        path = Path(path)
        meta_path = path / META_FILE
        if not meta_path.exists():
            raise DataError(f"{meta_path}: missing; not a database folder written by Database.save")
        meta = json.loads(meta_path.read_text())
        stored = _stored_digest(path)
        # each table's layout as the digest keeps it: its rows are read when first needed
        layouts = {} if stored is None else {
            row[0]: (row[2], row[3], row[4]) for row in stored[1] if len(row) == 5}
        tables, keys = {}, {}
        for name, m in meta.items():
            f = _saved(path, name)
            if f is None:
                raise DataError(f"{path / (name + TABLE_SUFFIX)}: missing, but {meta_path} "
                                f"lists table {name!r}")
            if name in layouts and f.suffix == TABLE_SUFFIX:
                tables[name] = StoredTable(None, m["pkey"], m["fkeys"], m["time_col"], path=f,
                                           layout=layouts[name])
            else:   # an older save: read now
                tables[name] = Table(read_table(f), m["pkey"], m["fkeys"], m["time_col"])
            k = _saved(path, name + ".keys")
            if k is not None:
                keys[name] = pd.Index(read_table(k)["key"])
        db = cls(tables, keys=keys)
        db.validate()
        db.stored_digest = stored
        return db


def write_table(df: pd.DataFrame, path: Path) -> None:
    """``df`` as an uncompressed Arrow IPC file (its pandas dtypes in the schema), in one
    record batch: read back, each column is one piece that pandas takes as it is (in
    batches of 64k rows, the default, 60M transactions were 914 pieces that pandas
    joined in 17 s; in one, 2-4 s)."""
    import pyarrow as pa
    import pyarrow.feather as feather
    feather.write_feather(pa.Table.from_pandas(df, preserve_index=False), str(path),
                          compression="uncompressed", chunksize=max(1, len(df)))


def read_table(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A table :func:`write_table` wrote (or rdl's older parquet save); ``columns``: those
    alone."""
    if path.suffix == ".parquet":
        return pd.read_parquet(path, columns=columns)
    if columns is None:
        return pd.read_feather(path)
    # mapped, so that only those columns' pages are read (pandas reads the whole file)
    import pyarrow.feather as feather
    return feather.read_table(str(path), columns=columns, memory_map=True).to_pandas()


def _saved(path: Path, stem: str) -> Path | None:
    """The file of a saved table (or keys), this rdl's or an older one's parquet."""
    for suffix in (TABLE_SUFFIX, ".parquet"):
        if (path / f"{stem}{suffix}").exists():
            return path / f"{stem}{suffix}"
    return None


def _stored_digest(path: Path) -> tuple | None:
    """``(digest, shape)`` from a saved database's ``digest.json``; None where there is
    none (an older save) or it is of another :data:`~rdl.data.digest.ROWS_VERSION`."""
    from rdl.data.digest import ROWS_VERSION
    try:
        d = json.loads((path / DIGEST_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or d.get("version") != ROWS_VERSION:
        return None
    return d.get("digest"), d.get("shape")


def cached_database(path: Path, make) -> Database:
    """The database saved in ``path`` if it is complete, readable and keeps the files' ids;
    else ``make()``'s, saved there (unless the cache cannot be written)."""
    if (path / META_FILE).exists():  # written last: the folder is complete
        try:
            db = Database.load(path)
            if db.keys:
                return db
            # written before databases kept their ids: predictions would report positions
            log.info("cached database %s has no original ids: making it again", path)
        except (DataError, OSError, ValueError) as e:  # damaged since: made again below
            log.warning("cached database %s is unreadable (%s): making it again", path, e)
    db = make()
    # Another process (DDP) may have saved it meanwhile; a read-only cache is skipped.
    if not _has_ids(path) and caching.writable(path.parent):
        try:
            db.save(path)
            return _as_stored(db, path)
        except OSError as e:
            caching.warn_uncached(path.parent, e)
    return db


def _as_stored(db: Database, path: Path) -> Database:
    """``db``, just saved in ``path``, as :meth:`Database.load` gives it, its rows read:
    tables whose rows :meth:`Database.release` can drop."""
    tables = {}
    for name, tab in db:
        tables[name] = StoredTable(tab.df, tab.pkey, tab.fkeys, tab.time_col,
                                   path=path / f"{name}{TABLE_SUFFIX}", layout=tab.layout())
    out = Database(tables, keys=dict(db.keys), stypes=dict(db.stypes))
    out.stored_digest = db.stored_digest
    return out


def _has_ids(path: Path) -> bool:
    """Whether the database folder ``path`` is complete and keeps the files' ids."""
    return (path / META_FILE).exists() and any(path.glob("*.keys.*"))
