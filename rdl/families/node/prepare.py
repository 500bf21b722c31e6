"""The node family's part of preparation (:mod:`rdl.preparation` has every family's): the
task's label history, as a table of the graph and for the features; the prior the model
corrects (a baseline chosen on val, :mod:`rdl.families.node.prior_choice`: LightGBM's
forward-chained prediction, :mod:`rdl.families.node.prior`, or a simple baseline's,
:mod:`rdl.families.node.simple_prior`); and each seed's features
(:mod:`rdl.features.seed`). A link task has none of them."""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from rdl.data.database import Database, DataError
from rdl.prepared_cache import entry_of, shared
from rdl.preparation import (Prepared, build_graph, graph_database, graph_stypes, split_tables,
                             task_database)
from rdl.progress import stage
from rdl.tasks import HISTORY, Task

log = logging.getLogger("rdl.preparation")


@dataclass(frozen=True)
class NodePrepared(Prepared):
    """What :func:`prepare` computes for a node task (besides :class:`Prepared`'s).

    Attributes:
        history: the task's label history (:meth:`~rdl.families.node.NodeTask.history`).
        tree_fit: with a prior (``data.tree_prior``), of ``tree_fits`` the best on val.
        tree_fits: with a prior, the LightGBM baselines by name (depth 1, and depth 2
            and the mean of both with ``deep_features``).
        prior_name: with a prior, the printed name of the baseline it is (the best on
            val, :mod:`rdl.families.node.prior_choice`).
        prior: with a prior, per split each seed's raw prior (NaN: none).
        seed_x: with seed features, per split each seed's vector; seed_feature_names
            their names.
        label_history: whether the label history is part of the graph.
    """

    history: pd.DataFrame | None = None
    tree_fit: object = None
    tree_fits: dict | None = None
    prior_name: str | None = None
    prior: dict[str, np.ndarray] | None = None
    seed_x: dict[str, Tensor] | None = None
    seed_feature_names: tuple = ()
    label_history: bool = False

    def targets(self, split: str) -> Tensor:
        """The labels of a split as the model's ``y``."""
        return self.task.kind.train_target(self.tables[split][self.task.target_col].to_numpy())

    def base(self, split: str) -> Tensor | None:
        """What the model's output starts from (see
        :class:`~rdl.families.node.module.NodeTaskModule`), or None: with a prior, each
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
            from rdl.families.node.prior import fallback
            fill = np.broadcast_to(fallback(task, self.tables["train"]), prior.shape)
        return torch.from_numpy(np.where(np.isnan(prior), fill, prior)).float()

    def model_kwargs(self) -> dict:
        """The model's constructor arguments that come from the data
        (:mod:`rdl.nn.interface`)."""
        task = self.task
        kwargs = dict(super().model_kwargs(), entity_table=task.entity_table,
                      out_channels=task.kind.out_channels)
        if self.seed_x is not None:
            kwargs["seed_features"] = len(self.seed_feature_names)
        return kwargs

    def named_model_kwargs(self) -> dict:
        return {"num_entities": self.data[self.task.entity_table].num_nodes}


def prepare(task: Task, db: Database, settings, shared_path: str | None = None) -> NodePrepared:
    """Everything a run of node task ``task`` on ``db`` needs before its loaders, as
    ``settings`` (:class:`~rdl.training.data_settings.DataSettings`) say. The tables,
    features, tree fits and prior are computed once and cached (:mod:`rdl.prepared_cache`);
    ``shared_path``: with several processes, the run folder's file through which the first
    of all shares them where the cache cannot be written."""
    db = task_database(task, db, settings)
    if settings.label_history and HISTORY in db.tables:
        raise DataError(f"the database has a table named {HISTORY!r}, the name of the "
                        "task's label history; rename it or set data.label_history=false")
    stypes = graph_stypes(db, settings)
    # made once, and only where the prepared data or the graph is not in the cache
    graph_db = functools.cache(lambda: graph_database(task, db, settings)[0])
    entry = entry_of(task, db, settings)
    out = _restored(task, shared(task, db, settings,
                                 lambda: _labels_and_features(task, db, graph_db(), settings),
                                 _stored, shared_path, entry))
    tables, history = out["tables"], out["history"]
    if settings.label_history:
        history_table, stypes[HISTORY] = task.history_table(tables, history)
        log.info("label history: %d earlier labels", len(history_table))

    def extend(d: Database, train: bool) -> Database:
        """``d`` with the label history as a table (the training graph's: without the
        labels of a "now" table)."""
        if not settings.label_history:
            return d
        table = history_table
        if train and "now" in tables:   # no test label (they close after the test time)
            table = task.history_table(tables, history[history["timestamp"] < task.test_time])[0]
        return Database({**d.tables, HISTORY: table})

    data, col_stats = build_graph(task, db, graph_db, stypes, settings, extend,
                                  None if entry is None else entry.name)
    return NodePrepared(task, db, data=data, col_stats=col_stats,
                        label_history=settings.label_history,
                        **{k: v for k, v in out.items() if k != "seed_feature_names"},
                        seed_feature_names=tuple(out.get("seed_feature_names") or ()))


def _stored(out: dict) -> dict:
    """What :func:`_labels_and_features` computed as plain values (each tree fit as what
    scores it again, :meth:`~rdl.baselines.trees.TreeFit.stored`; the chosen one by name)."""
    fits = out.get("tree_fits")
    if fits is None:
        return out
    chosen = next(name for name, fit in fits.items() if fit is out["tree_fit"])
    return {**out, "tree_fits": {name: fit.stored() for name, fit in fits.items()},
            "tree_fit": chosen}


def _restored(task: Task, out: dict) -> dict:
    """:func:`_stored`'s values back (``out`` as computed: as it is)."""
    if not isinstance(out.get("tree_fit"), str):
        return out
    from rdl.baselines import tree_mean
    from rdl.baselines.trees import TreeFit
    stored = out["tree_fits"]
    fits = {name: TreeFit.restored(task, fit, out["tables"])
            for name, fit in stored.items() if "mean_of" not in fit}
    fits = {name: fits[name] if name in fits else tree_mean.restored(fit, fits)
            for name, fit in stored.items()}   # in their order
    return {**out, "tree_fits": fits, "tree_fit": fits[out["tree_fit"]]}


def _labels_and_features(task: Task, db: Database, graph_db: Database, settings) -> dict:
    """Split tables, label history, tree fits and prior, and seed features: what is
    computed once for every process and every restart (:mod:`rdl.prepared_cache`)."""
    out = labelled(task, db, settings)
    rest = None
    if settings.tree_prior:
        fits, rest = _fit_prior(task, out["tables"], out["history"], graph_db, settings)
        out.update(fits)
    return with_seed_features(task, graph_db, settings, out, rest)


def with_seed_features(task: Task, graph_db: Database, settings, out: dict,
                       rest: dict | None = None) -> dict:
    """``out`` (tables, history, the prior's fits) with each seed's features where
    ``data.seed_features`` (``rest``: the trees' feature tables with the prior, where the
    trees ran)."""
    if settings.seed_features:
        from rdl.features.seed import seed_features as features
        out["seed_x"], names = features(task, graph_db, out["tables"], out["history"],
                                        settings.strict, features=rest)
        out["seed_feature_names"] = names
        log.info("seed features: %d columns", len(names))
    return out


def labelled(task: Task, db: Database, settings, tables: dict | None = None) -> dict:
    """The split tables and the label history (``tables``, ``history``). The history holds
    every label; the train split then keeps at most ``data.train_seeds`` rows, a seeded
    sample where there are more (said in the log): the trees' features, the prior and the
    seed features are each a row per train seed, so that their time and memory stay
    bounded at any size of the data (at four times rel-hm's, 15.2M user-churn train seeds);
    and at most ``data.feature_cells`` over the depth-1 feature table's columns, counted
    from the schema (:func:`~rdl.features.table.feature_columns`): at 4M rows, TPC-DS's
    customers, 774 columns, filled 24 GB and were killed.
    ``tables``: :func:`~rdl.preparation.split_tables`' where already computed."""
    tables = dict(split_tables(task, db, settings.now) if tables is None else tables)
    history = task.history(tables)
    cap, train, why = settings.train_seeds, tables["train"], "data.train_seeds"
    if settings.feature_cells is not None:   # a wide schema: fewer rows, as many cells
        from rdl.features.table import feature_columns
        columns = feature_columns(db, task.entity_table) + len(db[task.entity_table].df.columns)
        if cap is None or settings.feature_cells // columns < cap:
            cap = max(1, settings.feature_cells // columns)
            why = (f"data.feature_cells: about {columns} depth-1 feature columns a row, "
                   f"{settings.feature_cells:,} cells")
    if cap is not None and len(train) > cap:
        keep = np.sort(np.random.default_rng(settings.random_seed).choice(len(train), cap,
                                                                          replace=False))
        log.info("train split: a sample of %d of its %d rows (%s), every label kept in the "
                 "label history", cap, len(train), why)
        tables["train"] = train.iloc[keep].reset_index(drop=True)
    return dict(tables=tables, history=history)


def _fit_prior(task: Task, tables: dict, history: pd.DataFrame, graph_db: Database,
               settings) -> tuple[dict, dict[str, pd.DataFrame]]:
    """The tree baselines, their mean among them (:mod:`rdl.baselines.tree_mean`), and the
    prior (``tree_fits``; ``tree_fit``, the best on val;
    ``prior_name`` and ``prior``: the baseline best on val among those
    ``settings.prior_from`` names, a simple one by more than ``settings.prior_margin``
    standard errors, :mod:`rdl.families.node.prior_choice`), and the splits'
    feature tables without the entity's own columns and with the prior's columns (the
    seed features)."""
    strict, deep = settings.strict, settings.deep_features
    from rdl.features.table import entity_features, with_own
    from rdl.baselines.trees import DEPTH1, DEPTH2, fit_tree_baselines
    from rdl.families.node.prior import chained_priors, tree_prior
    from rdl.families.node.prior_weight import chained_weight
    from rdl.baselines.tree_mean import MEAN, weighted, with_mean
    from rdl.families.node.prior_choice import chosen_prior, tree_candidates
    from rdl.families.node.simple_prior import simple_prior

    depth1 = stage("depth-1 features", log)
    rest = {s: entity_features(task, graph_db, df, history, strict, own=False)
            for s, df in tables.items()}
    full = {s: with_own(task, graph_db, tables[s], rest[s]) for s in rest}
    depth1.end(f"{full['train'].shape[1]} columns")
    fits, feats = fit_tree_baselines(task, graph_db, tables, history, strict,
                                     settings.random_seed, features=full, deep=deep,
                                     max_train_rows=settings.tree_rows)
    fits = with_mean(fits)   # printed beside the two it averages
    chained = (settings.tree_blocks, settings.random_seed, settings.tree_rows)
    parts, candidates = None, tree_candidates(fits, settings.prior_trees)
    if settings.prior_trees == "chained" and MEAN in fits:
        # each depth's forward-chained prior, made once: the weight is chosen on them and
        # the prior is their weighted mean (rdl/families/node/prior_weight.py)
        parts = chained_priors({n: fits[n] for n in (DEPTH1, DEPTH2)}, tables, feats,
                               history, *chained)
        blend = weighted(fits, chained_weight(
            task, tables["train"], (parts[DEPTH1]["train"], parts[DEPTH2]["train"]),
            fits[DEPTH1].bounds))
        fits, candidates = {**fits, blend.name: blend}, {blend.name: blend}
    trees = max(fits, key=lambda name: fits[name].val_score())
    name = chosen_prior(task, tables, history, candidates, settings.prior_from,
                        settings.prior_margin, settings.random_seed)
    if name in fits:
        prior = tree_prior(fits[name], tables, feats, history, *chained, parts=parts)
    else:
        prior = simple_prior(task, name, tables, history)
    if deep is not None and deep.inputs:  # the depth-2 columns as model inputs too
        rest = {s: pd.concat([rest[s], feats[DEPTH2][s].iloc[:, full[s].shape[1]:]], axis=1)
                for s in rest}
    for s, df in rest.items():
        p = prior[s].reshape(len(df), -1)
        cols = ["prior"] if p.shape[1] == 1 else [f"prior.class_{j}" for j in range(p.shape[1])]
        rest[s] = df.assign(**{c: p[:, j] for j, c in enumerate(cols)})
    return dict(tree_fits=fits, tree_fit=fits[trees], prior_name=name, prior=prior), rest
