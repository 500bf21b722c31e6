"""Batch samplers of rdl's loaders: which seeds go together, in which order.

Training shuffles with :class:`EpochShuffle`, a permutation that depends only on a seed and
the epoch (Lightning calls ``set_epoch`` at every epoch start, as it does for a
``DistributedSampler``), and :class:`SeedBatches` can skip the batches an interrupted epoch
had already trained on. With the temporal sampler seeded per batch
(``TemporalSampler(seed_per_batch=True)``), a run resumed mid-epoch then sees exactly the
batches the uninterrupted run saw (:mod:`rdl.training.resume`). Written here because
PyTorch's ``RandomSampler`` draws its order from a stream (the order of epoch ``e`` depends on
every draw before it) and ``BatchSampler`` cannot start in the middle of an epoch.
"""
from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import BatchSampler, Sampler, SequentialSampler


class EpochShuffle(Sampler[int]):
    """``range(n)`` in an order drawn from ``(seed, epoch)`` alone.

    Each pass uses :attr:`epoch` and then advances it, so that a loop over passes without
    ``set_epoch`` (a notebook, a test) still gets a new order each time; ``set_epoch(e)``
    (Lightning, every epoch) pins the order of the next pass.
    """

    def __init__(self, n: int, seed: int = 0):
        self.n, self.seed, self.epoch = n, int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        gen = torch.Generator().manual_seed((self.seed * 1_000_003 + self.epoch) % (2**63))
        self.epoch += 1
        return iter(torch.randperm(self.n, generator=gen).tolist())

    def __len__(self) -> int:
        return self.n


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


def batches(n: int, batch_size: int, shuffle: bool, merge_tail: bool = True,
            seed: int = 0) -> SeedBatches:
    """Batches of ``range(n)``, shuffled per epoch from ``seed`` (:class:`EpochShuffle`) or in
    order; see :class:`SeedBatches` for ``merge_tail``."""
    sampler = EpochShuffle(n, seed) if shuffle else SequentialSampler(range(n))
    return SeedBatches(sampler, batch_size, drop_last=False, merge_tail=merge_tail)
