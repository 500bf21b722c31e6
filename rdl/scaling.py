"""Robust asinh scaling: the one rule rdl puts heavy-tailed numbers on a model's scale by.

``asinh((x - center) / scale)`` with a robust centre and scale. Relational numbers are
often heavy-tailed (prices, counts, sales): a scale such as the standard deviation is set
by a few huge values and the bulk collapses to one point, while a robust scale spreads
the bulk, and ``asinh`` (linear near 0, logarithmic beyond) keeps every magnitude apart.

Used for a table's numerical columns (:class:`~rdl.nn.encoder.RobustLinearEncoder`) and
the seed features (:mod:`rdl.features.seed`), both with the median and
:func:`iqr_scale`, and for regression targets
(:class:`~rdl.tasks.kinds.Regression`: the median and the mean absolute
deviation, the L1 loss's own). Each function takes torch tensors or numpy arrays and
computes in their own library and dtype.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

#: a normal distribution's interquartile range in standard deviations
IQR_PER_STD = 1.349


def robust_asinh(x, center, scale):
    """``asinh((x - center) / scale)``."""
    z = (x - center) / scale
    return torch.asinh(z) if isinstance(z, Tensor) else np.arcsinh(z)


def robust_sinh(z, center, scale):
    """The inverse of :func:`robust_asinh`: ``center + scale * sinh(z)``."""
    return center + scale * (torch.sinh(z) if isinstance(z, Tensor) else np.sinh(z))


def iqr_scale(q1, q3, fallback):
    """The interquartile range ``q3 - q1`` over :data:`IQR_PER_STD` (a normal's standard
    deviation), ``fallback`` where that is not positive (a column mostly one value)."""
    scale = (q3 - q1) / IQR_PER_STD
    return (torch if isinstance(scale, Tensor) else np).where(scale > 0, scale, fallback)
