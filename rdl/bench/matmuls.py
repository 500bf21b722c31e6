"""Ways to compute the stacked encoders' weight gradient, timed on one device:
``python -m rdl.bench matmuls [--device cuda|cpu] [--rows 1890 1308 32722 6536]
[--channels 128] [--repeat 20] [--out DIR]``.

On an H200, half of a compiled user-churn step's kernel time (8.4 of 15.5 ms at
``experiment=gpu``) is one batched matmul run 7-8 times a step: the weight gradient of
each of :class:`~rdl.nn.stacked.StackedLinear`'s maps, ``grad[t]^T @ x[t]`` for ``T``
tables, a ``C x C`` output per table summed over every row, each table padded to the most
rows of any (docs/performance.md, "What the H200's kernel time is"). cuBLAS ran it at about
4 TFLOPS: 32x32 tiles over four 128x128 outputs make 64 thread blocks for 132
multiprocessors, each summing 32,722 rows. Before rdl changes how it is computed, this says
what each way costs on the device at hand, in seconds, not launches:

- ``padded bmm``: as rdl does it now, ``bmm(grad^T, x)`` over ``[T, rows, C]``;
- ``padded bmm, split-K S``: the rows cut into ``S`` slices, one ``bmm`` over the
  ``T x S`` slices and a sum over ``S`` after (``S`` times the blocks; rows padded to a
  multiple of ``S``);
- ``per-table mm``: one ``mm`` per table over its real rows only (no padding, ``T``
  launches);
- ``chunks of K``: as ``model.stacked_encoders=K`` computes it
  (:class:`~rdl.nn.stacked.ChunkedLinear`): each table padded to whole chunks of ``K``
  rows, one ``bmm`` over the chunks, their sums by table in one matmul;
- ``padded bmm, TF32``: the first with TF32 tensor cores (``matmul_precision=high``;
  other numbers);
- ``forward bmm``: the forward's own ``bmm(x, W^T)`` over the same rows, for scale.

Each row: milliseconds a call (median of ``--repeat``, the device synchronised around
each), TFLOPS counted over the padded rows (the per-table row over its real rows) and the
largest difference from ``padded bmm`` relative to its largest value.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import Tensor

from rdl.bench.report import report, run_dir

#: user-churn's four tables' rows in a batch at ``experiment=gpu`` (2,048 seeds), as the
#: H200's profile saw them (benchmarks/matmul_shapes.py)
ROWS = [1890, 1308, 32722, 6536]
SPLITS = (4, 16, 64)
#: rows a chunk (``model.stacked_encoders``)
CHUNKS = (256, 1024)


def ways(rows: list[int], channels: int, device: torch.device, seed: int = 0) -> dict:
    """``{name: (function, flop)}``: each way's computation of the ``[T, C, C]`` weight
    gradient (the forward's matmul for scale) over random inputs, padded rows zero."""
    g = torch.Generator().manual_seed(seed)
    t, most, c = len(rows), max(rows), channels
    x = torch.zeros(t, most, c)
    grad = torch.zeros(t, most, c)
    for i, r in enumerate(rows):
        x[i, :r] = torch.randn(r, c, generator=g)
        grad[i, :r] = torch.randn(r, c, generator=g)
    x, grad = x.to(device), grad.to(device)
    weight = torch.randn(t, c, c, generator=g).to(device)
    padded = 2 * t * most * c * c

    def split(s: int):
        rows_s = -(-most // s) * s          # padded to a multiple of s
        xs = torch.nn.functional.pad(x, (0, 0, 0, rows_s - most)).view(t * s, rows_s // s, c)
        gs = torch.nn.functional.pad(grad, (0, 0, 0, rows_s - most)).view(
            t * s, rows_s // s, c)
        return lambda: torch.bmm(gs.transpose(1, 2), xs).view(t, s, c, c).sum(1)

    def tf32():
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")
        try:
            return torch.bmm(grad.transpose(1, 2), x)
        finally:
            torch.set_float32_matmul_precision(before)

    out = {"padded bmm": (lambda: torch.bmm(grad.transpose(1, 2), x), padded)}
    for s in SPLITS:
        out[f"padded bmm, split-K {s}"] = (split(s), padded)
    out["per-table mm"] = (lambda: torch.stack([grad[i, :r].T @ x[i, :r]
                                                for i, r in enumerate(rows)]),
                           2 * sum(rows) * c * c)
    for k in CHUNKS:
        out[f"chunks of {k}"] = chunked(x, grad, rows, k)
    out["padded bmm, TF32"] = (tf32, padded)
    out["forward bmm"] = (lambda: torch.bmm(x, weight.transpose(1, 2)), padded)
    return out


def chunked(x: Tensor, grad: Tensor, rows: list[int], k: int) -> tuple:
    """``(function, flop)`` of the weight gradient over chunks of ``k`` rows
    (:func:`~rdl.nn.stacked.chunk_layout`, :func:`~rdl.nn.stacked._by_table`), the real
    rows of ``x`` and ``grad [T, rows, C]``."""
    from rdl.nn.stacked import _by_table, chunk_layout
    xs, index = chunk_layout([x[i, :r] for i, r in enumerate(rows)], k)
    gs, _ = chunk_layout([grad[i, :r] for i, r in enumerate(rows)], k)
    c = x.size(-1)
    return (lambda: _by_table(torch.bmm(gs.transpose(1, 2), xs), index, len(rows)),
            2 * xs.size(0) * k * c * c)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(rows: list[int], channels: int, device: torch.device, repeat: int) -> list[dict]:
    """One row per way (see the module's docstring)."""
    found = ways(rows, channels, device)
    reference = found["padded bmm"][0]()
    scale = reference.abs().max().item()
    out = []
    for name, (fn, flop) in found.items():
        result = fn()                       # warm: cuBLAS picks its kernel
        times = []
        for _ in range(repeat):
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times.append(time.perf_counter() - start)
        ms = statistics.median(times) * 1e3
        diff = None if name == "forward bmm" else \
            (result - reference).abs().max().item() / scale
        out.append({"way": name, "ms": ms, "tflops": flop / ms / 1e9,
                    "vs_padded_bmm": None, "rel_diff": diff})
    base = out[0]["ms"]
    for r in out:
        r["vs_padded_bmm"] = base / r["ms"]
    return out


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m rdl.bench matmuls",
                                description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--rows", nargs="+", type=int, default=ROWS,
                   help="each table's rows in a batch (default: user-churn at experiment=gpu)")
    p.add_argument("--channels", type=int, default=128)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if min(args.rows) < 1 or args.channels < 1 or args.repeat < 1:
        p.error("--rows, --channels and --repeat must be positive")
    device = torch.device(args.device)
    rows = measure(args.rows, args.channels, device, args.repeat)
    out = Path(args.out) if args.out else run_dir("matmuls")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    report("matmuls", rows, out, header=(
        f"The stacked encoders' weight gradient, {len(args.rows)} tables of {args.rows} rows, "
        f"{args.channels} channels, on {name}, torch {torch.__version__}\n\n"
        f"`python -m rdl.bench matmuls {' '.join(argv)}`"))


if __name__ == "__main__":
    main()
