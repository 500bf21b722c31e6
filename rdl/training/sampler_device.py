"""Where the temporal sampler runs and each batch is built: ``data.sampler.device``.

- ``null`` (the default): on the CPU, in the loader (in its worker processes with
  ``data.num_workers > 0``); batches are pinned and copied to the GPU that trains.
- a device (``cuda``, ``cuda:1``, or ``cpu``): device-resident. The sampler's index, the
  loader's graph (node times, edges), every table's TensorFrame (the rows
  :class:`~rdl.graph.transforms.InputRows` gathers), the labels, the model's base and the
  seed features of each split live on that device, put there once when the data module is
  made; the sampler, PyG's filter and the loader's transforms build each batch there, in
  the training process. A batch then reaches the step with nothing to copy. Loader
  workers are refused (CUDA does not survive a fork) and nothing is pinned.

The samples are the same either way, to the last bit: the sampler draws its random numbers
on the host (:mod:`rdl.graph.random_draws`) and its time rule is the same code, and every
transform computes on the batch's device what it computes on the CPU. ``cpu`` runs the
device-resident path on the CPU (the tests compare its batches with the default loader's);
on a GPU it spares the loader's host work and the copies, at the price of the GPU memory
the graph, its index and the tables take (docs/sampler.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from rdl.sections import settings_of


@dataclass(frozen=True)
class SamplerSettings:
    """``data.sampler`` (``rdl/conf/data/loader/default.yaml``).

    Args:
        device: where the sampler runs and batches are built (None: on the CPU, in the
            loader; see the module docstring).
    """
    device: str | None = None

    def __post_init__(self):
        if self.device is None:
            return
        try:
            device = torch.device(str(self.device))
        except RuntimeError:
            device = None
        if device is None or device.type not in ("cpu", "cuda"):
            raise ValueError(f"data.sampler.device={self.device}: must be null, cpu or a CUDA "
                             "device (cuda, cuda:1)")

    @classmethod
    def of(cls, value) -> "SamplerSettings":
        if value is None or isinstance(value, cls):
            return value or cls()
        return settings_of(cls, value, "data.sampler")

    @property
    def resident(self) -> torch.device | None:
        """The device batches are built on (None: on the CPU, in the loader)."""
        return None if self.device is None else torch.device(str(self.device))

    def check_loader(self, num_workers: int, pin_memory: bool | None) -> None:
        """A :class:`ValueError` naming the settings, where the loader settings cannot hold
        with a device-resident sampler: it builds batches in the training process."""
        if self.device is None:
            return
        if num_workers and num_workers != "auto":   # auto: none, with batches built here
            raise ValueError(f"data.sampler.device={self.device} builds batches in the "
                             f"training process: set data.num_workers=0 (not {num_workers}; "
                             "CUDA does not survive the fork of a loader worker), or "
                             "data.sampler.device=null to sample in the workers")
        if pin_memory:
            raise ValueError(f"data.pin_memory=true: batches built on data.sampler.device="
                             f"{self.device} are not pinned (set data.pin_memory=null)")


def resident(value, device: torch.device | None):
    """``value`` (a tensor, a TensorFrame, a graph, or None) on ``device``; as it is when
    ``device`` is None (batches built in the loader, on the CPU)."""
    if value is None or device is None:
        return value
    return value.to(device)
