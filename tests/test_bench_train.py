"""``python -m rdl.bench train`` end to end on the tiny database: eager and compiled."""
import csv
import math
import os
import sys

import pytest

from tests.zygote import command


@pytest.mark.slow   # a compile of its own (2 min of CI); the other bench tests stay in CI
def test_train_benchmark_eager_and_compiled(tmp_path, rdl_cache):
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    cmd = [sys.executable, "-m", "rdl.bench", "train", "--tasks", "user-churn",
           "--variants", "eager", "interleaved", "--steps", "2", "--warmup", "1",
           "--threads", "1",
           "--set", "data=hm-tiny", "model.channels=16", "model.encoder_layers=1",
           "--out", str(out)]
    proc = command(cmd, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| task | model | variant | ms/step |" in proc.stdout

    with open(out / "train.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # interleaved: the default compiled model (dynamic=True), eager steps in between
    assert [r["variant"] for r in rows] == ["eager",
                                            "compile dynamic=True, eager interleaved"], rows
    assert (out / "train.md").exists()
    for r in rows:
        assert r["task"] == "user-churn" and r["model"] == "sage"
        assert r["note"] == "", r
        for col in ("ms/step", "ms/step+sampler", "first_step_s", "peak_mem_gib"):
            v = float(r[col])
            assert math.isfinite(v) and v > 0, (col, r)
        assert math.isfinite(float(r["last_loss"]))
        ratio = float(r["speedup_vs_eager"])
        assert math.isfinite(ratio) and ratio > 0
    eager, dynamic = rows
    assert float(eager["speedup_vs_eager"]) == 1
    # The interleaved row's ratio is against the eager steps of its own process.
    assert eager["eager_ms"] == ""
    own = float(dynamic["eager_ms"]) / float(dynamic["ms/step"])
    assert math.isclose(float(dynamic["speedup_vs_eager"]), own, rel_tol=0.01)
    assert int(eager["graphs"]) == 0 and int(eager["graph_breaks"]) == 0
    assert int(dynamic["graphs"]) >= 1
    assert int(dynamic["graph_breaks"]) == 0
    # The compiled row pays its compilation in the first step.
    assert float(dynamic["first_step_s"]) > float(dynamic["ms/step"]) / 1000


def test_a_failing_variant_leaves_a_row_and_the_run_goes_on(tmp_path, rdl_cache):
    """The child fails at once (a bad override); reduce-overhead is skipped on the CPU."""
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    cmd = [sys.executable, "-m", "rdl.bench", "train", "--tasks", "user-churn:sage",
           "--variants", "eager", "reduce-overhead", "--device", "cpu", "--steps", "1",
           "--warmup", "1", "--set", "data=hm-tiny", "model.no_such_key=1", "--out", str(out)]
    proc = command(cmd, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "train.csv", newline="") as f:
        eager, graphs = csv.DictReader(f)
    assert eager["note"].startswith("failed:") and "no_such_key" in eager["note"], eager
    assert eager["ms/step"] == "" and eager["speedup_vs_eager"] == ""
    assert graphs["variant"] == "reduce-overhead" and graphs["note"].startswith("skipped")


def test_profile_columns(tmp_path, rdl_cache):
    """--profile splits the host's time per step into matrix products, RNG and the rest."""
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    cmd = [sys.executable, "-m", "rdl.bench", "train", "--tasks", "user-churn",
           "--variants", "eager", "--device", "cpu", "--steps", "2", "--warmup", "1",
           "--threads", "1", "--profile", "--set", "data=hm-tiny", "model.channels=16",
           "model.encoder_layers=1", "--out", str(out)]
    proc = command(cmd, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "train.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["note"] == "", row
    assert "prof_kernel_ms" not in row  # CUDA only
    parts = [float(row[c]) for c in ("prof_matmul_ms", "prof_rng_ms", "prof_other_ms")]
    assert parts[0] > 0 and parts[2] > 0  # the model has linear layers and other ops
    assert parts[1] > 0  # the encoders' dropout draws random numbers in training


@pytest.mark.slow   # two trainings in subprocesses (20 s of CI)
def test_e2e_benchmark_times_whole_epochs(tmp_path, rdl_cache):
    """``python -m rdl.bench e2e``: one row per (size, variant, workers), each a real
    ``Trainer.fit``; seeds/s counts the seeds of the timed epochs (3 batches of 64 each).
    (``--host-overhead`` adds rows of another size, as below, with other settings.)"""
    out = tmp_path / "out"
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    cmd = [sys.executable, "-m", "rdl.bench", "e2e", "--variants", "eager", "--workers", "0", "1",
           "--epochs", "2", "--batches", "3", "--set", "debug=tiny",
           "--out", str(out)]
    proc = command(cmd, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "e2e.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["size"], r["workers"]) for r in rows] == [("full", "0"), ("full", "1")]
    for r in rows:
        assert r["note"] == "", r
        seeds, epoch = float(r["seeds_per_s"]), float(r["epoch_s"])
        assert seeds * epoch == pytest.approx(3 * 64, rel=1e-6)  # one timed epoch of 3 batches
        assert float(r["vs_eager"]) == 1
        # the loader alone and the step alone (rdl.bench.alone), and what bounds the row
        assert float(r["loader_seeds_per_s"]) > 0 and float(r["step_seeds_per_s"]) > 0
        assert r["bound"] in ("loader", "step", "neither")
        assert r["loader_workers"] == r["workers"]
    assert float(rows[0]["vs_main_process_loader"]) == 1
    assert float(rows[1]["vs_main_process_loader"]) == pytest.approx(
        float(rows[1]["seeds_per_s"]) / float(rows[0]["seeds_per_s"]))


def test_e2e_rows_run_the_configured_progress_bar_without_checkpoints():
    """An e2e row's Trainer gets the callbacks the run configures (experiment=gpu's
    progress bar, refreshed every 25 steps, not Lightning's default refreshed every step),
    without those that need validation or write checkpoints."""
    from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar

    import rdl
    from rdl.bench.e2e import run_callbacks
    # (no output_dir: a row has no run folder, where checkpoints would go)
    gpu = run_callbacks(rdl.config("experiment=gpu", "output_dir=${hydra:runtime.output_dir}"))
    bars = [c for c in gpu if isinstance(c, TQDMProgressBar)]
    assert len(bars) == 1 and bars[0].refresh_rate == 25
    default = run_callbacks(rdl.config("output_dir=${hydra:runtime.output_dir}"))
    assert not any(isinstance(c, TQDMProgressBar) for c in default)   # Lightning's own
    assert {type(c).__name__ for c in default} >= {"ResumeState", "LearningRateMonitor"}
    assert not any(isinstance(c, (ModelCheckpoint, EarlyStopping)) for c in gpu + default)
