"""``data.pack_batches``: a loader worker's batch crosses to the training process as one
shared buffer and comes back the same batch (rdl/training/packing.py)."""
from __future__ import annotations

import io
import pickle

import pytest
import torch
from torch_geometric.data import HeteroData

from rdl.api import build
from rdl.training.packing import ALIGN, Packed, pack
from rdl.training.transfer import to_device
from tests.training.test_loader_workers import on


def tensors_of(obj) -> list[torch.Tensor]:
    """Every tensor in ``obj``, in pickling order (TensorFrames' own included)."""
    found = []

    class Finder(pickle.Pickler):
        def persistent_id(self, x):
            if isinstance(x, torch.Tensor):
                found.append(x)
                return len(found)
            return None
    Finder(io.BytesIO()).dump(obj)
    return found


def same(a, b) -> bool:
    """Same tensors, dtypes and shapes, in the same order (NaN equal to NaN)."""
    ta, tb = tensors_of(a), tensors_of(b)
    return len(ta) == len(tb) and all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(
            x.nan_to_num(7.0) if x.is_floating_point() else x,
            y.nan_to_num(7.0) if y.is_floating_point() else y) for x, y in zip(ta, tb))


def test_a_batch_comes_back_the_same_from_one_buffer():
    g = HeteroData()
    g["a"].x = torch.randn(5, 3)[:, ::2]                      # not contiguous
    g["a"].mask = torch.tensor([True, False, True, True, False])
    g["a"].n = torch.tensor(7)                                # no dimension
    g["a"].none = torch.empty(0, 4, dtype=torch.int64)        # no element
    g["a", "to", "a"].edge_index = torch.randint(0, 5, (2, 9))
    g["a"].half = torch.randn(3).half()
    g.shared = g["a"].mask                                    # one tensor met twice
    g.grad = torch.ones(2, requires_grad=True)                # pickled as itself
    p = pack(g)
    assert len(p.specs) == 6, "the tensor needing grad is not packed, the shared one once"
    assert all(off % ALIGN == 0 for off, _, _ in p.specs)
    sent = pickle.loads(pickle.dumps(p))
    back = sent.unpack()
    assert same(g, back)
    assert back.shared is back["a"].mask
    assert back.grad.requires_grad and torch.equal(back.grad, g.grad)
    inside = {t.untyped_storage().data_ptr() for t in tensors_of(back)
              if t.numel() and not t.requires_grad}
    assert inside == {sent.buffer.untyped_storage().data_ptr()}, "views into the one buffer"


@pytest.fixture(scope="module")
def two(tiny_cfg):
    """The tiny user-churn data module with one loader worker, its batches packed or not."""
    _, dm, _ = build(tiny_cfg("task=user-churn", "data.num_workers=1"))
    dm.trainer = on("cpu")
    plain = type(dm)(dm.settings.replace(pack_batches=False), dm.prepared, dm.shapes)
    plain.trainer = on("cpu")
    yield dm, plain
    dm.teardown()
    plain.teardown()


def test_a_worker_sends_each_batch_as_one_buffer(two):
    dm, plain = two
    assert dm.settings.pack_batches, "packed by default"
    packed = list(dm.loader("train", shuffle=False))
    each = list(plain.loader("train", shuffle=False))
    assert len(packed) == len(each) > 1
    for a, b in zip(packed, each):
        assert isinstance(a, HeteroData) and same(a, b)
        assert len({t.untyped_storage().data_ptr() for t in tensors_of(a) if t.numel()}) == 1
        assert len({t.untyped_storage().data_ptr() for t in tensors_of(b) if t.numel()}) > 1
    # a second epoch of the persistent worker: still served, still packed
    again = list(dm.loader("train", shuffle=False))
    assert all(same(a, b) for a, b in zip(again, each))


def test_the_triplet_loader_packs_too(tiny_cfg):
    _, dm, _ = build(tiny_cfg("task=user-item-purchase", "model=two-tower",
                              "data.num_workers=1"))
    dm.trainer = on("cpu")
    plain = type(dm)(dm.settings.replace(pack_batches=False), dm.prepared, dm.shapes)
    plain.trainer = on("cpu")
    try:
        torch.manual_seed(0)
        a = next(iter(dm.train_dataloader()))
        torch.manual_seed(0)
        b = next(iter(plain.train_dataloader()))
        assert type(dm.train_dataloader()).__name__ == "PackedLinkLoader"
        assert same(a, b)
        assert len({t.untyped_storage().data_ptr() for t in tensors_of(a) if t.numel()}) == 1
    finally:
        dm.teardown()
        plain.teardown()


def test_packed_to_the_device_the_transfer_unpacks(two, tiny_cfg):
    """``data.pack_batches=device``: the loader serves packed batches, and the data
    module's transfer moves each as its one buffer and rebuilds it there (here the CPU;
    the GPU's copy is tests/training/test_packing.py's CUDA case)."""
    dm, plain = two
    device = type(dm)(dm.settings.replace(pack_batches="device"), dm.prepared, dm.shapes)
    device.trainer = on("cpu")
    try:
        served = list(device.loader("train", shuffle=False))
        each = list(plain.loader("train", shuffle=False))
        assert all(isinstance(b, Packed) for b in served)
        moved = [device.transfer_batch_to_device(b, torch.device("cpu"), 0) for b in served]
        assert len(moved) == len(each) and all(same(a, b) for a, b in zip(moved, each))
        # evaluation loaders are read directly too (the link family's blend): unpacked
        assert all(isinstance(b, HeteroData) for b in device.loader("val", shuffle=False))
    finally:
        device.teardown()


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_bad_value_names_the_setting(tiny_cfg, value):
    with pytest.raises(ValueError, match="data.pack_batches"):
        build(tiny_cfg("task=user-churn", f"data.pack_batches={value}"))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning needs CUDA")
def test_the_loader_pins_one_buffer():
    p = pack({"x": torch.randn(10, 3), "i": torch.arange(4)}).pin_memory()
    assert isinstance(p, Packed) and p.buffer.is_pinned()
    batch = p.unpack()
    assert batch["x"].is_pinned() and batch["i"].is_pinned()
    assert torch.equal(batch["i"].to("cuda", non_blocking=True).cpu(), torch.arange(4))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_packed_batch_reaches_the_gpu_as_one_copy():
    g = HeteroData()
    g["a"].x = torch.randn(6, 3)
    g["a"].n_id = torch.arange(6)
    g["a", "to", "a"].edge_index = torch.randint(0, 6, (2, 10))
    moved = to_device(pack(g).pin_memory(), torch.device("cuda"))
    assert isinstance(moved, HeteroData) and moved["a"].x.is_cuda
    assert len({t.untyped_storage().data_ptr() for t in tensors_of(moved)}) == 1
    assert same(g, moved.to("cpu"))
