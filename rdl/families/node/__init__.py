"""The node family (:mod:`rdl.families`): one label per seed. Its task YAMLs name
``rdl.families.node.NodeTask``; label history, tree prior and seed features are its alone."""
from rdl.families.node.task import EventsNodeTask, NodeTask, RelBenchNodeTask

__all__ = ["NodeTask", "RelBenchNodeTask", "EventsNodeTask", "FAMILY"]


def __getattr__(name: str):
    # The family object (loaders, LightningModule, baselines) is imported on first use: a
    # task made by Hydra needs only its task class.
    if name == "FAMILY":
        from rdl.families.node.family import NodeFamily
        return NodeFamily()
    raise AttributeError(f"module 'rdl.families.node' has no attribute {name!r}")
