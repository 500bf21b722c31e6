"""What seeding the generators costs the host at each training batch:
``python benchmarks/step_seeding.py [--calls N]``.

``torch.manual_seed`` against rdl's ``seed_generators`` (``rdl/training/resume.py``),
each called from 5 and from 35 frames deep (Lightning's loop calls a callback about 30
frames down): ``torch.manual_seed`` queues the seed, with a formatted stack trace, for
every accelerator this process has not started, so its cost grows with the stack. Mean
microseconds a call. docs/performance.md, "2026-12-05: a step's seeding".
"""
from __future__ import annotations

import argparse
import time

import torch

from rdl.training.resume import seed_generators


def _deep(n: int, fn):
    return fn() if n == 0 else _deep(n - 1, fn)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args()
    started = [n for n in ("cuda", "xpu", "mtia")
               if getattr(torch, n, None) is not None and getattr(torch, n).is_initialized()]
    print(f"torch {torch.__version__}; accelerators started: {started or 'none'}")
    cpu = torch.device("cpu")
    ways = {"torch.manual_seed": torch.manual_seed,
            "rdl seed_generators": lambda s: seed_generators(s, cpu)}
    for name, seed in ways.items():
        for depth in (5, 35):
            start = time.perf_counter()
            for i in range(args.calls):
                _deep(depth, lambda: seed(i))
            us = (time.perf_counter() - start) / args.calls * 1e6
            print(f"{name:22s} {depth:2d} frames deep: {us:7.1f} us a call")


if __name__ == "__main__":
    main()
