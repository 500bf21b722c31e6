"""Static-shape buckets (``data.buckets``, :mod:`rdl.training.buckets`): padding a batch to
its bucket changes no real output, and a model compiled with ``dynamic=False`` compiles one
graph per bucket used, however the batches vary."""
from __future__ import annotations

import copy
import logging
import re

import pytest
import torch
from torch._dynamo.utils import counters

from rdl.api import build
from rdl.training.buckets import BucketSettings, PadToBucket, padding, plan, sizes

BUCKETS = "experiment=buckets"


pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # tests/training/conftest.py


def setup(tiny_cfg, *overrides):
    torch.manual_seed(0)
    return build(tiny_cfg(BUCKETS, *overrides))


# Four hops reach customers other than the seeds (customer, transaction, article,
# transaction, customer), whose indices the pad seeds shift.
@pytest.mark.parametrize("task,overrides", [
    ("user-churn", ()), ("item-sales", ()),
    ("user-churn", ("model.num_layers=4", "data.num_neighbors=[4,4,4,4]"))])
def test_padding_to_a_bucket_changes_no_real_output(tiny_cfg, task, overrides):
    _, dm, module = setup(tiny_cfg, f"task={task}", "compile.enabled=false", *overrides)
    module.model.reset_parameters()  # the tree prior's zero head would output a constant
    module.eval()
    profiles = dm.bucket_plan("train")
    pad = PadToBucket(dm.task.entity_table, profiles, dm.buckets)
    # Short batches too (fewer seeds than the bucket: pad seeds shift the other customers).
    plain = dm._node_loader("train", dm.transform("train", probe=True),
                            [list(range(64)), list(range(100, 137)), list(range(300, 305))], 0)
    entity = dm.task.entity_table
    for batch in plain:
        real = sizes(batch, entity)
        padded = pad(copy.deepcopy(batch))
        assert padded.bucket is not None
        assert sizes(padded, entity) != real, "the batch was not padded"
        assert padded[entity].seed_time.numel() == dm.settings.batch_size
        with torch.no_grad():
            want, got = module(batch), module(padded)
        assert got.shape == want.shape == (batch[entity].batch_size,)
        torch.testing.assert_close(got, want)


@pytest.fixture
def one_thread():
    """One intra-op thread: the tiny model's steps are milliseconds, and two threads on a
    busy machine wait for each other (a second a step on a shared two-core machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.slow   # CI's 15 minutes: the test below compiles every bucket once, and checks it
def test_one_graph_per_bucket_over_200_training_batches(tiny_cfg, one_thread):
    # A tiny model, and Dynamo's graphs are counted without Inductor's code generation.
    _, dm, module = setup(tiny_cfg, "model.num_layers=1", "model.channels=8",
                          "+compile.kwargs.backend=aot_eager", "+compile.kwargs.fullgraph=true",
                          "data.batch_size=48")
    opt = torch.optim.Adam(module.model.parameters(), lr=torch.tensor(1e-3))
    module.train()
    loader, used, shapes, steps = dm.train_dataloader(), set(), set(), 0
    while steps < 200:
        for batch in loader:
            shapes.add(tuple(batch.unpadded.values()))
            loss, _ = module.step_loss(batch)
            loss.backward()
            opt.step()
            opt.zero_grad()
            used.add(batch.bucket)
            steps += 1
            if steps == 200:
                break
    assert len(shapes) > 50, "the sampled batches should vary in size"
    assert len(used) > 1, "the batches should spread over several buckets"
    graphs = int(counters["stats"]["unique_graphs"])
    assert graphs == len(used), f"{graphs} graphs for {len(used)} buckets used"
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_plan_places_buckets_at_quantiles_and_grows_one_for_a_larger_batch():
    settings = BucketSettings(count=2, headroom=0.0, multiple=8)
    observed = [{("nodes", "a"): n, ("seeds",): 4} for n in (10, 20, 30, 40, 100)]
    profiles = plan(observed, settings, seeds=8)
    # the median; the largest probe plus two standard deviations (100 + 2 * 35.4), by 8
    assert profiles == [{("nodes", "a"): 32, ("seeds",): 8}, {("nodes", "a"): 176, ("seeds",): 8}]
    pad = PadToBucket("a", profiles, settings)
    chosen = [pad.choose({("nodes", "a"): n, ("seeds",): 8}) for n in (3, 32, 33, 176)]
    assert chosen == [0, 0, 1, 1]
    assert pad.choose({("nodes", "a"): 177, ("seeds",): 8}) == 2
    assert pad.profiles[2][("nodes", "a")] == 184


@pytest.mark.parametrize("value,message", [
    ({"count": 0}, "data.buckets.count=0"), ({"headroom": -1}, "data.buckets.headroom=-1"),
    ({"probe": 1.5}, "data.buckets.probe=1.5"), ({"size": 3}, "unknown setting")])
def test_bad_bucket_settings_name_the_setting(value, message):
    with pytest.raises(ValueError, match=message):
        BucketSettings.of(value)


@pytest.mark.parametrize("overrides,message", [
    (("model=graph-transformer",), "takes token sets"),
    (("task=user-item-purchase", "model=idgnn"), "link prediction")])
def test_buckets_with_a_model_they_do_not_serve_fail_naming_the_setting(tiny_cfg, overrides,
                                                                       message):
    with pytest.raises(ValueError, match=rf"data\.buckets.*{message}"):
        build(tiny_cfg(BUCKETS, *overrides))


def test_padding_reports_what_the_buckets_add():
    observed = [{("nodes", "a"): n, ("seeds",): 8} for n in (10, 30)]
    profiles = [{("nodes", "a"): 16, ("seeds",): 8}, {("nodes", "a"): 40, ("seeds",): 8}]
    assert padding(observed, profiles) == {"nodes": (16 + 40) / 40 - 1, "seeds": 0.0}


@pytest.mark.slow  # a training run in a subprocess (about 20 s); the tests above hold the parts
def test_a_run_with_buckets_trains_evaluates_and_reports_its_graphs(run_train, tmp_path):
    out = run_train(tmp_path, "experiment=buckets", "+compile.kwargs.backend=aot_eager",
                    "compile.eval=true")
    assert out.returncode == 0, out.stderr[-3000:]
    graphs, breaks, planned = map(int, re.search(
        r"torch.compile: (\d+) graphs compiled, (\d+) graph breaks \(one graph per mode and "
        r"bucket used is expected, of (\d+) buckets planned", out.stdout).groups())
    assert breaks == 0 and 2 <= graphs <= planned  # some of the train, val and test buckets


def test_plan_drops_a_bucket_that_no_probe_falls_in():
    """Two quantities that vary against each other: no probe is below both medians'
    bucket, so it would only be met rarely, for one more graph; the last always stays."""
    settings = BucketSettings(count=3, headroom=0.0, multiple=1)
    observed = [{("nodes", "a"): a, ("nodes", "b"): b, ("seeds",): 4}
                for a, b in ((10, 40), (40, 10), (100, 100))]
    profiles = plan(observed, settings, seeds=4)
    # the buckets at the 1/3 quantiles (30, 30) held none; the 2/3 one (60, 60) holds two
    assert len(profiles) == 2
    assert 40 <= profiles[0]["nodes", "a"] == profiles[0]["nodes", "b"] < 100
    assert {PadToBucket("a", profiles, settings).choose(o) for o in observed} == {0, 1}


class Steps(pytest.importorskip("pytorch_lightning").Callback):
    """The loss of every training step, and Dynamo's graph count at the first step's
    start and at the end."""

    def __init__(self):
        self.losses, self.graphs = [], []

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if trainer.global_step == 0:
            self.graphs.append(int(counters["stats"]["unique_graphs"]))

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.losses.append(float(outputs["loss"]))

    def on_train_end(self, trainer, module):
        self.graphs.append(int(counters["stats"]["unique_graphs"]))


def test_every_bucket_compiles_before_the_first_step_and_training_is_unchanged(
        tiny_cfg, one_thread, tmp_path, caplog):
    from hydra.utils import instantiate

    def fit(warm: bool):
        torch._dynamo.reset()
        counters.clear()
        caplog.clear()
        cfg = tiny_cfg(BUCKETS, "model.num_layers=1", "model.channels=8",
                       "+compile.kwargs.backend=aot_eager", "data.batch_size=48",
                       # room for every batch: no bucket grows in training
                       "data.buckets.headroom=0.3",
                       f"data.buckets.warm={warm}", f"trainer.default_root_dir={tmp_path}")
        torch.manual_seed(0)
        _, dm, module = build(cfg)
        steps = Steps()
        # whether a backward found a gradient there to add to (never: warm drops each, as
        # Lightning does before each step; with CUDA graphs the old one is overwritten)
        steps.accumulated = []
        for p in module.parameters():
            p.register_hook(lambda g, p=p: steps.accumulated.append(p.grad is not None))
        trainer = instantiate(cfg.trainer, callbacks=[steps], logger=False,
                              enable_checkpointing=False, max_epochs=2, limit_train_batches=12,
                              limit_val_batches=0, num_sanity_val_steps=0)
        with caplog.at_level(logging.INFO, logger="rdl.training.compile"):
            trainer.fit(module, datamodule=dm)
        # no gradient outlives training (a CUDA graph's output, overwritten by evaluation's
        # replays, would fail Lightning's teardown when it moves the module to the CPU)
        steps.grads_left = [n for n, p in module.named_parameters() if p.grad is not None]
        steps.said = [r.getMessage() for r in caplog.records if r.name == "rdl.training.compile"]
        return steps, len(dm.bucket_profiles["train"])

    cold, _ = fit(warm=False)
    warmed, buckets = fit(warm=True)
    assert buckets > 1
    # the compile pause said and timed: at the first batch, or once for all the buckets
    for steps, what in ((cold, "first batch"), (warmed, f"{buckets} buckets")):
        assert len(steps.said) == 2, steps.said
        assert steps.said[0] == f"compiling the model for training (torch.compile, {what})..."
        assert re.fullmatch(rf"compiling the model for training \(torch.compile, {what}\): "
                            r"\d+\.\d s", steps.said[1])
    assert cold.graphs[0] == 0 and cold.graphs[-1] >= 1
    # all train buckets compiled at the start, none later
    assert warmed.graphs == [buckets, buckets], (warmed.graphs, buckets)
    assert len(warmed.losses) == 24 and warmed.losses == cold.losses
    for steps in (cold, warmed):
        assert steps.accumulated and not any(steps.accumulated)
        assert steps.grads_left == []
