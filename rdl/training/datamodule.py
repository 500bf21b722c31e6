"""The LightningDataModule every family's shares: temporal neighbour-sampled loaders over a
prepared graph (:mod:`rdl.preparation`), shaped as the run's model needs
(:mod:`rdl.training.shapes`). A family's data module (:mod:`rdl.families.node.data`,
:mod:`rdl.families.link.data`) says what a batch's labels are and adds its own loaders.

Everything a data module reads is given to it when it is made: the run's settings
(:class:`~rdl.training.data_settings.DataSettings`), what was prepared, and how batches are
shaped. A run with other shapes makes another (:meth:`RelDataModule.with_shapes`).
"""
from __future__ import annotations

import copy
import inspect
import logging

import pytorch_lightning as pl
import torch
from torch_geometric.loader import NodeLoader
from torch_geometric.transforms import Compose

from rdl.data.database import DataError
from rdl.graph.build import to_seconds
from rdl.graph.sampler import TemporalSampler
from rdl.graph.store import index_file
from rdl.graph.transforms import Bidirectional, DropEdgeIds, InputRows
from rdl.preparation import Prepared
from rdl.tasks import HISTORY
from rdl.training.batches import DealtBatches, batches
from rdl.training.data_settings import DataSettings
from rdl.training.loader_workers import LoaderWorkers
from rdl.training.packing import DevicePackedNodeLoader, PackedNodeLoader
from rdl.training.sampler_device import resident
from rdl.training.shapes import Padded, Shapes
from rdl.training.transfer import to_device

log = logging.getLogger(__name__)


class RelDataModule(pl.LightningDataModule):
    """Serves temporal neighbour-sampled mini-batches of a prepared task's seeds.

    Args:
        settings: the run's data settings.
        prepared: the task's split tables and graph (a family's ``prepare``).
        shapes: how batches are shaped for the model (:mod:`rdl.training.shapes`; the
            run's, from its model and compile settings): pad rows and nodes for a
            compiled model by default.
    """

    def __init__(self, settings: DataSettings, prepared: Prepared, shapes: Shapes | None = None,
                 like: "RelDataModule | None" = None):
        super().__init__()
        self.settings, self.prepared = settings, prepared
        self.shapes: Shapes = shapes or Padded()
        # ``(epoch, batches)``: the next train loader starts its first pass at that epoch,
        # leaving out its first ``batches`` batches (a resumed run, :meth:`start_at`)
        self._start_at: tuple[int, int] | None = None
        self._loaders = []
        self._logged_workers = None   # the loader workers last logged (loader_kwargs)
        #: where batches are built (``data.sampler.device``; None: on the CPU, in the
        #: loader): what a batch is built from is put there once, here and by
        #: :meth:`on_device` (:mod:`rdl.training.sampler_device`)
        self.device = settings.sampler.resident
        if like is not None:   # the same data otherwise shaped: its loaders' graph and index
            self.tf_dict, self.graph, self.sampler = like.tf_dict, like.graph, like.sampler
            self._placed = like._placed
            return
        self._placed: dict = {}
        # Loaders sample from the graph without its TensorFrames: ``InputRows`` gathers
        # each distinct row once per batch.
        data = prepared.data
        self.tf_dict = {nt: resident(data[nt].tf, self.device)
                        for nt in data.node_types if "tf" in data[nt]}
        self.graph = copy.copy(data)
        for nt in self.tf_dict:
            del self.graph[nt].tf
        self.graph = resident(self.graph, self.device)   # (the copy's stores, not data's)
        # One index for all loaders. Each batch's sample is seeded by the batch's seeds
        # (rng_per_batch): evaluation repeats exactly, a resumed run draws what an
        # uninterrupted one drew; evaluation uses another random seed than training.
        seed = settings.random_seed
        self.sampler = TemporalSampler(data, list(settings.num_neighbors),
                                       strategy=settings.strategy, strict=settings.strict,
                                       inclusive=(HISTORY,), random_seed=seed,
                                       rng_per_batch=True, device=self.device,
                                       index_file=index_file(data))

    @property
    def eval_sampler(self) -> TemporalSampler:
        """A sampler of its own for each evaluation loader: the training sampler's index,
        another random seed."""
        return self.sampler.with_random_seed(self.settings.random_seed + 1)

    def with_shapes(self, shapes: Shapes) -> "RelDataModule":
        """The same data with batches shaped as ``shapes`` say (the run's), sampled from
        this one's graph and index (built once, and put on the sampler's device once)."""
        return type(self)(self.settings, self.prepared, shapes, like=self)

    def on_device(self, key, make) -> tuple:
        """``make()``, a tuple of what a split's batches are built from (tensors or None),
        on the device batches are built on: put there once per ``key`` (with batches built
        in the loader, on the CPU, as made)."""
        if self.device is None:
            return make()
        if key not in self._placed:
            self._placed[key] = tuple(resident(x, self.device) for x in make())
        return self._placed[key]

    def start_at(self, start: tuple[int, int] | None) -> None:
        """The next train loader starts its first pass at epoch ``start[0]``, leaving out
        its first ``start[1]`` batches (a resumed run,
        :class:`~rdl.training.resume.ResumeState`); None: from the start."""
        self._start_at = start

    #: the start :meth:`start_at` was told, until a train loader takes it
    pending_start = property(lambda self: self._start_at)

    # What was prepared, as the loaders, the report and ``rdl.predict`` read it.
    task = property(lambda self: self.prepared.task)
    db = property(lambda self: self.prepared.db)
    tables = property(lambda self: self.prepared.tables)
    data = property(lambda self: self.prepared.data)
    col_stats = property(lambda self: self.prepared.col_stats)

    def model_kwargs(self, model_cls: type | None = None) -> dict:
        """Data-dependent constructor arguments of the model; with ``model_cls``, also
        those it names of the ones a model gets only by naming them (a node model's
        ``num_entities``): a model written before them, which passes its ``**kwargs`` on
        (to :class:`~rdl.nn.RelGNN`), is given what it was."""
        kwargs = self.prepared.model_kwargs()
        if model_cls is not None:
            named = inspect.signature(model_cls).parameters
            kwargs.update({k: v for k, v in self.prepared.named_model_kwargs().items()
                           if k in named})
        return kwargs

    def transform(self, split: str, probe: bool = False):
        """A split's loader transform: its labels (the family's), then the shapes'."""
        raise NotImplementedError

    def split_batch_size(self, split: str) -> int:
        """Seeds per batch of a split's loader (static token sets are padded to it)."""
        return self.settings.batch_size_of(split)

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
                        random_seed=self.settings.random_seed, rank=rank, world=world)
        if split == "train" and shuffle and self._start_at is not None:
            (epoch, done), self._start_at = self._start_at, None
            order.sampler.set_epoch(epoch)
            order.skip(done)
        return order

    def _transforms(self, *more, after=(), seeds: str | None = None):
        """The loader's transforms, in order, its seeds at ``seeds`` nodes (None: the
        task's entity). ``Compose.forward``, not the ``Compose`` itself: called, a PyG
        transform first copies the batch (so as not to change a dataset's own graphs),
        and a loader's batch is a copy already (PyG's filter makes it): one copy of every
        store fewer at every batch."""
        both = [Bidirectional()] if self.settings.bidirectional else []
        rows = InputRows(self.tf_dict, self.shapes.pad_rows, per_token=self.shapes.per_token)
        pads = self.shapes.pads(seeds or self.task.entity_table)
        return Compose([*both, *more, rows, DropEdgeIds(), *after, *pads]).forward

    def loader(self, split: str, shuffle: bool | None = None) -> NodeLoader:
        n, train = len(self.tables[split]), split == "train"
        order = self._batches(split, n, train if shuffle is None else shuffle)
        return self._keep(self._node_loader(split, self.transform(split), order,
                                            **self.loader_kwargs()))

    def _node_loader(self, split: str, transform, batch_sampler, num_workers: int = 0,
                     pin_memory: bool = False, **workers) -> NodeLoader:
        task, df = self.task, self.tables[split]
        sampler = self.sampler if split == "train" else self.eval_sampler
        pack = self.settings.pack_batches
        if pack == "device" and split != "train":
            # packed to the device only where Lightning's fit loop moves every batch
            # through transfer_batch_to_device; evaluation loaders are read directly too
            # (the link family's blend): theirs are unpacked as they are served
            pack = True
        return {True: PackedNodeLoader, "device": DevicePackedNodeLoader}.get(pack, NodeLoader)(
            self.graph, node_sampler=sampler,
            input_nodes=(task.entity_table,
                         torch.from_numpy(df[task.entity_col].to_numpy(copy=True))),  # writable
            input_time=to_seconds(df["timestamp"]),
            transform=transform,
            batch_sampler=batch_sampler,
            num_workers=num_workers,
            **{"persistent_workers": num_workers > 0, **workers},
            # Always in the loader's fetch (the worker's, or this process's with no
            # worker), so that the batch the transforms make is what torch's DataLoader
            # pins: filtered after the fetch, only PyG's sampler output is pinned and the
            # batch reaches the GPU from pageable memory (a sync per copy).
            filter_per_worker=True,
            pin_memory=pin_memory,
        )

    def loader_kwargs(self) -> dict:
        """The loaders' workers, prefetch and pinning (``data.num_workers``,
        ``data.prefetch_factor``, ``data.pin_memory``), as the DataLoader takes them; what
        ``auto`` chose is logged once. Batches built on the sampler's device
        (``data.sampler.device``) are built in this process and not pinned."""
        if self.device is not None:
            return {"num_workers": 0, "pin_memory": False}
        trainer = getattr(self, "trainer", None)
        on_cuda = trainer is not None and trainer.strategy.root_device.type == "cuda"
        processes = getattr(trainer, "num_devices", 1)   # each shares this machine's cores
        plan = LoaderWorkers.of(self.settings.num_workers, self.settings.prefetch_factor,
                                on_cuda, processes)
        if plan != self._logged_workers and (plan.cores is not None
                                             or self.settings.prefetch_factor == "auto"):
            log.info("%s", plan.describe())
        self._logged_workers = plan
        pin = self.settings.pin_memory
        return {**plan.loader_kwargs(), "pin_memory": on_cuda if pin is None else bool(pin)}

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
        return self.loader("train")

    def val_dataloader(self):
        return self.loader("val")

    def test_dataloader(self):
        return self.loader("test")

    def predict_dataloader(self):
        """The seeds of ``data.predict_split`` (``rdl.predict``'s ``split``), in table order."""
        return self.loader(self.settings.predict_split)

