"""What reading a column of times costs, in each form files write them
(``rdl.data.times.parse_times``): ``python benchmarks/time_forms.py [--rows N] [--tree PATH]``.

A column of ``--rows`` random times over three years, written as ISO 8601, a German
dotted date with its clock, a US date with a 12-hour clock, BigQuery's ``... UTC`` and
with month names; prints the seconds each takes and whether every time read back equal.
``--tree``: the rdl checkout to import (another commit's worktree, to compare; before
``rdl/data/times.py`` the function was ``rdl.data.checks.parse_times``).
docs/performance.md, "Reading times".
"""
from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from tree import rows_and_tree   # benchmarks/tree.py


def main() -> None:
    args = rows_and_tree(1_000_000)
    try:
        from rdl.data.times import parse_times
    except ImportError:
        from rdl.data.checks import parse_times
    logging.disable(logging.WARNING)
    rng = np.random.default_rng(0)
    t = pd.Timestamp("2020-01-01") + pd.to_timedelta(
        rng.integers(0, 3 * 365 * 86400, args.rows), unit="s")
    forms = {"ISO 8601": ("%Y-%m-%d %H:%M:%S", t),
             "dotted, day first": ("%d.%m.%Y %H:%M:%S", t),
             "US, 12-hour clock": ("%m/%d/%Y %I:%M:%S %p", t),
             "BigQuery (UTC)": ("%Y-%m-%d %H:%M:%S UTC", t), "month names": ("%b %d, %Y", t.normalize())}
    print(f"{parse_times.__module__}, {args.rows:,} values a column")
    for name, (fmt, want) in forms.items():
        column = pd.Series(t.strftime(fmt), dtype=object)
        start = time.perf_counter()
        got = parse_times(column, name)
        took = time.perf_counter() - start
        equal = (got.to_numpy() == want.to_numpy().astype("datetime64[ns]")).all()
        print(f"{name:20s} {took:6.2f} s   read back equal: {equal}")


if __name__ == "__main__":
    main()
