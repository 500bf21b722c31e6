"""A Task: a SQL file that labels seed times, plus what the model needs to know about it.

The SQL (``tasks/<db>/<name>.sql``) is run by DuckDB. It sees a relation
``timestamps(timestamp)`` of seed times, every table of the database by name, and the
parameter ``$window`` (an INTERVAL). It returns one row per training example:
``(timestamp, <entity_col>, <target_col>)``. Adding a task needs a SQL file and a YAML
in ``conf/task/``, no Python.

Splits follow RelBench: train seed times go back from ``val_timestamp - window`` in steps
of ``window`` to the first time of the database; val uses ``val_timestamp`` and test
``test_timestamp``. Each split is labelled on the database cut where its labels end (train
at ``val_timestamp``, val at ``test_timestamp``, test on all rows), so no label ever reads
a row past its split.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from rdl.paths import TASKS_DIR
from rdl.data.database import Database, DataError, Table
from rdl.tasks.ids import lists_to_rows, register, to_rows
from rdl.tasks.kinds import Kind, kind_of

#: The node type of a node task's label history in the graph (see :meth:`Task.history_table`).
HISTORY = "label_history"
#: The table of seed times a task's SQL reads (:meth:`Task.make_table`), beside the database's.
TIMESTAMPS = "timestamps"
SPLITS = ("train", "val", "test")


def parse_window(window) -> pd.Timedelta:
    """A task window, a pandas duration such as ``7d`` or ``12h``. Days may be written
    ``d``, as every task YAML does, though pandas 3 deprecates that unit for ``D``."""
    return pd.Timedelta(re.sub(r"(?<=\d)d(?![a-z])", "D", str(window)))


def split_times(val_timestamp, test_timestamp, window, backtest: int = 0) -> tuple:
    """``(val time, test time)``, both moved ``backtest`` windows earlier."""
    shift = backtest * parse_window(window)
    return pd.Timestamp(val_timestamp) - shift, pd.Timestamp(test_timestamp) - shift


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
    """A prediction task over a database.

    Args:
        name: e.g. ``user-churn``.
        sql: path of the SQL file: absolute, relative to the working directory (your own
            task), or else relative to rdl's packaged task SQL (``rdl/tasks/``, e.g.
            ``hm/user-churn.sql``).
        kind: one of :data:`~rdl.tasks.kinds.KINDS` (``regression``, ...); the task holds
            it as a :class:`~rdl.tasks.kinds.Kind`.
        entity_table: the table whose rows are predicted (the seed node type).
        entity_col: the column of the SQL result holding the entity's primary key.
        target_col: the column of the SQL result holding the label (for link prediction:
            the list of ``target_table`` keys linked to the entity in the window).
        target_table: link prediction only: the table at the other end of the links.
        eval_k: link prediction only: how many ranked candidates are scored (MAP@k).
        window: the label window, a pandas timedelta string (``7d``).
        val_timestamp, test_timestamp: the split times.
        num_classes: for multiclass classification.
        metrics: metric name -> torchmetrics ``Metric`` (built by Hydra from the YAML).
        monitor, monitor_mode: the validation metric that selects the model, and whether
            higher (``max``) or lower (``min``) is better.
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
        data_defaults: data settings that won the task's validation sweep (e.g.
            ``{"strategy": "mix"}``), applied where ``data.*`` is null
            (:func:`rdl.settings.with_data_defaults`).
    """

    name: str
    sql: str | None
    kind: str | Kind
    entity_table: str
    entity_col: str
    target_col: str
    window: str = "7d"
    val_timestamp: str = "2020-09-07"
    test_timestamp: str = "2020-09-14"
    num_classes: int | None = None
    target_table: str | None = None
    eval_k: int = 12
    metrics: dict = field(default_factory=dict)
    monitor: str = ""
    monitor_mode: str = "max"
    backtest: int = 0
    data_defaults: dict = field(default_factory=dict)
    num_eval_timestamps: int = 1
    query: str | None = None
    time_col: str = "timestamp"

    def __post_init__(self):
        if not isinstance(self.kind, Kind):
            self.kind = kind_of(self.kind, self.name, num_classes=self.num_classes,
                                target_table=self.target_table)
        if self.monitor and self.metrics and self.monitor not in self.metrics:
            raise ValueError(f"task {self.name!r}: monitor {self.monitor!r} is not one of its "
                             f"metrics {sorted(self.metrics)}")
        try:
            self.delta = parse_window(self.window)
        except ValueError:
            raise ValueError(f"task {self.name!r}: window {self.window!r} is not a duration "
                             "such as '7d'") from None
        for attr in ("val_timestamp", "test_timestamp"):
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
                                                    self.delta, back)
        if self.test_time < self.val_time:
            raise ValueError(f"task {self.name!r}: test_timestamp precedes val_timestamp")
        n = self.num_eval_timestamps
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"task {self.name!r}: num_eval_timestamps {n!r} must be a whole "
                             "number >= 1")
        self.sql_path = None
        if self.sql is None:
            if self.query is None and type(self) is Task:
                raise ValueError(f"task {self.name!r}: no labels: give sql (a file) or query")
            return  # labels from self.query, or from a subclass (rdl.tasks.relbench)
        path = Path(self.sql).expanduser()
        # relative: from the task's YAML's own folder, the working folder, rdl's tasks
        folders = [] if path.is_absolute() else [*_config_folders(), Path.cwd(), TASKS_DIR]
        found = [f / path for f in folders if (f / path).exists()]
        self.sql_path = path if path.is_absolute() else (found or [TASKS_DIR / path])[0]
        if not self.sql_path.exists():
            raise FileNotFoundError(f"task {self.name!r}: SQL file {self.sql!r} does not exist "
                                    f"(looked in {', '.join(map(str, folders)) or 'its path'})")

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
        # One thread: DuckDB's parallel aggregates add floats in an order that varies from
        # run to run, and label sums then differed in their last bits (one item-sales run
        # in four), enough to change LightGBM's trees; a run must repeat with its seed.
        con = duckdb.connect(config={"threads": 1})
        try:
            register(con, db)   # keyed by the files' ids (rdl.tasks.ids)
            con.register(TIMESTAMPS,
                         pd.DataFrame({"timestamp": pd.to_datetime(list(timestamps))}))
            window = dt.timedelta(seconds=self.delta.total_seconds())
            try:
                if self.sql_path is None:  # RelBench's manifest SQL: the window as text
                    df = con.execute(self.query.replace("{timedelta}", str(self.delta))).df()
                else:
                    df = con.execute(self.sql_path.read_text(), {"window": window}).df()
            except duckdb.Error as e:
                raise DataError(f"task {self.name!r}: {self.source} failed in DuckDB: {e}") from None
        finally:
            con.close()
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
        if not self.kind.per_seed:
            df[self.target_col] = lists_to_rows(df[self.target_col], db, self.target_table,
                                                f"{where} {self.target_col!r}")
        df = df.dropna(subset=[self.entity_col])  # rows of dangling foreign keys
        try:
            df["timestamp"] = df["timestamp"].astype("datetime64[s]")
            df[self.entity_col] = df[self.entity_col].astype("int64")
        except (ValueError, TypeError) as e:
            raise DataError(f"task {self.name!r}: {self.source} returned a column of the wrong "
                            f"type (timestamp must hold times, {self.entity_col} the "
                            f"{self.entity_table} table's keys): {e}") from None
        return df.sort_values(["timestamp", self.entity_col], kind="stable").reset_index(drop=True)

    def _split_times(self, db: Database) -> str:
        """The split times and the data's time range, for messages about an empty split."""
        return (f"val_timestamp {self.val_time.date()}, test_timestamp {self.test_time.date()}, "
                f"window {self.window}; the data spans {db.min_time} to {db.max_time}")

    def timestamps(self, split: str, db: Database) -> list[pd.Timestamp]:
        if split == "train":
            ts = pd.date_range(self.val_time - self.delta, db.min_time, freq=-self.delta)
            if len(ts) < 1:
                raise DataError(f"task {self.name!r}: the train split is empty: no seed time "
                                f"between the data's start and val_timestamp - window "
                                f"({self._split_times(db)})")
            return list(ts)
        if split in ("val", "test"):
            t = self.val_time if split == "val" else self.test_time
            if t + self.delta > db.max_time:
                raise DataError(f"task {self.name!r}: the {split} split is empty: {split} labels "
                                f"need rows up to {t + self.delta} ({self._split_times(db)})")
            if self.num_eval_timestamps == 1:
                return [t]
            # RelBench's: one window apart, val's windows closing by the test time, test's
            # by the data's end
            end = min(t + self.delta * (self.num_eval_timestamps - 1),
                      (self.test_time if split == "val" else db.max_time) - self.delta)
            return list(pd.date_range(t, max(t, end), freq=self.delta))
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")

    def now_table(self, db: Database, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        """The seeds of a prediction at the database's last time, which has no labels yet
        (target NaN, or empty lists): for a node task the entities its SQL selects then
        (its selection may only read the past, as every RelBench node task's does); for a
        link task, whose SQL selects by the future, every entity it ever labelled."""
        t = db.max_time
        if not self.kind.per_seed:
            ids = sorted(set().union(*(tables[s][self.entity_col] for s in SPLITS)))
            return pd.DataFrame({"timestamp": pd.Series([t] * len(ids), dtype="datetime64[s]"),
                                 self.entity_col: pd.Series(ids, dtype="int64"),
                                 self.target_col: [[] for _ in ids]})
        df = self.make_table(db, [t])
        df[self.target_col] = float("nan")
        return df

    def split_table(self, split: str, db: Database) -> pd.DataFrame:
        """The labelled rows of one split, computed on the database cut for that split."""
        cut = {"train": self.val_time, "val": self.test_time, "test": None}[split]
        view = self.inputs(db if cut is None else db.upto(cut))
        df = self.make_table(view, self.timestamps(split, db))
        if df.empty:  # nothing to train on or to score: say why, not fail in the loader
            raise DataError(f"task {self.name!r}: the {split} split is empty: {self.source} "
                            f"labels no row at its seed times ({self._split_times(db)})")
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
        df["available"] = df["timestamp"] + self.delta
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
        if not self.kind.per_seed:
            raise ValueError(f"task {self.name!r}: label history is for node tasks")
        history = self.history(tables) if history is None else history
        df = history[[self.entity_col, self.target_col, "available"]]
        table = Table(df, pkey=None, fkeys={self.entity_col: self.entity_table},
                      time_col="available")
        # ``available`` is encoded relative to the seed by the model, not as a feature
        return table, {self.target_col: self.kind.history_stype, "available": None}
