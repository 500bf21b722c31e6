"""A task's SQL (issue 38, point 7): its ``sql:`` path is read from the task YAML's own
folder, so a config folder on Hydra's search path ships its SQL beside its YAML, and the
run's checkpoint finds it from anywhere."""
from __future__ import annotations

import os
import subprocess
import sys

from rdl import TASKS_DIR


def test_sql_beside_its_yaml_on_the_search_path(tmp_path, run_train, rdl_cache):
    conf = tmp_path / "my_conf" / "task"
    conf.mkdir(parents=True)
    (conf / "quiet.yaml").write_text("defaults:\n  - user-churn\n  - _self_\nname: quiet\n"
                                     "sql: quiet.sql   # beside this file\n")
    (conf / "quiet.sql").write_text((TASKS_DIR / "hm" / "user-churn.sql").read_text())
    run = tmp_path / "run"
    out = run_train(run, f"hydra.searchpath=[file://{tmp_path / 'my_conf'}]", "task=quiet",
                    "compile.enabled=false")
    assert out.returncode == 0, out.stderr[-3000:]
    assert (run / "metrics.json").exists()
    # rdl.predict from another folder: the checkpoint holds where the SQL was found
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pred = subprocess.run([sys.executable, "-m", "rdl.predict",
                           f"ckpt_path={run / 'checkpoints' / 'best.ckpt'}",
                           f"hydra.run.dir={elsewhere / 'p'}"], cwd=elsewhere,
                          env={**os.environ, "RDL_CACHE": str(rdl_cache),
                               "PYTHONPATH": os.pathsep.join(sys.path)},
                          capture_output=True, text=True, timeout=600)
    assert pred.returncode == 0, pred.stderr[-3000:]
