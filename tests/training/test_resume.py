"""Resuming a run: a run killed anywhere and resumed from its last.ckpt ends exactly as an
uninterrupted one (a crash test: SIGKILL at points drawn from a seed); the loaders' order
and samples depend on (seed, epoch, batch) alone."""
from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

import rdl
from rdl.checkpoints import checked_resume
from rdl.training.batches import EpochShuffle, SeedBatches, batches
from tests.conftest import TINY
from tests.zygote import command

#: three epochs of six steps, last.ckpt every second step, 2 validation and 3 test batches
#: of 32 rows; eager (the resume logic is the same compiled: compiled checkpoints keep the
#: plain model's keys, tested below)
RUN = ("task=user-churn", "trainer.max_epochs=3", "trainer.limit_train_batches=6",
       "trainer.limit_val_batches=2", "trainer.limit_test_batches=3", "data.eval_batch_size=32",
       "callbacks.last.every_n_train_steps=2", "compile.enabled=false")
KILLED_RUN = Path(__file__).with_name("killed_run.py")


def kill_points(seed: int) -> list[str]:
    """The kill points of a crash test, drawn from ``seed`` (``tests/training/killed_run.py``
    says what each means), in the order a run reaches them: right after an epoch-end
    checkpoint, during a checkpoint write, during a validation, during the final test."""
    rng = random.Random(seed)
    # last.ckpt is written every 2 steps, best.ckpt and last.ckpt when an epoch's
    # validation ends; a write:K point counts the writes of the run it kills (resumed at
    # the start of epoch 1 or 2, K in 1-2 is mid-epoch).
    return [f"epoch:{rng.randrange(2)}", f"write:{rng.randrange(1, 3)}",
            f"val:2:{rng.randrange(2)}", f"test:{rng.randrange(3)}"]


def run_killed(run_dir: Path, point: str, *overrides: str, cache: Path):
    """``killed_run.py`` in a session of its own (the kill takes its process group)."""
    env = {**os.environ, "RDL_CACHE": str(cache), "HYDRA_FULL_ERROR": "0",
           "PYTHONPATH": os.pathsep.join([str(Path(rdl.__file__).parents[1]),
                                          os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, str(KILLED_RUN), point, f"hydra.run.dir={run_dir}", *TINY,
           *RUN, *overrides]
    return command(cmd, env=env, timeout=900)     # a session of its own either way


def weights(path):
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


def crash_and_resume(tmp_path, cache, points: list[str], *overrides: str) -> None:
    """An uninterrupted run, and one killed at each of ``points`` in turn, each time
    resumed from its last.ckpt: the same final weights and metrics."""
    full = tmp_path / "full"
    out = run_killed(full, "none", *overrides, cache=cache)
    assert out.returncode == 0, out.stderr[-3000:]
    first = tmp_path / "0"
    last = first / "checkpoints" / "last.ckpt"   # resumed runs keep writing there
    for i, point in enumerate([*points, "none"]):
        # A run killed before its first checkpoint is started again.
        resume = (f"ckpt_path={last}",) if last.exists() else ()
        out = run_killed(tmp_path / str(i), point, *resume, *overrides, cache=cache)
        assert out.returncode == (0 if point == "none" else -9), (point, out.stderr[-3000:])
        if point != "none":
            assert not (tmp_path / str(i) / "metrics.json").exists()
            # What a kill leaves is whole: a readable checkpoint (the one before a write).
            assert not last.exists() or torch.load(last, map_location="cpu",
                                                   weights_only=False)["state_dict"]
    a, b = weights(full / "checkpoints" / "last.ckpt"), weights(last)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    expected = json.loads((full / "metrics.json").read_text())
    resumed = json.loads((tmp_path / str(len(points)) / "metrics.json").read_text())
    assert resumed["model"] == expected["model"], points
    # The validation pass is seeded: the best epoch's logged number is the one reported.
    logged = pd.read_csv(full / "logs" / "metrics.csv")["val/auroc"].dropna()
    assert expected["model"]["val"]["auroc"] == pytest.approx(logged.max(), rel=1e-6)


def test_a_run_killed_anywhere_resumes_to_the_same_end(tmp_path, rdl_cache):
    """Killed with SIGKILL right after an epoch-end checkpoint, while writing a checkpoint,
    during a validation and during the final test, each time resumed: the uninterrupted
    run's final weights and metrics, to the last digit."""
    crash_and_resume(tmp_path, rdl_cache, kill_points(0))


SETTINGS = {"workers": ("data.num_workers=2",),
            "ddp": ("trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2"),
            "compiled": ("compile.enabled=true",)}


@pytest.mark.slow
@pytest.mark.parametrize("setting,seed", [("one", 1), ("one", 2), ("workers", 1), ("ddp", 1),
                                          ("compiled", 1)])
def test_kill_points_drawn_from_a_seed(tmp_path, rdl_cache, setting, seed):
    """The sweep: kill points drawn from other seeds, with loader workers, with two gloo
    processes, compiled."""
    rng = random.Random(seed)
    more = [f"valdone:{rng.randrange(2)}", f"step:{rng.choice([3, 9, 15])}"]
    points = sorted_points([*kill_points(seed), *more])
    if setting == "ddp":  # two processes deal out the 2 val and 3 test batches: 1-2 each
        points = [re.sub(r"^(val:\d+|test):\d+$", r"\1:0", p) for p in points]
    crash_and_resume(tmp_path, rdl_cache, points, *SETTINGS.get(setting, ()))


def sorted_points(points: list[str]) -> list[str]:
    """Kill points in the order one run reaches them (each resumed run goes on from there);
    a checkpoint write right after the resume at an epoch's start."""
    def when(point):
        kind, *n = point.split(":")
        n = [int(x) for x in n]
        return {"step": lambda: n[0] / 6, "valdone": lambda: n[0] + 0.9,
                "epoch": lambda: n[0] + 1.0, "val": lambda: n[0] + 0.8,
                "test": lambda: 99}[kind]()
    ordered = sorted((p for p in points if not p.startswith("write")), key=when)
    at = next(i for i, p in enumerate(ordered) if p.startswith("epoch")) + 1
    return [*ordered[:at], *(p for p in points if p.startswith("write")), *ordered[at:]]


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
    from rdl.api import build
    _, _, compiled = build(tiny_cfg("task=user-churn", "compile.enabled=true"))
    _, _, eager = build(tiny_cfg("task=user-churn", "compile.enabled=false"))
    assert compiled.forward_fn is not compiled.model and eager.forward_fn is eager.model
    state = compiled.state_dict()
    assert not any("_orig_mod" in k for k in state)
    eager.load_state_dict(state)            # strict: every key, no other
    assert all(torch.equal(v, eager.state_dict()[k]) for k, v in state.items())
    compiled.load_state_dict(eager.state_dict())


def test_each_step_seeds_the_generators_as_torch_does_without_queueing_for_idle_devices(
        monkeypatch):
    """A step's seeding leaves the CPU's generator as ``torch.manual_seed`` does (the same
    dropout draws: a resumed run matches one seeded either way), and queues nothing, with
    its stack trace, for an accelerator this process has not started."""
    from rdl.training.resume import STARTED_LATER, seed_generators
    torch.manual_seed(123)
    want = torch.rand(5)
    torch.manual_seed(7)
    queued = []
    for name in STARTED_LATER:
        backend = getattr(torch, name, None)
        if backend is not None and not backend.is_initialized():
            monkeypatch.setattr(backend, "manual_seed_all",
                                lambda seed, name=name: queued.append(name))
    seed_generators(123, torch.device("cpu"))
    assert torch.equal(torch.rand(5), want)
    assert queued == []
    # another device type: torch's own seeding, every generator
    seen = []
    monkeypatch.setattr(torch, "manual_seed", lambda seed: seen.append(seed))
    seed_generators(5, torch.device("hpu"))
    assert seen == [5]
