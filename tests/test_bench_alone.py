"""The loader alone, the step alone, both together (rdl/bench/alone.py): which of them
bounds a row of the end-to-end benchmark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rdl.bench.alone import Replayable, bound

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("together, loader, step, expected", [
    (100, 100, 400, "loader"),
    (91, 100, 400, "loader"),        # within 10 % of the slower alone
    (89, 100, 400, "neither"),
    (95, 300, 100, "step"),
    (60, 100, 150, "neither"),       # a loader in the training process: the two add up
    (104, 100, 400, "loader"),       # together a little faster than alone: noise
    (100, None, 400, None),
    (float("nan"), 100, 400, None),
])
def test_the_slower_alone_bounds_where_together_comes_near_it(together, loader, step,
                                                              expected):
    assert bound(together, loader, step) == expected


def test_replayable_is_the_loader_until_it_keeps_batches():
    class Loader:
        worker_init_fn, num_workers = None, 2

        def __iter__(self):
            return iter([1, 2, 3])

        def __len__(self):
            return 3

    loader = Loader()
    replay = Replayable(loader)
    replay.worker_init_fn = "set by Lightning"     # reaches the loader itself
    assert loader.worker_init_fn == "set by Lightning" and replay.num_workers == 2
    assert list(replay) == [1, 2, 3] and len(replay) == 3
    replay.kept = ["a", "b"]
    assert list(replay) == ["a", "b"] and list(replay) == ["a", "b"]   # every pass


SLOW = textwrap.dedent("""
    import json, sys, time
    from rdl.training.datamodule import RelDataModule

    own = RelDataModule._transforms

    def slow(self, *more, after=()):
        inner = own(self, *more, after=after)

        def transform(batch):
            time.sleep(float(sys.argv[1]))
            return inner(batch)
        return transform

    RelDataModule._transforms = slow
    from rdl.bench.e2e import TINY, measure
    print("RESULT", json.dumps(measure("user-churn", "sage", "eager", ["debug=tiny", *TINY],
                                       workers=1, epochs=2, batches=5, device="cpu")))
""")


@pytest.mark.slow   # a training in a subprocess, 20 s
def test_a_slow_loader_bounds_the_row(tmp_path, rdl_cache):
    """Every batch sleeps 0.4 s in the loader's worker, a tiny step takes milliseconds:
    the loader alone is the slower, and together (the step overlapping the worker) comes
    within 10 % of it."""
    env = {**os.environ, "RDL_CACHE": str(rdl_cache), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", SLOW, "0.4"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    row = json.loads(line[len("RESULT "):])
    assert row["loader_workers"] == 1 and row["prefetch"] == 2
    # 64 seeds a batch, a batch each 0.4 s; timed as the epochs are, from the first batch
    # in hand: 5 batches' seeds in 4 waits
    assert 0 < row["loader_seeds_per_s"] < 5 * 64 / (4 * 0.4) * 1.05
    assert row["step_seeds_per_s"] > 4 * row["loader_seeds_per_s"]
    assert row["bound"] == "loader", row
    assert row["step_graphs_timed"] == 0
