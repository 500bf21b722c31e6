"""Preparation: a task and a database -> everything a run's loaders and baselines need,
with no Lightning in it. The steps every family takes are here: the check of the tables
the task names, the database the graph is built from, the split tables (the task's SQL on
the database cut where each split's labels end), the graph (a node type per table, cached
on disk by :func:`~rdl.graph.build.make_graph`), and which process of a multi-process
run is the first of all (the one that computes what :mod:`rdl.prepared_cache` keeps for
every process and every restart). A family's
``prepare`` (:mod:`rdl.families.node.prepare`: label history, tree prior, seed features;
:mod:`rdl.families.link.family`) composes them into its :class:`Prepared`, which
``rdl.train``, ``rdl.predict`` and every process of a run use.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from rdl import paths
from rdl.data.database import Database, DataError, Table
from rdl.graph.build import check_stypes, make_graph
from rdl.graph.store import cached_graph
from rdl.progress import stage
from rdl.tasks import SPLITS, TIMESTAMPS, Task
from rdl.tasks.kinds import few_rows, one_value

log = logging.getLogger(__name__)


def task_database(task: Task, db: Database, settings) -> Database:
    """``db`` as the task needs it (a key for an autocomplete table), checked before any
    work: its stypes (``data.stypes``) and the tables the task names."""
    db = task.database(db)
    check_stypes(db, settings.stypes)  # now, not after the task tables and the tree prior
    check_task_tables(task, db)
    return db


def check_task_tables(task: Task, db: Database) -> None:
    """Each table the task names (:meth:`~rdl.tasks.Task.checked_tables`: its entity table, a
    link task's target table) is a table of ``db`` with a
    primary key: a typo would otherwise surface as a ``KeyError`` after the labels, the tree
    prior and the graph were made. Table names SQL tells apart, none the task's SQL's seed
    times (DuckDB does not tell ``Users`` from ``users``, and the seed times would replace
    a table named ``timestamps`` without a word)."""
    seen = {}
    for name in db.tables:
        other = seen.setdefault(name.casefold(), name)
        if other != name or name.casefold() == TIMESTAMPS:
            clash = f"table {other!r}" if other != name else "the task's seed times"
            raise DataError(f"task {task.name!r}: table {name!r} has the name of {clash} in "
                            "the task's SQL, which does not tell capitals apart: rename it in "
                            "the schema")
    for setting, table in task.checked_tables():
        if table not in db.tables:
            raise DataError(f"task {task.name!r}: {setting} {table!r} is not a table of the "
                            f"database; its tables: {sorted(db.tables)}")
        if db[table].pkey is None:
            raise DataError(f"task {task.name!r}: {setting} {table!r} has no primary key, so "
                            "its rows cannot be predicted (seeds are rows of a keyed table)")


def _rank(*names: str) -> int:
    for name in names:
        if os.environ.get(name):
            return int(os.environ[name])
    return 0


def local_rank() -> int:
    """This process's rank on its machine, as Lightning's and torchrun's launchers set it
    (``LOCAL_RANK``), or Slurm's ``srun`` (``SLURM_LOCALID``)."""
    return _rank("LOCAL_RANK", "SLURM_LOCALID")


def node_rank() -> int:
    """The rank of this process's machine: torchrun's ``GROUP_RANK``, Lightning's
    ``NODE_RANK``, Slurm's ``SLURM_NODEID``."""
    return _rank("GROUP_RANK", "NODE_RANK", "SLURM_NODEID")


def first_process() -> bool:
    """Whether this is the first process of all, on every machine: the one that prepares
    what the others read (:func:`rdl.prepared_cache.shared`)."""
    return local_rank() == 0 and node_rank() == 0


@dataclass(frozen=True)
class Prepared:
    """What a family's ``prepare`` computes; every family's has these.

    Attributes:
        task: the task.
        db: the database as the task sees it (:meth:`~rdl.tasks.Task.database`), which
            the baselines and the prediction files read.
        tables: split -> its labelled rows (``timestamp``, entity, label).
        data: the graph (PyG ``HeteroData``, each node type's rows as a TensorFrame
            ``tf``); col_stats: its columns' statistics.
    """

    task: Task
    db: Database
    tables: dict[str, pd.DataFrame]
    data: object
    col_stats: dict

    def model_kwargs(self) -> dict:
        """The model's constructor arguments that come from the graph
        (:mod:`rdl.nn.interface`); a family adds its own."""
        data = self.data
        return dict(metadata=data.metadata(),
                    col_names={nt: data[nt].tf.col_names_dict for nt in data.node_types},
                    col_stats=self.col_stats,
                    time_types=[nt for nt in data.node_types if "time" in data[nt]])

    def named_model_kwargs(self) -> dict:
        """Constructor arguments given only to a model whose constructor names them
        (:meth:`RelDataModule.model_kwargs <rdl.training.datamodule.RelDataModule.
        model_kwargs>`); a family adds its own."""
        return {}


def graph_database(task: Task, db: Database, settings) -> tuple[Database, dict]:
    """The database the graph, the features and the baselines see, and its stypes
    (:func:`graph_stypes`).

    The graph never holds a row from after the test time: nothing the model is evaluated
    on can leak into its inputs (the sampler filters by seed time too). Predictions "now"
    see the whole database (its last time is their seed time). The task hides the columns
    it must not show (RelBench's remove_columns, an autocomplete task's label), and the
    stypes the columns dropped (:func:`without_dropped`)."""
    stypes = graph_stypes(db, settings)
    view = task.inputs(db if settings.now else db.upto(task.test_time))
    return without_dropped(without_empty(view, db, task), stypes), stypes


def without_empty(view: Database, db: Database, task: Task) -> Database:
    """``view`` without the tables of ``db`` that hold no row by the test time (a log that
    begins after it; later events that all come after it), nor the foreign keys to them:
    a node type of no rows has nothing to encode or to learn from, and a graph "now", which
    holds their later rows, leaves them out too, as the model was trained without them."""
    empty = empty_tables(task, db)
    if not empty:
        return view
    log.info("the graph leaves out %s: no row by the test time %s", ", ".join(empty),
             task.test_time)
    tables = {}
    for name, tab in view:
        if name in empty:
            continue
        gone = [c for c, ref in tab.fkeys.items() if ref in empty]
        tables[name] = tab if not gone else Table(
            tab.df.drop(columns=gone), tab.pkey,
            {c: ref for c, ref in tab.fkeys.items() if c not in gone}, tab.time_col)
    return Database(tables, keys=view.keys, stypes=view.stypes)


def empty_tables(task: Task, db: Database) -> list[str]:
    """The tables of ``db`` with no row by the test time, but those the task names."""
    named = {table for _, table in task.checked_tables()}
    t = task.test_time
    return [n for n, tab in db if n not in named and not (
        (tab.df[tab.time_col] <= t).any() if tab.time_col else len(tab))]


def without_dropped(db: Database, stypes: dict) -> Database:
    """``db`` without the columns whose stype is ``None`` (a schema's ``drop``, or
    ``data.stypes.<table>.<column>=null``), its keys and times kept: neither the graph
    nor the trees' features see them (a dropped ``Total Orders`` reached LightGBM's
    depth-1 features before, and through its prior the model). The task's SQL still
    reads them (its labels may)."""
    tables = {}
    for name, t in db:
        keep = {t.pkey, t.time_col, *t.fkeys}
        gone = [c for c, st in stypes.get(name, {}).items()
                if st is None and c not in keep and c in t.layout()[0]]
        tables[name] = t if not gone else Table(t.df.drop(columns=gone), t.pkey,
                                                 dict(t.fkeys), t.time_col)
    if all(tables[n] is t for n, t in db):
        return db
    return Database(tables, keys=db.keys, stypes=db.stypes)


def graph_stypes(db: Database, settings) -> dict:
    """The stypes of the graph's columns: the database's own (a schema's), each column
    overridable by ``data.stypes``."""
    given = settings.stypes or {}
    return {t: {**db.stypes.get(t, {}), **given.get(t, {})} for t in {*db.stypes, *given}}


def split_tables(task: Task, db: Database, now: bool) -> dict[str, pd.DataFrame]:
    """Each split's labelled rows (and, with ``now``, the seeds at the database's end)."""
    with stage("split tables (the task's SQL)", log):
        tables = {s: task.split_table(s, db) for s in SPLITS}
        if now:
            tables["now"] = task.now_table(db, tables)
    for split, df in tables.items():
        log.info("%s table: %d rows", split, len(df))
    if thin := few_rows(task, tables):   # (the report says it too: a tiny run is thin)
        log.info(thin)
    if same := one_value(task, tables):
        log.warning(same)
    return tables


def build_graph(task: Task, db: Database, graph_db: Database | Callable[[], Database],
                stypes: dict, settings,
                extend: Callable[..., Database] = lambda d, train: d,
                digest: str | None = None) -> tuple:
    """``(graph, col_stats)`` of ``graph_db``; ``extend(db, train)`` adds a family's own
    tables to a database (the node family's label history; ``train``: to the training
    graph's). Predictions "now" encode columns as the model was trained: with the training
    graph's statistics (category indices, medians), not those of the whole database.
    ``digest``: the prepared data's (:func:`rdl.prepared_cache.digest`), which covers every
    row of ``db``, the task and the settings ``graph_db`` and ``extend`` are made with
    (``data.label_history`` added here, the one that is not in it): the graph cache finds
    its entry by it, before ``graph_db`` is made (give a function that makes it: it is
    called only where the cache has no such graph, so that a restart neither cuts nor
    reads the database's rows) and without hashing every row a second time."""
    root = None if settings.cache_dir is False else (settings.cache_dir or paths.cache_dir())
    cache = None if root is None else os.path.join(root, "graphs")

    def key(train: bool) -> str | None:
        return None if digest is None else repr((digest, settings.label_history, train))

    # the stypes of the tables the graph has (without_empty: not those of no rows); a name
    # no table of the database has stays, for make_graph to name
    empty = set(empty_tables(task, db))
    stypes = {t: v for t, v in stypes.items() if t not in empty}

    found = cached_graph(cache, key(False), stypes, settings.text_embedder, settings.now)
    if found is not None:
        return found
    graph_db = graph_db() if callable(graph_db) else graph_db
    stats = None
    if settings.now:
        train_db = extend(task.inputs(db.upto(task.test_time)), train=True)
        _, stats = make_graph(train_db, stypes, settings.text_embedder, cache, key=key(True))
    return make_graph(extend(graph_db, train=False), stypes, settings.text_embedder, cache,
                      stats, key=key(False))
