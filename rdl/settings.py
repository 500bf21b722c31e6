"""A composed config, checked and completed before a run: settings that cannot train are
refused before any data is read, the data settings a task or model chose are filled in,
and what a run sets up in its process is read off the config."""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
from pathlib import Path

import hydra
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from rdl.families import family_of, model_family
from rdl.paths import CONF_DIR, TASKS_DIR
from rdl.duck import LABEL_PAIRS, check as check_duckdb_memory, check_pairs
from rdl.threads import check as check_threads
from rdl.training.data_settings import CHOSEN, DataSettings
from rdl.training.loader_workers import check as check_loader

log = logging.getLogger("rdl.train")


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
    stacked = model.get("stacked_encoders")
    need(stacked is None or isinstance(stacked, bool) or (_whole(stacked) and stacked >= 2),
         "model.stacked_encoders", stacked, "true, false, null (the run's launch_bound) or a "
         "number of rows per chunk (2 or more)")
    hops = data.get("num_neighbors")
    hops = list(hops) if OmegaConf.is_list(hops) else hops
    need(isinstance(hops, list) and len(hops) > 0, "data.num_neighbors", hops,
         "must list the fan-out of each hop, e.g. [128, 64]")
    # -1 takes every neighbour (TemporalSampler); 0 would sample none for that hop.
    need(all(_whole(k) and (k >= 1 or k == -1) for k in hops), "data.num_neighbors",
         hops, "each fan-out must be an integer >= 1, or -1 for all neighbours")
    if not getattr(model_cls, "takes_tokens", False):
        # one sampled hop per message-passing layer (rdl.api.data_settings): missing hops
        # sample nothing
        need(len(hops) >= layers, "data.num_neighbors", hops,
             f"one fan-out per message-passing layer is needed: model.num_layers={layers}")
    for key in ("batch_size", "eval_batch_size"):
        size = data.get(key)
        if key == "batch_size" or size is not None:
            need(_whole(size) and size >= 1, f"data.{key}", size, "must be an integer >= 1")
    check_loader(data.get("num_workers", 0), data.get("prefetch_factor"))
    check_threads(cfg.get("threads", "auto"))
    check_duckdb_memory(duckdb_settings(cfg)["memory_limit"])
    check_pairs(duckdb_settings(cfg)["label_pairs"])
    buckets = data.get("buckets")
    need(buckets is None or not getattr(model_cls, "takes_tokens", False), "data.buckets",
         buckets, f"static-shape buckets pad message-passing batches; {model_cls.__name__} "
         "takes token sets, whose static shapes come with compile.kwargs.dynamic=false alone "
         "(set data.buckets=null)")
    device = (data.get("sampler") or {}).get("device")
    if device is not None and str(device).startswith("cuda"):
        # batches built on a GPU are for a model on that GPU, in one process (the sampler's
        # index is put on the device when the data module is made, before any process
        # group: every process would sample on the first GPU)
        need(torch.cuda.is_available(), "data.sampler.device", device,
             "no CUDA device is available (data.sampler.device=null samples on the CPU)")
        need(not _on_cpu(cfg), "data.sampler.device", device, "the trainer trains on the "
             "CPU; batches built on the GPU would be copied back (data.sampler.device=null)")
        need(not several_processes(cfg), "data.sampler.device", device, "one training "
             "process only (trainer.devices=1, trainer.num_nodes=1); with several, sample "
             "on the CPU (data.sampler.device=null)")
    lr = cfg.get("lr")
    need(isinstance(lr, (int, float)) and not isinstance(lr, bool) and math.isfinite(lr)
         and lr > 0, "lr", lr, "must be a finite number > 0")
    blend = (cfg.get("evaluation") or {}).get("ranker_blend") or []
    need(all(isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w <= 1
             for w in blend), "evaluation.ranker_blend", list(blend),
         "each entry a weight of the model in [0, 1]")
    back = cfg.get("backtest", 0)
    need(_whole(back) and back >= 0, "backtest", back, "must be a whole number of task "
         "windows >= 0 (how far back to move the val and test times)")


def with_data_defaults(cfg: DictConfig) -> DictConfig:
    """``cfg`` with each data setting of :data:`CHOSEN` that is null filled in: from the
    task's ``data_defaults`` (what won its validation sweep), else the model's (what it
    needs: ID-GNN messages both ways, two-tower triplets), else the data module's own
    default (:class:`~rdl.training.data_settings.DataSettings`, where it lives). Each value a
    task or model chose is logged: no group writes into another's section, and a value
    given on the command line always stands."""
    cfg = cfg.copy()
    task, model = cfg.task.get("data_defaults") or {}, cfg.model.get("data_defaults") or {}
    own = {f.name: f.default for f in dataclasses.fields(DataSettings)}
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
            default = own[key]
            cfg.data[key] = list(default) if isinstance(default, tuple) else default
    return cfg


#: the trainer settings that make a run's training budget: a task's ``trainer_defaults``
#: replace them as one, or not at all
BUDGET = ("max_epochs", "max_steps", "min_epochs", "min_steps", "max_time",
          "limit_train_batches")


def with_trainer_defaults(cfg: DictConfig) -> DictConfig:
    """``cfg`` with the task's ``trainer_defaults`` (the training budget its backtests
    chose: ``{max_epochs: 6, limit_train_batches: 2000}`` for H&M purchase) where the run
    left the budget as ``trainer/default.yaml`` has it. The budget is one unit: where the
    command line names any of its settings (``trainer.max_epochs=2``), or a preset changed
    one (``debug=limit``), the run's own budget stands whole, since half of the task's (six
    epochs of the default's 50 batches) is a budget nobody chose. What was applied is logged."""
    chosen = cfg.task.get("trainer_defaults") or {}
    if not chosen:
        return cfg
    trainer = cfg.get("trainer") or {}
    if all(trainer.get(k) == v for k, v in chosen.items()):
        return cfg   # (a preset that sets the same budget)
    default = OmegaConf.load(CONF_DIR / "trainer" / "default.yaml")
    moved = [k for k in sorted(set(BUDGET) | set(chosen))
             if trainer.get(k) != default.get(k) or _named(f"trainer.{k}")]
    if moved:
        log.info("trainer.%s set by the run: the task's training budget (%s) is not applied",
                 moved[0], ", ".join(f"{k}={'null' if v is None else v}"
                                     for k, v in chosen.items()))
        return cfg
    cfg = cfg.copy()
    with open_dict(cfg):
        for key, value in chosen.items():
            cfg.trainer[key] = value
    log.info("%s (the training budget of task %s: its trainer_defaults)", ", ".join(
        f"trainer.{k}={'null' if v is None else v}" for k, v in chosen.items()), cfg.task.name)
    return cfg


def with_kind_model(cfg: DictConfig, task) -> DictConfig:
    """``cfg`` with the default model of ``task``'s kind (:attr:`Kind.default_model
    <rdl.tasks.kinds.Kind.default_model>`) where the config's model cannot train the task
    and no model was chosen: a link task read from its folder (``task=relbench``) trains with
    a link model. A model was chosen where the command line names one (``model=...``) or the
    config's model is not the default one (``rdl.config("model=idgnn")`` in Python, which has
    no command line to read); a chosen model that cannot train the task is an error, not
    replaced. The model settings the config changed from the default model's
    (``model.channels=16``) carry over where the new model has them."""
    model_cls = hydra.utils.get_class(cfg.model._target_)
    default = OmegaConf.load(CONF_DIR / "model" / "sage.yaml")   # the config's default model
    if (model_family(model_cls) is family_of(task) or _named("model")
            or cfg.model._target_ != default._target_):
        return cfg
    name = task.kind.default_model
    new = OmegaConf.load(CONF_DIR / "model" / f"{name}.yaml")
    for key, value in cfg.model.items():
        if key in new and key != "_target_" and value != default.get(key):
            new[key] = value
    log.info("task %s is %s: model=%s, the kind's default (name another with model=...)",
             task.name, task.kind, name)
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.model = new
    return cfg


def _named(group: str) -> bool:
    """Whether the command line chose ``group`` (``group=...``)."""
    from hydra.core.hydra_config import HydraConfig
    if not HydraConfig.initialized():
        return False
    return any(o.lstrip("~+").split("=")[0] == group for o in HydraConfig.get().overrides.task)


def with_task_settings(cfg: DictConfig, task) -> None:
    """Fills the task settings the config leaves null with the task's own (a RelBench
    task's name and monitored metric come from its folder): the callbacks and sweepers
    read them from the config."""
    for key in ("name", "monitor", "monitor_mode"):
        if key in cfg.task and cfg.task[key] is None:
            cfg.task[key] = getattr(task, key)
    # a task's own SQL file (beside its YAML, or in the working folder) by its full path:
    # rdl.predict and a resumed run find it wherever they start (rdl's own stay relative)
    sql = getattr(task, "sql_path", None)
    if cfg.task.get("sql") and sql is not None and TASKS_DIR not in Path(sql).resolve().parents:
        cfg.task.sql = str(Path(sql).resolve())


def several_processes(cfg: DictConfig) -> bool:
    """Whether the trainer may start several processes (``auto`` or ``-1`` devices may)."""
    t = cfg.get("trainer") or {}
    devices = t.get("devices", 1)
    if str(t.get("num_nodes", 1)) != "1":
        return True
    if OmegaConf.is_list(devices) or isinstance(devices, (list, tuple)):
        return len(devices) > 1
    return str(devices) in ("auto", "-1") or (str(devices).isdigit() and int(devices) > 1)


def data_key(cfg: DictConfig) -> str:
    """A digest of the settings that what the datamodule prepares depends on."""
    kept = OmegaConf.masked_copy(cfg, ["data", "task", "seed"])
    kept.task.pop("trainer_defaults", None)   # a training budget prepares the same data
    text = OmegaConf.to_yaml(kept, resolve=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def process_settings(cfg: DictConfig) -> dict:
    """What a run of ``cfg`` sets up in its process (:func:`rdl.training.process.configured`):
    ``malloc`` keeping freed memory when training on the CPU, Dynamo's compile logs,
    which of Lightning's warnings and lines are shown (``verbose``), the threads of
    each of the run's training processes on this machine (``threads``, :mod:`rdl.threads`)
    DuckDB's memory limit and spill folder (``duckdb``, :mod:`rdl.duck`), the precision
    of float32 matrix products (``matmul_precision``) and how loader workers share their
    batches' memory (``sharing_strategy``)."""
    return {"keep_freed_memory": bool(cfg.get("keep_freed_memory", True)) and _on_cpu(cfg),
            "compile_log": bool((cfg.get("compile") or {}).get("log", False)),
            "verbose": bool(cfg.get("verbose", False)),
            "threads": cfg.get("threads", "auto"), "processes": local_processes(cfg),
            "duckdb": duckdb_settings(cfg), "matmul_precision": cfg.get("matmul_precision"),
            "sharing_strategy": cfg.get("sharing_strategy")}


def duckdb_settings(cfg: DictConfig) -> dict:
    """``duckdb.*`` of the config (:func:`rdl.duck.configured`'s arguments)."""
    given = cfg.get("duckdb") or {}
    return {"memory_limit": given.get("memory_limit", "auto"),
            "spill_dir": given.get("spill_dir"),
            "label_pairs": given.get("label_pairs", LABEL_PAIRS)}


def local_processes(cfg: DictConfig) -> int:
    """The training processes the trainer starts on this machine: its devices (``auto``
    and ``-1``: every GPU, or one process on the CPU)."""
    devices = (cfg.get("trainer") or {}).get("devices", 1)
    if OmegaConf.is_list(devices) or isinstance(devices, (list, tuple)):
        return max(1, len(devices))
    if str(devices).isdigit():
        return max(1, int(devices))
    return max(1, torch.cuda.device_count()) if not _on_cpu(cfg) else 1


def _on_cpu(cfg: DictConfig) -> bool:
    """Whether the trainer will run on the CPU (Lightning's ``auto`` picks a GPU if any)."""
    accelerator = str(cfg.get("trainer", {}).get("accelerator", "auto"))
    return accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available())


