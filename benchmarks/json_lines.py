"""What loading a table from JSON Lines costs against the same table as CSV
(``rdl.data.folder.load_folder``): ``python benchmarks/json_lines.py [--rows N] [--dir D]``.

Writes ``--rows`` events (an id, a user, an ISO time with its ``Z``, a kind, an amount and
a nested ``{"device": ...}``) as ``events.jsonl`` and as ``events.csv`` (the nested field as
``ctx_device``) into ``--dir`` (default: a temporary folder), then loads each with a
schema (users implied by the events) and prints the seconds. docs/performance.md,
"Reading JSON Lines".
"""
from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--dir", default=None)
    args = p.parse_args()
    from rdl.data.folder import load_folder
    logging.disable(logging.WARNING)
    n, rng = args.rows, np.random.default_rng(0)
    ts = (pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 365 * 86400, n),
                                                       unit="s")).strftime("%Y-%m-%dT%H:%M:%SZ")
    frame = pd.DataFrame({"event_id": np.arange(n), "user_id": rng.integers(0, 50_000, n),
                          "ts": ts, "kind": rng.choice(["view", "buy", "cart"], n),
                          "amount": rng.uniform(0, 100, n).round(2),
                          "ctx_device": np.where(np.arange(n) % 2, "ios", "web")})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.dir or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        frame.to_csv(folder / "events.csv", index=False)
        nested = frame.drop(columns="ctx_device").assign(
            ctx=[{"device": d} for d in frame["ctx_device"]])
        nested.to_json(folder / "events.jsonl", orient="records", lines=True)
        for name in ("events.jsonl", "events.csv"):
            schema = {"tables": {"users": {"pkey": "user_id", "implied": True},
                                 "events": {"file": name, "pkey": "event_id", "time": "ts",
                                            "fkeys": {"user_id": "users"},
                                            "stypes": {"kind": "categorical",
                                                       "ctx_device": "categorical"}}}}
            size = (folder / name).stat().st_size >> 20
            start = time.perf_counter()
            db = load_folder(folder, schema)
            print(f"{name:14s} {size:4d} MiB  {time.perf_counter() - start:6.2f} s  "
                  f"{len(db['events']):,} rows")


if __name__ == "__main__":
    main()
