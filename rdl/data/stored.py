"""How rdl's cache keeps a :class:`~rdl.data.database.Database`: one Arrow file per table
and per table's original keys, the rows' digest and the schema, written whole or not at all
(:func:`save`); read back with each table's rows left on disk until first asked for
(:func:`load`, :class:`StoredTable`); :func:`cached_database`, the one way a loader keeps
the database it made."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from rdl import caching
from rdl.data.database import Database, DataError, Table

log = logging.getLogger(__name__)

META_FILE = "metadata.json"
#: a saved table's file (Arrow IPC, uncompressed: read at the speed of the disk, where
#: parquet took 26 s to decode at four times rel-hm's size); ``.parquet``: rdl's older saves
TABLE_SUFFIX = ".arrow"
KEYS_SUFFIX = ".keys" + TABLE_SUFFIX
#: the rows' digest, written with them (:mod:`rdl.data.digest`)
DIGEST_FILE = "digest.json"


class StoredTable(Table):
    """A table of a database saved in rdl's cache (:func:`load`), its rows read
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


def save(db: Database, path: Path) -> None:
    """Writes one file per table of ``db``, one per table's original keys (``db.keys``), the
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
        for name, tab in db:
            write_table(tab.df, tmp / f"{name}{TABLE_SUFFIX}")
        for name, keys in db.keys.items():  # the files' ids (predictions report them)
            write_table(pd.DataFrame({"key": keys}), tmp / f"{name}{KEYS_SUFFIX}")
        digest, rows = db.digest(), shape(db)
        (tmp / DIGEST_FILE).write_text(json.dumps(
            {"version": ROWS_VERSION, "digest": digest, "shape": rows}))
        meta = {name: tab.meta() for name, tab in db}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
    db.stored_digest = (digest, rows)


def load(path: Path) -> Database:
    """The database that :func:`save` wrote in ``path``, its tables
    :class:`StoredTable` where the digest keeps their layout (an older save: read now)."""
    path = Path(path)
    meta_path = path / META_FILE
    if not meta_path.exists():
        raise DataError(f"{meta_path}: missing; not a database folder written by rdl.data.stored.save")
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
    db = Database(tables, keys=keys)
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
            db = load(path)
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
            save(db, path)
            return _as_stored(db, path)
        except OSError as e:
            caching.warn_uncached(path.parent, e)
    return db


def _as_stored(db: Database, path: Path) -> Database:
    """``db``, just saved in ``path``, as :func:`load` gives it, its rows read:
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
