"""Batch shapes: one policy a run, owning every padding of a batch and its undoing.

A compiled model wants no size of 0 or 1 (Dynamo would bake it into the graph) and, compiled
with ``dynamic=False``, few shapes; an eager one wants the batch as it was sampled. The
policy says, for the loaders (:class:`~rdl.training.datamodule.RelDataModule`) and the
module (:class:`~rdl.training.module.TaskModule`) alike:

- :class:`Exact` (eager): the batch as sampled; no pad row, node, edge or seed;
- :class:`Padded` (compiled with dynamic shapes, the default): ``PAD`` pad rows after each
  node type's rows (:class:`~rdl.graph.transforms.InputRows`) and ``PAD`` pad nodes and
  edges per type (:func:`pad_inputs`), which no real node hears, added in the loader
  (:class:`PadNodes`: in its workers, not in the training process at every step);
- :class:`Buckets` (``data.buckets``, a model compiled with ``dynamic=False``): pad rows,
  and each batch padded in its loader to the smallest of a few sizes
  (:mod:`rdl.training.buckets`); the pad seeds' outputs dropped;
- :class:`Tokens` (a token model): token sets (:class:`~rdl.graph.tokens.TokenSet`), with
  ``dynamic=False`` padded to the loader's batch size; the pad seeds' outputs dropped.

:func:`shapes_for` picks one from the model and the compile and data settings.
"""
from __future__ import annotations

import torch
from torch import Tensor

from rdl.graph.tokens import TokenSet
from rdl.graph.transforms import PAD
from rdl.training.buckets import BucketSettings, PadToBucket


class Shapes:
    """The policy's interface; this base is :class:`Exact`'s behaviour."""

    #: pad rows after each node type's rows in a batch's TensorFrames
    pad_rows: int = 0
    #: every batch of a loader has one size: the short last batch is padded, not merged
    static: bool = False
    #: token sets instead of edges (the model's inputs are :meth:`TaskModule.token_inputs`)
    tokens: bool = False
    #: one encoded row per token slot (static token sets)
    per_token: bool = False

    def transforms(self, dm, split: str, probe: bool = False) -> tuple[tuple, tuple]:
        """Loader transforms of ``split`` before and after the rows are gathered
        (``probe``: for the batches that place the buckets, unpadded)."""
        return (), ()

    def pads(self, seed_table: str) -> tuple:
        """Transforms every loader of the run ends with, its seeds at ``seed_table``
        nodes (after the rows are gathered)."""
        return ()

    def complete(self, batch, args: tuple, num_nodes: dict) -> tuple:
        """The model's inputs ``(tf_dict, edge_index_dict, time_dict, batch_dict,
        seed_time)`` of ``batch`` as the model is to see them."""
        return args

    def keep(self, batch, entity: str) -> int | None:
        """How many of the model's first outputs are real seeds (None: all)."""
        return None

    @property
    def keeps_all(self) -> bool:
        """Every output of the model is a real seed's, at every batch (:meth:`keep` is
        None): nothing is dropped on the host between the model and its loss."""
        return type(self).keep is Shapes.keep

    def spare(self, batch, node_type: str) -> Tensor:
        """Rows of ``node_type`` a model may pass as throwaway inputs (its pad rows)."""
        return torch.zeros(0, dtype=torch.long, device=batch[node_type].n_id.device)


class Exact(Shapes):
    """Eager: the batch as sampled."""


class Padded(Shapes):
    """Compiled with dynamic shapes: pad rows, nodes and edges, so that no size is 0 or 1."""

    pad_rows = PAD

    def pads(self, seed_table):
        return (PadNodes(seed_table),)

    def complete(self, batch, args, num_nodes):
        if getattr(batch, "pad_nodes", 0) == PAD:
            return args     # padded in the loader
        return pad_inputs(*args, num_nodes)

    def spare(self, batch, node_type):
        n = batch[node_type].num_nodes
        return torch.arange(n, n + PAD, device=batch[node_type].n_id.device)


class Buckets(Shapes):
    """Static shapes for a message-passing model: each batch padded to a bucket."""

    pad_rows, static = PAD, True

    def __init__(self, settings: BucketSettings):
        self.settings = settings

    def transforms(self, dm, split, probe=False):
        if probe:
            return (), ()
        return (), (PadToBucket(dm.task.entity_table, dm.bucket_plan(split), self.settings),)

    def complete(self, batch, args, num_nodes):
        if getattr(batch, "bucket", None) is not None:
            return args     # padded to its bucket in the loader
        # A batch that placed the buckets (unpadded): pad nodes as a dynamic run's.
        return Padded().complete(batch, args, num_nodes)

    def keep(self, batch, entity):
        return batch[entity].batch_size


class Tokens(Shapes):
    """A token model's token sets (``budgets``: tokens per seed and node type); with
    ``static``, padded to the loader's batch size."""

    pad_rows, tokens = PAD, True

    def __init__(self, budgets: dict, static: bool = False):
        self.budgets, self.static, self.per_token = budgets, static, static

    def transforms(self, dm, split, probe=False):
        pad_to = dm.split_batch_size(split) if self.static else None
        return (TokenSet(dm.task.entity_table, self.budgets, pad_to),), ()

    def keep(self, batch, entity):
        return batch[entity].seed_time.size(0)


def shapes_for(model, compiled: bool, dynamic, buckets: BucketSettings | None) -> Shapes:
    """The policy of a run: tokens for a token model, buckets where ``data.buckets`` is set,
    pads for a compiled model, else the batch as sampled."""
    if getattr(model, "takes_tokens", False):
        return Tokens(model.budgets, static=compiled and dynamic is False)
    if buckets is not None:
        return Buckets(buckets)
    return Padded() if compiled else Exact()


def pad_inputs(tf_dict: dict, edge_index_dict: dict, time_dict: dict, batch_dict: dict,
               seed_time: Tensor, num_nodes: dict) -> tuple:
    """The model's inputs completed for ``PAD`` pad nodes per node type, which follow the
    ``num_nodes[t]`` nodes of the batch (their rows are in ``tf``: see
    :class:`~rdl.graph.transforms.InputRows`): ``PAD`` edges between pad nodes for every
    edge type, and a time and a seed for each pad node (the first seed's: as old as it).

    Pad nodes send messages only to each other, so no real node's output changes; a
    node-level output ``[N_t + PAD, ...]`` keeps its real nodes first.

    These run at every step, ahead of the model, each op a kernel launch on a GPU: every
    pad block is a view of one index tensor (``[0, M)`` twice: a block's rows start at
    ``src`` and at ``M + dst``), so a step runs one op per padded tensor (its ``cat``)
    and two more, not four per edge type and two per timed node type (30 kernels to 12
    in the default user-churn batch).
    """
    m = max(num_nodes.values(), default=0) + PAD
    ids = torch.arange(m, device=seed_time.device).repeat(2)
    edge_index_dict = {
        (src, rel, dst): torch.cat([ei, ids.as_strided(
            (2, PAD), (m + num_nodes[dst] - num_nodes[src], 1), num_nodes[src])], dim=1)
        for (src, rel, dst), ei in edge_index_dict.items()}
    first_time, seed0 = seed_time[:1].expand(PAD), ids[:1].expand(PAD)
    time_dict = {nt: torch.cat([t, first_time]) for nt, t in time_dict.items()}
    batch_dict = {nt: torch.cat([b, seed0]) for nt, b in batch_dict.items()}
    return tf_dict, edge_index_dict, time_dict, batch_dict, seed_time


class PadNodes:
    """Loader transform (after :class:`~rdl.graph.transforms.InputRows`): the pad nodes
    and edges of :func:`pad_inputs`, added to the batch in place (each edge type's
    ``edge_index``, each timed node type's ``time`` and ``batch`` get their ``PAD``
    entries after the real ones; ``num_nodes`` stays the real nodes'), and
    ``batch.pad_nodes = PAD`` so that :meth:`Padded.complete` adds none.

    In the loader's workers these ops cost the training process nothing; at every step
    ahead of the model they were 12 ops (kernels on a GPU) in the default user-churn
    batch, outside every compiled graph, on the host's critical path. (Not in the graph:
    a batch with an empty node type or one node would reach it with a size of 0 or 1,
    which Dynamo bakes in: docs/compile.md.)

    Args:
        seed_table: the node type of the loader's seeds: the pad nodes are as old as its
            first seed (``seed_time[0]``), as the module's own padding makes them.
    """

    def __init__(self, seed_table: str):
        self.seed_table = seed_table

    def __call__(self, batch):
        types = [nt for nt in batch.node_types if "tf" in batch[nt]]
        timed = [nt for nt in types if "time" in batch[nt]]
        _, edges, time, seeds, _ = pad_inputs(
            {}, batch.collect("edge_index"), {nt: batch[nt].time for nt in timed},
            {nt: batch[nt].batch for nt in timed}, batch[self.seed_table].seed_time,
            {nt: batch[nt].num_nodes for nt in types})
        for et, ei in edges.items():
            batch[et].edge_index = ei
        for nt in timed:
            batch[nt].time, batch[nt].batch = time[nt], seeds[nt]
        batch.pad_nodes = PAD
        return batch
