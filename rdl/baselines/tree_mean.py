"""The mean of the two LightGBMs: the trees on depth-1 features and the trees on depth 1 and
2, averaged in raw-score space (values, logits, or class log-scores), printed as a baseline
of its own and the node model's default tree prior (:mod:`rdl.families.node.prior_choice`).

Why a mean and not the one better on val: the depth-2 features kept are chosen on the one
val week, which also early-stops both fits, so the better on val is often not the better on
the next weeks. Over five test weeks of synthetic user-churn (docs/results.md), the one
better on val was 0.0026 +- 0.0015 AUROC behind depth 1; the mean of both was level with
depth 1 (-0.0004 +- 0.0006) and ahead of depth 2 (+0.0023 +- 0.0010, 4 of 5 weeks). Two
tree models on different features make errors that partly cancel, as any bagged pair does,
and the mean needs nothing fitted on val.

A weighted mean of the two (:func:`weighted`) is the prior where its weight is chosen on the
train split's forward-chained weeks (``data.prior_trees: chained``,
:mod:`rdl.families.node.prior_weight`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rdl.baselines.trees import DEPTH1, DEPTH2, TreeFit

#: the printed name of the mean of the two LightGBMs (within the report's name width, 30)
MEAN = "LightGBM (mean of depth 1, 2)"


@dataclass
class MeanFit:
    """The mean of ``fits``' raw scores, scored as a :class:`TreeFit` is (its ``task``,
    ``frames`` and ``bounds`` are the first fit's: every member is fitted on the same
    split tables, train sample and label range); ``weights``: one per fit, summing to 1
    (None: equal)."""

    fits: tuple[TreeFit, ...]
    name: str = MEAN
    weights: tuple[float, ...] | None = None

    task = property(lambda self: self.fits[0].task)
    frames = property(lambda self: self.fits[0].frames)
    bounds = property(lambda self: self.fits[0].bounds)

    def raw(self, split: str) -> np.ndarray:
        return self.combine([f.raw(split) for f in self.fits])

    def combine(self, parts: list[np.ndarray]) -> np.ndarray:
        """The (weighted) mean of ``parts``, one array per fit in their order."""
        return np.average(parts, axis=0, weights=self.weights)

    # scored exactly as one LightGBM is, from raw()
    scores = TreeFit.scores
    val_score = TreeFit.val_score

    def stored(self) -> dict:
        """The names of the fits it averages (:meth:`TreeFit.stored` keeps each of them):
        :func:`restored` makes it again from them."""
        return {"name": self.name, "mean_of": [f.name for f in self.fits],
                "weights": None if self.weights is None else list(self.weights)}


def restored(stored: dict, fits: dict) -> MeanFit:
    """The mean :meth:`MeanFit.stored` describes, of ``fits`` (restored LightGBMs by name)."""
    weights = stored.get("weights")
    return MeanFit(tuple(fits[n] for n in stored["mean_of"]), stored["name"],
                   None if weights is None else tuple(weights))


def weighted(fits: dict, weight: float):
    """Depth 1 and 2 of ``fits`` (:func:`with_mean`'s) averaged with ``weight`` on depth 2:
    the fit itself at 0 or 1, their mean (:data:`MEAN`) at 1/2, else a :class:`MeanFit`
    named for the weight (printed as a baseline of its own)."""
    if weight in (0, 1):
        return fits[DEPTH2 if weight else DEPTH1]
    if weight == 0.5:
        return fits[MEAN]
    return MeanFit((fits[DEPTH1], fits[DEPTH2]), f"LightGBM (depth 2 weight {weight:g})",
                   (1 - weight, weight))


def with_mean(fits: dict) -> dict:
    """``fits`` (the LightGBM baselines by name) and, where both depths are there, their
    mean (:data:`MEAN`)."""
    if DEPTH1 in fits and DEPTH2 in fits:
        return {**fits, MEAN: MeanFit((fits[DEPTH1], fits[DEPTH2]))}
    return fits
