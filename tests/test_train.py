"""The Hydra entry point, end to end on a tiny synthetic database."""
import json
import math
import re
import sys

import pytest
from hydra.utils import instantiate

from rdl.data.hm import load_hm
from rdl.training import cpu_patches
from test_report import check_fits, read_report

METRICS = {"user-churn": {"auroc", "average_precision", "accuracy", "f1"},
           "item-sales": {"mae", "rmse", "r2"},
           "user-item-purchase": {"map", "precision", "recall"}}
MONITOR = {"user-churn": "auroc", "item-sales": "mae", "user-item-purchase": "map"}


def check_report(out, run_dir, task: str) -> dict:
    """The run succeeded, and ``metrics.json`` holds every metric of the task for the model
    and each baseline, finite; the printed report (tests/test_report.py) shows the
    monitored metric first and as many others as fit, each as in ``metrics.json``."""
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run_dir / "metrics.json").read_text())
    assert results["task"] == task
    who = [k for k in results if k != "task"]
    assert who[0] == "model" and len(who) >= 2, "the baselines are reported beside the model"
    printed = read_report(out.stdout)
    check_fits(printed, MONITOR[task])
    assert list(printed["rows"]) == who, "each is printed"
    for name in who:
        for split in ("val", "test"):
            # the LightGBM ranker adds its candidates' recall beside the task's metrics
            extra = {"candidate_recall"} if name == "LightGBM ranker" else set()
            assert set(results[name][split]) == METRICS[task] | extra, (name, split)
            assert all(math.isfinite(v) for v in results[name][split].values())
            for m, shown in printed["rows"][name][split].items():
                if shown is None:   # "-": a metric this row does not have
                    assert m not in results[name][split], (name, split, m)
                    continue
                scale = 100 if m in printed["percent"] else 1
                assert shown == pytest.approx(scale * results[name][split][m],
                                              abs=scale * 6e-5), (name, split, m)
    assert (run_dir / "checkpoints" / "best.ckpt").exists()
    return results


# user-churn and user-item-purchase with their default models: tests/test_predict.py
@pytest.mark.parametrize("task", ["item-sales", "user-churn model=graph-transformer",
                                  "user-item-purchase model=idgnn",
                                  # slow: tests/training/test_syncs.py trains its steps
                                  pytest.param("user-item-purchase model=two-tower",
                                               marks=pytest.mark.slow),
                                  "user-item-purchase model=context-transformer",
                                  "user-churn data.tree_prior=false"])
def test_short_training_run(tmp_path, run_train, task):
    out = run_train(tmp_path, *f"task={task}".split(), "compile.enabled=false")
    check_trained(check_report(out, tmp_path, task.split()[0]))


def check_trained(results: dict) -> None:
    model = results["model"]["test"]
    # a trained model is not a constant: it ranks examples (a constant scores AUROC 0.5)
    # and finds some of the articles bought
    if "auroc" in model:
        assert model["auroc"] != pytest.approx(0.5, abs=1e-4)
    if "map" in model:
        assert model["map"] > 0
    if "mae" in model:
        assert model["mae"] != pytest.approx(results["zero"]["test"]["mae"], abs=1e-6)


def test_model_and_baselines_are_scored_on_the_same_rows(tmp_path, run_train, tiny_cfg,
                                                         rdl_cache):
    # Batches of 16 seeds; validation limited to 1 batch, test to 2.
    out = run_train(tmp_path, "task=user-churn", "compile.enabled=false", "data.batch_size=16",
                    "trainer.limit_val_batches=1", "trainer.limit_test_batches=2")
    results = check_report(out, tmp_path, "user-churn")
    logs = out.stdout + out.stderr
    assert "val: model and baselines scored on the first 16 of" in logs
    assert "test: model and baselines scored on the first 32 of" in logs
    cfg = tiny_cfg("task=user-churn")
    task = instantiate(cfg.task, _convert_="all")
    db = load_hm(source="synthetic", seed=cfg.data.db.seed, scale=cfg.data.db.scale,
                 cache_dir=rdl_cache)
    rate = task.split_table("train", db)["churn"].mean()
    for split, n in (("val", 16), ("test", 32)):
        y = task.split_table(split, db)["churn"].to_numpy()
        assert len(y) > n  # the limit did leave rows out
        # the constant baseline predicts the train rate: its accuracy on the first n rows
        want = (y[:n] == int(rate > 0.5)).mean()
        assert results["constant (train rate)"][split]["accuracy"] == pytest.approx(want)


# As on a torch whose Inductor lacks the internals rdl's CPU patches use: the module they
# need cannot be imported (Inductor itself, loaded first, keeps working).
WITHOUT_PATCH_INTERNALS = """
import runpy, sys
import torch._inductor.compile_fx
sys.modules["torch._inductor.custom_graph_pass"] = None
sys.argv[0] = "rdl.train"
runpy.run_module("rdl.train", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow   # a compile of its own (99 s on 2 cores, cold cache): over CI's budget
def test_compiled_run_trains_with_one_warning_where_the_patches_cannot_apply(tmp_path, run_train):
    """The compiled path end to end (the CPU patches themselves: tests/training), with the
    internals the patches need removed: it trains, says so once, and keeps its guarantees."""
    out = run_train(tmp_path, "task=user-churn", "trainer.limit_train_batches=4",
                    "compile.enabled=true", "compile.log=true", "compile.eval=true",
                    python=(sys.executable, "-c", WITHOUT_PATCH_INTERNALS))
    check_report(out, tmp_path, "user-churn")
    assert out.stderr.count("CpuPatchWarning") == 1, out.stderr[-3000:]
    if cpu_patches.torch_release() in cpu_patches.TESTED:
        warning = out.stderr[out.stderr.index("CpuPatchWarning"):]
        assert re.search("cannot apply graph_pass .*; mask_stores .*; sum_guard ", warning)
    # Sanity check, training, validation, the best checkpoint's validation and test: one
    # graph for training and one for evaluation, nothing else.
    assert "torch.compile: 2 graphs compiled, 0 graph breaks" in out.stdout, out.stdout[-2000:]
    # and no recompile (compile.log=true would report it, and why): training's graph is
    # the model with its loss (TaskModule.compile_loss), evaluation's the model, each its
    # own compiled function since 2026-12-05; before, evaluation recompiled the one
    # function without grad (this line asked for that recompile until 2026-12-08)
    assert out.stderr.count("Recompiling function") == 0, out.stderr[-3000:]


@pytest.mark.slow   # two compiles: minutes on 2 cores
def test_each_job_of_a_compiled_multirun_reports_its_own_compiles(tmp_path, run_train):
    out = run_train(tmp_path, "task=user-churn", "lr=0.001,0.005", f"hydra.sweep.dir={tmp_path}",
                    "compile.enabled=true", "compile.eval=true",
                   python=(sys.executable, "-m", "rdl.train", "-m"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(list(tmp_path.glob("*/metrics.json"))) == 2
    reports = re.findall(r"torch.compile: (\d+) graphs compiled", out.stdout)
    assert reports == ["2", "2"], out.stdout[-3000:]


@pytest.mark.slow   # a compile of its own: minutes on 2 cores
def test_compiled_bf16_mixed_run(tmp_path, run_train):
    out = run_train(tmp_path, "task=item-sales", "trainer.precision=bf16-mixed",
                    "compile.eval=true")
    check_report(out, tmp_path, "item-sales")
    assert "torch.compile: 2 graphs compiled, 0 graph breaks" in out.stdout, out.stdout[-2000:]


@pytest.mark.parametrize("override,message", [
    # Hydra's own errors, as its command line prints them
    ("task=nope", "task"),
    ("model.channel=16", "channel"),
    # a model named on the command line (model=...) that cannot train the task: the kind's
    # default model replaces only a model no one named, which Hydra's command line tells
    # (model=sage is the default model, named; model=idgnn is checked in this process below)
    ("task=user-item-purchase model=sage", "model=contextgnn"),
    # checked before the database is read (rdl.settings.check_settings)
    ("model.channels=0", "error: model.channels=0: must be an integer >= 1"),
    # (these two as channels=0 end to end; check_settings is tested for each in test_settings)
    pytest.param("data.num_neighbors=[]",
                 "error: data.num_neighbors=[]: must list the fan-out of each hop",
                 marks=pytest.mark.slow),
    pytest.param("data.batch_size=-4", "error: data.batch_size=-4: must be an integer >= 1",
                 marks=pytest.mark.slow),
    # checked right after the database is read, before the task tables and the graph
    ("+data.stypes.customer.agee=numerical",
     "error: data.stypes.customer.agee: table 'customer' has no column 'agee'"),
])
def test_bad_settings_fail_with_a_clear_message(tmp_path, run_train, override, message):
    out = run_train(tmp_path, *override.split())
    assert out.returncode == 1
    err = out.stderr
    assert message in err
    assert "Traceback" not in err  # one clear message, not a stack trace
    # nothing trained or written: only Hydra's own config and log
    assert {p.name for p in tmp_path.iterdir()} <= {".hydra", "train.log"}


@pytest.mark.parametrize("override,message", [
    ("data.db.source=nope", "nope"),
    ("+compile.cpu_patches.no_such_patch=true", "unknown patch ['no_such_patch']"),
    # a model other than the default one is a choice in Python too (no command line to read)
    ("model=idgnn", "cannot be trained on task 'user-churn'"),
])
def test_more_bad_settings_are_user_errors(tmp_path, rdl_cache, override, message):
    """The command line's path (rdl.train.main, tested above end to end) in this process:
    ``fit`` fails before anything is written, and the error is one to show (``user_error``:
    printed as ``error: ...``, no traceback)."""
    from rdl.api import config, fit, user_error
    from tests.conftest import SHORT, TINY
    cfg = config(*TINY, *SHORT, f"data.cache_dir={rdl_cache}", *override.split(),
                 f"output_dir={tmp_path / 'run'}")
    with pytest.raises(Exception) as raised:
        fit(cfg)
    error = user_error(raised.value)
    assert error is not None, raised.value
    assert message in str(error)
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
