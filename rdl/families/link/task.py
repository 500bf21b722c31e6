"""The link family's task: each seed's label is the list of rows of another table (or of
its own) it links to in the window; the model ranks every row of that table (MAP@k)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from rdl.data.database import Database, DataError
from rdl.families.link.kind import KINDS
from rdl.graph.columns import LIST_TYPES
from rdl.tasks import SPLITS, Task
from rdl.tasks.events import LinkEvents
from rdl.tasks.ids import lists_to_rows
from rdl.tasks.relbench_task import RelBenchTask

log = logging.getLogger(__name__)


@dataclass
class LinkTask(Task):
    """A link task (:class:`~rdl.tasks.Task`'s settings, and):

    Args:
        target_table: the table at the other end of the links (``target_col`` holds the
            list of its keys linked to the entity in the window); may be the entity's own.
        eval_k: how many ranked candidates are scored (MAP@k).
    """

    target_table: str | None = None
    eval_k: int = 12

    kinds: ClassVar[dict] = KINDS

    def kind_settings(self) -> dict:
        return {"target_table": self.target_table}

    def checked_tables(self) -> list[tuple[str, str]]:
        return [*super().checked_tables(), ("target_table", self.target_table)]

    def target_rows(self, df: pd.DataFrame, db: Database, where: str) -> pd.DataFrame:
        """Each list of the target table's ids as its rows."""
        df[self.target_col] = lists_to_rows(df[self.target_col], db, self.target_table, where)
        return df

    def existing(self, df: pd.DataFrame, db: Database, split: str) -> pd.DataFrame:
        """:meth:`Task.existing <rdl.tasks.Task.existing>`'s rows, their targets only rows
        that exist by the test time, and then the rows left with a target: the model ranks
        the rows of the graph, which ends at the test time
        (:func:`rdl.preparation.graph_database`), so a row that appears after it cannot be
        ranked (RelBench drops them too). Only test labels, read from every row, can name
        one; the other splits' labels are read from the database cut before it."""
        df = super().existing(df, db, split)
        table = db[self.target_table]
        if table.time_col is None or df.empty:
            return df
        flat = df[self.target_col].explode().dropna()
        late = table.df[table.time_col].to_numpy()[flat.to_numpy(dtype="int64")] > \
            self.test_time.to_datetime64()
        if not late.any():
            return df
        kept = flat[~late].groupby(level=0).agg(lambda v: np.asarray(v, dtype="int64"))
        log.info("%s split: %d of %d targets left out (%s rows from after the test time), "
                 "%d of %d rows left without one", split, int(late.sum()), len(flat),
                 self.target_table, len(df) - len(kept), len(df))
        df = df.loc[kept.index].copy()
        df[self.target_col] = kept
        return df.reset_index(drop=True)

    def now_table(self, db: Database, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        """The seeds of a prediction at the database's last time (empty target lists):
        every entity the task ever labelled, since a link task's SQL selects by the future."""
        t = db.max_time
        ids = sorted(set().union(*(tables[s][self.entity_col] for s in SPLITS)))
        return pd.DataFrame({"timestamp": pd.Series([t] * len(ids), dtype="datetime64[s]"),
                             self.entity_col: pd.Series(ids, dtype="int64"),
                             self.target_col: [[] for _ in ids]})


@dataclass
class RelBenchLinkTask(RelBenchTask, LinkTask):
    """A RelBench recommendation task read from its folder (:mod:`rdl.tasks.relbench`)."""

    def as_relbench(self, df: pd.DataFrame) -> pd.DataFrame:
        """Destination lists as sets, in RelBench's order."""
        df[self.target_col] = df[self.target_col].map(
            lambda v: np.sort(np.asarray(v, dtype="int64")))
        return df

    def check_file_targets(self, df: pd.DataFrame, file: Path) -> None:
        if not df[self.target_col].map(lambda v: isinstance(v, LIST_TYPES)).all():
            raise DataError(f"{file}: column {self.target_col!r} must hold lists of "
                            f"{self.target_table!r} rows (a recommendation task's)")


@dataclass
class EventsLinkTask(LinkEvents, LinkTask):
    """A link task labelled from an entity's events, with no SQL (``task=events-links``;
    :mod:`rdl.tasks.events`)."""
