"""rdl's categorical and timestamp encoders against PyTorch Frame's, eagerly on the CPU:
``python benchmarks/encoders_eager.py [--rows N] [--rounds R]``.

rdl's compute the same values without a boolean-mask assignment or an assert on a tensor
(host syncs on a GPU; ``rdl/nn/encoder.py``). Forward and backward of one frame (four
categorical columns with a fifth of their values missing, a timestamp column with a tenth
missing, 128 channels), the two alternated, the median milliseconds of the rounds after
the first three. docs/performance.md, "2026-12-05: rdl's own categorical and timestamp
encoders".
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import torch_frame
from torch_frame.data import Dataset

from rdl.nn.encoder import STYPE_ENCODERS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=40_000)
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"c{i}": rng.choice(["a", "b", "c", "d", None], args.rows)
                       for i in range(4)})
    when = pd.Series(pd.date_range("2018-01-01", periods=args.rows, freq="17min").astype(str))
    df["when"] = when.where(rng.random(args.rows) > 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = Dataset(df, {**{f"c{i}": torch_frame.categorical for i in range(4)},
                          "when": torch_frame.timestamp}).materialize()
    tf = ds.tensor_frame
    for stype, theirs in [(torch_frame.categorical, torch_frame.nn.EmbeddingEncoder),
                          (torch_frame.timestamp, torch_frame.nn.TimestampEncoder)]:
        feat = tf.feat_dict[stype]
        stats = [ds.col_stats[c] for c in tf.col_names_dict[stype]]
        encoders = {"PyTorch Frame": theirs(out_channels=128, stats_list=stats, stype=stype),
                    "rdl": STYPE_ENCODERS[stype](out_channels=128, stats_list=stats,
                                                 stype=stype)}
        times = {name: [] for name in encoders}
        for _ in range(args.rounds):
            for name, enc in encoders.items():
                start = time.perf_counter()
                enc(feat).sum().backward()
                times[name].append(time.perf_counter() - start)
        print(f"{stype.value}: " + ", ".join(
            f"{name} {1000 * float(np.median(t[3:])):.1f} ms" for name, t in times.items()))


if __name__ == "__main__":
    main()
