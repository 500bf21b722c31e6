"""LightningDataModule: database -> task tables -> graph -> temporal loaders."""
from __future__ import annotations

import copy
import logging

import pandas as pd
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import NegativeSampling
from torch_geometric.transforms import Compose

from rdl import paths
from rdl.data.database import Database, DataError
from rdl.features.deep import DeepSettings
from rdl.graph.build import check_stypes, to_seconds
from rdl.graph.link_sampling import KeepArgsLinkLoader
from rdl.graph.sampler import TemporalSampler
from rdl.graph.transforms import (AttachLinkTarget, AttachTarget, Bidirectional, DropEdgeIds,
                                  InputRows)
from rdl.preparation import Prepared, check_task_tables, prepare
from rdl.tasks import HISTORY, Task
from rdl.training.batches import DealtBatches, batches
from rdl.training.buckets import (BucketSettings, PadToBucket, describe, padding, plan,
                                  sizes, smallest)
from rdl.training.shapes import Padded, Shapes
from rdl.training.transfer import to_device

log = logging.getLogger(__name__)


class RelDataModule(pl.LightningDataModule):
    """Builds, once, the split tables of ``task`` and the graph of ``db``, and serves
    temporal neighbour-sampled mini-batches of the task's seeds.

    Args:
        db: the database (``Database.reindex`` applied).
        task: the task.
        batch_size: seeds per batch (RelBench: 512).
        num_neighbors: fan-out per hop (RelBench: [128, 64]); one hop per model layer.
        strategy: ``uniform`` or ``last`` temporal sampling.
        strict: neighbours must be strictly older than the seed (RelBench v3 rule).
        label_history: node tasks: the task's earlier labels join the graph as the node
            type ``label_history``, linked to their entity; a seed sees a label once its
            window has closed (:meth:`~rdl.tasks.Task.history_table`). Ignored by link tasks.
        seed_features: node tasks: each seed's aggregated past (its label history, counts
            and sums of its child rows over recent windows; see
            :mod:`~rdl.features.seed`) as a vector the model adds to the seed.
        tree_prior: node tasks: the model's output is a correction to LightGBM's
            prediction, which is also a seed feature (:mod:`~rdl.features.prior`,
            leak-free by forward chaining); ``tree_blocks`` train blocks for it.
        deep_features: node tasks: the bounds of the depth-2 feature synthesis
            (:class:`~rdl.features.deep.DeepSettings` or a dict of them) for the
            "LightGBM (depth 2)" baseline, the prior where it is better on val; None: off.
        bidirectional: sampled edges carry messages both ways (see
            :class:`~rdl.graph.transforms.Bidirectional`); ID-GNN needs it.
        triplets: link tasks: train on (seed, true row, random row) triplets, each with its
            own subgraph (two-tower training), instead of on seed subgraphs.
        stypes: per-table stype overrides; text_embedder: for ``text_embedded`` columns.
        num_workers: loader worker processes.
        pin_memory: loaders put each batch in page-locked memory, so that its copy to
            the GPU runs without the host waiting (see :meth:`transfer_batch_to_device`);
            ``None``: when training on CUDA.
        now: also a split ``now``: the seeds of a prediction at the database's last time,
            with the graph holding every row (``rdl.predict split=now``).
        cache_dir: where materialised graphs are cached (default ``$RDL_CACHE`` or
            ``~/.cache/rdl``); ``False`` disables the cache.
        buckets: static-shape buckets for a model compiled with ``dynamic=False``
            (:class:`~rdl.training.buckets.BucketSettings` or a dict of them: ``count``,
            ``headroom``, ``probe``, ``multiple``; None: off): node tasks only. Each
            split's batches are padded to one of a few sizes placed at quantiles of its
            first ``probe`` batches (:mod:`rdl.training.buckets`).
    """

    def __init__(self, db: Database, task: Task, batch_size: int = 512,
                 num_neighbors: list[int] = (128, 64), strategy: str = "uniform",
                 strict: bool = False, label_history: bool = True, seed_features: bool = True,
                 tree_prior: bool = True, tree_blocks: int = 8, bidirectional: bool = False,
                 triplets: bool = False, stypes: dict | None = None, text_embedder=None,
                 num_workers: int = 0, pin_memory: bool | None = None,
                 cache_dir: str | None = None, eval_batch_size: int | None = None,
                 random_seed: int = 0, now: bool = False,
                 buckets: BucketSettings | dict | None = None,
                 deep_features: DeepSettings | dict | None = None):
        super().__init__()
        db = task.database(db)  # as the task needs it (a key for an autocomplete table)
        check_stypes(db, stypes)  # now, not after the task tables and the tree prior
        check_task_tables(task, db)
        #: static-shape buckets (:mod:`rdl.training.buckets`), and each split's profiles
        self.buckets = BucketSettings.of(buckets)
        if self.buckets and not task.kind.per_seed:
            raise ValueError(f"data.buckets: static-shape buckets pad node-task batches; task "
                             f"{task.name!r} is link prediction (set data.buckets=null)")
        self.bucket_profiles: dict[str, list[dict]] = {}
        self._bucket_examples: dict[str, list] = {}
        self.db, self.task = db, task
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size or batch_size
        self.num_neighbors = list(num_neighbors)
        self.strategy, self.strict, self.bidirectional = strategy, strict, bidirectional
        self.triplets = triplets
        self.label_history = label_history and task.kind.per_seed
        self.use_seed_features = seed_features and task.kind.per_seed
        self.use_tree_prior = tree_prior and task.kind.per_seed
        self.tree_blocks = tree_blocks
        self.deep_features = DeepSettings.of(deep_features) if task.kind.per_seed else None
        self.stypes, self.text_embedder = stypes, text_embedder
        self.num_workers, self.pin_memory = num_workers, pin_memory
        self.cache_dir = None if cache_dir is False else (cache_dir or paths.cache_dir())
        self.random_seed = random_seed
        #: a split "now" of the seeds of a prediction at the database's last time
        #: (:meth:`~rdl.tasks.Task.now_table`; ``rdl.predict split=now``)
        self.now = now
        #: how batches are shaped for the model (:mod:`rdl.training.shapes`; ``rdl.train``
        #: sets the run's): pad rows and nodes for a compiled model by default
        self.shapes: Shapes = Padded()
        #: ``(epoch, batches)``: the next train loader starts its first pass at that epoch,
        #: leaving out its first ``batches`` batches (a resumed run,
        #: :class:`~rdl.training.resume.ResumeState`)
        self.start_at: tuple[int, int] | None = None
        #: with several processes (DDP): the file where the first process of all
        #: leaves the split tables, features and tree prior for the others, which would
        #: each compute them again (``rdl.train`` sets it)
        self.prepared_path: str | None = None
        #: what :func:`~rdl.preparation.prepare` made of the task and the database (at setup)
        self.prepared: Prepared | None = None
        self._loaders = []

    def setup(self, stage: str | None = None) -> None:
        if self.prepared is not None:
            return
        self.prepared = prepare(
            self.task, self.db, strict=self.strict, label_history=self.label_history,
            seed_features=self.use_seed_features, tree_prior=self.use_tree_prior,
            tree_blocks=self.tree_blocks, stypes=self.stypes, text_embedder=self.text_embedder,
            cache_dir=self.cache_dir, random_seed=self.random_seed, now=self.now,
            shared_path=self.prepared_path, deep_features=self.deep_features)
        # Loaders sample from the graph without its TensorFrames: ``InputRows`` gathers
        # each distinct row once per batch.
        data = self.prepared.data
        self.tf_dict = {nt: data[nt].tf for nt in data.node_types if "tf" in data[nt]}
        self.graph = copy.copy(data)
        for nt in self.tf_dict:
            del self.graph[nt].tf
        # One index for all loaders. Each batch's sample is seeded by the batch's seeds
        # (rng_per_batch): evaluation repeats exactly, a resumed run draws what an
        # uninterrupted one drew; evaluation uses another random seed than training.
        self.sampler = TemporalSampler(data, self.num_neighbors, strategy=self.strategy,
                                       strict=self.strict, inclusive=(HISTORY,),
                                       random_seed=self.random_seed, rng_per_batch=True)

    # What was prepared (None before setup), as the loaders and ``rdl.train`` read it.
    tables = property(lambda self: self._prepared("tables"))
    history = property(lambda self: self._prepared("history"))
    tree_fit = property(lambda self: self._prepared("tree_fit"))
    tree_fits = property(lambda self: self._prepared("tree_fits"))
    prior = property(lambda self: self._prepared("prior"))
    seed_x = property(lambda self: self._prepared("seed_x"))
    seed_feature_names = property(lambda self: self._prepared("seed_feature_names"))
    data = property(lambda self: self._prepared("data"))
    col_stats = property(lambda self: self._prepared("col_stats"))

    def _prepared(self, name: str):
        return None if self.prepared is None else getattr(self.prepared, name)

    def train_targets(self) -> Tensor:
        return self.prepared.targets("train")

    def model_kwargs(self) -> dict:
        """Data-dependent constructor arguments of the model."""
        return self.prepared.model_kwargs()

    def base(self, split: str) -> Tensor | None:
        """What the model's output starts from (:meth:`Prepared.base
        <rdl.preparation.Prepared.base>`)."""
        return self.prepared.base(split)

    # -- loaders ----------------------------------------------------------------------------
    def link_lists(self, df) -> tuple[Tensor, Tensor]:
        """The target lists of a link task's table as a CSR ``(ptr, idx)`` over its rows."""
        lists = df[self.task.target_col]
        counts = torch.tensor(lists.map(len).to_numpy(), dtype=torch.long)
        ptr = torch.zeros(len(counts) + 1, dtype=torch.long)
        torch.cumsum(counts, 0, out=ptr[1:])
        flat = lists.explode().dropna().to_numpy(dtype="int64", copy=True)  # writable
        return ptr, torch.from_numpy(flat)

    def transform(self, split: str, probe: bool = False):
        """A split's loader transform: its labels, then the shapes' (``probe``: unpadded,
        for the batches that place the buckets)."""
        task, df = self.task, self.tables[split]
        if not task.kind.per_seed:
            ptr, idx = self.link_lists(df)
            attach = AttachLinkTarget(task.entity_table, task.target_table, ptr, idx,
                                      self.data[task.target_table].num_nodes)
        else:
            feats = None if self.seed_x is None else self.seed_x[split]
            attach = AttachTarget(task.entity_table, self.prepared.targets(split),
                                  self.base(split), feats)
        before, after = self.shapes.transforms(self, split, probe)
        return self._transforms(attach, *before, after=after)

    def bucket_plan(self, split: str) -> list[dict]:
        """The static-shape bucket profiles of a split's batches, planned once from its
        first ``data.buckets.probe`` batches (a pass of their own, in the main process:
        the loaders' order and samples are unchanged; the same on every process)."""
        if split not in self.bucket_profiles:
            task, df = self.task, self.tables[split]
            size = self.split_batch_size(split)
            order = batches(len(df), size, shuffle=split == "train", merge_tail=False,
                            random_seed=self.random_seed)
            probe = self._node_loader(split, self.transform(split, probe=True), order, 0)
            probes = [b for b, _ in zip(probe, range(self.buckets.probe))]
            observed = [sizes(b, task.entity_table) for b in probes]
            profiles = plan(observed, self.buckets, seeds=size)
            self.bucket_profiles[split] = profiles
            # an example batch per bucket, for compiling them all at the start: one that
            # falls in it (every probe fits the last)
            fits = [smallest(profiles, o) for o in observed]
            self._bucket_examples[split] = [
                probes[fits.index(j) if j in fits else 0] for j in range(len(profiles))]
            for j, p in enumerate(profiles):
                log.info("%s bucket %d: %s", split, j, describe(p))
            log.info("%s buckets: padding adds %s to its %d probe batches", split,
                     ", ".join(f"{v:.0%} {k}" for k, v in padding(observed, profiles).items()),
                     len(observed))
        return self.bucket_profiles[split]

    def bucket_examples(self, split: str) -> list:
        """One batch of ``split`` padded to each of its buckets (:func:`bucket_plan`), in
        order, for :func:`rdl.training.buckets.warm`."""
        profiles = self.bucket_plan(split)
        pad = PadToBucket(self.task.entity_table, profiles, self.buckets)
        return [pad.pad(copy.deepcopy(b), j)
                for j, b in enumerate(self._bucket_examples[split])]

    def split_batch_size(self, split: str) -> int:
        """Seeds per batch of a split's loader (static token sets are padded to it)."""
        return self.batch_size if split == "train" else self.eval_batch_size

    def rows_in(self, split: str, num_batches: int | float) -> int:
        """Rows of an evaluation split's table in the first ``num_batches`` batches of each
        process's loader (evaluation is in table order; with several processes, the
        first ``num_batches * world`` batches of a single-process pass)."""
        n = len(self.tables[split])
        if num_batches == float("inf"):
            return n
        sampler = self._batches(split, n, shuffle=False, quiet=True)
        world = 1
        if isinstance(sampler, DealtBatches):
            sampler, world = sampler.batches, sampler.world
        return sum(len(b) for b, _ in zip(sampler, range(int(num_batches) * world)))

    def _rank_world(self) -> tuple[int, int]:
        """This process's rank and the number of processes (1 outside a Trainer)."""
        trainer = self.trainer
        return (0, 1) if trainer is None else (trainer.global_rank, trainer.world_size)

    def _batches(self, split: str, n: int, shuffle: bool, quiet: bool = False):
        """The batch sampler of this process's share of a split's ``n`` seeds.

        rdl's loaders shard the seeds themselves (:mod:`rdl.training.batches`; Lightning's
        sampler injection is off): evaluation deals out the batches of a single-process
        pass, so its metrics equal one process's. A split with fewer batches than
        processes is cut into smaller batches (a process without a batch would skip the
        evaluation that the others wait for it in).
        """
        rank, world = self._rank_world()
        size = self.split_batch_size(split)
        if world > 1 and not shuffle and n // size < world:
            if n < world:
                raise DataError(f"split {split!r} has {n} rows, fewer than the {world} "
                                "processes evaluating it; train on fewer devices")
            if not quiet and rank == 0:
                log.warning("split %s: %d rows make fewer batches of %d than the %d "
                            "processes; evaluated in batches of %d (its metrics can differ "
                            "slightly from one process's, whose batches are sampled "
                            "otherwise)", split, n, size, world, n // world)
            size = n // world
        # Static shapes pad the last, short batch instead of merging it into a larger one.
        order = batches(n, size, shuffle, merge_tail=not self.shapes.static,
                        random_seed=self.random_seed, rank=rank, world=world)
        if split == "train" and shuffle and self.start_at is not None:
            (epoch, done), self.start_at = self.start_at, None
            order.sampler.set_epoch(epoch)
            order.skip(done)
        return order

    def _transforms(self, *more, after=()):
        """The loader's transforms, in order. ``Compose.forward``, not the ``Compose``
        itself: called, a PyG transform first copies the batch (so as not to change a
        dataset's own graphs), and a loader's batch is a copy already (PyG's filter
        makes it): one copy of every store fewer at every batch."""
        both = [Bidirectional()] if self.bidirectional else []
        rows = InputRows(self.tf_dict, self.shapes.pad_rows, per_token=self.shapes.per_token)
        return Compose([*both, *more, rows, DropEdgeIds(), *after]).forward

    def loader(self, split: str, shuffle: bool | None = None) -> NodeLoader:
        n, train = len(self.tables[split]), split == "train"
        order = self._batches(split, n, train if shuffle is None else shuffle)
        return self._keep(self._node_loader(split, self.transform(split), order,
                                            self.num_workers, self._pin()))

    def _node_loader(self, split: str, transform, batch_sampler, num_workers: int,
                     pin_memory: bool = False) -> NodeLoader:
        task, df = self.task, self.tables[split]
        sampler = (self.sampler if split == "train"
                   else self.sampler.with_random_seed(self.random_seed + 1))
        return NodeLoader(
            self.graph, node_sampler=sampler,
            input_nodes=(task.entity_table,
                         torch.from_numpy(df[task.entity_col].to_numpy(copy=True))),  # writable
            input_time=to_seconds(df["timestamp"]),
            transform=transform,
            batch_sampler=batch_sampler,
            num_workers=num_workers,
            persistent_workers=num_workers > 0,
            # Always in the loader's fetch (the worker's, or this process's with no
            # worker), so that the batch the transforms make is what torch's DataLoader
            # pins: filtered after the fetch, only PyG's sampler output is pinned and the
            # batch reaches the GPU from pageable memory (a sync per copy).
            filter_per_worker=True,
            pin_memory=pin_memory,
        )

    def _pin(self) -> bool:
        """Pin batches (:attr:`pin_memory`; by default when the trainer trains on CUDA)."""
        if self.pin_memory is not None:
            return bool(self.pin_memory)
        trainer = getattr(self, "trainer", None)
        return trainer is not None and trainer.strategy.root_device.type == "cuda"

    def _keep(self, loader):
        self._loaders.append(loader)
        return loader

    def teardown(self, stage: str | None = None) -> None:
        # PyG loaders and their iterators reference each other, so persistent workers are
        # not told to stop when the loader is dropped and each waits out a 5 s timeout
        # (felt by sweeps, notebooks and tests that train in one process).
        for loader in self._loaders:
            it, loader._iterator = getattr(loader, "_iterator", None), None
            if it is not None and hasattr(it, "_shutdown_workers"):
                it._shutdown_workers()
        self._loaders.clear()

    def dst_loader(self, split: str) -> NodeLoader:
        """Every row of a link task's target table, seeded at the split's time (two-tower
        evaluation embeds all candidates once per evaluation time)."""
        task = self.task
        t = self.tables[split]["timestamp"].iloc[0]  # a split's one seed time (val, test, now)
        n = self.data[task.target_table].num_nodes
        return NodeLoader(
            self.graph, node_sampler=self.sampler.with_random_seed(self.random_seed + 1),
            input_nodes=(task.target_table, torch.arange(n)),
            input_time=to_seconds(pd.Series([t] * n)),
            transform=self._transforms(),
            batch_sampler=batches(n, self.eval_batch_size, False),
        )

    def triplet_loader(self) -> LinkLoader:
        """Training links of a link task, one per (seed row, true target): each endpoint and
        one random target row get their own subgraph at the link's time."""
        task, df = self.task, self.tables["train"]
        pairs = df[["timestamp", task.entity_col, task.target_col]].explode(task.target_col)
        # copy=True: a writable array (a column is read-only under pandas' copy-on-write;
        # pandas copies only where the conversion did not)
        src = torch.from_numpy(pairs[task.entity_col].to_numpy(dtype="int64", copy=True))
        dst = torch.from_numpy(pairs[task.target_col].to_numpy(dtype="int64", copy=True))
        link_type = (task.entity_table, "links", task.target_table)
        return self._keep(KeepArgsLinkLoader(
            self.graph, link_sampler=self.sampler,
            edge_label_index=(link_type, torch.stack([src, dst])),
            edge_label_time=to_seconds(pairs["timestamp"]),
            neg_sampling=NegativeSampling("triplet", amount=1), transform=self._transforms(),
            batch_sampler=self._batches("train", len(src), shuffle=True),
            num_workers=self.num_workers, persistent_workers=self.num_workers > 0,
            filter_per_worker=True, pin_memory=self._pin(),  # see _node_loader
        ))

    def transfer_batch_to_device(self, batch, device: torch.device, dataloader_idx: int):
        """The batch on ``device``, its copies to a GPU issued without waiting for them
        (:func:`~rdl.training.transfer.to_device`). The data module's hook, not the
        LightningModule's: it knows what its loaders make, and Lightning takes a data
        module's batch hooks over the module's (one of the module's beside a data module
        is used with a warning)."""
        moved = to_device(batch, device)
        if moved is None:
            return super().transfer_batch_to_device(batch, device, dataloader_idx)
        return moved

    def train_dataloader(self):
        if self.triplets:
            return self.triplet_loader()
        return self.loader("train")

    def val_dataloader(self):
        return self.loader("val")

    def test_dataloader(self):
        return self.loader("test")

    def predict_dataloader(self):
        """The seeds of :attr:`predict_split` (``rdl.predict`` sets it), in table order."""
        return self.loader(getattr(self, "predict_split", "test"))

