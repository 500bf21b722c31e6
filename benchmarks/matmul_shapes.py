"""The matmuls of one training step and their shapes: ``python benchmarks/matmul_shapes.py
[override ...]`` (default ``task=user-churn experiment=gpu``, run on the CPU, eager).

Each ``mm``, ``addmm``, ``bmm`` and ``baddbmm`` of the forward and the backward of one
training batch, in order: its operands' shapes, the output (``batch x M x N``), the
reduced dimension ``K`` and its GFLOP. A GPU profile names a library kernel and its time,
not the matmul it computes; these shapes say which one it is (a small output over a long
``K`` is the weight gradient of a linear map over many rows). docs/performance.md, "What
the H200's kernel time is (2026-12-04, night)".
"""
from __future__ import annotations

import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

MATMULS = {"mm", "bmm", "addmm", "baddbmm"}


class Matmuls(TorchDispatchMode):
    """Records ``(op, left operand's shape, right operand's shape)`` of every matmul."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in MATMULS:
            a, b = (args[0], args[1]) if name in ("mm", "bmm") else (args[1], args[2])
            self.calls.append((name, tuple(a.shape), tuple(b.shape)))
        return func(*args, **(kwargs or {}))


def main() -> None:
    from rdl.api import build, config
    overrides = sys.argv[1:] or ["task=user-churn", "experiment=gpu"]
    cfg = config(*overrides, "trainer.accelerator=cpu", "data.num_workers=0",
                 "compile.enabled=false", "output_dir=/tmp/rdl-matmul-shapes")
    torch.manual_seed(cfg.seed)
    _, dm, module = build(cfg)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    module.train()
    with Matmuls() as rec:
        loss, _ = module.step_loss(batch)
        forward = len(rec.calls)
        loss.backward()
    total = 0.0
    for i, (name, a, b) in enumerate(rec.calls):
        batch_, m, k = (1, *a) if len(a) == 2 else a
        n = b[-1]
        gflop = 2 * batch_ * m * n * k / 1e9
        total += gflop
        print(f"{'forward ' if i < forward else 'backward'} {name:8} {a} @ {b}: "
              f"out {batch_}x{m}x{n}, K={k}, {gflop:.2f} GFLOP")
    print(f"{len(rec.calls)} matmuls ({forward} forward), {total:.1f} GFLOP")


if __name__ == "__main__":
    main()
