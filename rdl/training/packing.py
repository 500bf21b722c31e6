"""A loader worker's batch crosses to the training process as one shared buffer
(``data.pack_batches``).

A PyG batch holds a hundred or more tensors (each store's, each TensorFrame's). Sent from
a DataLoader worker as it is, every tensor's shared memory is a file descriptor fetched
from the worker over a socket (torch's ``file_descriptor`` sharing, the default on
Linux): 14.5 ms a batch for the training process on a 2-core CPU, 4.1 ms by file name
(``benchmarks/loader_receive.py``). Packed, the worker copies the batch's tensors into one
buffer in shared memory and pickles the rest of it apart; the training process receives
one descriptor and rebuilds the batch with each tensor a view into the buffer. The
DataLoader pins the buffer once (it calls a batch's own ``pin_memory``), so the views are
page-locked for the copies to the GPU. With ``data.pack_batches=device`` the batch stays
packed until the data module moves it (``transfer_batch_to_device``): one copy of the
buffer to the GPU, not one a tensor, and the batch rebuilt there as views (opt-in until a
GPU measures it).

Neither torch nor PyG does this: torch shares each tensor on its own, and torch's
``file_system`` sharing (one global setting, ``sharing_strategy``) trades the descriptors
for files a killed worker can leave behind. Everything here is public API: pickling's
``persistent_id``, ``get_worker_info`` and a batch type's own ``pin_memory`` (the
DataLoader's documented hook for custom batch types).
"""
from __future__ import annotations

import io
import pickle

import torch
from torch.utils.data import get_worker_info
from torch_geometric.loader import NodeLoader

#: each tensor starts at a multiple of this many bytes in the buffer (any dtype's view of
#: it is aligned)
ALIGN = 64


class Packed:
    """A batch as one uint8 ``buffer`` holding its CPU tensors, ``specs`` (offset, dtype,
    shape) for each, and the rest of it pickled (``skeleton``) with the tensors by index."""

    __slots__ = ("skeleton", "buffer", "specs")

    def __init__(self, skeleton: bytes, buffer: torch.Tensor, specs: list):
        self.skeleton, self.buffer, self.specs = skeleton, buffer, specs

    def pin_memory(self, device=None) -> "Packed":
        """The DataLoader's pin thread calls this: one page-locked copy of the buffer."""
        return Packed(self.skeleton, self.buffer.pin_memory(), self.specs)

    def to(self, device: torch.device, non_blocking: bool = False) -> "Packed":
        """The buffer on ``device``: one copy (queued without waiting for it from a pinned
        buffer with ``non_blocking``)."""
        return Packed(self.skeleton, self.buffer.to(device, non_blocking=non_blocking),
                      self.specs)

    def unpack(self):
        """The batch, each of its tensors a view into the buffer."""
        views = [_view(self.buffer, off, dtype, shape) for off, dtype, shape in self.specs]
        return _Unpickler(io.BytesIO(self.skeleton), views).load()


def pack(batch) -> Packed:
    """``batch`` (any picklable object) as a :class:`Packed`: every plain CPU tensor in it
    copied into one buffer, allocated in shared memory in a DataLoader worker (the queue
    then sends it as it is, not a copy). A tensor met twice is packed once and comes back
    as one tensor."""
    tensors: list[torch.Tensor] = []
    out = io.BytesIO()
    _Pickler(out, tensors).dump(batch)
    specs, size = [], 0
    for t in tensors:
        specs.append((size, t.dtype, tuple(t.shape)))
        size += -(-t.numel() * t.element_size() // ALIGN) * ALIGN
    buffer = torch.empty(size, dtype=torch.uint8)
    if get_worker_info() is not None:
        buffer.share_memory_()   # still empty: the pages are written once, in shared memory
    for (off, dtype, shape), t in zip(specs, tensors):
        _view(buffer, off, dtype, shape).copy_(t)
    return Packed(out.getvalue(), buffer, specs)


def unpacked(batch):
    """``batch`` unpacked if it is :class:`Packed`, else as it is."""
    return batch.unpack() if isinstance(batch, Packed) else batch


def _view(buffer: torch.Tensor, offset: int, dtype: torch.dtype, shape: tuple) -> torch.Tensor:
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return torch.empty(shape, dtype=dtype, device=buffer.device)
    nbytes = n * dtype.itemsize
    return buffer[offset:offset + nbytes].view(dtype).view(shape)


class _Pickler(pickle.Pickler):
    def __init__(self, file, tensors: list):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.tensors, self.seen = tensors, {}

    def persistent_id(self, obj):
        # exactly a Tensor on the CPU, not needing grad: a subclass, a Parameter or a
        # tensor on a device pickles as itself
        if type(obj) is not torch.Tensor or obj.device.type != "cpu" or obj.requires_grad:
            return None
        key = id(obj)
        if key not in self.seen:
            self.seen[key] = len(self.tensors)
            self.tensors.append(obj)
        return self.seen[key]


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, views: list):
        super().__init__(file)
        self.views = views

    def persistent_load(self, pid):
        return self.views[pid]


class Packing:
    """A PyG loader (put first among the bases) whose workers pack their batches
    (:func:`pack`) and whose iterators unpack them in the training process, after the
    DataLoader pinned them; a loader without workers is unchanged."""

    #: False: the iterators serve the packed batches, for the data module's
    #: ``transfer_batch_to_device`` to move and unpack (``data.pack_batches=device``). A
    #: class's, not an instance's: Lightning rebuilds a loader from its ``__init__``
    #: arguments to add a distributed sampler.
    unpack_in_iterator = True

    def collate_fn(self, index):
        out = super().collate_fn(index)
        # packed only in a worker and once the batch is whole: PyG then calls no filter
        # after this (filter_per_worker=True, as rdl's loaders are made)
        if get_worker_info() is not None and self.filter_per_worker:
            return pack(out)
        return out

    def __iter__(self):
        it = super().__iter__()
        return _Unpacking(it) if self.num_workers > 0 and self.unpack_in_iterator else it


class _Unpacking:
    """A DataLoader iterator's batches unpacked. Not PyG's ``DataLoaderIterator``: that
    one shuts the workers down when it is dropped, and rdl's workers persist from epoch to
    epoch."""

    def __init__(self, iterator):
        self.iterator = iterator

    def __iter__(self):
        return self

    def __next__(self):
        return unpacked(next(self.iterator))

    def __len__(self):
        return len(self.iterator)


class PackedNodeLoader(Packing, NodeLoader):
    """PyG's ``NodeLoader``, its workers' batches packed."""


class DevicePackedNodeLoader(PackedNodeLoader):
    """:class:`PackedNodeLoader` serving packed batches (``data.pack_batches=device``)."""

    unpack_in_iterator = False
