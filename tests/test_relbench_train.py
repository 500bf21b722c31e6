"""One command per RelBench layout trains every task kind of RelBench's fake database, with no
schema or SQL written for rdl; RelBench 3's evaluator accepts rdl's prediction files and
scores them as rdl does; rel-hm read through RelBench's layout is today's rel-hm."""
import json

import pandas as pd
import pytest

from rdl.tasks import SPLITS
from relbench_fake import assert_same, rel_hm_tasks, run_relbench3, write_rel_hm

#: tiny and eager (compiling costs minutes on a 2-core machine; the compiled path is the
#: same model, tested elsewhere): a run takes about 20 s
TINY_RUN = ("model.channels=16", "model.encoder_layers=1", "data.batch_size=64",
            "data.num_neighbors=[16,8]", "trainer.max_epochs=1", "trainer.limit_train_batches=3",
            "trainer.limit_val_batches=2", "compile.enabled=false")
#: what a task needs besides its folder: a link task, a link model
EXTRA = {"user-item-purchase": ("model=contextgnn",)}


def train(run_train, run_dir, root, task):
    out = run_train(run_dir, "data=relbench", f"data.db.path={root}", "task=relbench",
                    f"task.path={root / 'tasks' / task}", *TINY_RUN, *EXTRA.get(task, ()),
                    tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads((run_dir / "metrics.json").read_text())


def predict(run_dir, rdl_cache):
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "rdl.predict",
                          f"ckpt_path={run_dir / 'checkpoints' / 'best.ckpt'}", "split=test",
                          "format=csv", f"hydra.run.dir={run_dir / 'predict'}"],
                         env={**os.environ, "RDL_CACHE": str(rdl_cache)}, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return run_dir / "predictions_test.csv"


#: RelBench 3's evaluator on rdl's CSV files (argv: dataset, then task=file ...)
EVALUATE = """
import json, sys, types
from pathlib import Path
try:
    import huggingface_hub  # noqa: F401
except ImportError:  # asked only where its Hub cache is: offline, nowhere
    hub = types.ModuleType("huggingface_hub")
    hub.constants = types.SimpleNamespace(HF_HUB_CACHE=str(Path(sys.argv[1]) / ".no-hub"))
    sys.modules.update({"huggingface_hub": hub, "huggingface_hub.constants": hub.constants})
from relbench.submit import evaluate_task
print(json.dumps({a.split("=")[0]: evaluate_task("rel-fake/" + a.split("=")[0], a.split("=")[1],
                                                 dataset=sys.argv[1]) for a in sys.argv[2:]}))
"""


def relbench_scores(relbench3, root, files: dict) -> dict:
    proc = run_relbench3(relbench3, EVALUATE, str(root), *(f"{t}={f}" for t, f in files.items()))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_scores(name, ours, theirs, root):
    """RelBench's metric of rdl's file is rdl's own (NMAE: MAE over the train labels' std)."""
    if "roc_auc" in theirs:
        assert theirs["roc_auc"] == pytest.approx(ours["auroc"], abs=1e-6)
    elif "map" in theirs:
        assert theirs["map"] == pytest.approx(ours["map"], abs=1e-6)
    else:
        train = pd.read_parquet(root / "tasks" / name / "train.parquet")
        target = [c for c in train.columns if c not in ("timestamp", "customer_id",
                                                        "primary_key", "review_time")][0]
        assert theirs["nmae"] * train[target].std(ddof=1) == pytest.approx(ours["mae"], rel=1e-5)


def test_relbench_accepts_rdls_files_and_scores_as_rdl(relbench_v3, relbench3, tmp_path):
    """rdl.predict's file (its layout and writer) for any predictions of a node or a link
    task: RelBench 3's evaluator reads it and gives the metric rdl's scoring gives."""
    import types

    import numpy as np
    import torch

    from rdl.baselines.scoring import score
    from rdl.data.relbench import load_relbench
    from rdl.predict import layout, write
    from rdl.families import relbench_task
    from rdl.families.link import LinkTask
    db = load_relbench(relbench_v3)
    gen = torch.Generator().manual_seed(0)
    files, ours = {}, {}
    for name in ("user-churn", "user-ltv", "user-item-purchase", "review-rating"):
        task = relbench_task(relbench_v3 / "tasks" / name)
        test = task.split_table("test", task.database(db))
        if not isinstance(task, LinkTask):
            pred = torch.rand(len(test), generator=gen) * (1 if name == "user-churn" else 5)
        else:
            pred = torch.stack([torch.randperm(len(db["product"]), generator=gen)[:task.eval_k]
                                for _ in range(len(test))])
        table, ours[name] = layout(
            types.SimpleNamespace(task=task, tables={"test": test}, db=db), "test", pred)
        files[name] = tmp_path / f"{name}.csv"
        write(table, files[name], "csv")
        if not isinstance(task, LinkTask):
            assert ours[name] == pytest.approx(score(task, pred.numpy(), test))
        else:  # a JSON list per cell
            cell = pd.read_csv(files[name])["product_id"].iloc[0]
            assert json.loads(cell) == [int(x) for x in np.asarray(table["product_id"].iloc[0])]
    theirs = relbench_scores(relbench3, relbench_v3, files)
    for name in files:
        check_scores(name, ours[name], theirs[name], relbench_v3)


@pytest.mark.slow
def test_v3_churn_and_relbench_scores_rdls_file(relbench_v3, relbench3, run_train, rdl_cache,
                                                 tmp_path):
    """The 3.x command trains a node task from its manifest; RelBench's evaluator accepts
    rdl's prediction file and gives rdl's test AUROC."""
    results = train(run_train, tmp_path / "run", relbench_v3, "user-churn")
    csv = predict(tmp_path / "run", rdl_cache)
    df = pd.read_csv(csv)
    assert list(df.columns) == ["timestamp", "customer_id", "churn"]
    assert df["timestamp"].nunique() == 3  # several test seed times
    check_scores("user-churn", results["model"]["test"],
                 relbench_scores(relbench3, relbench_v3, {"user-churn": csv})["user-churn"],
                 relbench_v3)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["user-ltv", "user-reviews", "user-item-purchase",
                                  "review-rating"])
def test_v3_every_kind_trains_and_relbench_scores_it(name, relbench_v3, relbench3, run_train,
                                                      rdl_cache, tmp_path):
    """Regression, multiclass, link prediction (a JSON list per cell), autocomplete."""
    results = train(run_train, tmp_path / "run", relbench_v3, name)
    assert set(results["model"]["test"]) == set(
        {"user-ltv": {"mae", "rmse", "r2"}, "review-rating": {"mae", "rmse", "r2"},
         "user-reviews": {"accuracy", "macro_f1"},
         "user-item-purchase": {"map", "precision", "recall"}}[name])
    if name == "user-reviews":
        return  # RelBench 3 has no evaluator for multiclass tasks
    csv = predict(tmp_path / "run", rdl_cache)
    check_scores(name, results["model"]["test"],
                 relbench_scores(relbench3, relbench_v3, {name: csv})[name], relbench_v3)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["user-churn", "user-ltv", "user-item-purchase"])
def test_v1_every_kind_trains(name, relbench_v1, run_train, tmp_path):
    results = train(run_train, tmp_path / "run", relbench_v1, name)
    assert results["model"]["test"]


# -- rel-hm: one instance of RelBench's layout ---------------------------------------------------
@pytest.fixture(scope="module")
def rel_hm(tmp_path_factory, rdl_cache):
    pytest.importorskip("relbench.tasks.hm", reason="the relbench test extra")
    from rdl.data.hm import synthetic_hm_db
    db = synthetic_hm_db(seed=0, scale=0.001, cache_dir=rdl_cache)  # data=hm-tiny's
    return db, write_rel_hm(db, tmp_path_factory.mktemp("rel-hm"))


def test_rel_hm_through_relbench_is_rel_hm(rel_hm, tiny_cfg):
    """The synthetic H&M written by RelBench reads back as the same database, and rdl's
    rel-hm tasks label it as RelBench's rel-hm task classes do, row for row."""
    from hydra.utils import instantiate
    from rdl.data.hm import load_hm
    from rdl.families.link import LinkTask
    db, root = rel_hm
    back = load_hm("relbench", path=root)
    for name, tab in db:
        pd.testing.assert_frame_equal(back[name].df, tab.df, check_dtype=False)
        assert back[name].meta() == tab.meta()
    for name, theirs in rel_hm_tasks(root).items():
        task = instantiate(tiny_cfg(f"task={name}").task, _convert_="all")
        for split in SPLITS:
            assert_same(task.split_table(split, back),
                        theirs.get_table(split, mask_input_cols=False).df,
                        task.entity_col, task.target_col, lists=isinstance(task, LinkTask))


@pytest.mark.slow
def test_rel_hm_through_relbench_trains_as_rel_hm(rel_hm, run_train, tmp_path):
    """data=hm-relbench (the general reader with the H&M stypes) on RelBench's files gives
    the metrics of data=hm-tiny on the database they were written from."""
    _, root = rel_hm
    common = ("task=user-churn", *TINY_RUN)
    a = run_train(tmp_path / "a", "data=hm-relbench", f"data.db.path={root}", *common, tiny=False)
    b = run_train(tmp_path / "b", "data=hm-tiny", *common, tiny=False)
    assert a.returncode == 0 and b.returncode == 0, (a.stderr + b.stderr)[-3000:]
    assert json.loads((tmp_path / "a" / "metrics.json").read_text()) == json.loads(
        (tmp_path / "b" / "metrics.json").read_text())
