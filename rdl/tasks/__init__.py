"""A Task: a SQL file that labels seed times, plus what the model needs to know about it.

The SQL (``tasks/<db>/<name>.sql``) is run by DuckDB. It sees a relation
``timestamps(timestamp)`` of seed times, every table of the database by name, and the
parameter ``$window`` (an INTERVAL). It returns one row per training example:
``(timestamp, <entity_col>, <target_col>)``. Adding a task needs a SQL file and a YAML
in ``conf/task/``, no Python (an entity's events, no SQL: :mod:`rdl.tasks.events`).

Splits follow RelBench: train seed times go back from ``val_timestamp - window`` in steps
of ``window`` to the first time of the database; val uses ``val_timestamp`` and test
``test_timestamp``. Each split is labelled on the database cut where its labels end (train
at ``val_timestamp``, val at ``test_timestamp``, test on all rows), so no label ever reads
a row past its split. A seed is an entity that exists at its time (:meth:`Task.existing`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from rdl import duck
from rdl.paths import TASKS_DIR
from rdl.data.database import Database, DataError
from rdl.tasks.ids import register, to_rows
from rdl.tasks.kinds import Kind
from rdl.tasks.window import (back_from, check_split_time, parse_window,  # noqa: F401
                              shift, split_times, sql_interval, sql_text)
from rdl.visibility import visible

log = logging.getLogger(__name__)

#: The node type of a node task's label history in the graph
#: (:meth:`rdl.families.node.task.NodeTask.history_table`); a name no database table may take.
HISTORY = "label_history"
#: The table of seed times a task's SQL reads (:meth:`Task.make_table`), beside the database's.
TIMESTAMPS = "timestamps"
SPLITS = ("train", "val", "test")


def _config_folders() -> list[Path]:
    """The folder of the task's YAML file, where Hydra composed it from a folder (a config
    folder on its search path, ``hydra.searchpath``): a task ships its SQL beside it."""
    from hydra.core.hydra_config import HydraConfig
    if not HydraConfig.initialized():
        return []
    runtime = HydraConfig.get().runtime
    choice = runtime.choices.get("task")
    out = []
    for src in runtime.config_sources:
        folder = Path(src.path) / "task"
        if src.schema == "file" and choice and (folder / f"{choice}.yaml").is_file():
            out.append(folder)
    return out


@dataclass
class Task:
    """A prediction task over a database: what every family's task has (the SQL, the
    split times, the seeds). A family's task class (:class:`~rdl.families.node.NodeTask`,
    :class:`~rdl.families.link.LinkTask`) adds its own settings and its kinds
    (:attr:`kinds`); a task YAML's ``_target_`` names it.

    Args:
        name: e.g. ``user-churn``.
        sql: path of the SQL file: absolute, relative to the working directory (your own
            task), or else relative to rdl's packaged task SQL (``rdl/tasks/``, e.g.
            ``hm/user-churn.sql``).
        kind: one of the family's :attr:`kinds` (``regression``, ...); the task holds
            it as a :class:`~rdl.tasks.kinds.Kind`.
        entity_table: the table whose rows are predicted (the seed node type).
        entity_col: the column of the SQL result holding the entity's primary key.
        target_col: the column of the SQL result holding the label.
        window: the label window, a pandas timedelta string (``7d``).
        val_timestamp, test_timestamp: the split times (no default: a task's own).
        metrics: metric name -> torchmetrics ``Metric`` (built by Hydra from the YAML);
            none: the kind's (:meth:`~rdl.tasks.kinds.Kind.default_metrics`).
        monitor, monitor_mode: the validation metric that selects the model, and whether
            higher (``max``) or lower (``min``) is better; none: the kind's, and the
            monitored metric's own direction (torchmetrics' ``higher_is_better``).
        num_eval_timestamps: seed times of the val and of the test split, one window
            apart (RelBench's; val's end a window before the test time, test's a window
            before the data's end).
        query: the label SQL as text instead of a file (``sql: null``), RelBench's manifest
            style: ``{timedelta}`` stands for the window (``INTERVAL '{timedelta}'``).
        time_col: the name the task's source gives the seed time (RelBench: ``timestamp``,
            or an autocomplete task's entity time column); rdl's tables call it
            ``timestamp``, prediction files use this name.
        backtest: move both split times this many windows earlier (rolling-origin
            evaluation, :mod:`rdl.backtest`): train, val and test all end sooner, and the
            graph and baselines are cut at the moved test time as at the real one.
        train_windows: train on the seed times of the last this many windows before val
            only (None: every window back to the data's start); the database before them
            stays visible history. How a task with a few weeks of labels fares
            (``train_windows=4`` on the command line).
        data_defaults: data settings that won the task's validation sweep (e.g.
            ``{"strategy": "mix"}``), applied where ``data.*`` is null
            (:func:`rdl.settings.with_data_defaults`).
        trainer_defaults: the training budget that won the task's backtests (e.g.
            ``{"max_epochs": 6, "limit_train_batches": 2000}``), applied where the run
            leaves the trainer's budget as it is by default
            (:func:`rdl.settings.with_trainer_defaults`).
    """

    name: str
    sql: str | None
    kind: str | Kind
    entity_table: str
    entity_col: str
    target_col: str
    window: str = "7d"
    val_timestamp: str | None = None
    test_timestamp: str | None = None
    metrics: dict = field(default_factory=dict)
    monitor: str = ""
    monitor_mode: str | None = None
    backtest: int = 0
    train_windows: int | None = None
    data_defaults: dict = field(default_factory=dict)
    trainer_defaults: dict = field(default_factory=dict)
    num_eval_timestamps: int = 1
    query: str | None = None
    time_col: str = "timestamp"

    #: the family's kinds by name (a subclass's); the base class trains none
    kinds: ClassVar[dict[str, type[Kind]]] = {}
    #: the labels may come from elsewhere than SQL (RelBench's files or a column)
    labels_elsewhere: ClassVar[bool] = False

    def __post_init__(self):
        if not self.kinds:   # a YAML written before the families: _target_: rdl.tasks.Task
            raise ValueError(f"task {self.name!r}: {type(self).__name__} is what every family's "
                             "task has; name a family's task class as the task's _target_: "
                             "rdl.families.node.NodeTask (a label per row) or "
                             "rdl.families.link.LinkTask (a list of rows to rank)")
        if not isinstance(self.kind, Kind):
            if self.kind not in self.kinds:
                raise ValueError(f"task {self.name!r}: kind {self.kind!r} is not one of "
                                 f"{tuple(self.kinds)} ({type(self).__name__})")
            self.kind = self.kinds[self.kind](self.name, **self.kind_settings())
        # A YAML that names no metrics is scored by its kind's, and one that names no monitor
        # selects by its kind's (as RelBench tasks are, rdl.families.relbench_task)
        if not self.metrics:
            self.metrics = self.kind.default_metrics(getattr(self, "eval_k", None) or 12)
        if not self.monitor:
            self.monitor, mode = self.kind.monitor
            self.monitor_mode = self.monitor_mode or mode
        if self.monitor not in self.metrics:
            raise ValueError(f"task {self.name!r}: monitor {self.monitor!r} is not one of its "
                             f"metrics {sorted(self.metrics)}")
        if self.monitor_mode is None:
            self.monitor_mode = self.monitor_direction()
        try:
            self.delta = parse_window(self.window)
        except ValueError:
            raise ValueError(f"task {self.name!r}: window {self.window!r} is not a duration "
                             "such as '7d', nor calendar months such as '1mo'") from None
        for attr in ("val_timestamp", "test_timestamp"):
            if getattr(self, attr) is None:
                raise ValueError(f"task {self.name!r}: {attr} is missing (a date such as "
                                 "'2020-09-07')")
            try:
                pd.Timestamp(getattr(self, attr))
            except ValueError:
                raise ValueError(f"task {self.name!r}: {attr} {getattr(self, attr)!r} is not a "
                                 "date such as '2020-09-07'") from None
        back = self.backtest
        if not isinstance(back, int) or isinstance(back, bool) or back < 0:
            raise ValueError(f"task {self.name!r}: backtest {self.backtest!r} must be a whole "
                             "number of windows >= 0")
        self.val_time, self.test_time = split_times(self.val_timestamp, self.test_timestamp,
                                                    self.window, back)
        for attr in ("val_timestamp", "test_timestamp"):
            if why := check_split_time(self.window, getattr(self, attr), attr):
                raise ValueError(f"task {self.name!r}: {why}")
        if self.test_time < self.val_time:
            raise ValueError(f"task {self.name!r}: test_timestamp precedes val_timestamp")
        w = self.train_windows
        if w is not None and (not isinstance(w, int) or isinstance(w, bool) or w < 1):
            raise ValueError(f"task {self.name!r}: train_windows {w!r} must be a whole number "
                             ">= 1, or null (every window)")
        n = self.num_eval_timestamps
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"task {self.name!r}: num_eval_timestamps {n!r} must be a whole "
                             "number >= 1")
        self.sql_path = None
        if self.sql is None:
            if self.query is None and not self.labels_elsewhere:
                raise ValueError(f"task {self.name!r}: no labels: give sql (a file) or query")
            return  # labels from self.query, or from a subclass (rdl.tasks.relbench_task)
        path = Path(self.sql).expanduser()
        # relative: from the task's YAML's own folder, the working folder, rdl's tasks
        folders = [] if path.is_absolute() else [*_config_folders(), Path.cwd(), TASKS_DIR]
        found = [f / path for f in folders if (f / path).exists()]
        self.sql_path = path if path.is_absolute() else (found or [TASKS_DIR / path])[0]
        if not self.sql_path.exists():
            raise FileNotFoundError(f"task {self.name!r}: SQL file {self.sql!r} does not exist "
                                    f"(looked in {', '.join(map(str, folders)) or 'its path'})")

    def monitor_direction(self) -> str:
        """``monitor_mode`` where the YAML names none: the monitored metric's own direction
        (torchmetrics' ``higher_is_better``), else one clear error."""
        higher = getattr(self.metrics[self.monitor], "higher_is_better", None)
        if higher is None:
            raise ValueError(f"task {self.name!r}: monitor {self.monitor!r} needs monitor_mode "
                             "(min: lower is better, or max)")
        return "max" if higher else "min"

    def kind_settings(self) -> dict:
        """What the family's kinds are made with besides the task's name."""
        return {}

    def checked_tables(self) -> list[tuple[str, str]]:
        """``(setting, table)``: the tables the task names, each a keyed table of the
        database (:func:`rdl.preparation.check_task_tables`)."""
        return [("entity_table", self.entity_table)]

    @property
    def source(self) -> str:
        """Where the labels come from, for messages: the SQL file, or the task's query."""
        return str(self.sql_path) if self.sql_path is not None else f"the SQL of task {self.name!r}"

    # -- the database as the task sees it -----------------------------------------------
    def database(self, db: Database) -> Database:
        """``db`` as the task needs it before anything is computed (RelBench's autocomplete
        tasks key an entity table that has no key); the database itself here."""
        return db

    def inputs(self, db: Database) -> Database:
        """``db`` without the columns the task must not see (a label's own column); the
        graph, the features and the baselines read only this. The database itself here."""
        return db

    # -- labels ----------------------------------------------------------------------
    def make_table(self, db: Database, timestamps) -> pd.DataFrame:
        """Run the task's SQL on ``db`` for the given seed times; the SQL sees the files'
        own ids, mapped back to rows after (:mod:`rdl.tasks.ids`)."""
        # one thread (label sums in one order), a memory limit past which it spills to
        # disk, and the seed times a few at a time, for a label query crosses them with
        # every entity row (one group where they fit, as before): rdl/duck.py
        entities = len(db[self.entity_table]) if self.entity_table in db.tables else 1
        groups = duck.seed_time_groups(list(pd.to_datetime(list(timestamps))), entities)
        if len(groups) > 1:
            log.info("task %s: %d seed times in %d label queries of at most %d "
                     "(duckdb.label_pairs)", self.name, sum(map(len, groups)), len(groups),
                     len(groups[0]))
        sql, params = self.label_sql(db)
        parts = []
        with duck.connect() as con:
            register(con, db)   # keyed by the files' ids (rdl.tasks.ids)
            for group in groups:
                con.register(TIMESTAMPS, pd.DataFrame({"timestamp": pd.to_datetime(group)}))
                try:
                    part = con.execute(sql, params).df()
                except duckdb.OutOfMemoryException:
                    raise   # not the SQL's fault: rdl.duck says which setting to raise
                except duckdb.Error as e:
                    raise DataError(f"task {self.name!r}: {self.source} failed in DuckDB: "
                                    f"{e}") from None
                con.unregister(TIMESTAMPS)
                # ids to rows at once: a group's ids are text (64 characters each in
                # H&M's files), its rows 8 bytes
                parts.append(self._as_rows(part, db))
        # a group that labels nothing adds no rows (nor its columns' empty dtypes)
        parts = [part for part in parts if len(part)] or parts[:1]
        df = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        df = df.dropna(subset=[self.entity_col])  # rows of dangling foreign keys
        try:
            df["timestamp"] = df["timestamp"].astype("datetime64[s]")
            df[self.entity_col] = df[self.entity_col].astype("int64")
        except (ValueError, TypeError) as e:
            raise DataError(f"task {self.name!r}: {self.source} returned a column of the wrong "
                            f"type (timestamp must hold times, {self.entity_col} the "
                            f"{self.entity_table} table's keys): {e}") from None
        return df.sort_values(["timestamp", self.entity_col], kind="stable").reset_index(drop=True)

    def label_sql(self, db: Database) -> tuple[str, dict | None]:
        """``(query, parameters)``: the SQL file's, or the task's query (window as text)."""
        if self.sql_path is None:
            return self.query.replace("{timedelta}", sql_text(self.window)), None
        return self.sql_path.read_text(), self.window_parameter()

    def window_parameter(self) -> dict:   # the SQL's $window: the window as an INTERVAL
        return {"window": sql_interval(self.window)}

    def closes(self, times):
        """When the windows of labels at seed ``times`` close: ``times + window`` (whole
        months for a calendar window), the time from which such a label is history."""
        return shift(times, self.window)

    def _as_rows(self, df: pd.DataFrame, db: Database) -> pd.DataFrame:
        """The SQL's rows checked for their columns, the ids in them as row positions."""
        if self.time_col != "timestamp" and self.time_col in df.columns:
            df = df.rename(columns={self.time_col: "timestamp"})
        expected = ["timestamp", self.entity_col, self.target_col]
        missing = [c for c in expected if c not in df.columns]
        if missing:
            raise DataError(f"task {self.name!r}: {self.source} returned columns "
                            f"{list(df.columns)}, expected {expected} (missing {missing})")
        where = f"task {self.name!r}: {self.source}, column"
        df[self.entity_col] = to_rows(df[self.entity_col], db, self.entity_table,
                                      f"{where} {self.entity_col!r}")
        return self.target_rows(df, db, f"{where} {self.target_col!r}")

    def target_rows(self, df: pd.DataFrame, db: Database, where: str) -> pd.DataFrame:
        """``df`` with its targets as the model takes them where they name rows of a table
        (the files' ids to rows); the labels themselves here."""
        return df

    def _split_times(self, db: Database) -> str:
        """The split times and the data's time range, for messages about an empty split."""
        return (f"val_timestamp {self.val_time.date()}, test_timestamp {self.test_time.date()}, "
                f"window {self.window}; the data spans {db.min_time} to {db.max_time}")

    def timestamps(self, split: str, db: Database) -> list[pd.Timestamp]:
        if split == "train":
            ts = back_from(shift(self.val_time, self.window, -1), db.min_time, self.window)
            if len(ts) < 1:
                raise DataError(f"task {self.name!r}: the train split is empty: no seed time "
                                f"between the data's start and val_timestamp - window "
                                f"({self._split_times(db)})")
            return list(ts)
        if split in ("val", "test"):
            t = self.val_time if split == "val" else self.test_time
            if self.closes(t) > db.max_time:
                raise DataError(f"task {self.name!r}: the {split} split is empty: {split} labels "
                                f"need rows up to {self.closes(t)} ({self._split_times(db)})")
            if self.num_eval_timestamps == 1:
                return [t]
            # RelBench's: one window apart, val's windows closing by the test time, test's
            # by the data's end
            end = self.test_time if split == "val" else db.max_time
            later = (shift(t, self.window, k) for k in range(1, self.num_eval_timestamps))
            return [t, *(x for x in later if self.closes(x) <= end)]
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")

    def now_table(self, db: Database, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        """The seeds of a prediction at the database's last time, which has no labels yet
        (the family's rule for which entities those are)."""
        raise NotImplementedError(f"{type(self).__name__} predicts no split 'now'")

    def split_table(self, split: str, db: Database) -> pd.DataFrame:
        """The labelled rows of one split, computed on the database cut for that split."""
        cut = {"train": self.val_time, "val": self.test_time, "test": None}[split]
        view = self.inputs(db if cut is None else db.upto(cut))
        times = self.timestamps(split, db)
        df = self.recent(self.existing(self.make_table(view, times), db, split), split)
        if df.empty:  # nothing to train on or to score: say why, not fail in the loader
            raise DataError(f"task {self.name!r}: the {split} split is empty: {self.source} "
                            f"labels no row at its seed times ({self._split_times(db)})"
                            + self._unborn(db, max(times)))
        return df

    def _unborn(self, db: Database, last: pd.Timestamp) -> str:
        """Why a split may be empty: its entities' rows begin after its last seed time (an
        entity exists from its row's time on; a change or load time there hides them)."""
        table = db[self.entity_table] if self.entity_table in db.tables else None
        if table is None or table.time_col is None or table.df.empty:
            return ""
        born = table.df[table.time_col]
        n = int((born > last).sum())
        if n < 0.5 * len(born):
            return ""
        return (f"; {n} of the {len(born)} {self.entity_table!r} rows begin after its last seed "
                f"time ({self.entity_table}.{table.time_col} from {born.min()} on), and an "
                "entity exists from its row's time on. If that column is not when an entity "
                f"began (a time its row changed or was loaded), declare {self.entity_table!r} "
                "with no time")

    def recent(self, df: pd.DataFrame, split: str) -> pd.DataFrame:
        """The train rows of the last :attr:`train_windows` seed times (every split as it
        is where that is None)."""
        if split != "train" or self.train_windows is None or df.empty:
            return df
        times = np.sort(df["timestamp"].unique())[-self.train_windows:]
        return df[df["timestamp"].isin(times)].reset_index(drop=True)

    def existing(self, df: pd.DataFrame, db: Database, split: str) -> pd.DataFrame:
        """A split's rows whose entity exists at the seed time (its row visible then,
        :func:`rdl.visibility.visible`): the sampler gives a seed its own row whatever its
        time, so a seed whose entity joins later would see a row from its future, and the
        graph, cut at the test time, has no row for a test seed's entity that joins after
        it. A SQL that selects by the future (a link task's: who links in the window) may
        return such entities; a family adds its own rule for its labels."""
        table = db[self.entity_table]
        if table.time_col is None or df.empty:
            return df
        born = table.df[table.time_col].to_numpy()[df[self.entity_col].to_numpy()]
        keep = pd.isna(born) | visible(born, df["timestamp"].to_numpy())
        if not keep.all():
            log.info("%s split: %d of %d rows left out: their %s row is from after the seed "
                     "time", split, int((~keep).sum()), len(df), self.entity_table)
        return df[keep].reset_index(drop=True)
