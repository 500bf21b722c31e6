"""Train and evaluate a model on a task: ``python -m rdl.train task=user-churn``.

Composes everything from ``conf/``: the task (``conf/task``, SQL in ``tasks/``), the
database and loaders (``conf/data``), the model (``conf/model``), the optimiser and
schedule, and the Lightning trainer. Val and test metrics, beside trivial baselines, are
printed and written to the run folder (``metrics.json``).
"""
from __future__ import annotations

import hashlib
import inspect
import json
import logging
import math
import os
import sys
from pathlib import Path

import hydra
import pytorch_lightning as pl
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.callbacks import ModelCheckpoint

from rdl import baselines
from rdl.caching import write_atomic
from rdl.data.database import DataError
from rdl.training.compile import STATIC_GRAPHS
from rdl.training.compile import stats as compile_stats
from rdl.training.datamodule import RelDataModule
from rdl.training.link_module import LinkTaskModule
from rdl.training.module import NodeTaskModule
from rdl.training.process import configured
from rdl.training.resume import AtomicCheckpointIO
from rdl.training.shapes import shapes_for

log = logging.getLogger("rdl.train")
#: the key of the composed config in a checkpoint's hyper-parameters
CONFIG_KEY = "rdl_config"
# Errors that mean "your data or your settings are wrong", not "rdl has a bug".
USER_ERRORS = (DataError, FileNotFoundError, ValueError, TypeError)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_settings(cfg: DictConfig) -> None:
    """A :class:`ValueError` naming the first setting that cannot train, before any data is
    read: a bad size would otherwise surface after the graph is built, or a whole epoch
    later, and an empty fan-out would train a model that never sees a neighbour."""
    model_cls = hydra.utils.get_class(cfg.model._target_)
    model, data = cfg.model, cfg.data

    def need(ok: bool, name: str, value, what: str) -> None:
        if not ok:
            raise ValueError(f"{name}={value}: {what}")

    channels = model.get("channels")
    need(_whole(channels) and channels >= 1, "model.channels", channels, "must be an integer >= 1")
    layers = model.get("num_layers")
    # NodeModel with no message passing is the documented entity-features-only baseline.
    least = getattr(model_cls, "min_layers", 1)
    need(_whole(layers) and layers >= least, "model.num_layers", layers,
         f"must be an integer >= {least}")
    hops = data.get("num_neighbors")
    hops = list(hops) if OmegaConf.is_list(hops) else hops
    need(isinstance(hops, list) and len(hops) > 0, "data.num_neighbors", hops,
         "must list the fan-out of each hop, e.g. [128, 64]")
    # -1 takes every neighbour (TemporalSampler); 0 would sample none for that hop.
    need(all(_whole(k) and (k >= 1 or k == -1) for k in hops), "data.num_neighbors",
         hops, "each fan-out must be an integer >= 1, or -1 for all neighbours")
    if not getattr(model_cls, "takes_tokens", False):
        # one sampled hop per message-passing layer (see build): missing hops sample nothing
        need(len(hops) >= layers, "data.num_neighbors", hops,
             f"one fan-out per message-passing layer is needed: model.num_layers={layers}")
    for key in ("batch_size", "eval_batch_size"):
        size = data.get(key)
        if key == "batch_size" or size is not None:
            need(_whole(size) and size >= 1, f"data.{key}", size, "must be an integer >= 1")
    buckets = data.get("buckets")
    need(buckets is None or not getattr(model_cls, "takes_tokens", False), "data.buckets",
         buckets, f"static-shape buckets pad message-passing batches; {model_cls.__name__} "
         "takes token sets, whose static shapes come with compile.kwargs.dynamic=false alone "
         "(set data.buckets=null)")
    lr = cfg.get("lr")
    need(isinstance(lr, (int, float)) and not isinstance(lr, bool) and math.isfinite(lr)
         and lr > 0, "lr", lr, "must be a finite number > 0")
    back = cfg.get("backtest", 0)
    need(_whole(back) and back >= 0, "backtest", back, "must be a whole number of task "
         "windows >= 0 (how far back to move the val and test times)")


#: the data settings a task or a model may choose (``data_defaults`` in its own section)
CHOSEN = ("num_neighbors", "strategy", "bidirectional", "triplets")


def with_data_defaults(cfg: DictConfig) -> DictConfig:
    """``cfg`` with each data setting of :data:`CHOSEN` that is null filled in: from the
    task's ``data_defaults`` (what won its validation sweep), else the model's (what it
    needs: ID-GNN messages both ways, two-tower triplets), else the data module's own
    default. Each value a task or model chose is logged: no group writes into another's
    section, and a value given on the command line always stands."""
    cfg = cfg.copy()
    task, model = cfg.task.get("data_defaults") or {}, cfg.model.get("data_defaults") or {}
    own = inspect.signature(RelDataModule).parameters
    for key in CHOSEN:
        if cfg.data.get(key) is not None:
            continue
        for who, chosen in ((f"task {cfg.task.name}", task), (f"model {cfg.model._target_}",
                                                                model)):
            if chosen.get(key) is not None:
                log.info("data.%s=%s (from %s's data_defaults)", key, chosen[key], who)
                cfg.data[key] = chosen[key]
                break
        else:
            default = own[key].default
            cfg.data[key] = list(default) if isinstance(default, tuple) else default
    return cfg


def build(cfg: DictConfig, prepared_path: str | None = None) -> tuple:
    """The task, the set-up datamodule and the LightningModule a config describes; the
    process is left as it is (:func:`process_settings` says how a run sets it up).
    ``prepared_path``: see :attr:`RelDataModule.prepared_path`."""
    cfg = with_data_defaults(cfg)
    check_settings(cfg)
    task = instantiate(cfg.task, _convert_="all", backtest=cfg.get("backtest", 0))
    link = not task.kind.per_seed
    model_cls = hydra.utils.get_class(cfg.model._target_)
    if task.kind.per_seed != getattr(model_cls, "per_seed", True):  # rdl/nn/interface.py
        raise ValueError(f"model {model_cls.__name__} cannot be trained on task {task.name!r} "
                         f"({task.kind}); choose " + ("model=contextgnn, context-transformer, "
                                                      "idgnn or two-tower" if link
                                                      else "a node model such as model=sage"))
    # One sampled hop per message-passing layer: more hops would be sampled for nothing.
    # A token model samples every hop of data.num_neighbors (its layers attend over tokens).
    hops = list(cfg.data.num_neighbors)
    if not getattr(model_cls, "takes_tokens", False):
        hops = hops[: cfg.model.num_layers]
    # Objects built from data go to partials: passed to instantiate, Hydra would turn them
    # into configs (dataclasses to dicts, tuples to lists).
    dm = instantiate(cfg.data, _partial_=True, _convert_="all")(task=task, num_neighbors=hops,
                                                                random_seed=cfg.seed)
    dm.prepared_path = prepared_path
    dm.setup()
    model_cfg = OmegaConf.masked_copy(cfg.model, [k for k in cfg.model if k != "data_defaults"])
    model = instantiate(model_cfg, _partial_=True, _convert_="all")(**dm.model_kwargs())
    compile_options = instantiate(cfg.compile, _convert_="all")
    dynamic = compile_options.kwargs.get("dynamic", True)
    static = compile_options.enabled and dynamic is False
    # How batches are shaped, for the loaders and the module alike (rdl/training/shapes.py):
    # a token model's token sets, buckets, pads for a compiled model, else as sampled.
    dm.shapes = shapes_for(model, compile_options.enabled, dynamic, dm.buckets)
    if static and dm.buckets is None and not getattr(model, "takes_tokens", False):
        log.warning("compile.kwargs.dynamic=false without data.buckets: every batch shape "
                    "compiles a graph of its own (and after %d, Dynamo runs the model "
                    "eagerly); static-shape buckets pad batches to a few shapes: "
                    "experiment=buckets (docs/compile.md)", STATIC_GRAPHS)
    common = dict(optimizer=instantiate(cfg.optimizer), lr=cfg.lr,
                  scheduler=instantiate(cfg.scheduler) if cfg.get("scheduler") else None,
                  compile=compile_options, shapes=dm.shapes)
    if link:
        module = LinkTaskModule(model, task, num_dst_nodes=dm.model_kwargs()["num_dst_nodes"],
                                **common)
    else:
        module = NodeTaskModule(model, task, **common,
                                target_stats=task.kind.target_stats(dm.train_targets()))
        if dm.prior is not None:
            # The model starts as the tree prior exactly and moves away from it only where
            # training finds a correction.
            model.start_from_base()
    return task, dm, module


def with_task_settings(cfg: DictConfig, task) -> None:
    """Fills the task settings the config leaves null with the task's own (a RelBench
    task's name and monitored metric come from its folder): the callbacks and sweepers
    read them from the config."""
    for key in ("name", "monitor", "monitor_mode"):
        if key in cfg.task and cfg.task[key] is None:
            cfg.task[key] = getattr(task, key)


def _several_processes(cfg: DictConfig) -> bool:
    """Whether the trainer may start several processes (``auto`` or ``-1`` devices may)."""
    t = cfg.get("trainer") or {}
    devices = t.get("devices", 1)
    if str(t.get("num_nodes", 1)) != "1":
        return True
    if OmegaConf.is_list(devices) or isinstance(devices, (list, tuple)):
        return len(devices) > 1
    return str(devices) in ("auto", "-1") or (str(devices).isdigit() and int(devices) > 1)


def _data_key(cfg: DictConfig) -> str:
    """A digest of the settings that what the datamodule prepares depends on."""
    text = OmegaConf.to_yaml(OmegaConf.masked_copy(cfg, ["data", "task", "seed"]), resolve=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def process_settings(cfg: DictConfig) -> dict:
    """What a run of ``cfg`` sets up in its process (:func:`rdl.training.process.configured`):
    ``malloc`` keeping freed memory when training on the CPU, Dynamo's compile logs, and
    which of Lightning's warnings and lines are shown (``verbose``)."""
    return {"keep_freed_memory": bool(cfg.get("keep_freed_memory", True)) and _on_cpu(cfg),
            "compile_log": bool((cfg.get("compile") or {}).get("log", False)),
            "verbose": bool(cfg.get("verbose", False))}


def _on_cpu(cfg: DictConfig) -> bool:
    """Whether the trainer will run on the CPU (Lightning's ``auto`` picks a GPU if any)."""
    accelerator = str(cfg.get("trainer", {}).get("accelerator", "auto"))
    return accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available())


def train(cfg: DictConfig) -> dict:
    pl.seed_everything(cfg.seed, workers=True)
    compiled_before = compile_stats()
    ckpt_path = checked_resume(cfg)
    out = Path(HydraConfig.get().runtime.output_dir)
    prepared = str(out / f".prepared-{_data_key(cfg)}.pt") if _several_processes(cfg) else None
    task, dm, module = build(cfg, prepared)
    with_task_settings(cfg, task)
    # The composed config travels in every checkpoint: `rdl.predict` rebuilds the run from it.
    module.save_hyperparameters({CONFIG_KEY: OmegaConf.to_container(cfg, resolve=False)})
    link = not task.kind.per_seed
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
    trainer: pl.Trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=logger,
                                      plugins=[AtomicCheckpointIO()])

    try:
        trainer.fit(module, datamodule=dm, ckpt_path=ckpt_path)
    finally:
        if prepared and trainer.is_global_zero and os.path.exists(prepared):
            os.remove(prepared)  # every process has read it before fit starts
    best = [c for c in trainer.checkpoint_callbacks if c.monitor and c.best_model_path]
    ckpt = best[0].best_model_path if best else None
    val = trainer.validate(module, datamodule=dm, ckpt_path=ckpt, verbose=False)[0]
    test = trainer.test(module, datamodule=dm, ckpt_path=ckpt, verbose=False)[0]

    results = {"model": {"val": _strip(val, "val/"), "test": _strip(test, "test/")}}
    if not trainer.is_global_zero:  # one process reports
        return results
    # With limit_val/test_batches (or fast_dev_run) the model saw the first rows of a split
    # only (evaluation is in table order): the baselines are scored on the same rows.
    rows = {s: dm.rows_in(s, n) for s, n in (("val", trainer.num_val_batches[0]),
                                            ("test", trainer.num_test_batches[0]))}
    rows = {s: n for s, n in rows.items() if n < len(dm.tables[s])}
    for s, n in rows.items():
        log.info("%s: model and baselines scored on the first %d of %d rows", s, n,
                 len(dm.tables[s]))
    if link:
        results.update(baselines.link_baselines(task, dm.tables, rows=rows))
    else:
        results.update(baselines.node_baselines(task, dm.db, dm.tables, strict=dm.strict,
                                                history=dm.history, trees=dm.tree_fit,
                                                rows=rows))
    report(task.name, results, out, percent=task.kind.percent)
    # the task as run (a RelBench task's times and metric are its folder's): rdl.backtest
    write_atomic(out / "task.json", json.dumps(
        {"name": task.name, "val": str(task.val_time), "test": str(task.test_time),
         "monitor": task.monitor, "monitor_mode": task.monitor_mode}, indent=2))
    if module.compile_options.enabled:
        # This job's own: the jobs of a multirun share a process and Dynamo's counters.
        c = {k: v - compiled_before[k] for k, v in compile_stats().items()}
        expected = "one graph per mode, train and eval, is expected"
        if dm.buckets is not None:
            planned = sum(len(p) for p in dm.bucket_profiles.values())
            expected = (f"one graph per mode and bucket used is expected, of {planned} "
                        "buckets planned")
        print(f"torch.compile: {c['graphs']} graphs compiled, {c['graph_breaks']} graph "
              f"breaks ({expected}; compile.log=true says why each happened)")
    return results


def checked_resume(cfg: DictConfig) -> str | None:
    """``cfg.ckpt_path`` if it names a checkpoint of this task, before any heavy work."""
    path = cfg.get("ckpt_path")
    if path is None:
        return None
    saved = load_config(path)
    if saved["task"]["name"] != cfg.task.name:
        raise ValueError(f"ckpt_path {path}: a checkpoint of task {saved['task']['name']!r}, "
                         f"not of {cfg.task.name!r}")
    return str(path)


def load_config(path) -> dict:
    """The config a checkpoint was trained with (written by :func:`train`); a clear error
    if ``path`` is no file, no checkpoint, or not one of rdl's."""
    return read_checkpoint(path)[0]


def read_checkpoint(path) -> tuple[dict, dict]:
    """``(config, checkpoint)`` of an rdl checkpoint, with :func:`load_config`'s errors."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"ckpt_path {path}: no such file")
    try:
        ckpt = torch.load(p, map_location="cpu", weights_only=False)
    except Exception as e:  # a truncated or foreign file: torch's own message says why
        raise ValueError(f"ckpt_path {path}: not a readable checkpoint ({e})") from None
    config = (ckpt.get("hyper_parameters") or {}).get(CONFIG_KEY) if isinstance(ckpt, dict) else None
    if config is None:
        raise ValueError(f"ckpt_path {path}: not a checkpoint written by rdl.train (no config in it)")
    return config, ckpt


def _strip(metrics: dict, prefix: str) -> dict:
    return {k[len(prefix):]: float(v) for k, v in metrics.items()
            if k.startswith(prefix) and not k.endswith("loss")}


def report(task: str, results: dict, out: Path, percent: tuple = ()) -> None:
    """Print model and baselines side by side (``percent``: metrics also shown in %) and
    write ``metrics.json``."""
    names = list(next(iter(results.values()))["test"])
    head = ["", *(f"{s} {m}" for s in ("val", "test") for m in names)]
    rows = [[who, *(f"{r[s].get(m, float('nan')):.4f}" for s in ("val", "test") for m in names)]
            for who, r in results.items()]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in [head, *rows]]
    for m in percent:
        lines.append(f"test {m} in %: " + ", ".join(f"{who} {100 * r['test'][m]:.2f} %"
                                                     for who, r in results.items()))
    print(f"\n{task}: model vs baselines\n" + "\n".join(lines) + "\n")
    write_atomic(out / "metrics.json", json.dumps({"task": task, **results}, indent=2))
    log.info("metrics written to %s", out / "metrics.json")


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    try:
        with configured(**process_settings(cfg)):   # undone when the run ends
            results = train(cfg)
    except (InstantiationException, *USER_ERRORS) as e:
        # Bad data or settings: one clear message, no stack trace (HYDRA_FULL_ERROR=1 shows
        # it). Anything else is a bug and keeps its traceback.
        if isinstance(e, InstantiationException) and not isinstance(e.__cause__, USER_ERRORS):
            raise
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        if isinstance(e, InstantiationException):  # the cause's message, not Hydra's wrapping
            e = e.__cause__
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    return results["model"]["val"].get(cfg.task.monitor)  # for sweepers


if __name__ == "__main__":
    main()
