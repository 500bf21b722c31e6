"""The node family's data module: batches seeded at the task's entities, each with its
label, what the model's output starts from (the tree prior, or the last label) and its seed
features; static-shape buckets for a model compiled with ``dynamic=False``."""
from __future__ import annotations

import copy
import logging

from torch import Tensor

from rdl.graph.transforms import AttachTarget
from rdl.training.batches import batches
from rdl.training.buckets import PadToBucket, describe, padding, plan, sizes, smallest
from rdl.training.datamodule import RelDataModule

log = logging.getLogger("rdl.training.datamodule")


class NodeDataModule(RelDataModule):
    """A node task's loaders (:class:`~rdl.training.datamodule.RelDataModule`'s, with
    :class:`~rdl.families.node.prepare.NodePrepared`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        #: each split's static-shape bucket profiles, planned on first use
        self.bucket_profiles: dict[str, list[dict]] = {}
        self._bucket_examples: dict[str, list] = {}

    buckets = property(lambda self: self.settings.buckets)
    strict = property(lambda self: self.settings.strict)
    deep_features = property(lambda self: self.settings.deep_features)
    history = property(lambda self: self.prepared.history)
    tree_fit = property(lambda self: self.prepared.tree_fit)
    tree_fits = property(lambda self: self.prepared.tree_fits)
    prior = property(lambda self: self.prepared.prior)
    prior_name = property(lambda self: self.prepared.prior_name)
    seed_x = property(lambda self: self.prepared.seed_x)
    seed_feature_names = property(lambda self: self.prepared.seed_feature_names)

    def train_targets(self) -> Tensor:
        return self.prepared.targets("train")

    def base(self, split: str) -> Tensor | None:
        """What the model's output starts from (:meth:`NodePrepared.base
        <rdl.families.node.prepare.NodePrepared.base>`)."""
        return self.prepared.base(split)

    def transform(self, split: str, probe: bool = False):
        """A split's loader transform: its labels, what the model starts from and the
        seed features, then the shapes' (``probe``: unpadded, for the batches that place
        the buckets)."""
        def made():
            feats = None if self.seed_x is None else self.seed_x[split]
            return self.prepared.targets(split), self.prepared.base(split), feats

        target, base, feats = self.on_device(("labels", split), made)
        attach = AttachTarget(self.task.entity_table, target, base, feats)
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
                            random_seed=self.settings.random_seed)
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


