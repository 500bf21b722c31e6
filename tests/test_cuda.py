"""On a GPU only (``pytest -m cuda``; skipped without CUDA): what the CPU tests can only
stand in for. A compiled run, buckets replayed as CUDA graphs and a one-process DDP run
train and evaluate on the GPU; a pinned batch reaches it whole; and a compiled training
step never makes the host wait for the device (CUDA's own sync check, where
``tests/training/test_syncs.py`` can only look for the ops that would sync).

``bash benchmarks/gpu.sh`` runs these first, whenever a GPU is lent."""
from __future__ import annotations

import json
import math
import re

import pytest
import pytorch_lightning as pl
import torch
from hydra.utils import instantiate

from rdl.api import build
from rdl.training.module import loggers_write_now
from training.test_transfer import batch_tensors as _tensors

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")]
GRAPHS = re.compile(r"torch.compile: (\d+) graphs compiled, (\d+) graph breaks")


def trained(out, run_dir) -> dict:
    """The run's metrics, after checking that it ended well and that they are finite."""
    assert out.returncode == 0, out.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    model = metrics["model"]
    for split in ("val", "test"):
        assert model[split] and all(math.isfinite(v) for v in model[split].values()), model
    return metrics


def graphs(out) -> tuple[int, int]:
    found = GRAPHS.search(out.stdout)
    assert found, out.stdout[-2000:]
    return int(found[1]), int(found[2])


def test_a_compiled_run_trains_on_the_gpu(run_train, tmp_path):
    out = run_train(tmp_path, "trainer=gpu", "compile.enabled=true", "compile.eval=true")
    trained(out, tmp_path)
    n, breaks = graphs(out)
    assert breaks == 0 and 1 <= n <= 2, out.stdout[-2000:]   # train and eval


@pytest.mark.parametrize("launch_bound", ["false", "true"])
def test_buckets_replay_cuda_graphs(run_train, tmp_path, launch_bound):
    # launch_bound=true: experiment=gpu's model (ops fused, encoders stacked), whose CUDA
    # graphs over buckets ran 28 compiled graphs a step on 2026-12-04 (docs/performance.md);
    # compile.log names each graph break and recompile in the output
    out = run_train(tmp_path, "trainer=gpu", "experiment=buckets",
                    "+compile.kwargs.mode=reduce-overhead", f"launch_bound={launch_bound}",
                    "compile.log=true", "compile.eval=true")
    trained(out, tmp_path)
    n, breaks = graphs(out)
    planned = int(re.search(r"of (\d+) buckets planned", out.stdout)[1])
    assert breaks == 0 and 2 <= n <= planned, out.stdout[-2000:] + out.stderr[-6000:]


def test_one_process_ddp_on_the_gpu(run_train, tmp_path):
    # eager: what DDP changes is the process group and the loaders, not the compiled model
    trained(run_train(tmp_path, "trainer=ddp", "trainer.devices=1", "compile.enabled=false"),
            tmp_path)


def test_a_pinned_batch_reaches_the_gpu_whole(tiny_cfg):
    _, dm, module = build(tiny_cfg("task=user-churn", "data.pin_memory=true"))
    try:
        batch = next(iter(dm.train_dataloader()))
        tensors = {k: v for k, v in _tensors(batch)}
        # an empty tensor has no memory to pin (is_pinned() is False), and copies nothing
        assert tensors and all(v.is_pinned() for v in tensors.values() if v.numel())
        before = {k: v.clone() for k, v in tensors.items()}
        moved = dm.transfer_batch_to_device(batch, torch.device("cuda", 0), 0)
        torch.cuda.synchronize()
        after = dict(_tensors(moved))
        assert after.keys() == before.keys()
        for k, v in after.items():
            # missing numbers are NaN, which torch.equal holds unequal to themselves (the
            # H200 check of 2026-11-28 failed on customer.tf.numerical for that alone)
            assert v.is_cuda, k
            torch.testing.assert_close(v.cpu(), before[k], rtol=0, atol=0, equal_nan=True,
                                       msg=k)
    finally:
        dm.teardown()


class SyncsAreErrors(pl.Callback):
    """From the start of a train batch (after the first ``skip``, which compile) to its
    end: a host-device sync raises (``torch.cuda.set_sync_debug_mode``). Two instances,
    one first and one last among the callbacks, so that every callback's per-batch hook
    runs inside the window. A step at which the loggers write (every
    ``trainer.log_every_n_steps`` and an epoch's last) is left out: a logger writes values
    on the host (the LR monitor's learning rate, the step's loss), which is a read of the
    device by design; ``logged`` counts those."""

    def __init__(self, opens: bool, skip: int = 2):
        self.opens, self.skip, self.checked, self.logged = opens, skip, 0, 0

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if self.opens and batch_idx >= self.skip:
            if loggers_write_now(trainer):
                self.logged += 1
                return
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
            self.checked += 1

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if not self.opens:
            torch.cuda.set_sync_debug_mode("default")


def test_compiled_training_steps_never_sync_on_the_gpu(tiny_cfg, tmp_path):
    """The step the benchmark times (fetch excluded): copy, forward, loss, backward,
    optimiser and LR-schedule step, ``self.log``, the progress bar and the callbacks that
    act per step (resume state, LR monitor; checkpoints write every N steps). Compiled
    only: eagerly, PyTorch Frame's encoders sync (``tests/training/test_syncs.py``)."""
    cfg = tiny_cfg("task=user-churn", "trainer=gpu", "compile.enabled=true",
                   "scheduler=cosine", "scheduler.warmup_steps=2",
                   f"trainer.default_root_dir={tmp_path}", f"logger.save_dir={tmp_path}",
                   "trainer.max_epochs=1", "trainer.limit_train_batches=6",
                   "trainer.limit_val_batches=0", "+trainer.num_sanity_val_steps=0")
    _, dm, module = build(cfg)
    first, last = SyncsAreErrors(True), SyncsAreErrors(False)
    callbacks = [instantiate(c) for name, c in cfg.callbacks.items()
                 if name in ("resume", "lr_monitor")]
    trainer = instantiate(cfg.trainer, callbacks=[first, *callbacks, last],
                          logger=instantiate(cfg.logger), enable_checkpointing=False)
    try:
        trainer.fit(module, datamodule=dm)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    # batches 2-5: the last logs (a short epoch logs its last step), the others are checked
    assert trainer.global_step == 6 and first.logged == 1 and first.checked == 3


def test_a_step_seeds_the_gpu_generator_as_torch_manual_seed_does():
    """rdl's per-step seeding (which skips the accelerators this process has not started)
    leaves CUDA's generator as ``torch.manual_seed`` does: the same dropout on the GPU."""
    from rdl.training.resume import seed_generators
    dev = torch.device("cuda")
    torch.manual_seed(11)
    want = torch.rand(8, device=dev)
    torch.manual_seed(3)
    seed_generators(11, dev)
    assert torch.equal(torch.rand(8, device=dev), want)
