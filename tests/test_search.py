"""``hparams_search=<task>-optuna``: Hydra's Optuna sweeper through rdl's resumable sweeper
(hydra_plugins/rdl_search): each trial is a run whose value is the monitored validation
metric, the search ends with a line naming the best trial, and a search run again on its
SQLite study goes on with it."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time

import pytest
from hydra import compose, initialize_config_dir

import rdl
from tests.conftest import SHORT, TINY

optuna = pytest.importorskip("optuna", reason="the optuna extra")
pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason="the optuna extra")

SEARCHES = sorted(p.stem for p in (rdl.CONF_DIR / "hparams_search").glob("*.yaml"))
#: a trial as short as the tests' runs, eager (compiling would take most of its time)
FAST = ("compile.enabled=false",)
LINE = re.compile(r"^best trial (\d+) of (\d+) \(study (\S+)\): (\S+)=(\S+) with (.*) in (\S+); "
                  r"train it: (python -m rdl\.train .*)$", re.M)


@pytest.mark.parametrize("search", SEARCHES)
def test_a_search_config_picks_its_task_and_sweeps_its_monitored_metric(search):
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        cfg = compose("config", [f"hparams_search={search}"], return_hydra_config=True)
    task = search.removesuffix("-optuna")
    assert cfg.task.name == task
    sweeper = cfg.hydra.sweeper
    assert sweeper._target_.endswith("RdlOptunaSweeper")
    assert sweeper.direction == {"max": "maximize", "min": "minimize"}[cfg.task.monitor_mode]
    assert sweeper.sampler.seed == cfg.seed
    assert {"lr", "model.channels", "data.batch_size"} <= set(sweeper.params)
    assert ("data.tree_prior" in sweeper.params) == (cfg.task.kind != "link_prediction")


def search(run_train, sweep_dir, *overrides):
    return run_train(sweep_dir, "hparams_search=user-churn-optuna", *FAST,
                     f"hydra.sweep.dir={sweep_dir}", *overrides,
                     python=(sys.executable, "-m", "rdl.train", "-m"))


def val_metric(run_dir, name="auroc") -> float:
    return json.loads((run_dir / "metrics.json").read_text())["model"]["val"][name]


@pytest.mark.slow   # (22 s of CI's 13 min)
def test_a_search_finds_its_best_trial_and_resumes_its_study(run_train, rdl_cache, tmp_path):
    sweep, db = tmp_path / "sweep", tmp_path / "study.db"
    storage = f"hydra.sweeper.storage=sqlite:///{db}"
    args = ("hparams_search=user-churn-optuna", "hydra.sweeper.n_trials=3", *TINY, *SHORT, *FAST,
            f"hydra.sweep.dir={sweep}", storage)
    # a search of 3 trials, killed while its second trial trains
    first = subprocess.Popen([sys.executable, "-m", "rdl.train", "-m", *args],
                             env={**os.environ, "RDL_CACHE": str(rdl_cache)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not (sweep / "1" / ".hydra").exists() and first.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first.kill()
    first.wait()
    assert (sweep / "0" / "metrics.json").exists() and not (sweep / "1" / "metrics.json").exists()
    # the same command again: it goes on with the study, running the 2 trials still to go
    second = search(run_train, sweep, "hydra.sweeper.n_trials=3", storage)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "1 trials finished, 2 to go" in second.stdout + second.stderr

    study = optuna.load_study(study_name="user-churn", storage=f"sqlite:///{db}")
    states = [t.state for t in study.get_trials()]
    State = optuna.trial.TrialState
    # the killed trial stays as it was left (another search may be running it)
    assert states == [State.COMPLETE, State.RUNNING, State.COMPLETE, State.COMPLETE]
    trials = [t for t in study.get_trials() if t.state == State.COMPLETE]
    assert [t.number for t in trials] == [0, 2, 3]
    # each trial's value is the monitored metric its run wrote, in a folder named after it
    for t in trials:
        assert t.value == val_metric(sweep / str(t.number))
    # the restarted sampler does not propose the first run's settings again
    first_run = [t.params["lr"] for t in study.get_trials()[:2]]
    assert set(first_run).isdisjoint(t.params["lr"] for t in trials[1:])

    found = LINE.findall(second.stdout)
    assert len(found) == 1, second.stdout[-3000:]
    number, total, name, metric, value, settings, where, command = found[0]
    best = max(trials, key=lambda t: t.value)
    assert (int(number), int(total), name, metric) == (best.number, 3, "user-churn", "val/auroc")
    assert float(value) == best.value == val_metric(sweep / number)
    assert where == str(sweep / number)
    assert settings.split() == [f"{k}={v}" for k, v in best.params.items()]

    # the command trains the best trial's run again, to the same value
    args = shlex.split(command)[3:]
    again = run_train(tmp_path / "again", *args, tiny=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert val_metric(tmp_path / "again") == best.value
