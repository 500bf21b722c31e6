"""Table and Database: the relational input of rdl, as small plain objects.

A :class:`Table` is a pandas frame plus its keys and time column; a :class:`Database`
is a dict of named tables. Times are pandas datetimes (``datetime64``); primary keys
are, after :meth:`Database.reindex`, the row positions ``0..N-1`` and foreign keys
point at them (``<NA>`` where the referenced row does not exist), as in RelBench.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pandas as pd


log = logging.getLogger(__name__)


class DataError(ValueError):
    """Bad input data: the message names the file, table or column and what is wrong."""


class EmptyTable(DataError):
    """A table of no rows (a sample database's table that triggers fill, never filled)."""


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

    @property
    def read(self) -> bool:
        """Whether the rows are in memory (always, but for
        :class:`rdl.data.stored.StoredTable`)."""
        return True

    def release(self) -> None:
        """Drops rows that can be read again (a table in memory has none to drop;
        :class:`rdl.data.stored.StoredTable`)."""

    def column(self, name: str) -> pd.Series:
        """One column's values."""
        return self.df[name]


@dataclass
class Database:
    """Named tables linked by foreign keys. ``keys``: after :meth:`reindex`, per table with
    a primary key the original key of each row position (predictions report them).
    ``stypes``: per table, column stypes its source declares (a schema file); the data
    config's ``stypes`` override them."""

    tables: dict[str, Table]
    keys: dict[str, pd.Index] = field(default_factory=dict)
    stypes: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: per table, its columns read as times of day (seconds since midnight: rdl.data.clocks)
    clocks: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)
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
        """The first time of any timed row but a calendar's (:class:`DataError` if there is
        none): a date dimension's days (TPC-DS's ``date_dim``, 1900 to 2100) are no span
        of the data's, and seeds from 1900 would be a century of empty windows."""
        return min(s.min() for s in self._spanning())

    @property
    def max_time(self) -> pd.Timestamp:
        """The last time of any timed row but a calendar's (:attr:`min_time`)."""
        return max(s.max() for s in self._spanning())

    def _spanning(self) -> list[pd.Series]:
        """The timed tables' times but calendars' (:func:`rdl.data.days.spanning`)."""
        from rdl.data.days import spanning   # (it reads tables of this module)
        return spanning([(t.df, t.pkey, t.time_col) for t in self._timed()])

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
            if tab.pkey and tab.read and tab.df[tab.pkey].duplicated().any():
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
        """Drops the rows of the tables read from rdl's cache (:class:`~rdl.data.stored.StoredTable`: read
        again from their files when next asked for). After preparation a run's graph and
        prepared data are mapped from their caches; the rows are needed again only by the
        baselines after training (at four times rel-hm's size, 7 GiB held through it)."""
        for _, tab in self:
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


