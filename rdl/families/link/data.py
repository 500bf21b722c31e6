"""The link family's data module: batches seeded at the task's source rows, each with its
true target rows; every target row seeded at a split's time (a model that embeds the
candidates once per evaluation time); (seed, true row, random row) triplets for training
(two-tower). Static-shape buckets are the node family's: a link task refuses them
(:meth:`rdl.families.link.family.LinkFamily.check`)."""
from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import NegativeSampling

from rdl.graph.build import to_seconds
from rdl.graph.link_sampling import KeepArgsLinkLoader
from rdl.graph.transforms import AttachLinkTarget
from rdl.training.batches import batches
from rdl.training.datamodule import RelDataModule
from rdl.training.packing import Packing


class LinkDataModule(RelDataModule):
    """A link task's loaders (:class:`~rdl.training.datamodule.RelDataModule`'s, and
    :meth:`dst_loader` and :meth:`triplet_loader`)."""

    def link_lists(self, df) -> tuple[Tensor, Tensor]:
        """The target lists of a link task's table as a CSR ``(ptr, idx)`` over its rows."""
        lists = df[self.task.target_col]
        counts = torch.tensor(lists.map(len).to_numpy(), dtype=torch.long)
        ptr = torch.zeros(len(counts) + 1, dtype=torch.long)
        torch.cumsum(counts, 0, out=ptr[1:])
        flat = lists.explode().dropna().to_numpy(dtype="int64", copy=True)  # writable
        return ptr, torch.from_numpy(flat)


    def transform(self, split: str, probe: bool = False):
        """A split's loader transform: its seeds' true target rows, then the shapes'."""
        task = self.task
        ptr, idx = self.on_device(("lists", split), lambda: self.link_lists(self.tables[split]))
        attach = AttachLinkTarget(task.entity_table, task.target_table, ptr, idx,
                                  self.data[task.target_table].num_nodes)
        before, after = self.shapes.transforms(self, split, probe)
        return self._transforms(attach, *before, after=after)

    def dst_loader(self, split: str) -> NodeLoader:
        """Every row of a link task's target table, seeded at the split's time (two-tower
        evaluation embeds all candidates once per evaluation time)."""
        task = self.task
        t = self.tables[split]["timestamp"].iloc[0]  # a split's one seed time (val, test, now)
        n = self.data[task.target_table].num_nodes
        return NodeLoader(
            self.graph, node_sampler=self.eval_sampler,
            input_nodes=(task.target_table, torch.arange(n)),
            input_time=to_seconds(pd.Series([t] * n)),
            transform=self._transforms(seeds=task.target_table),
            batch_sampler=batches(n, self.split_batch_size(split), False),
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
        loader = {True: PackedLinkLoader, "device": DevicePackedLinkLoader}.get(
            self.settings.pack_batches, KeepArgsLinkLoader)
        return self._keep(loader(
            self.graph, link_sampler=self.sampler,
            edge_label_index=(link_type, torch.stack([src, dst])),
            edge_label_time=to_seconds(pairs["timestamp"]),
            neg_sampling=NegativeSampling("triplet", amount=1), transform=self._transforms(),
            batch_sampler=self._batches("train", len(src), shuffle=True),
            filter_per_worker=True, **self.loader_kwargs(),  # see _node_loader
        ))


    def train_dataloader(self):
        if self.settings.triplets:
            return self.triplet_loader()
        return self.loader("train")


class PackedLinkLoader(Packing, KeepArgsLinkLoader):
    """:class:`~rdl.graph.link_sampling.KeepArgsLinkLoader`, its workers' batches packed
    (``data.pack_batches``, :mod:`rdl.training.packing`)."""


class DevicePackedLinkLoader(PackedLinkLoader):
    """:class:`PackedLinkLoader` serving packed batches (``data.pack_batches=device``)."""

    unpack_in_iterator = False
