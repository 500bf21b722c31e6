"""``data.sampler.device``: batches built on the sampler's device are the loader's batches.

With a device the sampler's index, the graph, the TensorFrames, the labels and the target
lists are put there once and each batch is built there (rdl/training/sampler_device.py). On
the CPU (``data.sampler.device=cpu``) that path must give exactly the default loader's
batches, every tensor bit for bit, and the same training; the CUDA cases (``pytest -m
cuda``) compare a GPU-built batch with the CPU loader's.
"""
from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate

from rdl.api import build, prepare
from rdl.training.data_settings import DataSettings
from training.test_transfer import batch_tensors

CUDA_ONLY = [pytest.mark.cuda,
             pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")]

#: a node task, a link task (uniform: its own model samples the last rows, which draw
#: nothing) and a link task's training triplets (random negatives)
TASKS = {"node": ("task=user-churn",),
         "link": ("experiment=user-item-purchase", "data.strategy=uniform"),
         "triplets": ("experiment=user-item-purchase", "model=two-tower")}


def contents(batch) -> dict:
    """Every value of a batch by name: its tensors (TensorFrames' included) and the rest
    (``batch_size``, ``num_sampled_nodes``...)."""
    out = dict(batch_tensors(batch))
    for store in batch.stores:
        for key, value in store.items():
            if not isinstance(value, torch.Tensor) and not hasattr(value, "feat_dict"):
                out[f"{store._key}.{key}"] = value
    return out


def differences(a, b) -> list[str]:
    """The names of the values in which two batches differ, compared bit for bit on the
    CPU (NaN equals NaN of the same bits), dtypes and shapes included."""
    ca, cb = contents(a), contents(b)
    if ca.keys() != cb.keys():
        return sorted(ca.keys() ^ cb.keys())
    bad = []
    for k, x in ca.items():
        y = cb[k]
        if isinstance(x, torch.Tensor):
            x, y = x.cpu(), y.cpu()
            if x.dtype != y.dtype or x.shape != y.shape:
                bad.append(k)
                continue
            if x.is_floating_point():
                x, y = x.contiguous().view(torch.uint8), y.contiguous().view(torch.uint8)
            if not torch.equal(x, y):
                bad.append(k)
        elif x != y:
            bad.append(k)
    return bad


def loaders(dm, task: str) -> dict:
    """The loaders of a data module that a run uses, each by name."""
    out = {"train": dm.train_dataloader(), "val": dm.val_dataloader()}
    if task != "node":
        out["dst"] = dm.dst_loader("val")   # the candidates, embedded at the val time
    return out


def first(loader, n: int = 3) -> list:
    return [b for b, _ in zip(loader, range(n))]


@pytest.mark.parametrize("task", TASKS)
def test_batches_built_on_the_samplers_device_equal_the_loaders(tiny_cfg, task):
    _, default, _ = build(tiny_cfg(*TASKS[task]))
    _, on, _ = build(tiny_cfg(*TASKS[task], "data.sampler.device=cpu"))
    try:
        assert default.device is None and on.device == torch.device("cpu")
        assert on.sampler.device == torch.device("cpu")
        want = {name: first(loader) for name, loader in loaders(default, task).items()}
        got = {name: first(loader) for name, loader in loaders(on, task).items()}
        for name, batches in want.items():
            assert len(got[name]) == len(batches) > 0, name
            for i, (a, b) in enumerate(zip(batches, got[name])):
                assert differences(a, b) == [], (name, i)
        # the comparison sees a draw: the same seeds sampled from another random stream
        on.sampler = on.sampler.with_random_seed(on.settings.random_seed + 7)
        other = first(on.train_dataloader(), 1)[0]
        assert any(".n_id" in k for k in differences(want["train"][0], other))
    finally:
        default.teardown()
        on.teardown()


class Losses(pytest.importorskip("pytorch_lightning").Callback):
    def __init__(self):
        self.losses = []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.losses.append(float(outputs["loss"]))


def train_losses(cfg, steps: int = 3) -> list[float]:
    """The losses of a run's first ``steps`` training steps (weights initialised alike)."""
    torch.manual_seed(0)
    _, dm, module = build(cfg)
    losses = Losses()
    trainer = instantiate(cfg.trainer, callbacks=[losses], logger=False,
                          enable_checkpointing=False, enable_progress_bar=False, max_epochs=1,
                          limit_train_batches=steps, limit_val_batches=0,
                          num_sanity_val_steps=0)
    try:
        trainer.fit(module, datamodule=dm)
    finally:
        dm.teardown()
    assert len(losses.losses) == steps
    return losses.losses


@pytest.mark.parametrize("task", ["node", "triplets"])
def test_training_on_batches_built_on_the_samplers_device_is_unchanged(tiny_cfg, tmp_path,
                                                                          task):
    common = (*TASKS[task], "compile.enabled=false", "trainer.accelerator=cpu",
              f"trainer.default_root_dir={tmp_path}")
    assert train_losses(tiny_cfg(*common, "data.sampler.device=cpu")) == \
        train_losses(tiny_cfg(*common))


@pytest.mark.parametrize("settings, named", [
    ({"num_workers": 2}, ("data.sampler.device=cpu", "data.num_workers=0")),
    ({"pin_memory": True}, ("data.pin_memory=true", "data.sampler.device=cpu"))])
def test_a_device_sampler_refuses_loader_workers_and_pinning(settings, named):
    """Batches built on the device are built in the training process: with workers
    (CUDA does not survive their fork) or pinning, one error names the settings."""
    with pytest.raises(ValueError) as e:
        DataSettings.of(sampler={"device": "cpu"}, **settings)
    assert all(n in str(e.value) for n in named), str(e.value)
    DataSettings.of(**settings)   # without a device, as ever


@pytest.mark.parametrize("overrides, named", [
    (("data.sampler.device=cpu", "data.num_workers=2"), "data.num_workers=0"),
    (("data.sampler.device=tpu",), "must be null, cpu or a CUDA device"),
    # no CUDA here, or a trainer on the CPU with it: a GPU's batches for a CPU model
    (("data.sampler.device=cuda", "trainer.accelerator=cpu"), "data.sampler.device=cuda"),
    (("data.sampler.device=cuda", "trainer=ddp"), "data.sampler.device=cuda")])
def test_bad_sampler_devices_fail_before_the_database_is_read(tiny_cfg, monkeypatch,
                                                              overrides, named):
    def read(cfg):
        raise AssertionError("the database was read")

    monkeypatch.setattr("rdl.api.load_database", read)
    with pytest.raises(ValueError, match="data.sampler.device") as e:
        prepare(tiny_cfg("task=user-churn", *overrides))
    assert named in str(e.value)


@pytest.mark.parametrize("sampler", [{"device": "cuda"}, None])
def test_predict_samples_on_the_cpu_whatever_the_checkpoint_says(tiny_cfg, tmp_path, sampler):
    """``rdl.predict`` rebuilds the run from its checkpoint's config: a run that built its
    batches on a GPU (or one from before ``data.sampler``) predicts on a machine without
    one, sampled on the CPU."""
    from omegaconf import OmegaConf

    from rdl.checkpoints import CONFIG_KEY
    from rdl.predict import predict

    cfg = tiny_cfg("task=user-churn", "compile.enabled=false", f"output_dir={tmp_path}")
    _, dm, module = build(cfg)
    saved = OmegaConf.to_container(cfg, resolve=False)
    if sampler is None:
        del saved["data"]["sampler"]
    else:
        saved["data"]["sampler"] = sampler
    torch.save({"hyper_parameters": {CONFIG_KEY: saved}, "state_dict": module.state_dict()},
               tmp_path / "run.ckpt")
    _, table, _ = predict(OmegaConf.create({
        "ckpt_path": str(tmp_path / "run.ckpt"), "split": "val", "format": "csv",
        "output": str(tmp_path / "val.csv"), "accelerator": "cpu", "run": {}}))
    assert len(table) == len(dm.tables["val"]) > 0


# --------------------------------------------------------------------------- #
# On a GPU
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("task", [pytest.param(t, marks=CUDA_ONLY) for t in TASKS])
def test_batches_built_on_the_gpu_equal_the_cpu_loaders(tiny_cfg, task):
    _, default, _ = build(tiny_cfg(*TASKS[task]))
    _, on, _ = build(tiny_cfg(*TASKS[task], "data.sampler.device=cuda", "trainer=gpu"))
    try:
        want = {name: first(loader) for name, loader in loaders(default, task).items()}
        got = {name: first(loader) for name, loader in loaders(on, task).items()}
        cuda = torch.device("cuda", torch.cuda.current_device())
        for name, batches in want.items():
            assert len(got[name]) == len(batches) > 0, name
            for i, (a, b) in enumerate(zip(batches, got[name])):
                off = [k for k, v in batch_tensors(b) if v.device != cuda]
                assert off == [], (name, i, off)   # built on the GPU, every tensor
                assert on.transfer_batch_to_device(b, cuda, 0) is b   # nothing to copy
                assert differences(a, b) == [], (name, i)
    finally:
        default.teardown()
        on.teardown()


@pytest.mark.parametrize("task", [pytest.param(t, marks=CUDA_ONLY) for t in ("node", "triplets")])
def test_training_on_batches_built_on_the_gpu(tiny_cfg, tmp_path, task):
    """A few steps on the GPU, with the batches built there and with the CPU loader's: the
    same batches, so the same losses up to the GPU's own nondeterminism (atomic sums)."""
    common = (*TASKS[task], "compile.enabled=false", "trainer=gpu",
              f"trainer.default_root_dir={tmp_path}")
    on = train_losses(tiny_cfg(*common, "data.sampler.device=cuda"))
    assert on == pytest.approx(train_losses(tiny_cfg(*common)), rel=1e-5)
