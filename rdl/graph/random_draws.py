"""The random numbers of :class:`~rdl.graph.sampler.TemporalSampler`: drawn on the host, used
on the sampler's device.

A CUDA generator and a CPU generator seeded alike draw different streams (other algorithms:
Philox on the GPU, Mersenne Twister on the CPU), so a sampler drawing on its device would
sample other subgraphs on a GPU than on the CPU. The sampler's generator lives on the host
whatever the device; every draw is made there, by the very call the CPU sampler makes (same
size, same order, same dtype), and then copied to the device. A sampler on a GPU thus
samples exactly what the CPU sampler samples under the same seed, and the CPU sampler's
draws are those it always made (the copy to the CPU is no copy).

The copy from pageable host memory makes the host wait for the device's queue: a sync per
draw. Uniform sampling draws once per hop and edge type for its mid-size segments and once
for its large ones (and once per re-draw round, rare), negative sampling once or twice a
batch: never per seed or per node, and the sampler syncs there already to size its outputs
(:mod:`rdl.graph.node_sampling`). A draw holds a value or a few per candidate edge.

A generator given on a device (a test's CUDA generator) draws there, as before.
"""
from __future__ import annotations

import torch
from torch import Tensor


def randint(high: int, size: tuple, gen: torch.Generator, device: torch.device) -> Tensor:
    """``torch.randint(0, high, size)`` (int64) from ``gen``, on ``device``."""
    return torch.randint(0, high, size, generator=gen, device=gen.device).to(device)


def rand64(size: tuple, gen: torch.Generator, device: torch.device) -> Tensor:
    """``torch.rand(size)`` in float64 from ``gen``, on ``device``."""
    return torch.rand(size, generator=gen, device=gen.device, dtype=torch.float64).to(device)
