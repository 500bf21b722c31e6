"""A run says what matters and nothing else: ``python -m rdl.train`` and ``python -m
rdl.predict`` print no warning (Python shows every one here, ``-W default``) and none of
Lightning's lines about the machine or its tips, with a database and graph built afresh
or read from the cache, and an epoch shorter than the logging interval; each stage a user
waits on says when it starts and how long it took, and draws no bar in a log (stderr no
terminal: rdl/progress.py, tests/test_progress.py); a compiled model says when it compiles
and how long it took; ``verbose=true`` shows Lightning's lines and warnings again (as the
process does after a run)."""
from __future__ import annotations

import contextlib
import csv
import os
import re
import subprocess
import sys

import pytest

#: Python shows every warning, but one: PyG's import scripts a class with torch.jit.script,
#: which torch 2.13 deprecates. That DeprecationWarning is torch's own module's, which
#: Python hides unless told otherwise (-W default): no run shows it, and only PyG can
#: change it.
PYTHON = (sys.executable, "-W", "default",
          "-W", "ignore:`torch.jit.script` is deprecated:DeprecationWarning")
RUN = ("task=user-churn", "debug=default")
#: the stages of a tiny run (uncompiled), in the order it goes through them
STAGES = ("loading the database", r"split tables \(the task's SQL\)", "depth-1 features",
          "LightGBM", "depth-2 synthesis", "tree prior", "graph build")
#: what a warning, or one of Lightning's lines that verbose=false leaves out, looks like:
#: Python's ``file.py:12: UserWarning: ...`` (Lightning's own: ``file.py:12: message``),
#: a logged warning, a deprecation, Lightning's tips and machine lines
NOISE = re.compile(r"(?i:\bwarn|deprecat)|Warning\b|\.py:\d+: |💡|Tip:|GPU available|"
                   r"TPU available|weights_only|was configured so|to estimate number of stepping")


def noise(out: subprocess.CompletedProcess) -> list[str]:
    text = (out.stdout + out.stderr).replace("\r", "\n")
    return [line for line in text.splitlines() if NOISE.search(line)]


def run(command: str, run_dir, cache, *overrides) -> subprocess.CompletedProcess:
    env = {**os.environ, "RDL_CACHE": str(cache), "HYDRA_FULL_ERROR": "0"}
    env.pop("PYTHONWARNINGS", None)
    out = subprocess.run([*PYTHON, "-m", command, f"hydra.run.dir={run_dir}", *overrides],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    return out


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """A run on an empty cache: the database generated and the graph materialised (and
    both cached); its 3 training batches are fewer than the logging interval."""
    cache = tmp_path_factory.mktemp("cache")
    run_dir = tmp_path_factory.mktemp("cold")
    return cache, run_dir, run("rdl.train", run_dir, cache, *RUN, "trainer.log_every_n_steps=50")


def test_a_run_that_builds_its_graph_prints_no_warning(cold):
    _, run_dir, out = cold
    assert noise(out) == []
    assert (run_dir / "metrics.json").exists()


def test_each_stage_says_when_it_starts_and_how_long_it_took_and_draws_no_bar_in_a_log(cold):
    _, _, out = cold
    logs = out.stdout + out.stderr
    said = [re.search(rf"\] - {name}: \d+\.\d s", logs) for name in STAGES]
    assert all(said), [name for name, s in zip(STAGES, said) if not s]
    assert [s.start() for s in said] == sorted(s.start() for s in said)
    for name in STAGES:
        assert re.search(rf"\] - {name}\.\.\.$", logs, re.M), name
    # rdl's bars (tqdm's format; Lightning's own bar is not rdl's to change)
    assert not re.search(r"(graph build|depth-2 synthesis|LightGBM|tree prior): +\d+%\|", logs)


def test_an_epoch_shorter_than_the_logging_interval_logs_its_last_step(cold):
    """Lightning warns where an epoch has fewer batches than log_every_n_steps, and no step
    would be logged (the run prints no warning: above); rdl logs the epoch's last."""
    _, run_dir, _ = cold
    with open(run_dir / "logs" / "metrics.csv") as f:
        assert [r["step"] for r in csv.DictReader(f) if r["train/loss_step"]] == ["2"]


def test_a_compiled_run_on_a_cached_graph_says_when_it_compiles_and_nothing_else(cold,
                                                                                 tmp_path):
    cache, _, _ = cold
    graphs = sorted(p.name for p in (cache / "graphs").iterdir())
    # Dynamo's eager backend: the compiled path (traced, timed) without Inductor's minutes
    out = run("rdl.train", tmp_path, cache, *RUN, "compile.enabled=true", "compile.eval=true",
              "+compile.kwargs.backend=eager")   # (evaluation compiled too: its line)
    assert sorted(p.name for p in (cache / "graphs").iterdir()) == graphs  # read, not built
    assert noise(out) == []
    logs = out.stdout + out.stderr
    for mode in ("training", "evaluation"):
        assert logs.count(f"compiling the model for {mode} (torch.compile, first batch)...") == 1
        assert re.search(rf"compiling the model for {mode} \(torch.compile, first batch\): "
                         r"\d+\.\d s", logs), logs[-3000:]


def test_predictions_print_no_warning(cold, tmp_path):
    cache, run_dir, _ = cold
    out = run("rdl.predict", tmp_path, cache, f"ckpt_path={run_dir}/checkpoints/best.ckpt",
              f"output={tmp_path}/predictions.parquet")
    assert noise(out) == []
    assert "predictions written to" in out.stdout


def test_verbose_shows_lightnings_lines_and_warnings():
    """In the process: what ``verbose=false`` leaves out while a run lasts, ``verbose=true``
    shows, and so does the process after the run."""
    import logging
    import warnings

    from lightning_utilities.core import rank_zero
    from pytorch_lightning.utilities._pytree import _tree_flatten
    from pytorch_lightning.utilities.rank_zero import rank_zero_info

    from rdl.training.process import configured

    class Lines(logging.Handler):
        def __init__(self):
            super().__init__()
            self.lines = []

        def emit(self, record):
            self.lines.append(record.getMessage())

    def shown(**settings) -> tuple[list, list]:
        lines = Lines()
        rank_zero.log.addHandler(lines)
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                with contextlib.ExitStack() as stack:
                    if settings:
                        stack.enter_context(configured(**settings))
                    rank_zero_info("GPU available: False, used: False")
                    rank_zero_info("💡 Tip: For seamless cloud logging ...")
                    rank_zero_info("`Trainer.fit` stopped: `max_epochs=1` reached.")
                    _tree_flatten({"a": [1.0]})   # Lightning's LeafSpec(): torch deprecates it
        finally:
            rank_zero.log.removeHandler(lines)
        return lines.lines, [str(w.message) for w in seen]

    lines, seen = shown(verbose=False)
    assert lines == ["`Trainer.fit` stopped: `max_epochs=1` reached."] and seen == []
    for settings in ({"verbose": True}, {}):   # verbose, and the process after a run
        lines, seen = shown(**settings)
        assert len(lines) == 3 and lines[0].startswith("GPU available")
        assert seen and all("LeafSpec" in w for w in seen)
