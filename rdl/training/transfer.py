"""How a batch of rdl's loaders reaches the device of the step
(:meth:`RelDataModule.transfer_batch_to_device
<rdl.training.datamodule.RelDataModule.transfer_batch_to_device>`)."""
from __future__ import annotations

import torch
from torch import Tensor

from rdl.training.packing import Packed


def to_device(batch, device: torch.device):
    """``batch`` on ``device``, or None where Lightning's own move applies.

    Lightning passes ``non_blocking=True`` to tensors only: a PyG batch (and its
    TensorFrames) would be copied one tensor at a time, the host waiting for each. From the
    page-locked memory of a pinned loader (``data.pin_memory``) the copies then queue on the
    stream ahead of the step's kernels and the host goes on to launch them. Copies to the
    CPU stay blocking (non-blocking ones there could be read before they land). A batch
    already on ``device`` is returned as it is: rdl's loaders make their batches on the
    CPU, or on the GPU with ``data.sampler.device``, and Lightning would walk every tensor
    of one at every step to move none. A packed batch (``data.pack_batches=device``) is
    moved as its one buffer and rebuilt on ``device``."""
    if isinstance(batch, Packed):
        return batch.to(device, non_blocking=device.type == "cuda").unpack()
    if _device_of(batch) == device:
        return batch
    if device.type == "cuda" and hasattr(batch, "to"):
        return batch.to(device, non_blocking=True)
    return None


def _device_of(batch) -> torch.device | None:
    """The device of a PyG batch's first tensor (a loader puts all of them on one device);
    None if it is no PyG batch or holds no tensor."""
    for store in getattr(batch, "stores", ()):
        for value in store.values():
            if isinstance(value, Tensor):
                return value.device
    return None
