"""The command line of a benchmark that compares two commits of rdl: ``--rows`` (its
size) and ``--tree`` (the rdl checkout to import, another commit's worktree), the tree put
first on ``sys.path`` before rdl is imported."""
from __future__ import annotations

import argparse
import sys


def rows_and_tree(rows: int) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=rows)
    p.add_argument("--tree", default=None, help="the rdl checkout to import (default: this one)")
    args = p.parse_args()
    if args.tree:
        sys.path.insert(0, args.tree)
    return args
