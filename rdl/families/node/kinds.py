"""The node family's kinds: one label per seed (binary classification, regression,
multiclass classification). Besides :class:`~rdl.tasks.kinds.Kind`'s, a node kind says:

- the labels: their tensor for the model (:meth:`~NodeKind.train_target`) and for the
  metrics (:meth:`~NodeKind.metric_target`), as a matrix for the label history's statistics
  (:meth:`~NodeKind.label_matrix`), the label history's stype;
- the model: its output width, the loss, the mapping of its output to what the metrics
  take (:meth:`~NodeKind.prediction`), a start it corrects (:meth:`~NodeKind.from_base`);
- the baselines: the constants, the prior of a row nothing is known of, LightGBM's
  objective and the mapping of its raw scores, a baseline's prediction as the model's
  start (:meth:`~NodeKind.as_raw`);
- the outputs: the columns of a prediction file.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from rdl.scaling import robust_asinh, robust_sinh
from rdl.tasks.kinds import Kind


class NodeKind(Kind):
    """A kind of the node family: one label per seed (see the module's docstring)."""

    def __init__(self, task_name: str, num_classes: int | None = None, **settings):
        super().__init__(task_name)

    # -- labels --------------------------------------------------------------------------
    def train_target(self, values) -> Tensor:
        """A split's labels as the model's ``y``."""
        # a copy: a table's column is read-only under pandas' copy-on-write
        return torch.tensor(np.asarray(values), dtype=torch.float)

    def metric_target(self, y: Tensor) -> Tensor:
        """Labels as the metrics take them."""
        return y.float()

    def label_matrix(self, y: np.ndarray) -> np.ndarray:
        """Labels as an ``(n, c)`` float matrix (the label itself, ``c = 1``)."""
        return np.asarray(y, dtype=np.float64)[:, None]

    def from_matrix(self, values: np.ndarray) -> np.ndarray:
        """Rows of :meth:`label_matrix` back as predictions the metrics take."""
        return values[:, 0]

    history_stype: ClassVar[str] = "numerical"

    # -- the model -----------------------------------------------------------------------
    out_channels: int = 1
    #: classes of a multiclass label (None: the label is one number)
    num_classes: int | None = None

    def target_stats(self, y: Tensor) -> tuple | None:
        """Statistics of the train labels the loss and the output mapping use (None)."""
        return None

    def loss(self, pred: Tensor, y: Tensor, stats: Tensor | None) -> Tensor:
        raise NotImplementedError

    def prediction(self, pred: Tensor, stats: Tensor | None) -> Tensor:
        """The model's output as the metrics take it."""
        raise NotImplementedError

    def from_base(self, out: Tensor, base: Tensor, stats: Tensor | None) -> Tensor:
        """The model's output as a correction of ``base`` (a prior logit, class scores)."""
        return out + base

    # -- baselines -----------------------------------------------------------------------
    def prior(self, y: np.ndarray) -> np.ndarray:
        """What a baseline predicts for a row it knows nothing of, from the train labels
        ``y`` (no NaN): their mean (the positive rate)."""
        return np.array(y.mean())

    def constants(self, y: np.ndarray) -> dict[str, np.ndarray]:
        """The constant baselines, from the train labels ``y`` (NaN possible)."""
        raise NotImplementedError

    #: regression starts from each row's last visible label (the model's ``base``, and
    #: LightGBM's boosting)
    starts_from_last_label: ClassVar[bool] = False

    def lightgbm_params(self, monitor: str) -> dict:
        raise NotImplementedError

    def label_range(self, y: np.ndarray) -> tuple[float, float] | None:
        """The bounds a kind keeps its predictions to, from the train labels ``y`` (None:
        no bounds)."""
        return None

    def from_raw(self, raw: np.ndarray, bounds: tuple | None = None) -> np.ndarray:
        """LightGBM's raw scores as the metrics take them (``bounds``: :meth:`label_range`
        of the train labels, for a kind that keeps its predictions to it)."""
        return raw

    def as_raw(self, pred: np.ndarray) -> np.ndarray:
        """A baseline's prediction (as the metrics take it) as the model's start, in the
        space of LightGBM's raw scores: here class probabilities ``(N, C)``, each at least
        :data:`FLOOR` (:func:`floored`), as log-probabilities (their softmax gives them
        back); NaN stays NaN."""
        return np.log(floored(pred, np.shape(pred)[-1]))

    # -- outputs -------------------------------------------------------------------------
    def prediction_columns(self, target_col: str, pred: Tensor) -> dict:
        """The columns of a prediction file for predictions ``pred``."""
        return {target_col: pred.numpy()}


#: The least probability of a class a baseline's prediction keeps as the model's start
#: (:meth:`NodeKind.as_raw`): a last label of 0 or 1 becomes a finite logit (±6.9).
FLOOR = 1e-3


def floored(p: np.ndarray, classes: int) -> np.ndarray:
    """Probabilities of ``classes`` classes mixed with the uniform distribution, each class
    at least :data:`FLOOR`: ``p (1 - classes FLOOR) + FLOOR``. An increasing affine map, the
    same for every row: it keeps the order of every class's probabilities across the rows
    and their ties (so every rank metric), each row's argmax and sum, and 0.5 (the binary
    threshold); so the model at its prior scores what the baseline scores."""
    return np.asarray(p, dtype=np.float64) * (1 - classes * FLOOR) + FLOOR


def asinh_space(y: Tensor, stats: Tensor) -> Tensor:
    """Regression targets in the space the model predicts: ``asinh((y - center) / scale)``
    (``stats``: ``(center, scale, low, high)``, :meth:`Regression.target_stats`)."""
    return robust_asinh(y, stats[0], stats[1])


class BinaryClassification(NodeKind):
    name = "binary_classification"
    relbench = ("binary_classification",)
    monitor = ("auroc", "max")

    def default_metrics(self, eval_k=12):
        from torchmetrics import classification as c
        return {"auroc": c.BinaryAUROC(validate_args=False),
                "average_precision": c.BinaryAveragePrecision(validate_args=False),
                "accuracy": c.BinaryAccuracy(validate_args=False),
                "f1": c.BinaryF1Score(validate_args=False)}

    def metric_target(self, y: Tensor) -> Tensor:
        return y.long()

    def evidence(self, labels):
        """The rarer class: AUROC and average precision rest on it."""
        y = pd.Series(labels).dropna()
        positive = int((y > 0).sum())
        return (positive, "positive") if 2 * positive <= len(y) else \
            (len(y) - positive, "negative")

    def loss(self, pred, y, stats):
        return F.binary_cross_entropy_with_logits(pred, y)

    def prediction(self, pred, stats):
        return pred.sigmoid()

    def constants(self, y):
        return {"constant (train rate)": self.prior(y[~np.isnan(y)])}

    def lightgbm_params(self, monitor):
        return {"objective": "binary"}

    def from_raw(self, raw, bounds=None):
        from scipy.special import expit  # SciPy: a dependency of LightGBM
        return expit(raw)

    def as_raw(self, pred):
        """The positive-class probability as a logit, kept within ``[FLOOR, 1 - FLOOR]``
        (:func:`floored`)."""
        p = floored(pred, 2)
        return np.log(p / (1 - p))


class Regression(NodeKind):
    """The model predicts ``asinh((y - center) / scale)`` (:meth:`target_stats`) and is
    trained with the L1 loss there: the L1 loss's minimiser, the conditional median,
    commutes with any increasing map, so the optimum is the same as in the target's units,
    while a heavy-tailed target (rel-hm's item sales span five orders of magnitude) comes
    within reach of a head on layer-normed features. Predictions map back and are clamped
    to ``[low, high]``, the range of the train targets (RelBench clamps to the 2nd-98th
    percentiles, which on item sales alone costs an exact prediction 0.022 MAE)."""

    name = "regression"
    relbench = ("regression",)
    monitor = ("mae", "min")
    starts_from_last_label = True

    def default_metrics(self, eval_k=12):
        import torchmetrics
        return {"mae": torchmetrics.MeanAbsoluteError(),
                "rmse": torchmetrics.MeanSquaredError(squared=False),
                "r2": torchmetrics.R2Score()}

    def target_stats(self, y: Tensor) -> tuple:
        """Median, mean absolute deviation from it (the L1 loss's own centre and scale;
        1 if zero), and :meth:`label_range` of ``y``."""
        y = y.float()
        center = y.median()
        scale = (y - center).abs().mean()
        scale = scale if scale > 0 else torch.ones(())
        return center.item(), scale.item(), *self.label_range(y.cpu().numpy())

    def loss(self, pred, y, stats):
        if stats is not None:
            y = asinh_space(y, stats)
        return F.l1_loss(pred, y)

    def prediction(self, pred, stats):
        if stats is None:
            return pred
        center, scale, low, high = stats
        return robust_sinh(pred, center, scale).clamp(low, high)

    def from_base(self, out, base, stats):
        """From each seed's last visible label or tree prior (NaN: none, the change from
        the median), in asinh space."""
        if stats is None:
            return out
        return out + torch.nan_to_num(asinh_space(base, stats), nan=0.0)

    def label_range(self, y):
        """The smallest and largest finite train label (None if there is none): the one
        rule for both the model's clamp (:meth:`target_stats`) and the trees'."""
        y = np.asarray(y)
        y = y[np.isfinite(y)]
        return (float(y.min()), float(y.max())) if len(y) else None

    def from_raw(self, raw, bounds=None):
        """Values clamped to ``bounds`` (:meth:`label_range` of the train labels), as the
        model's are (:meth:`prediction`): a tree boosted from last week's label can leave
        that range, and a baseline without the clamp would hand the model a lead that is
        only the clamp's."""
        return raw if bounds is None else np.clip(raw, *bounds)

    def constants(self, y):
        return {"zero": np.array(0.0), "train median": np.array(np.nanmedian(y))}

    def as_raw(self, pred):
        """Values are the model's start as they are."""
        return np.asarray(pred, dtype=np.float64)

    def lightgbm_params(self, monitor):
        return {"objective": "l1" if monitor == "mae" else "l2"}


class MulticlassClassification(NodeKind):
    name = "multiclass_classification"
    relbench = ("multiclass_classification",)
    monitor = ("accuracy", "max")
    counts_classes = True
    history_stype = "categorical"

    def default_metrics(self, eval_k=12):
        from torchmetrics import classification as c
        n = self.num_classes
        return {"accuracy": c.MulticlassAccuracy(n, average="micro", validate_args=False),
                "macro_f1": c.MulticlassF1Score(n, average="macro", validate_args=False)}

    def __init__(self, task_name: str, num_classes: int | None = None, **kwargs):
        super().__init__(task_name)
        if not num_classes:
            raise ValueError(f"task {task_name!r}: a multiclass_classification task needs "
                             "num_classes")
        self.num_classes = self.out_channels = int(num_classes)

    def train_target(self, values):
        return torch.tensor(np.asarray(values), dtype=torch.long)   # a copy (see Kind's)

    def metric_target(self, y):
        return y.long()

    def label_matrix(self, y):
        y, c = np.asarray(y, dtype=np.float64), self.num_classes
        bad = (y < 0) | (y >= c) | (y != np.round(y))
        if bad.any():
            raise ValueError(f"task {self.task_name!r}: label {y[bad][0]} is not a class in "
                             f"0..{c - 1}")
        return np.eye(c)[y.astype(np.int64)]

    def from_matrix(self, values):
        return values

    def loss(self, pred, y, stats):
        return F.cross_entropy(pred, y)

    def prediction(self, pred, stats):
        return pred.softmax(-1)

    def prior(self, y):
        """The train class frequencies (whose argmax is the majority class)."""
        return np.bincount(y.astype(np.int64), minlength=self.num_classes) / len(y)

    def constants(self, y):
        return {"constant (train class rates)": self.prior(y[~np.isnan(y)])}

    def lightgbm_params(self, monitor):
        return {"objective": "multiclass", "num_class": self.num_classes}

    def from_raw(self, raw, bounds=None):
        from scipy.special import softmax
        return softmax(raw, axis=1)

    def prediction_columns(self, target_col, pred):
        return {target_col: pred.argmax(-1).numpy(),
                **{f"prob_{c}": pred[:, c].numpy() for c in range(pred.size(-1))}}


#: the node family's kinds by name (a task's ``kind:``)
KINDS = {k.name: k for k in (BinaryClassification, Regression, MulticlassClassification)}
