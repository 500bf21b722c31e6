"""Static-shape buckets: every batch padded, per node and edge type, to one of a few sizes.

A model compiled with ``dynamic=False`` specialises on every shape it sees; batches of a
sampled subgraph all differ, so each would recompile. Padded to the smallest of a few
*bucket profiles* that fits it, a batch reaches the model with one of a few shapes: one
graph per bucket, and on CUDA ``mode="reduce-overhead"`` replays one CUDA graph per bucket
instead of launching kernels one by one. Padding costs compute (rows encoded and messages
passed for nothing), so the buckets follow the data: :func:`plan` puts them at quantiles of
the sizes of a few probe batches (``data.buckets`` in the config; docs/compile.md).

The quantities of a batch that reach the model (:func:`sizes`): per node type its rows
(``tf``, pad rows included) and its nodes (``tf_index``, pad nodes included; for the seed
type the nodes other than the seeds), per edge type its edges, and the number of seeds.
:class:`PadToBucket`, a loader transform after :class:`~rdl.graph.transforms.InputRows`,
pads them on the batch's device (the CPU, or ``data.sampler.device``): rows repeat a pad
row (the table's first row), pad nodes are as old as the first seed and point at a pad row,
pad edges join pad nodes only, and pad seeds are inserted after the real seeds (the model
takes the first ``len(seed_time)`` nodes of the seed type as the seeds). No real node
receives a message from a pad node, so no real output changes; the module slices the output
to the real seeds (``batch_size``).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from rdl.sections import settings_of
from rdl.training.compile import compiling

log = logging.getLogger(__name__)

#: a quantity of a batch: ("rows", node type), ("nodes", node type), ("edges", edge type)
#: or ("seeds",)
Key = tuple


@dataclass
class BucketSettings:
    """``data.buckets`` (null: off).

    Args:
        count: buckets per split, at the quantiles ``(j + 1) / count`` of each quantity.
        headroom: each bucket is that fraction larger than its quantile (0.05: 5 %).
        probe: training batches whose sizes place the buckets (sampled once, at the start).
        multiple: sizes are rounded up to a multiple of it (aligned rows; at least it).
        warm: compile every bucket's graph (and on CUDA with ``reduce-overhead`` record
            its CUDA graph) before the first step (:func:`warm`), rather than when a batch
            first falls in it, minutes into training.
    """
    count: int = 3
    headroom: float = 0.05
    probe: int = 16
    multiple: int = 8
    warm: bool = True

    def __post_init__(self):
        for f, least in (("count", 1), ("probe", 1), ("multiple", 1)):
            value = getattr(self, f)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"data.buckets.{f}={value}: must be an integer >= {least}")
        if not isinstance(self.warm, bool):
            raise ValueError(f"data.buckets.warm={self.warm}: must be true or false")
        h = self.headroom
        if not isinstance(h, (int, float)) or isinstance(h, bool) or not math.isfinite(h) or h < 0:
            raise ValueError(f"data.buckets.headroom={h}: must be a finite number >= 0")

    @classmethod
    def of(cls, value) -> "BucketSettings | None":
        if value is None or value is False or isinstance(value, cls):
            return value or None
        if value is True:
            return cls()
        return settings_of(cls, value, "data.buckets")


def sizes(batch, entity: str) -> dict[Key, int]:
    """The quantities of a batch (after ``InputRows``) that fix the model's shapes."""
    out = {}
    seeds = batch[entity].seed_time.numel()
    for nt in batch.node_types:
        store = batch[nt]
        if "tf" not in store:
            continue
        out["rows", nt] = store.tf.num_rows
        out["nodes", nt] = store.tf_index.numel() - (seeds if nt == entity else 0)
    for et in batch.edge_types:
        out["edges", et] = batch[et].edge_index.size(1)
    out["seeds",] = seeds
    return out


def _round(x: float, multiple: int) -> int:
    return max(multiple, multiple * math.ceil(x / multiple - 1e-9))


def plan(observed: list[dict[Key, int]], settings: BucketSettings,
         seeds: int | None = None) -> list[dict[Key, int]]:
    """Bucket profiles from the sizes of probe batches (:func:`sizes`): bucket ``j`` takes
    each quantity's ``(j + 1) / count`` quantile, ``1 + headroom`` times larger, rounded up
    to ``multiple``; the last covers the largest probe with headroom, and at least two
    standard deviations of the probes past it. ``seeds``: the
    loader's batch size, every bucket's seed count (batches never exceed it). Identical
    profiles are merged, and a bucket that no probe falls in (each in the smallest that
    holds it) is dropped, but the last; the list grows from small to large."""
    keys = list(observed[0])
    values = {k: torch.tensor([float(o.get(k, 0)) for o in observed]) for k in keys}
    profiles = []
    for j in range(settings.count):
        q = (j + 1) / settings.count
        profile = {}
        for k, v in values.items():
            size = float(torch.quantile(v, q)) * (1 + settings.headroom)
            if j == settings.count - 1 and len(v) > 1:
                # A few probes miss the tail of a long run's sizes, and a batch beyond the
                # last bucket compiles a graph mid-training: the last bucket also reaches
                # two standard deviations past the largest probe.
                size = max(size, float(v.max() + 2 * v.std()))
            profile[k] = _round(size, settings.multiple)
        if seeds is not None:
            profile["seeds",] = seeds
        if not profiles or profile != profiles[-1]:
            profiles.append(profile)
    # Quantiles of many quantities at once: a batch must fit all of a bucket's, so a small
    # bucket can hold none of the probes (batches of many seeds vary little). Such a bucket
    # would be met rarely, each time at the price of a graph: its batches go one up.
    used = {smallest(profiles, o) for o in observed}
    return [p for j, p in enumerate(profiles) if j in used or j == len(profiles) - 1]


def smallest(profiles: list[dict[Key, int]], size: dict[Key, int]) -> int | None:
    """The index of the smallest profile that holds ``size`` (None: none does)."""
    return next((j for j, p in enumerate(profiles)
                 if all(v <= p.get(k, 0) for k, v in size.items())), None)


def padding(observed: list[dict[Key, int]], profiles: list[dict[Key, int]]) -> dict[str, float]:
    """What padding adds to the probe batches, each in the smallest bucket that holds it:
    per kind of quantity (rows, nodes, edges, seeds), padded total / real total - 1."""
    real, padded = {}, {}
    for size in observed:
        j = smallest(profiles, size)
        fit = profiles[-1 if j is None else j]
        for k, v in size.items():
            real[k[0]] = real.get(k[0], 0) + v
            padded[k[0]] = padded.get(k[0], 0) + max(fit.get(k, 0), v)
    return {kind: padded[kind] / max(real[kind], 1) - 1 for kind in real}


def describe(profile: dict[Key, int]) -> str:
    """A profile in words: ``rows customer 376, ..., edges
    transactions-f2p_customer_id-customer 688, ..., seeds 64``."""
    def name(k):
        if len(k) == 1:
            return k[0]
        return f"{k[0]} {'-'.join(k[1]) if isinstance(k[1], tuple) else k[1]}"
    return ", ".join(f"{name(k)} {v}" for k, v in profile.items())


class PadToBucket:
    """Loader transform (after ``InputRows``): pads a node-task batch to the smallest
    bucket profile that fits it and records the bucket's index as ``batch.bucket`` and
    the batch's own :func:`sizes` as ``batch.unpadded``.

    A batch larger than every bucket gets a new bucket (its sizes with headroom, at least
    the largest bucket's), with a warning the first time: each new bucket is one more
    compiled graph. A loader worker grows its own copy of the list.

    Labels (``y``), rows (``input_id``), ``base`` and ``batch_size`` keep the real seeds;
    the model's inputs (``tf``, ``tf_index``, ``n_id``, ``time``, ``batch``, ``edge_index``,
    ``seed_time``, ``seed_x``) are padded, and ``num_nodes`` is set to the padded count.
    """

    def __init__(self, entity: str, profiles: list[dict[Key, int]], settings: BucketSettings):
        self.entity, self.profiles, self.settings = entity, list(profiles), settings
        self._warned = False

    def choose(self, size: dict[Key, int]) -> int:
        """The index of the smallest profile that fits ``size`` (grown if none does)."""
        j = smallest(self.profiles, size)
        if j is not None:
            return j
        last, s = self.profiles[-1], self.settings
        grown = {k: max(last.get(k, 0), _round(v * (1 + s.headroom), s.multiple))
                 for k, v in size.items()}
        grown["seeds",] = max(last["seeds",], size["seeds",])  # no pad seeds for nothing
        if not self._warned:
            log.warning("a batch (%s) fits no static-shape bucket: a new bucket (%s) compiles "
                        "one more graph (more data.buckets.count or headroom would have "
                        "held it)", describe(size), describe(grown))
            self._warned = True
        self.profiles.append(grown)
        return len(self.profiles) - 1

    def __call__(self, batch):
        return self.pad(batch, self.choose(sizes(batch, self.entity)))

    def pad(self, batch, j: int):
        """``batch`` (in place) padded to profile ``j``, which must hold it."""
        size = sizes(batch, self.entity)
        profile = self.profiles[j]
        store = batch[self.entity]
        seeds, first_time = size["seeds",], store.seed_time[:1]
        extra = profile["seeds",] - seeds
        real = {nt: self._pad_nodes(batch[nt], nt, profile, seeds, extra, first_time)
                for nt in batch.node_types if "tf" in batch[nt]}
        for et in batch.edge_types:
            self._pad_edges(batch, et, profile["edges", et], seeds, extra, real)
        store.seed_time = torch.cat([store.seed_time, first_time.expand(extra)])
        if "seed_x" in store:
            x = store.seed_x
            store.seed_x = torch.cat([x, x[:1].expand(extra, *x.shape[1:])])
        batch.bucket, batch.unpadded = j, size
        return batch

    def _pad_nodes(self, store, nt: str, profile: dict, seeds: int, extra: int,
                   first_time: Tensor) -> int:
        """Pads a node type's rows and nodes (pad seeds after the seeds of the entity);
        returns its nodes before the tail pads."""
        shift = extra if nt == self.entity else 0
        n_real = store.n_id.numel()                # the sampled nodes
        n = n_real + shift
        total = profile["nodes", nt] + (profile["seeds",] if nt == self.entity else 0)
        rows = store.tf.num_rows
        pad_row = rows - 1                         # InputRows' last pad row
        dev = store.n_id.device   # the batch's (data.sampler.device), as every pad's
        if profile["rows", nt] > rows:
            store.tf = store.tf[torch.cat([torch.arange(rows, device=dev),
                                           torch.full((profile["rows", nt] - rows,), pad_row,
                                                      device=dev)])]
        # node-level inputs: (value for each sampled node, what a pad node gets)
        parts = {"tf_index": (store.tf_index[:n_real], pad_row), "n_id": (store.n_id, 0)}
        if "time" in store:
            parts["time"] = (store.time, None)
        if "batch" in store:
            parts["batch"] = (store.batch, 0)
        for key, (value, fill) in parts.items():
            def pad(count):
                if key == "time":   # as old as the first seed
                    return first_time.expand(count).to(value.dtype)
                return torch.full((count,), fill, dtype=value.dtype, device=dev)
            if shift:   # pad seeds, each its own seed index
                mid = (torch.arange(seeds, seeds + shift, device=dev) if key == "batch"
                       else pad(shift))
                value = torch.cat([value[:seeds], mid, value[seeds:]])
            store[key] = torch.cat([value, pad(total - n)])
        store.num_nodes = total
        return n

    def _pad_edges(self, batch, et: tuple, edges: int, seeds: int, extra: int,
                   real: dict[str, int]) -> None:
        """Shifts the entity's non-seed nodes behind the pad seeds, and adds pad edges
        between the tail pad nodes of the edge type's ends."""
        src, _, dst = et
        ei = batch[et].edge_index
        if extra and self.entity in (src, dst):
            ei = ei.clone()
            for i, nt in ((0, src), (1, dst)):
                if nt == self.entity:
                    ei[i] += extra * (ei[i] >= seeds)
        k = torch.arange(edges - ei.size(1), device=ei.device)
        pads = torch.stack([real[src] + k % (batch[src].num_nodes - real[src]),
                            real[dst] + k % (batch[dst].num_nodes - real[dst])])
        batch[et].edge_index = torch.cat([ei, pads], dim=1)


def warm(module, batches: list, train: bool, repeats: int = 2) -> None:
    """Runs each bucket's example batch (:meth:`RelDataModule.bucket_examples
    <rdl.training.datamodule.RelDataModule.bucket_examples>`) through the compiled model
    ``repeats`` times, so that every bucket's graph is compiled now, and on CUDA with
    ``reduce-overhead`` its CUDA graph recorded (the first call warms, the second
    records): not when a batch first falls in the bucket, minutes into training.

    ``train``: forward and backward in train mode (each backward's gradients dropped at
    once), else forward in eval mode without gradients. Nothing of the run changes: the
    random state is forked (dropout draws nothing from the training's stream) and the
    buffers restored.
    """
    device = module.device
    buffers = {n: b.detach().clone() for n, b in module.named_buffers()}
    cuda = [device.index or 0] if device.type == "cuda" else []
    # One log line for all of them (not one for the first bucket's call, as a first batch)
    first_calls = getattr(getattr(module, "forward_fn", None), "first_calls", {})
    first_calls.pop(train, None)
    with torch.random.fork_rng(devices=cuda), \
            compiling("training" if train else "evaluation", f"{len(batches)} buckets"):
        for batch in batches:
            batch = batch.to(device)
            for _ in range(repeats):
                if train:
                    loss, _ = module.step_loss(batch)
                    loss.backward()
                    # Not accumulated into the next call's: with CUDA graphs a gradient is
                    # the backward graph's output, overwritten by the next replay (the GPU
                    # check of 2026-11-27 failed so in the second backward).
                    module.zero_grad(set_to_none=True)
                else:
                    with torch.no_grad():
                        module(batch)
    module.zero_grad(set_to_none=True)
    with torch.no_grad():
        for n, b in module.named_buffers():
            b.copy_(buffers[n])
