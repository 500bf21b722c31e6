"""Resuming a run: a run killed mid-epoch and resumed from its last.ckpt ends exactly as an
uninterrupted one; the loaders' order and samples depend on (seed, epoch, batch) alone."""
from __future__ import annotations

import json
import sys

import pandas as pd
import pytest
import torch

from rdl.train import checked_resume
from rdl.training.batches import EpochShuffle, SeedBatches, batches

#: ``python -c``: rdl.train with a callback that SIGKILLs the process at the end of a step
#: (before that step's checkpoint: Lightning runs checkpoint callbacks last).
KILLED_AT = """
import os, signal, sys, runpy, types
import pytorch_lightning as pl
class KillAt(pl.Callback):
    def __init__(self, step):
        self.step = step
    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)
sys.modules["kill_at"] = types.SimpleNamespace(KillAt=KillAt)
sys.argv[0] = "rdl.train"
runpy.run_module("rdl.train", run_name="__main__", alter_sys=True)
"""
#: three epochs of six steps, last.ckpt every second step, eager (the resume logic is the
#: same compiled; compiled checkpoints keep the plain model's keys)
RUN = ("task=user-churn", "trainer.max_epochs=3", "trainer.limit_train_batches=6",
       "trainer.limit_val_batches=2", "callbacks.last.every_n_train_steps=2",
       "compile.enabled=false")


def weights(path):
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


def test_a_run_killed_mid_epoch_resumes_to_the_same_end(tmp_path, run_train):
    full, killed = tmp_path / "full", tmp_path / "killed"
    out = run_train(full, *RUN, tiny=True)
    assert out.returncode == 0, out.stderr[-3000:]
    # Killed at the end of step 9 (epoch 1, its 4th batch): last.ckpt holds step 8.
    out = run_train(killed, *RUN, "+callbacks.kill._target_=kill_at.KillAt",
                    "+callbacks.kill.step=9", python=(sys.executable, "-c", KILLED_AT))
    assert out.returncode == -9, out.stderr[-3000:]
    last = killed / "checkpoints" / "last.ckpt"
    ckpt = torch.load(last, map_location="cpu", weights_only=False)
    assert (ckpt["epoch"], ckpt["global_step"]) == (1, 8)
    assert not (killed / "metrics.json").exists()
    out = run_train(tmp_path / "resumed", *RUN, f"ckpt_path={last}")
    assert out.returncode == 0, out.stderr[-3000:]
    # The resumed run trained steps 9 to 18 as the uninterrupted one did: the same final
    # weights (written to the folder it resumed from), the same metrics.
    a, b = weights(full / "checkpoints" / "last.ckpt"), weights(last)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    first = json.loads((full / "metrics.json").read_text())
    # The validation pass is seeded: the best epoch's logged number is the one reported.
    logged = pd.read_csv(full / "logs" / "metrics.csv")["val/auroc"].dropna()
    assert first["model"]["val"]["auroc"] == pytest.approx(logged.max(), rel=1e-6)
    again = json.loads((tmp_path / "resumed" / "metrics.json").read_text())
    assert first["model"] == again["model"]


def test_resume_checks_the_checkpoint_before_any_work(tmp_path, tiny_cfg):
    cfg = tiny_cfg("task=user-churn", f"ckpt_path={tmp_path / 'nope.ckpt'}")
    with pytest.raises(FileNotFoundError, match="nope.ckpt: no such file"):
        checked_resume(cfg)
    (tmp_path / "junk.ckpt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="junk.ckpt: not a readable checkpoint"):
        checked_resume(tiny_cfg(f"ckpt_path={tmp_path / 'junk.ckpt'}"))
    torch.save({"state_dict": {}}, tmp_path / "foreign.ckpt")
    with pytest.raises(ValueError, match="not a checkpoint written by rdl.train"):
        checked_resume(tiny_cfg(f"ckpt_path={tmp_path / 'foreign.ckpt'}"))
    torch.save({"hyper_parameters": {"rdl_config": {"task": {"name": "item-sales"}}}},
               tmp_path / "sales.ckpt")
    with pytest.raises(ValueError, match="a checkpoint of task 'item-sales', not of 'user-churn'"):
        checked_resume(tiny_cfg("task=user-churn", f"ckpt_path={tmp_path / 'sales.ckpt'}"))
    assert checked_resume(tiny_cfg("task=item-sales", f"ckpt_path={tmp_path / 'sales.ckpt'}"))


def test_each_epoch_has_its_own_order_that_depends_on_seed_and_epoch_alone():
    a, b = EpochShuffle(50, random_seed=3), EpochShuffle(50, random_seed=3)
    orders = [list(a) for _ in range(3)]  # passes without set_epoch advance the epoch
    assert len({tuple(o) for o in orders}) == 3 and sorted(orders[0]) == list(range(50))
    b.set_epoch(2)
    assert list(b) == orders[2]
    assert list(EpochShuffle(50, random_seed=4)) != orders[0]


@pytest.mark.parametrize("merge_tail", [True, False])
def test_batches_skip_the_first_batches_of_one_pass(merge_tail):
    sampler = batches(100, 16, shuffle=True, merge_tail=merge_tail, random_seed=0)
    assert isinstance(sampler, SeedBatches)
    sampler.sampler.set_epoch(1)
    whole = list(sampler)
    sampler.sampler.set_epoch(1)
    sampler.skip(4)
    assert list(sampler) == whole[4:]
    sampler.sampler.set_epoch(1)
    assert list(sampler) == whole  # the skip held for one pass only


def test_compiled_and_eager_checkpoints_load_into_each_other(tiny_cfg):
    """The compiled wrapper is no submodule: a checkpoint keeps the plain model's keys."""
    from rdl.train import build
    _, _, compiled = build(tiny_cfg("task=user-churn", "compile.enabled=true"))
    _, _, eager = build(tiny_cfg("task=user-churn", "compile.enabled=false"))
    assert compiled.forward_fn is not compiled.model and eager.forward_fn is eager.model
    state = compiled.state_dict()
    assert not any("_orig_mod" in k for k in state)
    eager.load_state_dict(state)            # strict: every key, no other
    assert all(torch.equal(v, eager.state_dict()[k]) for k, v in state.items())
    compiled.load_state_dict(eager.state_dict())
