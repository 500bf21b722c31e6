"""The link family (:mod:`rdl.families`): each seed's label is a list of rows to rank. Its
task YAMLs name ``rdl.families.link.LinkTask``."""
from rdl.families.link.task import EventsLinkTask, LinkTask, RelBenchLinkTask

__all__ = ["LinkTask", "RelBenchLinkTask", "EventsLinkTask", "FAMILY"]


def __getattr__(name: str):
    # The family object (loaders, LightningModule, baselines) is imported on first use: a
    # task made by Hydra needs only its task class.
    if name == "FAMILY":
        from rdl.families.link.family import LinkFamily
        return LinkFamily()
    raise AttributeError(f"module 'rdl.families.link' has no attribute {name!r}")
