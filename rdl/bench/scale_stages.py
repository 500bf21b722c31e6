"""The stages ``python -m rdl.bench scale`` times (:mod:`rdl.bench.scale`), one per process.

Each stage function runs in a fresh process: it makes what it starts from (from the caches
the stages before it left, or computed again: its *setup*, untimed; the tables stage leaves
the split tables in the work folder and the trees stage the prepared data in rdl's cache,
for at scale 4 they are an hour of setups), then times its own
work inside ``with clock:``, through rdl's own entry points (``rdl.config``,
``rdl.load_database``, ``rdl.prepare``, ``rdl.api.build``, the preparation's stage
functions). Memory is the process's peak resident memory since the clock started (the
peak reset then, ``/proc/self/clear_refs``): the stage's own, including what it started
from; and apart, the peak of its anonymous memory alone (``peak_anon_gib``, sampled: the
resident size counts the pages of the caches it maps, which the kernel can drop). :class:`Meter` also times, with its own peak, each of rdl's progress stages
(:mod:`rdl.progress`: ``split tables``, ``depth-2 synthesis``, ``graph build``, ...) that
runs inside a stage: the stage's ``inner`` rows, and the figures of a stage that is one
of them (the graph build inside ``rdl.prepare``).
"""
from __future__ import annotations

import time
from pathlib import Path

from rdl.bench.report import AnonPeak, reset_peak_rss, step_peak_rss_gib

#: the stages, in the order they run (each starts from what those before it cached), and
#: what each times
WHAT = {
    "write": "the synthetic H&M database written as the Kaggle CSV files by the chunked "
             "writer (rdl/data/synthetic_hm/files.py)",
    "read": "rdl.load_database, data=hm-kaggle, empty cache: the CSVs parsed, the files' "
            "checks (types, dates, keys, foreign keys; they run while reading), re-indexed, "
            "the database cached",
    "checks": "the checks between reading and preparing (rdl.preparation.task_database: "
              "stypes, the task's tables), the database from its cache",
    "tables": "the task's split tables (its SQL) and label history",
    "depth2": "the depth-2 synthesis of every split (data.deep_features), as the trees run it",
    "trees": "the tree baselines and prior (depth-1 features, the depth-2 synthesis again, "
             "LightGBM, the prior chosen on val), as rdl.prepare runs them",
    "graph": "the graph build (label history included), empty graph cache: the 'graph "
             "build' stage of rdl.prepare (without the trees)",
    "epoch": "the first training epoch (trainer.limit_train_batches batches, no "
             "validation), compile caches cold; setup: rdl.api.build, caches warm",
    "restart": "a fresh process to the end of its first training step, the caches the "
               "stages before left warm (database, prepared data: split tables, trees and "
               "seed features, which the trees stage or else the epoch stage's setup left; "
               "graph and the sampler's index; compiled kernels)",
}
STAGES = tuple(WHAT)


class Meter:
    """Own seconds and peak memory of nested intervals in one process: the clock of a
    stage and, as a listener of :mod:`rdl.progress`, every progress stage. Each interval's
    peak is the most resident memory while it was open: the peak is reset when one opens,
    and the peak so far folded into every open one first."""

    def __init__(self):
        self.open, self.done = {}, []
        self.phase = "setup"   # what a finished interval is part of (its ``in``)
        self.anon = AnonPeak()

    def _fold(self) -> tuple:
        now, anon = step_peak_rss_gib(), self.anon.sample()
        for key in self.open:
            self.open[key][1] = max(self.open[key][1], now)
            if anon is not None:
                self.open[key][2] = max(self.open[key][2] or 0.0, anon)
        return now, anon

    def begin(self, key) -> None:
        self._fold()
        reset_peak_rss()
        self.anon.reset()
        self.open[key] = [time.perf_counter(), step_peak_rss_gib(), self.anon.peak]

    def finish(self, key, name: str) -> dict:
        self._fold()
        start, peak, anon = self.open.pop(key)
        self.done.append({"name": name, "seconds": time.perf_counter() - start,
                          "peak_gib": peak, "peak_anon_gib": anon, "in": self.phase})
        return self.done[-1]

    def __call__(self, stage, ended: bool) -> None:   # an rdl.progress listener
        if not ended:
            self.begin(stage)
        elif stage in self.open:
            self.finish(stage, stage.name)

    def inner(self, name: str) -> dict | None:
        """The last progress stage named ``name``."""
        return next((d for d in reversed(self.done) if d["name"] == name), None)


class Clock:
    """``with clock:`` around a stage's own work: its seconds and peak (:class:`Meter`),
    and those of the setup before it (from the clock's making)."""

    def __init__(self, meter: Meter):
        self.meter, self.setup, self.result = meter, None, None
        meter.begin("setup")

    def __enter__(self):
        self.setup = self.meter.finish("setup", "setup")
        self.meter.phase = "stage"
        self.meter.begin(self)
        return self

    def __exit__(self, error, *_):
        if error is None:
            self.result = self.meter.finish(self, "stage")
        self.meter.phase = "after"


def _config(spec: dict, *more: str):
    """The stage's config; DuckDB set up as it says, for the rest of the process (as
    ``rdl.train`` sets it up for a run: ``duckdb.memory_limit``)."""
    from rdl.api import config
    from rdl.settings import duckdb_settings
    from rdl.training.process import for_process
    cfg = config(f"task={spec['task']}", "data=hm-kaggle", f"data.db.path={spec['files']}",
                 f"output_dir={spec['run_dir']}", *spec["overrides"], *more)
    for_process(duckdb=duckdb_settings(cfg))
    return cfg


def _inputs(spec: dict, *more: str):
    """``(cfg, task, database as the task sees it, data settings)``, the database from
    its cache."""
    from rdl.api import data_settings, load_database, load_task
    from rdl.preparation import task_database

    cfg = _config(spec, *more)
    task, settings = load_task(cfg), data_settings(cfg)
    return cfg, task, task_database(task, load_database(cfg), settings), settings


def _tables_file(spec: dict, task, db, settings) -> Path:
    """Where the tables stage leaves the split tables for the setups of the stages after
    it (the work folder, by the prepared data's digest: the same inputs, the same tables);
    at scale 4 they are minutes of SQL that each setup would run again."""
    from rdl.prepared_cache import digest
    return Path(spec["run_dir"]).parent / f"bench-split-tables-{digest(task, db, settings)}.pkl"


def _split_tables(spec: dict, task, db, settings) -> dict:
    """The split tables the tables stage left (:func:`_tables_file`), else computed."""
    import pandas as pd
    from rdl.preparation import split_tables

    path = _tables_file(spec, task, db, settings)
    return pd.read_pickle(path) if path.exists() else split_tables(task, db, settings.now)


def _labelled(spec: dict):
    """What the trees start from: the database as the task sees it, the split tables, label
    history and the graph's view of the database, or None for a task without trees (a link
    task)."""
    from rdl.families.node import NodeTask
    from rdl.families.node.prepare import labelled
    from rdl.preparation import graph_database

    _, task, db, settings = _inputs(spec)
    if not isinstance(task, NodeTask):
        return None
    out = labelled(task, db, settings, _split_tables(spec, task, db, settings))
    return (task, settings, out["tables"], out["history"],
            graph_database(task, db, settings)[0], db)


def write(spec: dict, clock: Clock) -> dict:
    from rdl.data.synthetic_hm.files import write_kaggle_files

    rows, largest = {}, {}

    def count(what: str, n: int) -> None:
        rows[what] = rows.get(what, 0) + n
        largest[what] = max(largest.get(what, 0), n)
    with clock:
        write_kaggle_files(spec["files"], spec["seed"], spec["scale"], on_chunk=count)
    return {"rows": rows.get("transactions", 0), "customers": rows.get("customers", 0),
            "articles": rows.get("articles", 0), "largest_week": largest.get("week", 0)}


def read(spec: dict, clock: Clock) -> dict:
    from rdl.api import load_database

    cfg = _config(spec)
    with clock:
        db = load_database(cfg)
    return {"rows": sum(len(t) for _, t in db)}


def checks(spec: dict, clock: Clock) -> dict:
    from rdl.api import data_settings, load_database, load_task
    from rdl.preparation import task_database

    cfg = _config(spec)
    db, task, settings = load_database(cfg), load_task(cfg), data_settings(cfg)
    with clock:
        task_database(task, db, settings)
    return {"rows": sum(len(t) for _, t in db)}


def tables(spec: dict, clock: Clock) -> dict:
    import pandas as pd
    from rdl.caching import atomic_file
    from rdl.preparation import split_tables

    _, task, db, settings = _inputs(spec)
    with clock:
        out = split_tables(task, db, settings.now)
        task.history(out)
    with atomic_file(_tables_file(spec, task, db, settings)) as tmp:   # for the setups after
        pd.to_pickle(out, tmp)
    return {"rows": sum(map(len, out.values()))}


def depth2(spec: dict, clock: Clock) -> dict:
    from rdl.features.deep import deep_features

    given = _labelled(spec)
    if given is None or given[1].deep_features is None:
        return {"note": "no depth-2 synthesis (a link task, or data.deep_features=null)"}
    task, settings, tables, history, graph_db, _ = given
    view = graph_db if "now" in tables else graph_db.upto(task.test_time)  # as the trees see it
    with clock:
        out = {s: deep_features(task, view, df, history, settings.strict,
                                settings.deep_features) for s, df in tables.items()}
    return {"rows": sum(map(len, out.values())), "features": out["train"].shape[1]}


def trees(spec: dict, clock: Clock) -> dict:
    from rdl.families.node.prepare import _fit_prior

    given = _labelled(spec)
    if given is None or not given[1].tree_prior:
        return {"note": "no trees (a link task, or data.tree_prior=false)"}
    task, settings, tables, history, graph_db, db = given
    with clock:
        fits, rest = _fit_prior(task, tables, history, graph_db, settings)
    _leave_prepared(task, db, settings, dict(tables=tables, history=history, **fits), rest,
                    graph_db)
    return {"rows": sum(map(len, tables.values())), "prior": fits["prior_name"]}


def _leave_prepared(task, db, settings, out: dict, rest: dict, graph_db) -> None:
    """The prepared data as ``rdl.prepare`` caches it (the trees' fits and the seed features
    computed on them), so that the epoch stage's setup reads it instead of fitting the
    trees again (an hour at scale 4): the stages' config is one, so the digest is."""
    from rdl.families.node.prepare import _stored, with_seed_features
    from rdl.prepared_cache import entry_of, shared

    shared(task, db, settings, lambda: with_seed_features(task, graph_db, settings, out, rest),
           _stored, None, entry_of(task, db, settings))


def graph(spec: dict, clock: Clock) -> dict:
    from rdl.api import load_database, prepare

    cfg = _config(spec, "data.tree_prior=false", "data.seed_features=false")
    db = load_database(cfg)
    with clock:
        data = prepare(cfg, db)
    built = clock.meter.inner("graph build")
    if built is None:
        raise RuntimeError("rdl.prepare built no graph (found one in the cache): the graph "
                           "stage needs an empty graph cache")
    clock.result = dict(built, name="stage")
    built_graph = data.prepared.data
    return {"rows": sum(built_graph[nt].num_nodes for nt in built_graph.node_types)}


def epoch(spec: dict, clock: Clock) -> dict:
    trainer, module, data, steps = _trainer(spec)
    with clock:
        trainer.fit(module, datamodule=data)
    return {"rows": steps.seeds, "batches": steps.batches}


def restart(spec: dict, clock: Clock) -> dict:
    with clock:   # the whole process: imports, preparation, model, the first step
        trainer, module, data, steps = _trainer(spec, limit_train_batches=1)
        trainer.fit(module, datamodule=data)
    clock.result["seconds"] = steps.first_step - spec["spawned"]
    return {"rows": steps.seeds, "batches": steps.batches}


def _trainer(spec: dict, **limits):
    """``(trainer, module, data, steps)`` of a run of the config, built by
    :func:`rdl.api.build` in this process set up as a run sets it up: Lightning's trainer of
    one epoch, no validation, checkpoint or logger; ``steps`` counts its steps."""
    import pytorch_lightning as pl
    from hydra.utils import instantiate

    from rdl.api import build
    from rdl.bench.alone import seeds_of
    from rdl.settings import process_settings
    from rdl.training.process import for_process

    class Steps(pl.Callback):
        """The wall time at the end of the first training step; batches and seeds."""
        first_step, batches, seeds = None, 0, 0

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.first_step = self.first_step or time.time()
            self.batches += 1
            self.seeds += seeds_of(batch, module)

    cfg = _config(spec)
    for_process(**process_settings(cfg))
    pl.seed_everything(cfg.seed, workers=True, verbose=False)
    _, data, module = build(cfg)
    steps = Steps()
    trainer = instantiate(cfg.trainer, max_epochs=1, limit_val_batches=0,
                          num_sanity_val_steps=0, enable_checkpointing=False, logger=False,
                          enable_progress_bar=False, callbacks=[steps], **limits)
    return trainer, module, data, steps
