"""The node family: one label per seed (binary classification, regression, multiclass)."""
from __future__ import annotations

from rdl.baselines import node_baselines
from rdl.baselines.scoring import score
from rdl.families.family import Family
from rdl.families.node.correction import scaled_on_val
from rdl.families.node.data import NodeDataModule
from rdl.families.node.module import NodeTaskModule
from rdl.families.node.prepare import prepare
from rdl.families.node.task import NodeTask, RelBenchNodeTask
from rdl.nn.interface import NodePredictor
from rdl.tasks.kinds import one_value


class NodeFamily(Family):
    name = "node"
    task = NodeTask
    relbench_task = RelBenchNodeTask
    predictor = NodePredictor
    models = "a node model such as model=sage"
    data_module_class = NodeDataModule

    def prepare(self, task, db, settings, shared_path=None):
        return prepare(task, db, settings, shared_path)

    def task_module(self, model, data, **common):
        task = data.task
        module = NodeTaskModule(model, task, **common,
                                target_stats=task.kind.target_stats(data.train_targets()))
        if data.prior is not None:
            # The model starts as its prior exactly and moves away from it only where
            # training finds a correction.
            model.start_from_base()
        return module

    def evaluate(self, trainer, module, data, ckpt, settings=None, **load):
        """The model's entry (:meth:`Family.evaluate`); with a prior, also ``"prior"``:
        the name of the baseline it started from, and ``"correction"``: how much of its
        correction of it the model keeps, chosen on val (:mod:`~rdl.families.node.correction`)."""
        scales = list((settings or {}).get("correction_scales") or [])
        if data.prior is None:
            return super().evaluate(trainer, module, data, ckpt, settings, **load)
        same = one_value(data.task, data.tables)   # (nothing chosen on val: kept as trained)
        if scales in ([], [1.0]) or same:
            model = super().evaluate(trainer, module, data, ckpt, settings, **load)
        else:
            model = scaled_on_val(trainer, module, data, ckpt, scales, **load)
        return {**model, "prior": data.prior_name,
                **({"prior_by": "the trees (val's labels one value)"} if same else {})}

    def baselines(self, data, rows):
        return node_baselines(data.task, data.db, data.tables, strict=data.strict,
                              history=data.history, trees=data.tree_fits, rows=rows,
                              deep=data.deep_features)

    def predictions(self, data, split, pred, labelled):
        task = data.task
        columns = task.kind.prediction_columns(task.target_col, pred)
        return columns, score(task, pred.numpy(), data.tables[split]) if labelled else {}
