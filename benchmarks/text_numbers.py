"""What reading a CSV's text columns as numbers costs (``rdl.data.checks.numbers``):
``python benchmarks/text_numbers.py [--rows N] [--tree PATH]``.

Every text column of a CSV file is tried as numbers: plain (``pd.to_numeric``), then as
spreadsheets format them (``rdl.data.numbers``: thousands separators, decimal commas,
currency and percent signs, parentheses or a minus after negatives). Times ``numbers`` on
a frame of three text columns (a city, a code, plain prices), then on two formatted
columns (``$1,234.50``, ``4752,32``), ``--rows`` each; ``--tree``: the rdl checkout to
import (another commit's worktree, to compare). docs/performance.md, "Reading formatted numbers".
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from tree import rows_and_tree   # benchmarks/tree.py


def main() -> None:
    args = rows_and_tree(2_000_000)
    from rdl.data.checks import numbers
    rng = np.random.default_rng(0)
    n = args.rows
    text = pd.DataFrame({
        "city": pd.Series(rng.choice(["Paris", "Lyon", "Nice", "Köln"], n), dtype="str"),
        "code": pd.Series([f"A{i}" for i in rng.integers(0, 10**6, n)], dtype="str"),
        "price": pd.Series([f"{v:.2f}" for v in rng.uniform(0, 100, n)], dtype="str")})
    formatted = pd.DataFrame({
        "fee": pd.Series([f"${v:,.2f}" for v in rng.uniform(0, 5000, n)], dtype="str"),
        "eu": pd.Series([f"{v:.2f}".replace(".", ",") for v in rng.uniform(0, 5000, n)],
                        dtype="str")})
    for name, df in (("text and plain", text), ("formatted", formatted)):
        for _ in range(2):
            t = time.perf_counter()
            out = numbers(df.copy(), lambda c: c)
            print(f"{name}: {time.perf_counter() - t:.2f} s,",
                  dict(out.dtypes.astype(str)), flush=True)


if __name__ == "__main__":
    main()
