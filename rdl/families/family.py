"""What a task family gives the rest of rdl (:class:`Family`): a family is a package under
``rdl/families/`` whose ``FAMILY`` is one; :mod:`rdl.families` finds them. Everything that
differs between node tasks and link tasks is behind these few methods, so that no module
outside a family asks which family a task is of."""
from __future__ import annotations

from typing import ClassVar

import pandas as pd
import torch
from torch import nn

from rdl.data.database import Database
from rdl.preparation import Prepared
from rdl.tasks import Task
from rdl.training.data_settings import DataSettings
from rdl.training.datamodule import RelDataModule
from rdl.training.module import TaskModule
from rdl.training.shapes import Shapes


class Family:
    """A family of tasks: its task classes, the model interface its models implement, and
    its part of every step of a run (preparation, loaders, training, baselines, prediction
    files)."""

    #: the family's name, for messages
    name: ClassVar[str]
    #: its task class (a task YAML's ``_target_``) and its RelBench task class
    task: ClassVar[type[Task]]
    relbench_task: ClassVar[type[Task]]
    #: the model interface its models subclass (:mod:`rdl.nn.interface`)
    predictor: ClassVar[type]
    #: the models a task of the family trains with, for messages
    models: ClassVar[str]
    #: its data module class
    data_module_class: ClassVar[type[RelDataModule]]

    def check(self, settings: DataSettings, task: Task) -> None:
        """A :class:`ValueError` where a data setting cannot train a task of the family,
        before any data is read (none here)."""

    def check_schema(self, settings: DataSettings, task: Task, db: Database,
                     model_cls: type) -> None:
        """A :class:`ValueError` where ``model_cls`` cannot learn ``task`` on ``db``'s
        schema, once it is read and before the heavy work (none here)."""

    def prepare(self, task: Task, db: Database, settings: DataSettings,
                shared_path: str | None = None) -> Prepared:
        """What the family's loaders and baselines need (:mod:`rdl.preparation`)."""
        raise NotImplementedError

    def data_module(self, settings: DataSettings, prepared: Prepared,
                    shapes: Shapes | None = None) -> RelDataModule:
        """The family's data module over ``prepared``."""
        return self.data_module_class(settings, prepared, shapes)

    def task_module(self, model: nn.Module, data: RelDataModule, **common) -> TaskModule:
        """The LightningModule that trains ``model`` on ``data``'s task (``common``:
        :class:`~rdl.training.module.TaskModule`'s arguments)."""
        raise NotImplementedError

    def evaluate(self, trainer, module: TaskModule, data: RelDataModule, ckpt: str | None,
                 settings: dict | None = None, **load) -> dict:
        """The model's entry in the results (``{"val": {metric: value}, "test": {...}}``,
        and what else a family reports of it) with the weights of ``ckpt`` (the best
        checkpoint; None: as they are), by Lightning's loops (``load``: how they read
        ``ckpt``). ``settings``: the run's ``evaluation`` section, which a family may act on."""
        val = trainer.validate(module, datamodule=data, ckpt_path=ckpt, verbose=False, **load)[0]
        test = trainer.test(module, datamodule=data, ckpt_path=ckpt, verbose=False, **load)[0]
        return scores(val, test)

    def baselines(self, data: RelDataModule, rows: dict) -> dict:
        """``{baseline: {split: {metric: value}}}`` beside the model in the report
        (``rows``: split -> score the first ``n`` rows only)."""
        raise NotImplementedError

    def predictions(self, data: RelDataModule, split: str, pred: torch.Tensor,
                    labelled: bool) -> tuple[dict, dict]:
        """A prediction file's columns of the predictions ``pred`` of ``split`` (in its
        table's order) besides the seed time and the entity, and their metrics (none
        where not ``labelled``)."""
        raise NotImplementedError


def scores(val: dict, test: dict) -> dict:
    """``{"val": {metric: value}, "test": {...}}`` from what Lightning's validation and test
    loops return (``val/auroc``, ...), without the losses."""
    return {split: {k[len(split) + 1:]: float(v) for k, v in metrics.items()
                    if k.startswith(f"{split}/") and not k.endswith("loss")}
            for split, metrics in (("val", val), ("test", test))}


def scored_rows(trainer, data: RelDataModule) -> dict:
    """Split -> the rows the model was scored on, where not all: with
    limit_val/test_batches (or fast_dev_run) the model saw the first rows of a split only
    (evaluation is in table order), and the baselines are scored on the same rows."""
    rows = {s: data.rows_in(s, n) for s, n in (("val", trainer.num_val_batches[0]),
                                              ("test", trainer.num_test_batches[0]))}
    return {s: n for s, n in rows.items() if n < len(data.tables[s])}


def original_ids(db: Database, table: str, rows) -> pd.Series:
    """Row positions of ``table`` as the source files' keys, where the loader kept them."""
    index = getattr(db, "keys", {}).get(table)
    return rows if index is None else index.to_numpy()[rows]
