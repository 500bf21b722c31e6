"""The GPU check (``python -m rdl.bench gpu``, ``benchmarks/gpu.sh``) on the CPU, tiny, so
that it cannot rot between the rare days a GPU is lent: its stages, its report, its rows
run two at once and timed in turn, and its time budget."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from tests.zygote import command

from rdl.bench.turns import Turns

ROOT = Path(__file__).resolve().parents[1]


def run_check(tmp_path, rdl_cache, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    cmd = [sys.executable, "-m", "rdl.bench", "gpu", "--device", "cpu", "--tiny",
           "--tasks", "user-churn", "--configs", "default", "--out", str(out), *args]
    proc = command(cmd, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads((out / "gpu.json").read_text())


@pytest.mark.slow   # (50 s of CI's 13 min; run it before a lent GPU's check: pytest -m slow)
def test_the_check_runs_its_stages_on_the_cpu(tmp_path, rdl_cache):
    # Dynamo without Inductor's code generation: the check's machinery, not Inductor, is
    # under test here (a minute less of CI)
    proc, doc = run_check(tmp_path, rdl_cache, "--variants", "eager", "dynamic",
                          "--no-host-overhead", "--epochs", "2", "--batches", "4",
                          "--profile", "2", "--jobs", "2", "--min-row", "0",
                          "--set", "+compile.kwargs.backend=aot_eager")
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "evaluation.csv", "evaluation.md", "gpu.json", "gpu.md", "kernels", "logs.tgz",
        "matmuls.csv", "matmuls.md", "tests.txt"]
    # part 1's, on the CPU beside the rows: the kernels the proxy counts without a GPU
    # (its table where the triton package is installed, else why not)
    proxy = doc["kernels_codegen"]
    if importlib.util.find_spec("triton"):
        assert re.search(r"\| user-churn \| stacked \| \d+ \|", proxy), proxy
    else:
        assert "needs the triton package" in proxy, proxy
    assert "--codegen triton" in (out / "kernels" / "output.txt").read_text()
    # part 1's first seconds: the ways to compute the stacked weight gradient, timed
    assert "| padded bmm, split-K 4 |" in doc["matmuls"]
    # part 2's: evaluation compiled against eager, the batches after which its compile pays
    assert "| user-churn | cpu |" in doc["evaluation"], doc["evaluation"]
    assert "even_after" in doc["evaluation"]
    assert "compile.eval=auto" in (out / "gpu.md").read_text()
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
        assert "device_ms" not in row and "top_kernels" not in row   # no kernels on the CPU
        # the loader alone, the step alone, and which bounds (rdl/bench/alone.py)
        assert row["loader_seeds_per_s"] > 0 and row["step_seeds_per_s"] > 0
        assert row["bound"] in ("loader", "step", "neither")
        assert row["loader_workers"] == 0 and row["step_graphs_timed"] == 0
        # one more epoch under cProfile: the host's time by area, its top functions
        areas = row["host_areas"]
        assert row["host_profiled_ms"] == pytest.approx(sum(areas.values()))
        assert areas["lightning"] > 0 and areas["builtins"] > 0 and len(row["host_top"]) == 15
    assert eager["graphs"] == 0 and dynamic["graphs"] >= 1 and dynamic["graphs_timed"] == 0
    # two rows at once (the second started before the first ended), timed in turn
    (a0, a1), (b0, b1) = eager["turn"], dynamic["turn"]
    assert a1 <= b0 or b1 <= a0, (eager["turn"], dynamic["turn"])
    text = (out / "gpu.md").read_text()
    assert "| compile dynamic=True |" in text and "| step alone seeds/s |" in text
    with tarfile.open(out / "logs.tgz") as tar:
        assert sorted(tar.getnames()) == ["logs/r00.log", "logs/r01.log"]
        assert "RDL_BENCH_E2E_RESULT" in tar.extractfile("logs/r01.log").read().decode()


@pytest.mark.slow   # CI's 15 minutes: the check's stages run in the test above
def test_rows_that_the_budget_cannot_hold_are_listed_not_run(tmp_path, rdl_cache):
    """Through ``benchmarks/gpu.sh`` (what a GPU session runs), writing under $OUT."""
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache), "OUT": str(out), "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu.sh"), "--device", "cpu", "--tiny", "--tasks",
         "user-churn", "--configs", "default", "--part", "3", "4", "--variants", "eager",
         "dynamic", "--budget", "30", "--min-row", "60"], env=env, capture_output=True,
        text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "gpu.json").read_text())
    assert [r["note"] for r in doc["rows"]] == ["not run: budget"] * 4  # 2 sizes x 2
    assert doc["tests"] == {} and doc["parts"] == [3, 4]   # the CUDA tests are part 1's
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


@pytest.mark.slow   # CI's 15 minutes
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


def test_the_parts_hold_every_row_once_most_wanted_first():
    """``--part N``: part 1 is the CUDA tests' and the rows wanted first since the H200s of
    2026-12-04 measured packed batches: user-churn eager and compiled, and compiled with
    one copy a batch to the GPU, with the stacked encoders in chunks, TF32, C++ launches,
    combo kernels and unsplit reductions, then eager and compiled item-sales and
    user-item-purchase at experiment=gpu; part 2 the rest of experiment=gpu (user-churn
    unpacked and by file name, CUDA graphs over buckets (not applicable to the link task), buckets
    alone, the model's ops fused unstacked and per type, no loader worker, the sampler on
    the GPU); every row is
    in one part; a link task's buckets are listed as not applicable."""
    from rdl.bench.gpu_plan import GPU_VARIANTS, PARTS, TASKS, plan_rows

    def plan(parts):
        return [(r["part"], r["task"], r["model"], r["config"], r["workers"], r["size"],
                 r["variant"], r.get("note", "")[:15])
                for r in plan_rows(TASKS, ["gpu", "default"], GPU_VARIANTS, True, "cuda", [],
                                   parts)]
    every = plan(None)
    assert plan(PARTS) == every and len(set(every)) == len(every) == 41
    assert [r[0] for r in every] == sorted(r[0] for r in every)   # parts in order
    assert sum((plan([p]) for p in PARTS), []) == every
    assert [r[1:5] + r[6:7] for r in plan([1])] == [
        ("user-churn", "sage", "gpu", None, "eager"),
        ("user-churn", "sage", "gpu", None, "dynamic"),
        ("user-churn", "sage", "gpu", None, "dynamic-packed-to-device"),
        ("user-churn", "sage", "gpu", None, "dynamic-chunked"),
        ("user-churn", "sage", "gpu", None, "dynamic-tf32"),
        ("user-churn", "sage", "gpu", None, "dynamic-cpp-wrapper"),
        ("user-churn", "sage", "gpu", None, "dynamic-combo-kernels"),
        ("user-churn", "sage", "gpu", None, "dynamic-unsplit"),
        ("item-sales", "sage", "gpu", None, "eager"),
        ("item-sales", "sage", "gpu", None, "dynamic"),
        ("user-item-purchase", "contextgnn", "gpu", None, "eager"),
        ("user-item-purchase", "contextgnn", "gpu", None, "dynamic")]
    assert [r[1:5] + r[6:7] for r in plan([2])] == [
        ("user-churn", "sage", "gpu", None, "dynamic-unpacked"),
        ("user-churn", "sage", "gpu", None, "dynamic-file-system"),
        ("user-churn", "sage", "gpu", None, "reduce-overhead+buckets"),
        ("item-sales", "sage", "gpu", None, "reduce-overhead+buckets"),
        ("user-item-purchase", "contextgnn", "gpu", None, "reduce-overhead+buckets"),
        ("user-churn", "sage", "gpu", None, "buckets"),
        ("item-sales", "sage", "gpu", None, "buckets"),
        ("user-item-purchase", "contextgnn", "gpu", None, "buckets"),
        ("user-churn", "sage", "gpu", None, "dynamic-fused"),
        ("user-churn", "sage", "gpu", None, "dynamic-per-type"),
        ("user-churn", "sage", "gpu", 0, "eager"),
        ("user-churn", "sage", "gpu", 0, "dynamic"),
        ("user-churn", "sage", "gpu", None, "dynamic-device-sampler")]
    refused = [r for r in every if r[7]]
    assert {(r[1], r[6], r[7]) for r in refused} == {
        ("user-item-purchase", v, "not applicable:") for v in ("buckets",
                                                                "reduce-overhead+buckets")}
    assert len(refused) == 4      # both configs
    # on a CPU no CUDA graphs
    assert not [r for r in plan_rows(TASKS, ["gpu"], GPU_VARIANTS, True, "cpu", [], [2])
                if r["variant"].startswith("reduce-overhead")]


@pytest.mark.slow   # three trainings, 35 s (CI: the plan's test above sees part 2's rows)
def test_part_two_trains_the_link_task_and_the_loader_in_the_process(tmp_path, rdl_cache):
    """Part 2 on the CPU, eager: experiment=gpu rows of user-item-purchase (contextgnn, a
    link task), and user-churn with data.num_workers=0 beside the configured (auto)
    workers (user-churn's configured row is part 1's)."""
    from rdl.training.loader_workers import LoaderWorkers

    proc, doc = run_check(tmp_path, rdl_cache, "--part", "1", "2", "--no-tests", "--tasks",
                          "user-churn", "user-item-purchase:contextgnn", "--configs", "gpu",
                          "--variants", "eager", "--epochs", "2", "--batches", "3",
                          "--profile", "0", "--jobs", "2", "--min-row", "0")
    rows = doc["rows"]
    assert [(r["task"], r["model"], r["workers"]) for r in rows] == [
        ("user-churn", "sage", None), ("user-item-purchase", "contextgnn", None),
        ("user-churn", "sage", 0)]
    auto = LoaderWorkers.of("auto", "auto", on_cuda=False).workers
    assert [r["loader_workers"] for r in rows] == [auto, auto, 0]
    for row in rows:
        assert not row.get("note") and row["seeds_per_s"] > 0, row
        assert row["loader_seeds_per_s"] > 0 and row["step_seeds_per_s"] > 0
    text = (tmp_path / "out" / "gpu.md").read_text()
    assert "| user-item-purchase | gpu | full |" in text and "| 0 workers |" in text


class _Event:
    def __init__(self, name, us, cuda=True, annotation=False):
        self.is_user_annotation = annotation
        from torch.autograd import DeviceType
        self.name, self.self_device_time_total = name, us
        self.device_type = DeviceType.CUDA if cuda else DeviceType.CPU


def test_the_profile_counts_copies_apart_and_lists_the_top_kernels():
    """A profiled CUDA step (the profiler's events stand in): memcpy and memset are copies,
    not kernels; a user's ranges are neither; the top kernels are grouped by name, most device time first, per step."""
    from types import SimpleNamespace

    import torch

    from rdl.bench.step_profile import summarize
    events = [_Event("aten::mm", 0, cuda=False), _Event("cudaLaunchKernel", 0, cuda=False),
              _Event("sm90_gemm", 300), _Event("sm90_gemm", 500),
              _Event("triton_poi_fused_add_0", 50),
              _Event("Memcpy HtoD (Pinned -> Device)", 400), _Event("Memset (Device)", 10),
              # ranges drawn on the device's timeline: no kernel (flagged, or by name)
              _Event("Optimizer.step#Adam.step", 90000, annotation=True),
              _Event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 900)]
    prof = SimpleNamespace(events=lambda: events)
    out = summarize(prof, 0.01, 2, torch.device("cuda"))
    assert out["kernels"] == 1.5 and out["copies"] == 1.0        # per step, of 2 steps
    assert out["kernel_ms"] == pytest.approx(0.425) and out["copy_ms"] == pytest.approx(0.205)
    assert out["device_ms"] == pytest.approx(0.63) and out["launches"] == 0.5
    assert [(k["name"], k["per_step"], k["ms"]) for k in out["top_kernels"]] == [
        ("sm90_gemm", 1.0, pytest.approx(0.4)),
        ("Memcpy HtoD (Pinned -> Device)", 0.5, pytest.approx(0.2)),
        ("triton_poi_fused_add_0", 0.5, pytest.approx(0.025)),
        ("Memset (Device)", 0.5, pytest.approx(0.005))]
    assert out["kernel_kinds"] == {"matmul": 1.0, "triton": 0.5}   # copies are not kernels
    assert [(k["name"], k["per_step"]) for k in out["frequent_kernels"]] == [
        ("sm90_gemm", 1.0), ("triton_poi_fused_add_0", 0.5)]


def test_the_step_profiler_profiles_its_steps_and_none_when_asked_for_none():
    """``--profile 0`` (the e2e default) runs no epoch under torch.profiler: on 12-05 it
    profiled a whole epoch anyway, the host-profiled one among others, whose figures then
    held the profiler's own parsing."""
    from types import SimpleNamespace

    import torch

    from rdl.bench.step_profile import StepProfiler

    def run(steps: int, batches: int = 5) -> StepProfiler:
        prof, trainer = StepProfiler(torch.device("cpu"), 1, steps), SimpleNamespace()
        for epoch in range(3):
            trainer.current_epoch = epoch
            for i in range(batches):
                prof.on_train_batch_start(trainer, None, None, i)
                if epoch == 1 and steps == 0:
                    assert prof.prof is None
                torch.ones(3).add_(1)
                prof.on_train_batch_end(trainer, None, None, None, i)
            prof.on_train_epoch_end(trainer, None)
        return prof

    assert run(0).result == {}
    two = run(2).result
    assert two["ops"] >= 1 and two["host_ms"] > 0 and two["regions"] == 0


def test_the_profile_counts_the_compiled_regions_and_graphs_a_step_enters():
    """A model compiled whole enters one region and runs one graph a step; a graph break
    makes two of each (the GPU check tells graph breaks from Inductor's partitions so)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from rdl.bench.step_profile import summarize

    def counts(broken: bool, steps: int = 2) -> dict:
        torch._dynamo.reset()
        lin = torch.nn.Linear(4, 4)

        def fn(x):
            x = lin(x).relu()
            if broken:
                torch._dynamo.graph_break()
            return lin(x).sum()

        step = torch.compile(fn, backend="aot_eager")
        x = torch.randn(3, 4)
        step(x).backward()                          # compiles
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                step(x).backward()
        return summarize(prof, 0.01, steps, torch.device("cpu"))

    whole, broken = counts(False), counts(True)
    assert (whole["regions"], whole["graph_calls"], whole["frames"]) == (1, 1, 1), whole
    assert broken["regions"] == 2 and broken["graph_calls"] == 2, broken
    assert broken["frames"] == 2, broken     # the code after a break: a frame of its own


@pytest.mark.parametrize("name, kind", [
    ("triton_red_fused_mul_native_layer_norm_sum_0", "triton"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8", "matmul"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::", "optimiser"),
    ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float", "reduce"),
    ("void at::native::index_elementwise_kernel<128, 4>", "index/scatter"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add", "elementwise"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", "other"),
])
def test_a_kernel_is_sorted_by_its_name(name, kind):
    from rdl.bench.step_profile import kernel_kind
    assert kernel_kind(name) == kind


def test_rows_that_replay_cuda_graphs_log_why_torch_cut_or_skipped_them(monkeypatch):
    from rdl.bench.gpu_plan import GRAPH_LOGS, row_logs
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    assert row_logs({"variant": "reduce-overhead+buckets"}) == {"TORCH_LOGS": GRAPH_LOGS}
    assert row_logs({"variant": "dynamic"}) == {} and row_logs({"variant": "eager"}) == {}
    monkeypatch.setenv("TORCH_LOGS", "recompiles")   # a user's own choice stays
    assert row_logs({"variant": "reduce-overhead"}) == {}


def test_the_source_digest_says_which_code_ran(tmp_path):
    from rdl.bench.gpu_env import source_digest
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "m.py").write_text("x = 1\n")
    (tmp_path / "c.yaml").write_text("k: v\n")
    (tmp_path / "notes.txt").write_text("not code")
    first = source_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("changed, not code")
    assert source_digest(tmp_path) == first
    (tmp_path / "a" / "m.py").write_text("x = 2\n")
    assert source_digest(tmp_path) != first
    (tmp_path / "a" / "m.py").rename(tmp_path / "m.py")
    moved = source_digest(tmp_path)
    (tmp_path / "m.py").rename(tmp_path / "a" / "m.py")
    assert moved != source_digest(tmp_path), "a file's place counts"
    assert len(source_digest()) == 12


def test_each_row_is_compared_with_eager_and_an_option_with_the_plain_compiled_row():
    from rdl.bench.gpu_report import table

    def row(variant, seeds, task="user-churn", workers=None):
        return {"part": 1, "task": task, "config": "gpu", "size": "full", "workers": workers,
                "variant": variant, "seeds_per_s": seeds}
    rows = table([row("eager", 100.0), row("dynamic", 150.0), row("dynamic-chunked", 180.0),
                  row("dynamic-tf32", None), row("eager", 50.0, task="item-sales"),
                  row("dynamic-cpp-wrapper", 60.0, task="item-sales"),
                  row("dynamic", 40.0, workers=0), row("dynamic-fused", 30.0, workers=0)])
    got = [(r["vs eager"], r["vs compiled"]) for r in rows]
    assert got == [(1.0, None), (1.5, None), (1.8, 1.2), (None, None),
                   (1.0, None), (1.2, None),            # no plain compiled row to compare
                   (None, None), (None, 0.75)]           # another loader: its own rows
