"""``rdl-relbench DATASET_DIR`` over RelBench's fake dataset in RelBench 3's layout (every task
kind: binary, regression, multiclass, recommendation, autocomplete), tiny: each task
trained with its kind's default model, a table per task, and a submission folder that
RelBench 3.0.2's own submission tooling validates (issue 38)."""
import json
import os
import sys

import pytest

from tests.zygote import command

from relbench_fake import run_relbench3
from test_relbench_train import TINY_RUN

#: RelBench 3's evaluate_submission on a folder (argv: the folder), offline: its Hub
#: module stubbed, the dataset found as a local folder named as the files say
VALIDATE = """
import json, sys, types
from pathlib import Path
hub = types.ModuleType("huggingface_hub")   # no Hub: nothing to fetch, the data is local
hub.constants = types.SimpleNamespace(HF_HUB_CACHE=str(Path.cwd() / ".no-hub"))
sys.modules.update({"huggingface_hub": hub, "huggingface_hub.constants": hub.constants})
from relbench.submit import evaluate_submission
res = evaluate_submission(sys.argv[1], num_workers=1, verbose=False)
print(json.dumps({"tasks": res["tasks"], "extra_files": res["extra_files"]}))
"""


def test_the_workflow_trains_every_task_and_relbench_validates_its_submission(
        relbench_v3, relbench3, rdl_cache, tmp_path):
    out = tmp_path / "out"
    proc = command([sys.executable, "-m", "rdl.leaderboard", str(relbench_v3),
                    "--out", str(out), *TINY_RUN],
                   env={**os.environ, "RDL_CACHE": str(rdl_cache)}, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    names = ("review-rating", "user-churn", "user-item-purchase", "user-ltv", "user-reviews")
    for name in names:   # a table per task: the model and the baselines, val and test
        assert f"== rel-fake/{name}" in proc.stdout
    lines = proc.stdout.splitlines()
    assert sum(ln.startswith("model ") for ln in lines) == len(names), proc.stdout
    assert sum(ln.startswith("LightGBM ") for ln in lines) >= 1   # baselines beside it
    submission = out / "submission"
    assert sorted(p.name for p in submission.iterdir()) == [
        f"rel-fake__{n}.csv" for n in names if n != "user-reviews"]   # no multiclass there
    assert (out / "runs" / "user-reviews" / "predictions_test.csv").exists()
    # RelBench's validator, the dataset found where its name says (rel-fake/manifest.yaml)
    (tmp_path / "rel-fake").symlink_to(relbench_v3)
    check = run_relbench3(relbench3, f"import os; os.chdir({str(tmp_path)!r})\n" + VALIDATE,
                          str(submission))
    assert check.returncode == 0, check.stderr[-3000:]
    res = json.loads(check.stdout.strip().splitlines()[-1])
    assert res["extra_files"] == []
    assert {t: r["status"] for t, r in res["tasks"].items()} == {
        f"rel-fake/{n}": "ok" for n in names if n != "user-reviews"}, res["tasks"]


#: RelBench 3's checks of a prediction file's keys against the test table, and of the
#: folder (argv: the folder, then task=test table ...), for a 1.x dataset it cannot load
CHECK_KEYS = """
import json, sys, types
from pathlib import Path
import pandas as pd
hub = types.ModuleType("huggingface_hub")
hub.constants = types.SimpleNamespace(HF_HUB_CACHE=str(Path.cwd() / ".no-hub"))
sys.modules.update({"huggingface_hub": hub, "huggingface_hub.constants": hub.constants})
from relbench.submit import _extra_files, _task_name_from_path, _validate_keys
folder, out = Path(sys.argv[1]), {}
for arg in sys.argv[2:]:
    task, test = arg.split("=")
    gt = pd.read_parquet(test)
    pred_col = [c for c in gt.columns if c not in ("date", "driverId")][0]
    csv = folder / f"rel-f1__{task}.csv"
    _validate_keys(pd.read_csv(csv), gt, ["driverId", "date"], pred_col)
    out[_task_name_from_path(csv)] = pred_col
print(json.dumps({"tasks": out, "extra": _extra_files(folder)}))
"""


@pytest.mark.slow  # 18 s; the 3.x workflow test keeps the command in CI
def test_the_workflow_over_a_relbench_1x_rel_f1(relbench3, rdl_cache, tmp_path):
    """rel-f1 as RelBench 1.1.0 writes it (its real task classes, several seed times per
    split): every task trained and its file keyed as RelBench's test table, row for row."""
    import pytest
    pytest.importorskip("relbench.tasks.f1", reason="the relbench test extra")
    from relbench_shapes import write_rel_f1
    root = write_rel_f1(tmp_path / "rel-f1")
    out = tmp_path / "out"
    proc = command([sys.executable, "-m", "rdl.leaderboard", str(root), "--out",
                    str(out), *TINY_RUN], env={**os.environ, "RDL_CACHE": str(rdl_cache)},
                   timeout=1500)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    tasks = ("driver-dnf", "driver-position", "driver-top3")
    assert sorted(p.name for p in (out / "submission").iterdir()) == [
        f"rel-f1__{t}.csv" for t in tasks]
    check = run_relbench3(relbench3, CHECK_KEYS, str(out / "submission"),
                          *(f"{t}={root / 'tasks' / t / 'test.parquet'}" for t in tasks))
    assert check.returncode == 0, check.stderr[-3000:]
    res = json.loads(check.stdout.strip().splitlines()[-1])
    assert res == {"tasks": {"rel-f1/driver-dnf": "did_not_finish",
                             "rel-f1/driver-position": "position",
                             "rel-f1/driver-top3": "qualifying"}, "extra": []}
