"""``python -m rdl.bench threads`` (rdl/bench/threads.py): default trainings alone, two at
once and pinned to one core, under both thread policies, in one report."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rdl import threads as policy
from rdl.bench.threads import POLICIES, child_env, main, overlap

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("turns, expected", [
    ([[0, 10], [0, 10]], 1.0),
    ([[0, 10], [5, 15]], 5 / 15),
    ([[0, 10], [10, 20]], 0.0),
    ([[0, 10], [20, 30]], 0.0),
    ([[0, 10]], None),              # one training: nothing to overlap
    ([[0, 10], []], None),          # one failed before its timed epochs
])
def test_overlap_is_the_shared_part_of_the_union(turns, expected):
    got = overlap(turns)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_each_policy_starts_its_trainings_with_its_wait_policy(tmp_path, monkeypatch):
    """``after`` gets rdl's wait policy, ``before`` none, ``passive`` only the user's
    OMP_WAIT_POLICY=PASSIVE (nothing of rdl's beside it), whatever the benchmark's own
    process was started with."""
    for name in (*policy.USER_WAIT, policy.MARK):
        monkeypatch.delenv(name, raising=False)
    for name, value in policy.environment({}).items():      # as at_start sets it
        monkeypatch.setenv(name, value)
    waits = {}
    for name, (_, user) in POLICIES.items():
        env = child_env(name == "before", str(tmp_path), user)
        waits[name] = {n: env[n] for n in (*policy.USER_WAIT, policy.MARK) if n in env}
    assert waits["after"] == {**policy.WAIT_ENV, policy.MARK: ",".join(policy.WAIT_ENV)}
    assert waits["before"] == {}
    assert waits["passive"] == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_one_timed_epoch_at_least():
    with pytest.raises(SystemExit):
        main(["--epochs", "1"])


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("taskset"), reason="taskset (util-linux) missing")
def test_every_case_reports_its_speed_and_ratio(tmp_path):
    """A small run of every case under both policies: each row a speed, the rows after
    ``alone`` a ratio over it, the threads each training ran with."""
    out = subprocess.run(
        [sys.executable, "-m", "rdl.bench", "threads", "--epochs", "2", "--batches", "3",
         "--out", str(tmp_path), "--set", "data.db.scale=0.005", "data.batch_size=64"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    rows = json.loads((tmp_path / "threads.json").read_text())
    assert [(r["case"], r["policy"]) for r in rows] == [
        (c, p) for c in ("alone", "together", "pinned") for p in ("before", "after")]
    for r in rows:
        assert r["seeds_per_s"] and r["seeds_per_s"] > 0 and not r["note"], r
        assert (r["vs_alone"] is None) == (r["case"] == "alone"), r
    together = [r for r in rows if r["case"] == "together"]
    assert all(len(r["each"].split(" / ")) == 2 and r["overlap"] > 0 for r in together)
    pinned = {r["policy"]: r for r in rows if r["case"] == "pinned"}
    assert pinned["after"]["threads"] == "1"     # taskset -c 0: one core, one thread
