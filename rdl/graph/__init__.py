"""Graph construction and sampling."""
from rdl.graph.sampler import TemporalSampler

__all__ = ["TemporalSampler"]
