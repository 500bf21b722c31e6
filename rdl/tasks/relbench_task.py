"""A RelBench task as rdl's :class:`~rdl.tasks.Task`: where its labels come from.

RelBench's tasks get their labels one of three ways, each kept to RelBench's rules so that
rdl's split tables equal RelBench's row for row:

* **SQL** (a 3.x manifest's ``forecast`` task): the manifest's query, run as any rdl task's
  SQL on the database cut where the split's labels end, then RelBench's filter of entities
  that do not exist by the test time;
* **autocomplete** (RelBench's ``AutoCompleteTask``): a column of the entity table is the
  label, hidden from everything else; a split's rows are the entity rows whose time falls
  in it (train up to the val time, val up to the test time, test after it), each seed at
  its own row's time;
* **files** (1.x/2.x task folders, 3.x ``external`` tasks): ``train/val/test.parquet`` as
  RelBench wrote them.

Either way the task may hide columns (``remove_columns``) from the graph, the features and
the baselines (:meth:`RelBenchTask.inputs`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rdl.data.database import Database, DataError, Table
from rdl.tasks import Task
from rdl.tasks.ids import to_rows

log = logging.getLogger(__name__)

#: the key RelBench gives an autocomplete task's entity table that has none
AUTO_KEY = "primary_key"


@dataclass
class RelBenchTask(Task):
    """A :class:`~rdl.tasks.Task` whose labels come from RelBench's definition (see the
    module's docstring).

    Args (besides :class:`~rdl.tasks.Task`'s):
        labels: the folder of ``train/val/test.parquet`` (labels as files), or None.
        autocomplete: the label is the entity table's ``target_col`` column.
        remove_columns: ``[table, column]`` pairs the task must not see.
        dataset_val, dataset_test: the dataset's split times (an autocomplete task's
            ranges; ``val_timestamp``/``test_timestamp`` are where the graph is cut).
    """

    labels: str | None = None
    autocomplete: bool = False
    remove_columns: list = field(default_factory=list)
    dataset_val: str | None = None
    dataset_test: str | None = None

    labels_elsewhere: ClassVar[bool] = True

    def __post_init__(self):
        super().__post_init__()
        if self.sql_path is None and self.query is None and self.labels is None and \
                not self.autocomplete:
            raise ValueError(f"task {self.name!r}: no labels: neither SQL nor label files")
        if self.backtest and (self.labels is not None or self.autocomplete):
            raise ValueError(f"task {self.name!r}: backtest={self.backtest} needs the task's "
                             "SQL (a RelBench 3.x forecast task): its labels are "
                             + ("files" if self.labels is not None else "a column"))

    # -- the database as the task sees it -------------------------------------------------
    def database(self, db: Database) -> Database:
        """An autocomplete task's entity table keyed by row position if it has no key
        (RelBench's ``primary_key``)."""
        tab = db.tables.get(self.entity_table)
        if not self.autocomplete or tab is None or tab.pkey is not None:
            return db
        df = tab.df.assign(**{AUTO_KEY: np.arange(len(tab))})
        return Database({**db.tables, self.entity_table: Table(df, AUTO_KEY, dict(tab.fkeys),
                                                               tab.time_col)},
                        keys=db.keys, stypes=db.stypes)

    def hidden(self) -> list[tuple[str, str]]:
        """The ``(table, column)`` pairs the task hides."""
        pairs = [tuple(p) for p in self.remove_columns]
        return pairs + ([(self.entity_table, self.target_col)] if self.autocomplete else [])

    def inputs(self, db: Database) -> Database:
        tables = dict(db.tables)
        for name, col in self.hidden():
            tab = tables.get(name)
            if tab is None or col not in tab.df.columns:
                log.warning("task %r: column %r of table %r to hide is not in the database",
                            self.name, col, name)
                continue
            if col in (tab.pkey, tab.time_col, *tab.fkeys):
                raise DataError(f"task {self.name!r}: remove_columns names {name}.{col}, a key "
                                "or time column; only feature columns can be hidden")
            tables[name] = Table(tab.df.drop(columns=[col]), tab.pkey, dict(tab.fkeys),
                                 tab.time_col)
        return Database(tables, keys=db.keys, stypes=db.stypes)

    # -- labels ------------------------------------------------------------------------------
    def split_table(self, split: str, db: Database) -> pd.DataFrame:
        db = self.database(db)
        if self.labels is not None:
            df = self._file_labels(split, db)
        elif self.autocomplete:
            df = self._column_labels(split, db)
        else:
            # each split labelled on the database cut where its labels end, as every rdl
            # task (RelBench cuts train at the test time too: the same labels, unless a
            # query reads past its window, which a train label then cannot carry into a
            # later seed's label history)
            cut = {"train": self.val_time, "val": self.test_time}.get(split)
            df = self.make_table(self.inputs(db if cut is None else db.upto(cut)),
                                 self.timestamps(split, db))
            # RelBench: entities that do not exist by the test time are dropped
            n = len(db.upto(self.test_time)[self.entity_table])
            df = df[df[self.entity_col] < n].reset_index(drop=True)
        df = self.recent(self.as_relbench(df), split)
        if df.empty:
            raise DataError(f"task {self.name!r}: the {split} split is empty "
                            f"({self._split_times(db)})")
        return df

    def _column_labels(self, split: str, db: Database) -> pd.DataFrame:
        """RelBench's autocomplete rows: entity rows in the split's time range."""
        tab = db[self.entity_table]
        val, test = pd.Timestamp(self.dataset_val), pd.Timestamp(self.dataset_test)
        if split == "test":
            lo, hi = test, db.max_time
        elif split == "val":
            lo, hi = val, test
        else:
            lo, hi = db.upto(test).min_time - self.delta, val
        df = tab.df
        rows = df[(df[tab.time_col] > lo) & (df[tab.time_col] <= hi)]
        out = pd.DataFrame({"timestamp": rows[tab.time_col].astype("datetime64[s]"),
                            self.entity_col: rows[tab.pkey].astype("int64"),
                            self.target_col: rows[self.target_col]})
        out = out.dropna(subset=[self.target_col])
        return out.sort_values(["timestamp", self.entity_col], kind="stable").reset_index(drop=True)

    def _file_labels(self, split: str, db: Database) -> pd.DataFrame:
        """A split's labels as RelBench wrote them."""
        file = Path(self.labels) / f"{split}.parquet"
        if not file.exists():
            raise DataError(f"{file}: missing (the {split} labels of task {self.name!r})")
        try:
            df = pq.read_table(file).to_pandas()
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{file}: not a readable parquet file: {e}") from None
        cols = [self.time_col, self.entity_col, self.target_col]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise DataError(f"{file}: missing column(s) {missing} of task {self.name!r}; the "
                            f"file has {list(df.columns)}")
        df = df[cols].rename(columns={self.time_col: "timestamp"})
        df["timestamp"] = pd.to_datetime(df["timestamp"]).astype("datetime64[s]")
        n = len(db[self.entity_table])
        ent = df[self.entity_col]
        where = f"{file}: column"
        if db.keys:  # rows dropped for a missing time (rdl.data.relbench): ids to rows
            ent = to_rows(ent, db, self.entity_table, f"{where} {self.entity_col!r}")
            df = self.target_rows(df, db, f"{where} {self.target_col!r}")
        bad = ent.isna() | (ent < 0) | (ent >= n)
        if bad.any():
            raise DataError(f"{file}: {int(bad.sum())} of {len(df)} rows have a "
                            f"{self.entity_col} that is no row of table {self.entity_table!r} "
                            f"({n} rows), e.g. row {int(bad.to_numpy().argmax())}: are the "
                            "labels of this database?")
        df[self.entity_col] = ent.astype("int64")
        self.check_file_targets(df, file)
        return df.sort_values(["timestamp", self.entity_col], kind="stable").reset_index(drop=True)

    # -- what a family's RelBench task says differently ------------------------------------
    def as_relbench(self, df: pd.DataFrame) -> pd.DataFrame:
        """A split's rows with their targets as RelBench holds them (the labels here)."""
        return df

    def check_file_targets(self, df: pd.DataFrame, file: Path) -> None:
        """A :class:`DataError` where a label file's targets are not the family's (none)."""

    def now_table(self, db: Database, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        return super().now_table(self.inputs(self.database(db)), tables)
