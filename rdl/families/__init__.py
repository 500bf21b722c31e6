"""Task families: node tasks and link tasks, as RelBench (``EntityTask`` /
``RecommendationTask``) and PyG (``NodeLoader`` / ``LinkLoader``) draw them.

A family is a package here whose ``FAMILY`` is a :class:`~rdl.families.family.Family`: its
task classes and kinds, its part of preparation, its data module, its LightningModule, its
baselines and its prediction files. This module finds them (every package beside it) and
answers, in one place, which family a task, a kind or a model is of; nothing outside the
families asks a task which family it is of. A new family is a new package here and its
task YAMLs (docs/architecture.md lists the files).
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from functools import lru_cache

from rdl.data.database import DataError


@lru_cache(maxsize=None)
def families() -> tuple:
    """Every family: each package of ``rdl.families`` (in name order) and its ``FAMILY``."""
    return tuple(importlib.import_module(f"{__name__}.{m.name}").FAMILY
                 for m in pkgutil.iter_modules(__path__) if m.ispkg)


def family_of(task):
    """The family ``task`` is of (its class is the family's task class or a subclass)."""
    for family in families():
        if isinstance(task, family.task):
            return family
    classes = ", ".join(f.task.__name__ for f in families())
    raise ValueError(f"task {getattr(task, 'name', task)!r}: its class {type(task).__name__} "
                     f"is no family's task class ({classes})")


def model_family(model_cls):
    """The family whose model interface ``model_cls`` implements (the first of its bases
    that is one; a link model built on a node model's layers is a link model), or None."""
    predictors = {f.predictor: f for f in families()}
    return next((predictors[c] for c in model_cls.__mro__ if c in predictors), None)


def check_model(task, model_cls) -> None:
    """A :class:`ValueError` where ``model_cls`` cannot be trained on ``task``."""
    family = family_of(task)
    if model_family(model_cls) is not family:
        raise ValueError(f"model {model_cls.__name__} cannot be trained on task {task.name!r} "
                         f"({task.kind}); choose {family.models}")


def kind_family(kind: str, task_name: str) -> tuple:
    """``(family, kind name)`` of a kind named by rdl (``regression``) or by RelBench's
    ``task_type`` (``recommendation``)."""
    for family in families():
        if kind in family.task.kinds:
            return family, kind
    for family in families():
        for name, cls in family.task.kinds.items():
            if kind in cls.relbench:
                return family, name
    ours = sorted(k for f in families() for k in f.task.kinds)
    theirs = sorted(n for f in families() for c in f.task.kinds.values() for n in c.relbench)
    raise DataError(f"task {task_name!r}: kind {kind!r} is not one rdl trains: rdl's kinds "
                    f"{ours}, RelBench's task types {theirs}")


def relbench_task(path, name: str | None = None, kind: str | None = None,
                  num_classes: int | None = None, window: str | None = None,
                  val_timestamp: str | None = None, test_timestamp: str | None = None,
                  num_eval_timestamps: int | None = None, eval_k: int | None = None,
                  remove_columns: list | None = None, metrics: dict | None = None,
                  monitor: str | None = None, monitor_mode: str | None = None,
                  backtest: int = 0, train_windows: int | None = None,
                  data_defaults: dict | None = None, dataset=None):
    """The RelBench task in folder ``path`` (``task=relbench``; :mod:`rdl.tasks.relbench`
    reads the folder), as a task of the family of its kind; each other argument, if given,
    replaces what the folder says. ``dataset``: its dataset's folder (``task=relbench``
    passes ``data.db.path``); None: the folder two above ``path``."""
    from rdl.tasks.relbench import count_classes, task_spec
    given = dict(name=name, kind=kind, num_classes=num_classes, window=window,
                 val_timestamp=val_timestamp, test_timestamp=test_timestamp,
                 num_eval_timestamps=num_eval_timestamps, eval_k=eval_k,
                 remove_columns=remove_columns)
    folder, spec = task_spec(path, given, dataset)
    family, spec["kind"] = kind_family(spec["kind"], spec["name"])
    kind_cls = family.task.kinds[spec["kind"]]
    if kind_cls.counts_classes and not spec.get("num_classes"):
        spec["num_classes"] = count_classes(folder, spec)
    cls = family.relbench_task
    spec = {k: v for k, v in spec.items() if k in {f.name for f in dataclasses.fields(cls)}}
    task_kind = kind_cls(spec["name"], num_classes=spec.get("num_classes"),
                         target_table=spec.get("target_table"))
    metrics = metrics or task_kind.default_metrics(spec.get("eval_k") or 12)
    watch, mode = task_kind.monitor
    return cls(**spec, metrics=metrics, monitor=monitor or watch,
               monitor_mode=monitor_mode or mode, backtest=backtest,
               train_windows=train_windows, data_defaults=data_defaults or {})


def data_module(db, task, settings, shapes=None, shared_path: str | None = None):
    """The data module of ``task`` on ``db`` as ``settings`` (a
    :class:`~rdl.training.data_settings.DataSettings`) say, prepared by the task's family
    (``shapes``: how batches are shaped, :mod:`rdl.training.shapes`; ``shared_path``:
    :func:`rdl.preparation.shared`)."""
    family = family_of(task)
    family.check(settings, task)
    return family.data_module(settings, family.prepare(task, db, settings, shared_path), shapes)
