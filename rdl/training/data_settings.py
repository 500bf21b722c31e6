"""The data settings of a run (``data.*``), as one frozen object built once from the config.

Where each default lives, once:

- every setting of ``data/loader/default.yaml`` has its default there (the YAML is what
  a user reads and overrides); Python reads it from there too (:meth:`DataSettings.of`),
  and :class:`DataSettings` has no default of its own for it;
- the settings a task or a model may choose (:data:`CHOSEN`) are null in the YAML, meaning
  "the task's ``data_defaults``, else the model's, else this class's default", and that
  last default is the field's default here (:func:`rdl.settings.with_data_defaults`);
- what the run decides (the random seed, the ``now`` split, the split ``rdl.predict``
  scores) comes from the run, with its default here.

Nothing writes into a :class:`DataSettings` after it is built (``frozen``): a changed
setting is a new object (:func:`dataclasses.replace`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from omegaconf import OmegaConf

from rdl.baselines.ranker.settings import RankerSettings
from rdl.features.deep import DeepSettings
from rdl.paths import CONF_DIR
from rdl.training.buckets import BucketSettings
from rdl.training.loader_workers import check as check_loader
from rdl.training.sampler_device import SamplerSettings

#: the data settings a task or a model may choose (``data_defaults`` in its own section)
CHOSEN = ("num_neighbors", "strategy", "bidirectional", "triplets")


#: what the node model's prior is chosen among (``data.prior_from``;
#: :mod:`rdl.families.node.prior_choice`)
AMONG = ("all", "trees")
#: which LightGBM is the trees' candidate for the prior (``data.prior_trees``): the mean of
#: depth 1 and 2 weighted as the train split's forward-chained weeks choose
#: (:mod:`rdl.families.node.prior_weight`), their plain mean (:mod:`rdl.baselines.tree_mean`),
#: or the one better on val
TREES = ("chained", "mean", "best")


def check_prior(among: str, margin: float = 0.0, trees: str = "mean") -> None:
    """One clear error where ``data.prior_from`` is not one of :data:`AMONG`,
    ``data.prior_margin`` is not a number of standard errors >= 0, or ``data.prior_trees``
    not one of :data:`TREES`."""
    if trees not in TREES:
        raise ValueError(f"data.prior_trees={trees!r}: expected one of {', '.join(TREES)}")
    if among not in AMONG:
        raise ValueError(f"data.prior_from={among!r}: expected one of {', '.join(AMONG)}")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin >= 0:
        raise ValueError(f"data.prior_margin={margin!r}: expected a number of standard "
                         "errors >= 0 (0: the baseline best on val, whatever its lead)")


@dataclass(frozen=True)
class DataSettings:
    """``data.*`` (``rdl/conf/data/loader/default.yaml`` documents each).

    Args:
        batch_size: seeds per batch (RelBench: 512); eval_batch_size: per evaluation
            batch (None: ``batch_size``).
        strict: neighbours must be strictly older than the seed (RelBench v3 rule).
        label_history, seed_features, tree_prior, prior_from, prior_margin, prior_trees,
            tree_blocks, tree_rows, train_seeds, feature_cells:
            the node family's (:mod:`rdl.families.node`); a link task leaves them out.
            deep_features: the depth-2 synthesis's bounds (node tasks' trees; link tasks'
            ranker).
        ranker: the link family's LightGBM ranker baseline
            (:class:`~rdl.baselines.ranker.RankerSettings`; None: not fitted).
        stypes: per-table stype overrides; text_embedder: for ``text_embedded`` columns.
        num_workers: loader worker processes (``auto``: from the cores); prefetch_factor:
            batches each keeps ready (None: PyTorch's default; ``auto``); both read by
            :class:`~rdl.training.loader_workers.LoaderWorkers`. pin_memory: page-locked
            batches (None: when training on CUDA). pack_batches: a worker's batch
            reaches the training process as one shared buffer (``device``: and the GPU
            as one copy; :mod:`rdl.training.packing`).
        sampler: where the sampler runs and batches are built (``device``; None: on the
            CPU, in the loader; :class:`~rdl.training.sampler_device.SamplerSettings`).
        cache_dir: where materialised graphs are cached (None: ``$RDL_CACHE`` or
            ``~/.cache/rdl``; False: no cache).
        buckets: static-shape buckets for a model compiled with ``dynamic=False`` (node
            tasks; :class:`~rdl.training.buckets.BucketSettings`).
        num_neighbors: fan-out per hop, one hop per message-passing layer (the run trims
            it, :func:`rdl.api.prepare`); strategy: ``uniform``, ``last`` or ``mix``;
            bidirectional: messages both ways (ID-GNN); triplets: link tasks train on
            (seed, true row, random row) triplets (two-tower).
        random_seed: the run's seed (``seed``); now: also a split ``now``, the seeds of a
            prediction at the database's last time (``rdl.predict split=now``);
            predict_split: the split ``predict_dataloader`` serves.
    """

    batch_size: int
    eval_batch_size: int | None
    strict: bool
    label_history: bool
    seed_features: bool
    tree_prior: bool
    prior_from: str
    prior_margin: float
    prior_trees: str
    tree_blocks: int
    tree_rows: int
    train_seeds: int | None
    feature_cells: int | None
    deep_features: DeepSettings | None
    ranker: RankerSettings | None
    text_embedder: object
    num_workers: int | str
    prefetch_factor: int | str | None
    pin_memory: bool | None
    pack_batches: bool | str
    cache_dir: str | bool | None
    buckets: BucketSettings | None
    sampler: SamplerSettings
    # a database's own (its data YAML's ``stypes``, where it has any): none
    stypes: dict | None = None
    # chosen by the task or the model where the config leaves them null
    num_neighbors: tuple = (128, 64)
    strategy: str = "uniform"
    bidirectional: bool = False
    triplets: bool = False
    # the run's
    random_seed: int = 0
    now: bool = False
    predict_split: str = "test"

    def __post_init__(self):
        check_loader(self.num_workers, self.prefetch_factor)
        if not (isinstance(self.pack_batches, bool) or self.pack_batches == "device"):
            raise ValueError(f"data.pack_batches={self.pack_batches!r}: expected true (a "
                             "loader worker's batch reaches the training process as one "
                             "shared buffer), device (and reaches the GPU as one copy) or "
                             "false (each tensor on its own)")
        check_prior(self.prior_from, self.prior_margin, self.prior_trees)
        rows = self.tree_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ValueError(f"data.tree_rows={rows!r}: expected a whole number >= 1 (the "
                             "train rows each LightGBM is fitted on, a seeded sample where "
                             "there are more)")
        cap = self.train_seeds
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"data.train_seeds={cap!r}: expected a whole number >= 1 (the "
                             "train rows a node task keeps, a seeded sample where there are "
                             "more) or null (all)")
        cells = self.feature_cells
        if cells is not None and (isinstance(cells, bool) or not isinstance(cells, int)
                                  or cells < 1):
            raise ValueError(f"data.feature_cells={cells!r}: expected a whole number >= 1 (the "
                             "cells, rows by columns, of a node task's train feature table) "
                             "or null (no bound but data.train_seeds)")
        # dicts from the config become the objects they describe, once, here
        convert = {"deep_features": DeepSettings.of(self.deep_features),
                   "ranker": RankerSettings.of(self.ranker),
                   "buckets": BucketSettings.of(self.buckets),
                   "sampler": SamplerSettings.of(self.sampler),
                   "num_neighbors": tuple(self.num_neighbors)}
        for name, value in convert.items():
            object.__setattr__(self, name, value)
        self.sampler.check_loader(self.num_workers, self.pin_memory)

    def batch_size_of(self, split: str) -> int:
        """Seeds per batch of a split's loader."""
        return self.batch_size if split == "train" else (self.eval_batch_size or self.batch_size)

    @classmethod
    def of(cls, **settings) -> "DataSettings":
        """The packaged defaults (``data/loader/default.yaml``, the one place they live)
        with ``settings`` instead: for code and tests that build data without Hydra."""
        from hydra.utils import instantiate
        packaged = OmegaConf.load(CONF_DIR / "data" / "loader" / "default.yaml")
        given = {k: v for k, v in packaged.items() if k != "_target_"}
        given = instantiate(OmegaConf.create(given), _convert_="all")
        given = {k: v for k, v in given.items() if v is not None or k not in CHOSEN}
        return cls(**{**given, **settings})

    @classmethod
    def from_config(cls, data, **run) -> "DataSettings":
        """From a composed ``data`` section (its ``db`` left out: the database is read
        apart) and what the run decides (``random_seed``, ``now``, ``predict_split``,
        the trimmed ``num_neighbors``)."""
        from hydra.utils import instantiate
        keep = [k for k in data if k not in ("db", "_target_")]
        given = instantiate(OmegaConf.masked_copy(data, keep), _convert_="all")
        return cls(**{**given, **run})

    def replace(self, **changes) -> "DataSettings":
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)
