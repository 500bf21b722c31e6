"""Sweeps on a cluster through hydra-submitit-launcher (the ``slurm`` extra): rdl's Slurm
launcher config (``hydra/launcher=slurm``) composes into the sbatch script submitit writes,
and a 2-job sweep runs through submitit's local launcher, each job a process of its own."""
from __future__ import annotations

import json
import os
import pickle
import sys

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import rdl

submitit = pytest.importorskip("submitit", reason="the slurm extra")
pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="the slurm extra")


def test_the_slurm_config_composes_into_an_sbatch_script(tmp_path, monkeypatch):
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        cfg = compose("config", ["hydra/launcher=slurm", "hydra.launcher.partition=gpu",
                                 "hydra.launcher.timeout_min=90"], return_hydra_config=True)
    launcher = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    assert launcher["_target_"].endswith("submitit_launcher.SlurmLauncher")
    # the parameters as the plugin's launcher hands them to submitit (its launch())
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    skip = {"_target_", "submitit_folder", "max_num_timeout", "name"}
    params = {k if k in base else f"slurm_{k}": v for k, v in launcher.items() if k not in skip}
    fake = tmp_path / "bin"  # submitit's Slurm executor looks for srun, which is not here
    fake.mkdir()
    (fake / "srun").write_text("#!/bin/sh\nexit 0\n")
    (fake / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    executor.update_parameters(**params)
    script = executor._executor._make_submission_file_text("python -m rdl.train", "0")
    for line in ("--partition=gpu", "--time=90", "--gpus-per-node=1", "--nodes=1",
                 "--ntasks-per-node=1", "--cpus-per-task=8", "--mem=64GB"):
        assert f"#SBATCH {line}\n" in script, line


@pytest.mark.slow  # 14 s: two jobs through submitit; the Slurm config is composed in CI
def test_a_two_job_sweep_runs_through_submitits_local_launcher(run_train, tmp_path):
    sweep = tmp_path / "sweep"
    out = run_train(sweep, "hydra/launcher=submitit_local", f"hydra.sweep.dir={sweep}",
                    "compile.enabled=false", "seed=0,1",
                    python=(sys.executable, "-m", "rdl.train", "-m"))
    assert out.returncode == 0, out.stderr[-3000:]
    results = sorted((sweep / ".submitit").glob("*/*_result.pkl"))
    assert len(results) == 2  # two submitit jobs, each a process of its own
    values = {}
    for path in results:
        status, job = pickle.loads(path.read_bytes())
        assert status == "success"
        values[job.hydra_cfg.hydra.job.num] = job.return_value
    for num in (0, 1):
        metrics = json.loads((sweep / str(num) / "metrics.json").read_text())
        assert values[num] == metrics["model"]["val"]["auroc"]  # what the launcher returned
        seed = OmegaConf.load(sweep / str(num) / ".hydra" / "config.yaml").seed
        assert seed == num
