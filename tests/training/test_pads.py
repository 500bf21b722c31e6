"""A compiled run's pad nodes and edges are added by its loaders (``PadNodes``, in their
workers), so that a step adds none ahead of the model; the model's inputs are the ones
the module's own padding (``pad_inputs``) makes, for every loader of a run."""
from __future__ import annotations

import pytest
import torch
from hydra import compose, initialize_config_dir
from torch.utils._python_dispatch import TorchDispatchMode

import rdl
from rdl.api import build
from rdl.graph.transforms import PAD
from rdl.training.shapes import Padded


class Ops(TorchDispatchMode):
    """Counts the ops that write memory (views excluded): each a kernel on a GPU."""

    VIEWS = (torch.ops.aten.as_strided, torch.ops.aten.slice, torch.ops.aten.expand,
             torch.ops.aten.view, torch.ops.aten.alias, torch.ops.aten.detach)

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += func.overloadpacket not in self.VIEWS
        return func(*args, **(kwargs or {}))


def unpadded(batch):
    """A copy of a loader-padded ``batch`` as the loader made it before ``PadNodes``."""
    out = batch.clone()
    for et in out.edge_types:
        if "edge_index" in out[et]:   # not the triplet loader's links
            out[et].edge_index = out[et].edge_index[:, :-PAD]
    for nt in out.node_types:
        if "time" in out[nt]:
            n = out[nt].num_nodes
            out[nt].time, out[nt].batch = out[nt].time[:n], out[nt].batch[:n]
    del out.pad_nodes
    return out


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b)
    else:
        assert a == b


def forum_cfg(rdl_cache):
    """forum-user-vote on a small generated forum (``debug=tiny`` would load H&M's)."""
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        return compose("config", ["experiment=forum-user-vote", "data.db.scale=0.001",
                                  f"data.cache_dir={rdl_cache}", "model.channels=16",
                                  "model.encoder_layers=1"])


def loaders(dm, module):
    """``(batch, seed table)`` of each kind of loader the run has."""
    yield next(iter(dm.train_dataloader())), module.entity
    yield next(iter(dm.val_dataloader())), module.entity
    if hasattr(dm, "dst_loader"):   # a link task's candidates, seeded at its target table
        yield next(iter(dm.dst_loader("val"))), dm.task.target_table


@pytest.mark.parametrize("overrides", [
    ("task=user-churn",),
    ("experiment=user-item-purchase",),
    ("experiment=user-item-purchase", "model=two-tower"),   # the triplet loader
    ("experiment=forum-user-vote",)],                       # a timed target table
    ids=["node", "link", "triplets", "timed-target"])
def test_the_loaders_pad_so_that_a_step_pads_nothing(tiny_cfg, rdl_cache, overrides):
    forum = "forum" in overrides[0]
    _, dm, module = build(forum_cfg(rdl_cache) if forum else tiny_cfg(*overrides))
    assert isinstance(dm.shapes, Padded), "the tiny config compiles with dynamic shapes"
    for batch, seeds in loaders(dm, module):
        assert batch.pad_nodes == PAD
        with Ops() as ops:
            args, kwargs = module.inputs(batch, seeds)
        # nothing but the stacked encoders' sizes (none here): no pad op in the step
        assert ops.count == 0, f"{ops.count} ops ahead of the model"
        with Ops() as ops:
            own_args, own_kwargs = module.inputs(unpadded(batch), seeds)
        assert ops.count > 0, "the module pads a batch its loader did not"
        # the rows (TensorFrames) are the loader's, untouched by PadNodes
        assert args[0].keys() == own_args[0].keys()
        assert_same((args[1:], kwargs), (own_args[1:], own_kwargs))


def test_a_timed_target_table_scores_the_same_padded(rdl_cache):
    """Where the link target table has times, its ``batch`` carries the pad nodes' seeds
    after the real ones; the scores read the real ones only, and equal those of the
    batch the module pads itself."""
    _, dm, module = build(forum_cfg(rdl_cache))
    assert "time" in dm.data[dm.task.target_table]
    module.set_forward(module.model)   # eager: no compile here
    module.eval()
    batch = next(iter(dm.val_dataloader()))
    with torch.no_grad():
        padded = module.scores(batch)
        own = module.scores(unpadded(batch))
    assert padded.isfinite().any()
    torch.testing.assert_close(padded, own)
