"""The Hydra entry point, end to end on a tiny synthetic database."""
import json
import os
import subprocess
import sys

import pytest


def run(tmp_path, *overrides, cache=None):
    env = {**os.environ, "RDL_CACHE": str(cache or tmp_path / "cache"), "HYDRA_FULL_ERROR": "0"}
    cmd = [sys.executable, "-m", "rdl.train", f"hydra.run.dir={tmp_path}/run", *overrides]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("task,metric", [
    ("user-churn", "auroc"),
    ("item-sales", "mae"),
    ("user-item-purchase", "map"),                  # the default model: contextgnn
    ("user-item-purchase model=idgnn", "map"),
    ("user-item-purchase model=two-tower", "map"),
])
def test_short_training_run(tmp_path, cache, task, metric):
    out = run(tmp_path, *f"task={task}".split(), "data=hm-tiny", "trainer.max_epochs=1",
              "trainer.limit_train_batches=3", "trainer.limit_val_batches=2",
              "model.channels=16", "model.encoder_layers=1", "compile.enabled=false", cache=cache)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert results["task"] == task.split()[0]
    for split in ("val", "test"):
        assert 0 <= results["model"][split][metric] < float("inf")
    baselines = [k for k in results if k not in ("task", "model")]
    assert baselines, "the trivial baselines are reported beside the model"
    assert "model vs baselines" in out.stdout
    assert (tmp_path / "run" / "checkpoints" / "best.ckpt").exists()


def test_compiled_training_run(tmp_path, cache):
    out = run(tmp_path, "task=user-churn", "data=hm-tiny", "trainer.max_epochs=1",
              "trainer.limit_train_batches=4", "trainer.limit_val_batches=2",
              "model.channels=16", "model.encoder_layers=1", "compile.enabled=true",
              "compile.log=true", cache=cache)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0 <= results["model"]["test"]["auroc"] <= 1
    # Sanity check, training, validation, the best checkpoint's validation and test: one
    # graph for training and one for evaluation, nothing else.
    assert "torch.compile: 2 graphs compiled, 0 graph breaks" in out.stdout, out.stdout[-2000:]
    # compile.log=true reports the one recompile, and why: evaluation runs without grad.
    assert out.stderr.count("Recompiling function") == 1, out.stderr[-3000:]
    assert "GLOBAL_STATE changed: grad_mode" in out.stderr


def test_compiled_bf16_mixed_run(tmp_path, cache):
    out = run(tmp_path, "task=item-sales", "data=hm-tiny", "trainer.max_epochs=1",
              "trainer.limit_train_batches=3", "trainer.limit_val_batches=2",
              "model.channels=16", "model.encoder_layers=1", "trainer.precision=bf16-mixed",
              cache=cache)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0 <= results["model"]["test"]["mae"] < float("inf")
    assert "torch.compile: 2 graphs compiled, 0 graph breaks" in out.stdout, out.stdout[-2000:]


@pytest.mark.parametrize("override,message", [
    ("task=nope", "task"),
    ("model.channel=16", "channel"),
    ("data.db.source=nope", "nope"),
    ("model=idgnn", "cannot be trained on task 'user-churn'"),
    ("task=user-item-purchase model=sage", "model=contextgnn"),
])
def test_bad_settings_fail_with_a_clear_message(tmp_path, cache, override, message):
    out = run(tmp_path, *override.split(), "data=hm-tiny", cache=cache)
    assert out.returncode != 0
    err = out.stderr
    assert message in err
    assert "Traceback" not in err  # one clear message, not a stack trace
