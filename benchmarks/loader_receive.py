"""What a loader worker's batch costs the training process to receive: ``python
benchmarks/loader_receive.py [--strategy file_descriptor|file_system] [--pack]
[override ...]``.

A few training batches of the config are made in this process, then served by one
DataLoader worker (as ``data.num_workers`` serves them) that is given time to fill its
queue; each ``next()`` then only receives a ready batch: unpickling it and mapping each of
its tensors' shared memory. With torch's default sharing strategy on Linux
(``file_descriptor``) every tensor's memory comes as a file descriptor fetched from the
worker over a socket. ``--pack``: the worker sends the batch packed in one shared buffer
(``data.pack_batches``, :mod:`rdl.training.packing`), and the time includes unpacking it.
Prints the median and least milliseconds a batch, and the batch's
tensor count. docs/performance.md, "The GPU check on an H200 (2026-12-04)".
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.multiprocessing as tmp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategy", choices=tmp.get_all_sharing_strategies())
    ap.add_argument("--pack", action="store_true", help="one shared buffer a batch")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("overrides", nargs="*", default=["task=user-churn", "experiment=gpu"])
    args = ap.parse_args()
    if args.strategy:
        tmp.set_sharing_strategy(args.strategy)
    from rdl.api import build, config
    from rdl.training.packing import pack, unpacked
    cfg = config(*args.overrides, "trainer.accelerator=cpu", "data.num_workers=0",
                 "compile.enabled=false", "output_dir=/tmp/rdl-loader-receive")
    _, dm, _ = build(cfg)
    dm.setup("fit")
    made = iter(dm.train_dataloader())
    batches = [next(made) for _ in range(4)]
    tensors = len(pack(batches[0]).specs)   # every tensor, the TensorFrames' included

    class Served(torch.utils.data.Dataset):
        def __len__(self):
            return args.batches + 1

        def __getitem__(self, i):
            batch = batches[i % len(batches)]
            return pack(batch) if args.pack else batch

    loader = torch.utils.data.DataLoader(Served(), batch_size=None, num_workers=1,
                                         prefetch_factor=args.batches + 1)
    it = iter(loader)
    next(it)
    time.sleep(8)   # the worker fills its queue: each next() below only receives
    took = []
    for _ in range(args.batches):
        t0 = time.perf_counter()
        unpacked(next(it))
        took.append(time.perf_counter() - t0)
    took.sort()
    print(f"{tmp.get_sharing_strategy()}{', packed' if args.pack else ''}: {took[len(took) // 2] * 1e3:.2f} ms a batch "
          f"(median; least {took[0] * 1e3:.2f} ms), {tensors} tensors a batch")


if __name__ == "__main__":
    main()
