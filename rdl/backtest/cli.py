"""``python -m rdl.backtest`` and ``rdl-backtest``: the backtest table of one sweep folder
(:func:`rdl.backtest.table`), or the overview of several (:mod:`rdl.backtest.overview`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import rdl.backtest as backtest
from rdl.backtest import read_runs, table
from rdl.backtest.overview import SPLITS, overview
from rdl.caching import write_atomic


def main(argv: list[str] | None = None) -> None:
    script = Path(sys.argv[0]).name   # rdl-backtest, or backtest.py under python -m
    prog = script if script == "rdl-backtest" else "python -m rdl.backtest"
    p = argparse.ArgumentParser(prog=prog, description=backtest.__doc__.split("\n")[0])
    p.add_argument("folders", type=Path, nargs="+", metavar="folder",
                   help="a sweep folder of python -m rdl.train -m (or any folder holding runs "
                   "of one task); several: one row each (a task on a database)")
    p.add_argument("--out", type=Path, default=None, help="where to write the table "
                   "(default: FOLDER/backtest.md; several folders: only printed)")
    p.add_argument("--split", choices=list(SPLITS), default="both", help="several folders: "
                   "average val and test scores (both), or only one; test is the measure no "
                   "choice on val has seen")
    args = p.parse_args(argv)
    try:
        names = [f.name for f in args.folders]
        if len(set(names)) < len(names):  # two sweeps of one name: their whole paths
            names = [str(f) for f in args.folders]
        sweeps = {n: read_runs(f) for n, f in zip(names, args.folders)}
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    if len(sweeps) == 1:
        (folder,), (runs,) = args.folders, sweeps.values()
        text = table(runs)
        print(text)
        write_atomic(args.out or folder / "backtest.md", text)
        return
    text = overview(sweeps, args.split)
    print(text)
    if args.out:
        write_atomic(args.out, text)


if __name__ == "__main__":
    main()
