"""The node family's task: one label per seed (a customer churns, an article's sales), with
the task's earlier labels as a history the model and the baselines see."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from rdl.data.database import Database, DataError, Table
from rdl.families.node.kinds import KINDS
from rdl.tasks import Task
from rdl.tasks.events import NodeEvents
from rdl.tasks.relbench_task import RelBenchTask

log = logging.getLogger(__name__)


@dataclass
class NodeTask(Task):
    """A node task (:class:`~rdl.tasks.Task`'s settings, and):

    Args:
        num_classes: for multiclass classification.
    """

    num_classes: int | None = None

    kinds: ClassVar[dict] = KINDS

    def kind_settings(self) -> dict:
        return {"num_classes": self.num_classes}

    def now_table(self, db: Database, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        """The seeds of a prediction at the database's last time, which has no labels yet
        (target NaN): the entities the task's SQL selects then (its selection may only read
        the past, as every RelBench node task's does)."""
        df = self.make_table(db, [db.max_time])
        df[self.target_col] = float("nan")
        return df

    def split_table(self, split: str, db: Database) -> pd.DataFrame:
        """The split's rows, less those whose label the SQL leaves NULL (unknown: a sum of
        values none of which the files hold), with a warning that counts them: no model
        trains on, or is scored by, a label that is not there."""
        df = super().split_table(split, db)
        unknown = df[self.target_col].isna().to_numpy()
        if unknown.any():
            log.warning("task %s: %d of the %s split's %d rows have no label (NULL from %s, "
                        "at %d of its seed times): left out", self.name, int(unknown.sum()),
                        split, len(df), self.source,
                        df.loc[unknown, "timestamp"].nunique())
            df = df[~unknown].reset_index(drop=True)
            if df.empty:
                raise DataError(f"task {self.name!r}: the {split} split is empty: every label "
                                f"{self.source} gives it is NULL ({self._split_times(db)})")
        return df

    def history(self, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        """The task's label history: its train and val labels, each with the time
        ``available = timestamp + window`` at which its window has closed. A seed at time
        ``s`` may see a label only if ``available <= s`` (in strict mode too: the label's
        rows all lie in ``(timestamp, available]``). Test labels are never history: their
        windows close after every seed time. A val label is available no earlier than the
        test time: with several val seed times (``num_eval_timestamps``) a later val seed
        sees no earlier val seed's label, as no test seed sees a test label (with one, its
        window closes by the test time anyway).
        """
        cols = ["timestamp", self.entity_col, self.target_col]
        # With a "now" table (predictions at the database's end) the test labels have
        # closed too: they are history for it (and, closing after every other seed time,
        # for nothing else).
        splits = ["train", "val", *(["test"] if "now" in tables else [])]
        df = pd.concat([tables[s][cols] for s in splits], ignore_index=True)
        df["available"] = self.closes(df["timestamp"])
        val = np.zeros(len(df), dtype=bool)
        start = len(tables["train"])
        val[start:start + len(tables["val"])] = True
        df.loc[val, "available"] = df.loc[val, "available"].clip(lower=self.test_time)
        return df.sort_values(["available", self.entity_col], kind="stable").reset_index(drop=True)

    def history_table(self, tables: dict[str, pd.DataFrame],
                      history: pd.DataFrame | None = None) -> tuple[Table, dict[str, str]]:
        """The label history as a table of the graph, and its stypes: one row per earlier
        label, a foreign key to the entity, the label as its one feature, and the time
        ``available`` (the sampler's time rule then shows a seed only closed windows).
        ``history``: :meth:`history` of ``tables`` if already computed."""
        history = self.history(tables) if history is None else history
        df = history[[self.entity_col, self.target_col, "available"]]
        table = Table(df, pkey=None, fkeys={self.entity_col: self.entity_table},
                      time_col="available")
        # ``available`` is encoded relative to the seed by the model, not as a feature
        return table, {self.target_col: self.kind.history_stype, "available": None}


@dataclass
class RelBenchNodeTask(RelBenchTask, NodeTask):
    """A RelBench node task read from its folder (:mod:`rdl.tasks.relbench`)."""

    def now_table(self, db: Database, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        if self.labels is not None or self.autocomplete:
            raise DataError(f"task {self.name!r}: split=now needs the task's SQL (a RelBench "
                            "3.x forecast task) to select the entities at the data's end")
        return super().now_table(db, tables)


@dataclass
class EventsNodeTask(NodeEvents, NodeTask):
    """A node task labelled from an entity's events, with no SQL (``task=events``;
    :mod:`rdl.tasks.events`)."""
