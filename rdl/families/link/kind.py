"""The link family's kind: link prediction (RelBench's recommendation), scored by MAP@k."""
from __future__ import annotations

from rdl.tasks.kinds import Kind


class LinkPrediction(Kind):
    """Each seed's label is the list of ``target_table`` rows it links to in the window;
    the model ranks every row of that table (MAP@k)."""

    name = "link_prediction"
    default_model = "contextgnn"
    percent = ("map",)
    relbench = ("recommendation", "link_prediction")
    monitor = ("map", "max")

    def default_metrics(self, eval_k=12):
        from rdl.training.metrics import LinkMAP, LinkPrecision, LinkRecall
        return {"map": LinkMAP(k=eval_k), "precision": LinkPrecision(k=eval_k),
                "recall": LinkRecall(k=eval_k)}

    def evidence(self, labels):
        """The seeds with a target in the window: MAP@k is their mean."""
        return sum(1 for x in labels if hasattr(x, "__len__") and len(x)), "seeds with a target"

    def __init__(self, task_name: str, target_table: str | None = None, **kwargs):
        super().__init__(task_name)
        if not target_table:
            raise ValueError(f"task {task_name!r}: a link_prediction task needs target_table")


#: the link family's kinds by name (a task's ``kind:``)
KINDS = {LinkPrediction.name: LinkPrediction}
