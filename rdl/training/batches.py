"""Batch samplers of rdl's loaders: which seeds go together, in which order.

Training shuffles with :class:`EpochShuffle`, a permutation that depends only on a seed and
the epoch (Lightning calls ``set_epoch`` at every epoch start, as it does for a
``DistributedSampler``), and :class:`SeedBatches` can skip the batches an interrupted epoch
had already trained on. With the temporal sampler seeded per batch
(``TemporalSampler(rng_per_batch=True)``), a run resumed mid-epoch then sees exactly the
batches the uninterrupted run saw (:mod:`rdl.training.resume`). Written here because
PyTorch's ``RandomSampler`` draws its order from a stream (the order of epoch ``e`` depends on
every draw before it) and ``BatchSampler`` cannot start in the middle of an epoch.

Several processes (DDP) shard the seeds themselves, Lightning's sampler injection off
(``use_distributed_sampler: false`` in ``conf/trainer``): training gives each rank an equal
share of the epoch's permutation (padded by repeating seeds, as ``DistributedSampler`` does:
every rank must take the same number of steps), and evaluation deals out the batches of a
single-process pass (:class:`DealtBatches`), so that each row is scored once, in the same
batch as in one process (a batch's sample depends on its seeds): the metrics equal one
process's. ``DistributedSampler`` would pad evaluation with duplicate rows.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch
from torch.utils.data import BatchSampler, Sampler, SequentialSampler


class EpochShuffle(Sampler[int]):
    """``range(n)`` in an order drawn from ``(random_seed, epoch)`` alone.

    Each pass uses :attr:`epoch` and then advances it, so that a loop over passes without
    ``set_epoch`` (a notebook, a test) still gets a new order each time; ``set_epoch(e)``
    (Lightning, every epoch) pins the order of the next pass.

    With ``world > 1``: the share of process ``rank``, every ``world``-th seed of the
    permutation padded by repetition to a multiple of ``world``.
    """

    def __init__(self, n: int, random_seed: int = 0, rank: int = 0, world: int = 1):
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} outside a world of {world} processes")
        self.n, self.random_seed, self.epoch = n, int(random_seed), 0
        self.rank, self.world = rank, world

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        gen = torch.Generator().manual_seed((self.random_seed * 1_000_003 + self.epoch)
                                            % (2**63))
        self.epoch += 1
        perm = torch.randperm(self.n, generator=gen)
        if self.world > 1 and self.n:
            total = len(self) * self.world
            perm = perm.repeat(-(-total // self.n))[:total][self.rank::self.world]
        return iter(perm.tolist())

    def __len__(self) -> int:
        return -(-self.n // self.world)


class SeedBatches(BatchSampler):
    """``BatchSampler`` that can resume mid-epoch (:meth:`skip`) and, with ``merge_tail``,
    merges a last batch smaller than half a batch into the one before it.

    A batch of one seed, or a much smaller one, would fall outside the size ranges the
    compiled model was specialised for (Dynamo bakes in sizes 0 and 1, and Inductor guards
    on ranges such as "more than 16 rows"), and recompile it. Without ``merge_tail`` batches
    never exceed ``batch_size`` (static shapes pad the last one instead).
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool = False,
                 merge_tail: bool = True):
        super().__init__(sampler, batch_size, drop_last)
        self.merge_tail = merge_tail
        self._skip = 0

    def skip(self, batches: int) -> None:
        """The next pass leaves out its first ``batches`` batches (once: the pass after
        it is whole again)."""
        self._skip = int(batches)

    def __iter__(self):
        skip, self._skip = self._skip, 0
        for i, batch in enumerate(self._batches()):
            if i >= skip:
                yield batch

    def _batches(self):
        batches = super().__iter__()
        if not self.merge_tail:
            yield from batches
            return
        prev = next(batches, None)
        for batch in batches:
            if 2 * len(batch) < self.batch_size:  # only the last can be short
                prev = prev + batch
                continue
            yield prev
            prev = batch
        if prev is not None:
            yield prev

    def __len__(self) -> int:
        n = super().__len__()
        if not self.merge_tail:
            return n
        tail = len(self.sampler) % self.batch_size
        return n - 1 if n > 1 and not self.drop_last and 0 < 2 * tail < self.batch_size else n


class DealtBatches(Sampler[list[int]]):
    """The batches of ``batches`` dealt out to ``world`` processes: process ``rank`` gets
    batches ``rank, rank + world, ...``. Together the processes score every batch of a
    single-process pass once; the first ``k`` batches of each are the first ``k * world``."""

    def __init__(self, batches: Sampler[list[int]], rank: int, world: int):
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} outside a world of {world} processes")
        self.batches, self.rank, self.world = batches, rank, world
        self.sampler = getattr(batches, "sampler", None)  # where Lightning looks for it

    def __iter__(self):
        return itertools.islice(iter(self.batches), self.rank, None, self.world)

    def __len__(self) -> int:
        return max(0, -(-(len(self.batches) - self.rank) // self.world))


def batches(n: int, batch_size: int, shuffle: bool, merge_tail: bool = True,
            random_seed: int = 0, rank: int = 0, world: int = 1) -> Sampler[list[int]]:
    """Batches of ``range(n)``, shuffled per epoch from ``random_seed`` (:class:`EpochShuffle`) or in
    order; see :class:`SeedBatches` for ``merge_tail``. Process ``rank`` of ``world``: its
    share of a shuffled epoch, or its :class:`DealtBatches` of an ordered pass."""
    if shuffle:
        return SeedBatches(EpochShuffle(n, random_seed, rank, world), batch_size, drop_last=False,
                           merge_tail=merge_tail)
    ordered = SeedBatches(SequentialSampler(range(n)), batch_size, drop_last=False,
                          merge_tail=merge_tail)
    return ordered if world == 1 else DealtBatches(ordered, rank, world)
