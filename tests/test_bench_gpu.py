"""The GPU check (``python -m rdl.bench gpu``, ``benchmarks/gpu.sh``) on the CPU, tiny, so
that it cannot rot between the rare days a GPU is lent: its stages, its report, its rows
run two at once and timed in turn, and its time budget."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

from rdl.bench.turns import Turns

ROOT = Path(__file__).resolve().parents[1]


def run_check(tmp_path, rdl_cache, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    cmd = [sys.executable, "-m", "rdl.bench", "gpu", "--device", "cpu", "--tiny",
           "--tasks", "user-churn", "--configs", "default", "--out", str(out), *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads((out / "gpu.json").read_text())


def test_the_check_runs_its_stages_on_the_cpu(tmp_path, rdl_cache):
    # Dynamo without Inductor's code generation: the check's machinery, not Inductor, is
    # under test here (a minute less of CI)
    proc, doc = run_check(tmp_path, rdl_cache, "--variants", "eager", "dynamic",
                          "--no-host-overhead", "--epochs", "2", "--batches", "4",
                          "--profile", "2", "--jobs", "2", "--min-row", "0",
                          "--set", "+compile.kwargs.backend=aot_eager")
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["gpu.json", "gpu.md", "logs.tgz",
                                                     "tests.txt"]
    assert doc["env"]["torch"] and doc["env"]["cpu_cores"] >= 1
    # pytest -m cuda ran: every CUDA test is skipped on the CPU, none failed
    assert "skipped" in doc["tests"]["summary"] and not doc["tests"]["failed"], doc["tests"]
    assert "-m cuda" in (out / "tests.txt").read_text()
    eager, dynamic = doc["rows"]
    assert (eager["variant"], dynamic["variant"]) == ("eager", "dynamic")
    for row in (eager, dynamic):
        assert not row.get("note"), row
        assert row["seeds_per_s"] > 0 and row["step_ms"] > 0 and row["peak_gib"] > 0
        # one profiled epoch: host time and the operators dispatched per step
        assert row["host_ms"] > 0 and row["ops"] > 0
        assert "device_ms" not in row       # no kernels on the CPU
    assert eager["graphs"] == 0 and dynamic["graphs"] >= 1 and dynamic["graphs_timed"] == 0
    # two rows at once (the second started before the first ended), timed in turn
    (a0, a1), (b0, b1) = eager["turn"], dynamic["turn"]
    assert a1 <= b0 or b1 <= a0, (eager["turn"], dynamic["turn"])
    assert "| compile dynamic=True |" in (out / "gpu.md").read_text()
    with tarfile.open(out / "logs.tgz") as tar:
        assert sorted(tar.getnames()) == ["logs", "logs/r00.log", "logs/r01.log"]


def test_rows_that_the_budget_cannot_hold_are_listed_not_run(tmp_path, rdl_cache):
    """Through ``benchmarks/gpu.sh`` (what a GPU session runs), writing under $OUT."""
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache), "OUT": str(out), "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu.sh"), "--device", "cpu", "--tiny", "--tasks",
         "user-churn", "--configs", "default", "--no-tests", "--variants", "eager", "dynamic",
         "--budget", "30", "--min-row", "60"], env=env, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "gpu.json").read_text())
    assert [r["note"] for r in doc["rows"]] == ["not run: budget"] * 4  # 2 sizes x 2
    assert doc["tests"] == {}
    text = (tmp_path / "out" / "gpu.md").read_text()
    assert text.count("not run: budget") == 4 and "host overhead" in text


def test_turns_let_one_process_at_a_time_through_its_gate(tmp_path):
    """Three processes wait at their gates; each holds its turn for 0.3 s. The turns
    never overlap, every process gets one, and a process that is not at its gate is
    stopped (SIGSTOP) meanwhile: its own clock shows the gap."""
    child = textwrap.dedent("""
        import sys, time
        from rdl.bench.turns import Gate
        gate = Gate(sys.argv[1])
        gate.wait(); time.sleep(0.3); gate.done()
        print(gate.turn[0], gate.turn[1])
    """)
    ticker = textwrap.dedent("""
        import pathlib, sys, time
        started, stop = map(pathlib.Path, sys.argv[1:])
        started.touch()
        last, gap, end = time.time(), 0.0, time.time() + 120
        while not stop.exists() and time.time() < end:
            now = time.time(); gap = max(gap, now - last); last = now
            time.sleep(0.002)
        print(gap)
    """)
    turns = Turns(tmp_path)
    started, stop = tmp_path / "ticking", tmp_path / "stop"
    # the ticker runs from before the first turn to after the last, however slow the start
    procs = {"tick": subprocess.Popen([sys.executable, "-c", ticker, str(started), str(stop)],
                                      stdout=subprocess.PIPE, text=True, start_new_session=True)}
    turns.started("tick", procs["tick"])
    while not started.exists():
        time.sleep(0.01)
    for name in ("a", "b", "c"):
        procs[name] = subprocess.Popen([sys.executable, "-c", child, turns.gate(name)],
                                       stdout=subprocess.PIPE, text=True,
                                       start_new_session=True)
        turns.started(name, procs[name])
    deadline = time.monotonic() + 120
    while any(procs[n].poll() is None for n in "abc") and time.monotonic() < deadline:
        turns.step({n: p for n, p in procs.items() if p.poll() is None})
        time.sleep(0.005)
    turns.close(procs)
    stop.touch()
    procs["tick"].wait(timeout=60)
    spans = sorted(tuple(map(float, procs[n].stdout.read().split())) for n in "abc")
    assert len(spans) == 3 and all(b - a >= 0.3 for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(2)), spans
    assert float(procs["tick"].stdout.read()) >= 0.25   # stopped for a whole turn at least


def test_the_check_fails_when_every_row_failed(tmp_path, rdl_cache):
    """A check that measured nothing exits non-zero (it exited 0: a GPU session read a
    report of failures as a result; issue 38, point 9)."""
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache), "OUT": str(out), "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu.sh"), "--device", "cpu", "--tiny", "--tasks",
         "user-churn", "--configs", "default", "--no-tests", "--variants", "eager",
         "--no-host-overhead", "--min-row", "0", "--set", "model.channels=0"], env=env,
        capture_output=True, text=True, timeout=300)
    doc = json.loads((out / "gpu.json").read_text())
    assert doc["rows"] and all(not r.get("seeds_per_s") for r in doc["rows"])
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert f"error: all {len(doc['rows'])} rows run failed (" in proc.stderr
    assert "model.channels=0" in proc.stderr   # the first row's own error
