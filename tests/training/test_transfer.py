"""Batches reach a GPU without the host waiting: loaders pin them when training on CUDA,
and the data module copies a whole PyG batch with ``non_blocking=True`` (Lightning would
pass it to tensors only). No GPU is needed: the CUDA side is observed at the call it makes."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
import torch
from torch_geometric.data import HeteroData

from rdl.api import build


@pytest.fixture(scope="module")
def built(tiny_cfg):
    return build(tiny_cfg("task=user-churn"))


def test_a_batch_is_copied_to_cuda_without_waiting(built, monkeypatch):
    _, dm, _ = built
    batch = next(iter(dm.train_dataloader()))
    calls = []

    def to(self, device, *args, non_blocking=False):
        calls.append((torch.device(device), non_blocking))
        return self

    monkeypatch.setattr(HeteroData, "to", to)
    assert dm.transfer_batch_to_device(batch, torch.device("cuda", 0), 0) is batch
    assert calls == [(torch.device("cuda", 0), True)]
    # to the CPU: a batch there already is returned as it is, untouched
    calls.clear()
    assert dm.transfer_batch_to_device(batch, torch.device("cpu"), 0) is batch
    assert calls == []
    # one elsewhere takes Lightning's own (blocking) path
    other = HeteroData()
    other["customer"].seed_time = torch.zeros(3, device="meta")
    dm.transfer_batch_to_device(other, torch.device("cpu"), 0)
    assert calls == [(torch.device("cpu"), False)]


def test_lightning_moves_batches_with_the_data_modules_hook(built):
    """The hook is the data module's, the LightningModule has none: Lightning uses it
    without its warning about a module's hook beside a data module."""
    from pytorch_lightning.trainer.connectors.data_connector import _DataHookSelector

    _, dm, module = built
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = _DataHookSelector(module, dm).get_instance("transfer_batch_to_device")
    assert chosen is dm


def test_batches_carry_no_edge_ids(built):
    """No step reads the sampled edges' ids: one tensor fewer per edge type to copy."""
    _, dm, _ = built
    for loader in (dm.train_dataloader(), dm.val_dataloader()):
        batch = next(iter(loader))
        assert batch.edge_types and all("edge_index" in s for s in batch.edge_stores)
        assert not any("e_id" in s for s in batch.edge_stores)
    dm.teardown()


@pytest.mark.parametrize("setting, device, expected", [
    (None, "cuda", True), (None, "cpu", False), (False, "cuda", False), (True, "cpu", True)])
def test_loaders_pin_batches_when_training_on_cuda(built, setting, device, expected):
    _, built_dm, _ = built
    dm = type(built_dm)(built_dm.settings.replace(pin_memory=setting), built_dm.prepared,
                        built_dm.shapes)
    # what Lightning does when it trains with the data module
    dm.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device)),
                                 global_rank=0, world_size=1)
    try:
        loader = dm.val_dataloader()
        assert loader.pin_memory is expected
    finally:
        dm.teardown()


@pytest.mark.parametrize("link", [False, True])
def test_a_pinned_loader_pins_the_batch_its_transforms_make(tiny_cfg, monkeypatch, link):
    """torch's DataLoader pins what its fetch returns: the batch the model gets, its
    TensorFrames included, not PyG's sampler output (which the filter and the transforms
    would then turn into an unpinned batch: a sync per copy on a GPU, as the GPU check of
    2026-11-27 found). Pinning needs a GPU; here it is observed at the call it makes."""
    def pin(self, *args, **kwargs):
        out = self.clone()
        out.pinned_here = True
        return out

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    task = ("task=user-item-purchase", "model=idgnn") if link else ("task=user-churn",)
    _, dm, _ = build(tiny_cfg(*task, "data.pin_memory=true"))
    try:
        batch = next(iter(dm.train_dataloader()))
        tensors = dict(batch_tensors(batch))
        assert len(tensors) > 10 and any(".tf." in k for k in tensors)
        assert [k for k, v in tensors.items() if not getattr(v, "pinned_here", False)] == []
    finally:
        dm.teardown()


def batch_tensors(batch):
    """(name, tensor) of every tensor of a batch, TensorFrames' included."""
    for store in batch.stores:
        for key, value in store.items():
            if isinstance(value, torch.Tensor):
                yield f"{store._key}.{key}", value
            elif hasattr(value, "feat_dict"):  # a TensorFrame
                for stype, feat in value.feat_dict.items():
                    name = f"{store._key}.{key}.{stype}"
                    if isinstance(feat, torch.Tensor):
                        yield name, feat
                    else:  # PyTorch Frame's multi-tensors: values and offsets
                        yield f"{name}.values", feat.values
                        yield f"{name}.offset", feat.offset


def test_labels_follow_the_rows_of_a_sampler_on_another_device():
    """A sampler on the GPU returns its seeds' rows there (the CUDA DDP case of
    test_ddp): the labels, base and seed features are looked up on that device. The meta
    device stands in for CUDA here: a CPU table indexed with meta rows raises."""
    from rdl.graph.transforms import AttachTarget

    def attach(device):
        batch = HeteroData()
        batch["customer"].input_id = torch.tensor([4, 1], device=device)
        return AttachTarget("customer", torch.arange(5.0), base=torch.arange(5.0) * 2,
                            feats=torch.ones(5, 3))(batch)["customer"]
    out = attach("meta")
    assert out.y.device.type == out.base.device.type == out.seed_x.device.type == "meta"
    assert out.y.shape == (2,) and out.seed_x.shape == (2, 3)
    out = attach("cpu")
    assert out.y.tolist() == [4.0, 1.0] and out.base.tolist() == [8.0, 2.0]
