"""Preparation: a task and a database -> everything a run's loaders and baselines need.

:func:`prepare` is a pipeline with no Lightning in it: the split tables (the task's SQL on
the database cut where each split's labels end), the label history, the tree prior, the
seed features, and the graph (a node type per table, the label history one of them). The
result, :class:`Prepared`, is what ``rdl.train``, ``rdl.predict`` and every process of a
multi-process run use; the loaders are built from it by
:class:`~rdl.training.datamodule.RelDataModule`. The graph is cached on disk
(:func:`~rdl.graph.build.make_graph`); with several processes on a machine the first
computes the rest and leaves it in a file for the others (``shared_path``).
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from rdl.caching import atomic_file
from rdl.data.database import Database, DataError
from rdl.graph.build import make_graph
from rdl.safe_load import load, plain, unplain
from rdl.tasks import HISTORY, SPLITS, TIMESTAMPS, Task

log = logging.getLogger(__name__)


def check_task_tables(task: Task, db: Database) -> None:
    """The task's entity (and, for a link task, target) table is a table of ``db`` with a
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
    for setting, table in (("entity_table", task.entity_table), ("target_table", task.target_table)):
        if table is None:
            continue
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
    what the others read (:func:`prepare`'s ``shared_path``)."""
    return local_rank() == 0 and node_rank() == 0


@dataclass
class Prepared:
    """What :func:`prepare` computes.

    Attributes:
        task: the task.
        tables: split -> its labelled rows (``timestamp``, entity, label).
        history: a node task's label history (:meth:`~rdl.tasks.Task.history`), or None.
        tree_fit: with the tree prior, the LightGBM baseline it comes from (of
            ``tree_fits``, the better on val).
        tree_fits: with the tree prior, the LightGBM baselines by name (depth 1, and
            depth 2 with ``deep_features``).
        prior: with the tree prior, per split each seed's raw prior (NaN: none).
        seed_x: with seed features, per split each seed's vector; seed_feature_names
            their names.
        data: the graph (PyG ``HeteroData``, each node type's rows as a TensorFrame
            ``tf``); col_stats: its columns' statistics.
        label_history: whether the label history is part of the graph.
    """

    task: Task
    tables: dict[str, pd.DataFrame]
    history: pd.DataFrame | None = None
    tree_fit: object = None
    tree_fits: dict | None = None
    prior: dict[str, np.ndarray] | None = None
    seed_x: dict[str, Tensor] | None = None
    seed_feature_names: list[str] = field(default_factory=list)
    data: object = None
    col_stats: dict | None = None
    label_history: bool = False

    #: what the first process of a machine shares with the others (the graph they read
    #: from the graph cache; the tree fits only the first process of all reports, and it
    #: computes them itself)
    SHARED = ("tables", "history", "prior", "seed_x", "seed_feature_names")

    def targets(self, split: str) -> Tensor:
        """The labels of a split as the model's ``y``."""
        return self.task.kind.train_target(self.tables[split][self.task.target_col].to_numpy())

    def base(self, split: str) -> Tensor | None:
        """What the model's output starts from (see
        :class:`~rdl.training.module.NodeTaskModule`), or None: with the tree prior, each
        seed's prior (where it has none: its last label for regression, the train rate's
        logit for classification); else, for regression with label history, each seed's
        last label whose window has closed by its time (NaN if none)."""
        task = self.task
        last = None
        if self.label_history and task.kind.starts_from_last_label:
            from rdl.features.labels import visible_labels
            last = visible_labels(task, self.tables[split], self.history, ks=())["last"][:, 0]
        if self.prior is None:
            return None if last is None else torch.from_numpy(last).float()
        prior = self.prior[split]
        if task.kind.starts_from_last_label:
            fill = np.full(len(prior), np.nan) if last is None else last
        else:
            from rdl.features.prior import fallback
            fill = np.broadcast_to(fallback(task, self.tables["train"]), prior.shape)
        return torch.from_numpy(np.where(np.isnan(prior), fill, prior)).float()

    def model_kwargs(self) -> dict:
        """The model's constructor arguments that come from the data
        (:mod:`rdl.nn.interface`)."""
        data, task = self.data, self.task
        kwargs = dict(
            metadata=data.metadata(),
            col_names={nt: data[nt].tf.col_names_dict for nt in data.node_types},
            col_stats=self.col_stats,
            time_types=[nt for nt in data.node_types if "time" in data[nt]],
        )
        if not task.kind.per_seed:
            return dict(kwargs, src_table=task.entity_table, dst_table=task.target_table,
                        num_dst_nodes=data[task.target_table].num_nodes)
        kwargs = dict(kwargs, entity_table=task.entity_table, out_channels=task.kind.out_channels)
        if self.seed_x is not None:
            kwargs["seed_features"] = len(self.seed_feature_names)
        return kwargs


def prepare(task: Task, db: Database, *, strict: bool = False, label_history: bool = True,
            seed_features: bool = True, tree_prior: bool = True, tree_blocks: int = 8,
            stypes: dict | None = None, text_embedder=None, cache_dir: str | None = None,
            random_seed: int = 0, now: bool = False, shared_path: str | None = None,
            deep_features=None) -> Prepared:
    """Everything a run of ``task`` on ``db`` needs before its loaders (see the module's
    docstring; the settings are ``data.*``'s, :class:`RelDataModule
    <rdl.training.datamodule.RelDataModule>` documents them). ``now``: also a split
    ``now``, the seeds of a prediction at the database's last time, with the graph holding
    every row. ``shared_path``: with several processes, the file through which the first
    of a machine shares the tables, features and prior with the others. ``deep_features``:
    :class:`~rdl.features.deep.DeepSettings` of the depth-2 LightGBM (None: depth 1 only)."""
    per_seed = task.kind.per_seed
    label_history = label_history and per_seed
    # The graph never holds a row from after the test time: nothing the model is
    # evaluated on can leak into its inputs (the sampler filters by seed time too).
    # Predictions "now" see the whole database (its last time is their seed time).
    # The graph, the features and the baselines see the database without the columns the
    # task hides (RelBench's remove_columns, an autocomplete task's label).
    graph_db = task.inputs(db if now else db.upto(task.test_time))
    # The database's own stypes (a schema's), each column overridable by data.stypes.
    given = stypes or {}
    stypes = {t: {**db.stypes.get(t, {}), **given.get(t, {})} for t in {*db.stypes, *given}}
    out = _load_shared(task, shared_path)
    if out is None:
        out = _labels_and_features(task, db, graph_db, strict, tree_prior and per_seed,
                                   tree_blocks, seed_features and per_seed, random_seed, now,
                                   deep_features)
        _save_shared(out, shared_path)
    out.label_history = label_history
    if label_history:
        if HISTORY in db.tables:
            raise DataError(f"the database has a table named {HISTORY!r}, the name of the "
                            "task's label history; rename it or set data.label_history=false")
        graph_db, stypes[HISTORY] = _with_history(task, graph_db, out.tables, out.history)
        log.info("label history: %d earlier labels", len(graph_db[HISTORY]))
    cache = None if cache_dir is None else os.path.join(cache_dir, "graphs")
    stats = None
    if now:
        # Columns encoded as the model was trained: with the training graph's statistics
        # (category indices, medians), not those of the whole database.
        train_db = task.inputs(db.upto(task.test_time))
        if label_history:
            splits = {s: out.tables[s] for s in SPLITS}
            train_db, _ = _with_history(task, train_db, splits, task.history(splits))
        _, stats = make_graph(train_db, stypes, text_embedder, cache)
    out.data, out.col_stats = make_graph(graph_db, stypes, text_embedder, cache, stats)
    return out


def _labels_and_features(task: Task, db: Database, graph_db: Database, strict: bool,
                         tree_prior: bool, tree_blocks: int, seed_features: bool,
                         random_seed: int, now: bool, deep=None) -> Prepared:
    """Split tables, label history, tree prior and seed features: the work that processes
    share (``shared_path``)."""
    tables = {s: task.split_table(s, db) for s in SPLITS}
    if now:
        tables["now"] = task.now_table(db, tables)
    for split, df in tables.items():
        log.info("%s table: %d rows", split, len(df))
    out = Prepared(task, tables, task.history(tables) if task.kind.per_seed else None)
    rest = None
    if tree_prior:
        rest = _fit_prior(out, graph_db, strict, tree_blocks, random_seed, deep)
    if seed_features:
        from rdl.features.seed import seed_features as features
        out.seed_x, out.seed_feature_names = features(task, graph_db, tables, out.history,
                                                      strict, features=rest)
        log.info("seed features: %d columns", len(out.seed_feature_names))
    return out


def _save_shared(out: Prepared, path: str | None) -> None:
    """With ``path`` set (several processes), leaves what :func:`_labels_and_features`
    computed there for the other processes, on every machine: all of them train on the
    same split tables, features and tree prior (one LightGBM fit, not one per machine)."""
    if path is None or not first_process():
        return
    with atomic_file(path) as tmp:  # never read half-written
        # plain values only: the others read it weights-only (a pickle is code)
        torch.save(plain({k: getattr(out, k) for k in Prepared.SHARED}), tmp)


def _load_shared(task: Task, path: str | None, timeout: float = 3600.0) -> Prepared | None:
    """A process other than the first of all takes what that one prepared (it waits for
    the file: launched by ``torchrun`` or ``srun``, all processes start at once). On
    another machine the run's folder must be the same (a shared file system) for it to
    appear."""
    if path is None or first_process():
        return None
    if not os.path.exists(path):
        log.info("waiting for %s, which the first process writes (on several machines, the "
                 "run's folder must be shared)", path)
    start = time.monotonic()
    while not os.path.exists(path):
        if time.monotonic() - start > timeout:
            log.warning("%s did not appear in %.0f s: this process prepares the data "
                        "itself", path, timeout)
            return None
        time.sleep(0.5)
    out = Prepared(task, **unplain(load(
        path, "the prepared data", advice="rdl.train writes this file itself, for its other "
        "processes: delete it and run again")))
    log.info("prepared data read from %s", path)
    return out


def _with_history(task: Task, db: Database, tables: dict, history) -> tuple[Database, dict]:
    """``db`` with the task's label history as a table, and that table's stypes."""
    table, stypes = task.history_table(tables, history)
    return Database({**db.tables, HISTORY: table}), stypes


def _fit_prior(out: Prepared, graph_db: Database, strict: bool, tree_blocks: int,
               random_seed: int, deep=None) -> dict[str, pd.DataFrame]:
    """Fits the tree baselines and the prior into ``out`` (the prior from the baseline
    better on val: depth 1 or, with ``deep``, depth 2); returns the splits' feature tables
    without the entity's own columns and with the prior's columns (the seed features)."""
    from rdl.features.table import entity_features, with_own
    from rdl.baselines.trees import DEPTH2, fit_tree_baselines
    from rdl.features.prior import tree_prior

    task, tables = out.task, out.tables
    rest = {s: entity_features(task, graph_db, df, out.history, strict, own=False)
            for s, df in tables.items()}
    full = {s: with_own(task, graph_db, tables[s], rest[s]) for s in rest}
    fits, feats = fit_tree_baselines(task, graph_db, tables, out.history, strict, random_seed,
                                     features=full, deep=deep)
    best = max(fits, key=lambda name: fits[name].val_score())
    if len(fits) > 1:
        log.info("tree prior: %s, the better on val", best)
    out.tree_fits, out.tree_fit = fits, fits[best]
    out.prior = tree_prior(out.tree_fit, tables, feats[best], out.history, tree_blocks,
                           random_seed)
    if deep is not None and deep.inputs:  # the depth-2 columns as model inputs too
        rest = {s: pd.concat([rest[s], feats[DEPTH2][s].iloc[:, full[s].shape[1]:]], axis=1)
                for s in rest}
    for s, df in rest.items():
        p = out.prior[s].reshape(len(df), -1)
        cols = ["prior"] if p.shape[1] == 1 else [f"prior.class_{j}" for j in range(p.shape[1])]
        rest[s] = df.assign(**{c: p[:, j] for j, c in enumerate(cols)})
    return rest
