"""Task kinds: what a kind of label means wherever it matters (RelBench's ``TaskType``, as
objects). A task's YAML names its kind (``kind: regression``); its family's task class makes
the object (:attr:`rdl.tasks.Task.kinds`), and the rest of rdl asks it, never its name.

:class:`Kind` is what every kind says, whatever its family: its name and RelBench's names
for it (:attr:`Kind.relbench`), the metric that selects the model, the metrics a task of the
kind is scored by when its YAML names none (:meth:`Kind.default_metrics`), and the model a
task of it trains with where none is named. A family's kinds add what its training needs:
the node family's (:mod:`rdl.families.node.kinds`: binary, regression, multiclass) the
loss, the output mapping and the baselines' objective; the link family's
(:mod:`rdl.families.link.kind`) only what is here.
"""
from __future__ import annotations

from typing import ClassVar

import pandas as pd

#: a split whose metrics rest on fewer rows than this (:meth:`Kind.evidence`) is thin
FEW = 100


class Kind:
    """A kind of task. Subclasses say what differs; see the module's docstring."""

    name: ClassVar[str]
    #: metrics the report also shows in %
    percent: ClassVar[tuple] = ()
    #: RelBench's names of the kind (its ``TaskType`` values)
    relbench: ClassVar[tuple] = ()
    #: the metric that selects the model, and whether higher is better
    monitor: ClassVar[tuple] = ("", "max")
    #: the kind needs its number of classes (``num_classes``)
    counts_classes: ClassVar[bool] = False
    #: the model (rdl/conf/model/<name>.yaml) a task of the kind trains with where none is named
    default_model: ClassVar[str] = "sage"

    def __init__(self, task_name: str, **settings):
        self.task_name = task_name

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def default_metrics(self, eval_k: int = 12) -> dict:
        """name -> torchmetrics ``Metric``: what a task of this kind is scored by."""
        raise NotImplementedError

    def evidence(self, labels) -> tuple[int, str]:
        """``(n, what)``: how many of a split's rows its metrics rest on, and what they
        are (``labels``: the split table's label column): every labelled row."""
        return int(pd.Series(labels).notna().sum()), "rows"


def one_value(task, tables: dict, split: str = "val") -> str:
    """A note where every label of ``split`` (in ``tables``) is the same number: a month
    with no survey, every plot's count 0; a week in which nobody churned. Whatever predicts
    that number is best on such a split, so nothing is chosen on it (the prior is the
    trees, the correction kept as trained: :mod:`rdl.families.node.prior_choice`,
    :mod:`rdl.families.node.family`); "" where the labels differ or are no numbers."""
    if split not in tables or task.target_col not in tables[split]:
        return ""
    y = tables[split][task.target_col].dropna()
    if not len(y) or not pd.api.types.is_numeric_dtype(y) or y.nunique() != 1:
        return ""
    return (f"one value: every {split} label is {y.iloc[0]:g} ({len(y)} rows), which "
            f"whatever predicts {y.iloc[0]:g} matches: nothing is chosen on {split} (the prior "
            "is the trees, the correction kept as trained; split times whose windows hold "
            "events: python -m rdl.tasks.suggest)")


def few_rows(task, tables: dict) -> str:
    """A note naming the splits of ``tables`` (split -> its labelled rows) whose metrics
    rest on fewer than :data:`FEW` rows (the task's ``kind.evidence``: a binary task's rarer
    class); "" where none does. Differences over so few rows are mostly chance."""
    thin = []
    for split in ("val", "test"):
        if split in tables and task.target_col in tables[split]:
            n, what = task.kind.evidence(tables[split][task.target_col])
            if n < FEW:
                rows = len(tables[split])
                thin.append(f"{split} {n} {what}" + (f" of {rows} rows" if rows != n else ""))
    if not thin:
        return ""
    return (f"few rows: {', '.join(thin)}: a metric over fewer than {FEW} says little (more "
            "seeds a split: a longer window, earlier split times; or many windows: "
            "python -m rdl.backtest)")
