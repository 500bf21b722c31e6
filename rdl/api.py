"""rdl as a Python library: what ``python -m rdl.train`` does, one piece at a time.

::

    import rdl

    cfg = rdl.config("task=user-churn", "debug=tiny")  # composed as the command line does
    db = rdl.load_database(cfg)         # Database: tables with keys and time columns
    task = rdl.load_task(cfg)           # Task: task.split_table("train", db) -> labelled rows
    data = rdl.prepare(cfg, db, task)   # RelDataModule: data.data (HeteroData), loaders
    model = rdl.make_model(cfg, data)   # a plain torch.nn.Module
    results = rdl.fit(cfg, data, model) # trains, tests, scores the baselines -> metrics

Each function takes the composed config (:func:`config`, or Hydra's own in an app) and
the pieces made before it; a piece left out is made from the config. ``rdl.train`` is
:func:`fit` behind Hydra's command line (docs/api.md).
"""
from __future__ import annotations

import datetime
import inspect
import json
import logging
import os
from pathlib import Path

import hydra
import pytorch_lightning as pl
import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from pytorch_lightning.callbacks import ModelCheckpoint
from torch import nn

from rdl.caching import write_atomic
from rdl.checkpoints import CONFIG_KEY, checked_resume
from rdl.data.database import Database, DataError
from rdl.families import check_model, data_module, family_of
from rdl.families.family import scored_rows
from rdl.progress import stage
from rdl.report import directions, report
from rdl.safe_load import allowed
from rdl.settings import (check_settings, data_key, process_settings, several_processes,
                          with_data_defaults, with_kind_model, with_task_settings,
                          with_trainer_defaults)
from rdl.tasks import Task
from rdl.tracking import log_results
from rdl.training.compile import STATIC_GRAPHS
from rdl.training.compile import PHASES, phases as compile_phases, stats as compile_stats
from rdl.training.data_settings import DataSettings
from rdl.training.datamodule import RelDataModule
from rdl.training.module import TaskModule
from rdl.training.process import configured
from rdl.training.resume import AtomicCheckpointIO
from rdl.training.shapes import Exact, shapes_for

#: Errors that mean "your data or your settings are wrong", not "rdl has a bug"
#: (:func:`user_error`).
USER_ERRORS = (DataError, FileNotFoundError, ValueError)

log = logging.getLogger("rdl.train")


def user_error(e: BaseException) -> BaseException | None:
    """The error to show a user for ``e`` (one message, no stack trace), or None where
    ``e`` is a bug, whose traceback must stay. Hydra wraps what a class raises while
    instantiated (``InstantiationException``): its cause tells. A ``TypeError`` is the
    user's only as that cause, where the config's keys do not fit the signature of the
    class it names; anywhere else it is a bug."""
    if isinstance(e, InstantiationException):
        cause = e.__cause__
        mismatch = isinstance(cause, TypeError) and "argument" in str(cause)
        return cause if isinstance(cause, USER_ERRORS) or mismatch else None
    return e if isinstance(e, USER_ERRORS) else None


def config(*overrides: str) -> DictConfig:
    """rdl's packaged config composed with ``overrides``, the command line's arguments
    (``"task=item-sales"``, ``"model.channels=64"``, ``"debug=tiny"``). Runs write to
    ``output_dir`` (default ``outputs/<date>/<time>`` under the working directory, as the
    command line's)."""
    from hydra import compose, initialize_config_dir

    from rdl.paths import CONF_DIR
    if not any(o.lstrip("+~").startswith("output_dir=") for o in overrides):
        now = datetime.datetime.now()
        overrides = (*overrides, f"output_dir=outputs/{now:%Y-%m-%d}/{now:%H-%M-%S}")
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("config", list(overrides))


def load_database(cfg: DictConfig) -> Database:
    """The database ``cfg.data.db`` describes (the synthetic H&M by default; RelBench's
    files with ``data=relbench``, a folder with ``data=folder``), keys re-indexed."""
    with stage("loading the database", log):
        return instantiate(cfg.data.db, _convert_="all")


def load_task(cfg: DictConfig) -> Task:
    """The task ``cfg.task`` describes, moved ``cfg.backtest`` windows back, trained on
    ``cfg.train_windows`` windows; its :meth:`~rdl.tasks.Task.split_table` gives a split's
    labelled rows."""
    # train_windows passed only where set: a task factory of the user's may not take it
    few = {} if cfg.get("train_windows") is None else {"train_windows": cfg.train_windows}
    return instantiate(cfg.task, _convert_="all", backtest=cfg.get("backtest", 0), **few)


def data_settings(cfg: DictConfig) -> DataSettings:
    """The run's :class:`~rdl.training.data_settings.DataSettings`, built once: ``data.*``
    with the choices of the task and the model filled in (:func:`~rdl.settings.
    with_data_defaults`), the run's seed, and one sampled hop per message-passing layer
    (more hops would be sampled for nothing; a token model samples every hop of
    ``data.num_neighbors``: its layers attend over tokens)."""
    cfg = with_data_defaults(cfg)   # (no change to a config whose choices are made)
    model_cls = hydra.utils.get_class(cfg.model._target_)
    hops = list(cfg.data.num_neighbors)
    if not getattr(model_cls, "takes_tokens", False):
        hops = hops[: cfg.model.num_layers]
    return DataSettings.from_config(cfg.data, num_neighbors=hops, random_seed=cfg.seed)


def prepare(cfg: DictConfig, db: Database | None = None, task: Task | None = None, *,
            prepared_path: str | None = None) -> RelDataModule:
    """The data of a run, set up: its family's data module (a
    :class:`~rdl.training.datamodule.RelDataModule`) whose ``data`` is the graph (PyG
    ``HeteroData``, a TensorFrame per table), ``tables`` the split tables, and whose
    ``train_dataloader()``... serve temporal neighbour-sampled batches, as sampled
    (:func:`shaped` gives the same data shaped as a run's model needs). Settings that
    cannot train raise a :class:`ValueError` before any data is read. What is prepared
    before the graph (split tables, tree fits and prior, seed features) is computed once
    and read from rdl's cache after (:mod:`rdl.prepared_cache`); ``prepared_path``: with
    several processes, the run folder's file through which the first shares it where
    that cache cannot be written."""
    cfg = with_data_defaults(cfg)   # each choice logged once
    check_settings(cfg)
    task = task if task is not None else load_task(cfg)
    check_model(task, hydra.utils.get_class(cfg.model._target_))   # rdl/nn/interface.py
    settings = data_settings(cfg)
    family_of(task).check(settings, task)   # before the database is read
    db = db if db is not None else load_database(cfg)
    # the database as the task sees it (an events task's tables found, rdl.tasks.events)
    family_of(task).check_schema(settings, task, task.database(db),
                                 hydra.utils.get_class(cfg.model._target_))
    # batches as sampled, no pad rows
    data = data_module(db, task, settings, Exact(), prepared_path)
    db.release()   # the rows it read from rdl's cache: read again by the baselines, if needed
    return data


def make_model(cfg: DictConfig, data: RelDataModule) -> nn.Module:
    """The model ``cfg.model`` describes, for the graph and task of ``data``: a plain
    ``nn.Module`` (:mod:`rdl.nn.interface` says what it is given and must return)."""
    keep = [k for k in cfg.model if k != "data_defaults"]
    kwargs = data.model_kwargs(hydra.utils.get_class(cfg.model._target_))
    model_cfg = OmegaConf.masked_copy(cfg.model, keep)
    # rdl's models leave them null: the run says whether its step is bound by launches
    for key in ("fused", "stacked_encoders"):
        if key in model_cfg and model_cfg[key] is None:
            with open_dict(model_cfg):
                model_cfg[key] = bool(cfg.get("launch_bound", False))
    return instantiate(model_cfg, _partial_=True, _convert_="all")(**kwargs)


def shaped(cfg: DictConfig, data: RelDataModule, model: nn.Module) -> RelDataModule:
    """``data`` with batches shaped as ``cfg``'s run of ``model`` needs
    (:mod:`rdl.training.shapes`): a token model's token sets, buckets, pads for a compiled
    model, else as sampled. The loaders and the LightningModule read the same shapes."""
    compile_options = instantiate(cfg.compile, _convert_="all")
    dynamic = compile_options.kwargs.get("dynamic", True)
    buckets = data.settings.buckets
    if compile_options.enabled and dynamic is False and buckets is None and \
            not getattr(model, "takes_tokens", False):
        log.warning("compile.kwargs.dynamic=false without data.buckets: every batch shape "
                    "compiles a graph of its own (and after %d, Dynamo runs the model "
                    "eagerly); static-shape buckets pad batches to a few shapes: "
                    "experiment=buckets (docs/compile.md)", STATIC_GRAPHS)
    return data.with_shapes(shapes_for(model, compile_options.enabled, dynamic, buckets))


def task_module(cfg: DictConfig, data: RelDataModule, model: nn.Module) -> TaskModule:
    """The LightningModule that trains ``model`` on ``data``'s task with ``cfg``'s
    optimiser, schedule and compile settings, shaping batches as ``data`` does (give it
    :func:`shaped` data)."""
    return family_of(data.task).task_module(
        model, data, optimizer=instantiate(cfg.optimizer), lr=cfg.lr,
        scheduler=instantiate(cfg.scheduler) if cfg.get("scheduler") else None,
        compile=instantiate(cfg.compile, _convert_="all"), shapes=data.shapes)


def build(cfg: DictConfig, prepared_path: str | None = None) -> tuple:
    """``(task, data, module)``: the task, the data module shaped for the run and the
    LightningModule ``cfg`` describes, each made as above."""
    data = prepare(cfg, prepared_path=prepared_path)
    model = make_model(cfg, data)
    data = shaped(cfg, data, model)
    return data.task, data, task_module(cfg, data, model)


def fit(cfg: DictConfig, data: RelDataModule | None = None, model: nn.Module | None = None
        ) -> dict:
    """Trains as ``python -m rdl.train`` does: Lightning's trainer, callbacks and logger
    from ``cfg``, resumed from ``cfg.ckpt_path`` if set; then val and test metrics of the
    best checkpoint beside the baselines, printed and written to ``cfg.output_dir``
    (``metrics.json``, ``task.json``, checkpoints, logs). ``data`` and ``model``: made by
    :func:`prepare` and :func:`make_model` (made from ``cfg`` if not given). Returns the
    metrics: ``{"model": {"val": {...}, "test": {...}}, <baseline>: {...}, ...}``.
    The process is set up for the run as ``cfg`` says (:func:`rdl.settings.process_settings`:
    malloc on the CPU, compile logs, ``verbose``) and put back when it ends."""
    with configured(**process_settings(cfg)):
        return _fit(cfg, data, model)


def _fit(cfg: DictConfig, data: RelDataModule | None, model: nn.Module | None) -> dict:
    # (compile's phases: read from torch's private timers only where compile.log asks)
    compiled_before = {**compile_stats(), **(compile_phases() if cfg.compile.get("log") else {})}
    ckpt_path = checked_resume(cfg)
    out = Path(cfg.output_dir)
    cfg, data, module, shared = _run_pieces(cfg, data, model)
    trainer = _trainer(cfg, ckpt_path)
    ckpt, model = _train(cfg, trainer, module, data, ckpt_path, shared)
    results = {"model": model}
    if not trainer.is_global_zero:  # one process reports
        return results
    task = data.task
    results.update(family_of(task).baselines(data, _scored_rows(trainer, data)))
    report(task, results, out, data.tables)
    log_results(trainer.loggers, results, out, ckpt)  # MLflow, W&B: rdl/tracking.py
    # the task as run (a RelBench task's times and metric are its folder's): rdl.backtest
    write_atomic(out / "task.json", json.dumps(
        {"name": task.name, "val": str(task.val_time), "test": str(task.test_time),
         "monitor": task.monitor, "monitor_mode": task.monitor_mode,
         "higher": directions(task)}, indent=2))   # each metric's: is higher better
    if module.compile_options.enabled:
        _print_compiled(data, compiled_before, module.compile_options.log,
                        module.eval_compiled)
    return results


def _run_pieces(cfg: DictConfig, data: RelDataModule | None, model: nn.Module | None
                ) -> tuple[DictConfig, RelDataModule, TaskModule, str | None]:
    """The config as run, the data shaped for the model, the LightningModule, whose
    checkpoints carry the config (``rdl.predict`` rebuilds the run from it), and the file
    through which the processes of a multi-process run share what was prepared where
    the cache cannot be written (:mod:`rdl.prepared_cache`)."""
    cfg = with_trainer_defaults(cfg)   # the task's budget where the run left the default
    shared = None
    if data is None:
        pl.seed_everything(cfg.seed, workers=True)
        task = load_task(cfg)
        if model is None:  # a link task read from its folder: a link model
            cfg = with_kind_model(cfg, task)
        if several_processes(cfg):
            shared = str(Path(cfg.output_dir) / f".prepared-{data_key(cfg)}.pt")
        data = prepare(cfg, task=task, prepared_path=shared)
    model = model if model is not None else make_model(cfg, data)
    data = shaped(cfg, data, model)
    module = task_module(cfg, data, model)
    with_task_settings(cfg, data.task)
    module.save_hyperparameters({CONFIG_KEY: OmegaConf.to_container(cfg, resolve=False)})
    return cfg, data, module, shared


def _trainer(cfg: DictConfig, ckpt_path: str | None) -> pl.Trainer:
    """Lightning's trainer with ``cfg``'s callbacks and logger."""
    callbacks = [instantiate(c) for c in (cfg.get("callbacks") or {}).values()]
    if ckpt_path:
        # A resumed run keeps writing to the folder of the checkpoint it resumes from: there
        # Lightning's ModelCheckpoint takes up its best score so far (in another folder it
        # would start the best model over).
        for c in callbacks:
            if isinstance(c, ModelCheckpoint):
                c.dirpath = os.path.realpath(Path(ckpt_path).parent)
    logger = instantiate(cfg.logger) if cfg.get("logger") else False
    # Checkpoints written whole or not at all, whatever the temporary directory
    # (rdl/training/resume.py): a run killed while writing one resumes from the one before.
    return instantiate(cfg.trainer, callbacks=callbacks, logger=logger,
                       plugins=[AtomicCheckpointIO()])


def _train(cfg: DictConfig, trainer: pl.Trainer, module: TaskModule, data: RelDataModule,
           ckpt_path: str | None, shared: str | None) -> tuple:
    """Trains, then evaluates the best checkpoint as the task's family does: ``(its path,
    the model's entry in the results)``. The prepared file of a multi-process run is
    removed once every process has read it (before fit starts)."""
    # Lightning reads checkpoints as rdl.safe_load does: weights-only, unless trusted
    # (Lightning before 2.6 takes no weights_only: torch's default, weights-only, then)
    trusted = (dict(weights_only=not cfg.get("trust_checkpoint"))
               if "weights_only" in inspect.signature(pl.Trainer.fit).parameters else {})
    with torch.serialization.safe_globals(allowed()):
        try:
            trainer.fit(module, datamodule=data, ckpt_path=ckpt_path, **trusted)
        finally:
            if shared and trainer.is_global_zero and os.path.exists(shared):
                os.remove(shared)  # every process has read it before fit starts
        best = [c for c in trainer.checkpoint_callbacks if c.monitor and c.best_model_path]
        ckpt = best[0].best_model_path if best else None
        model = family_of(data.task).evaluate(trainer, module, data, ckpt,
                                              cfg.get("evaluation"), **trusted)
    return ckpt, model


def _scored_rows(trainer: pl.Trainer, data: RelDataModule) -> dict:
    """:func:`rdl.families.family.scored_rows`, each cut split logged."""
    rows = scored_rows(trainer, data)
    for s, n in rows.items():
        log.info("%s: model and baselines scored on the first %d of %d rows", s, n,
                 len(data.tables[s]))
    return rows


def _print_compiled(data: RelDataModule, compiled_before: dict, phases: bool = False,
                    compile_eval: bool = True) -> None:
    """How many graphs this job compiled, against what is expected (this job's own: the
    jobs of a multirun share a process and Dynamo's counters); with ``phases``
    (``compile.log=true``), the seconds compiling spent by phase."""
    now = {**compile_stats(), **(compile_phases() if phases else {})}
    c = {k: v - compiled_before.get(k, 0) for k, v in now.items()}
    modes = ("one graph per mode, train and eval," if compile_eval else
             "one graph, training's (evaluation eager, as compile.eval says),")
    expected = f"{modes} is expected"
    if data.settings.buckets is not None:
        planned = sum(len(p) for p in data.bucket_profiles.values())
        per = "mode and bucket used" if compile_eval else "training bucket used"
        expected = f"one graph per {per} is expected, of {planned} buckets planned"
    print(f"torch.compile: {c['graphs']} graphs compiled, {c['graph_breaks']} graph "
          f"breaks ({expected}; compile.log=true says why each happened)")
    spent = {k: v for k, v in c.items() if k in PHASES and v >= 0.5}
    if spent:   # (a cold compile's minutes, by phase; nested: they overlap, no total)
        print("compile time, by Dynamo's timers: " + ", ".join(
            f"{k} {v:.0f} s" for k, v in spent.items()))
    elif phases and not any(k in PHASES for k in now):
        print(f"compile time by phase: torch {torch.__version__} times none of "
              f"{', '.join(PHASES.values())} (torch._dynamo.utils.compile_times)")

