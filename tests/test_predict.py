"""``python -m rdl.predict``: a trained run's checkpoint, rebuilt from the config inside it,
writes one file per split in RelBench's layout, one row per seed of the split, and scores
it as the training run did."""
from __future__ import annotations

import os
import sys

import pandas as pd
import pytest

from tests.zygote import command
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rdl.data.database import DataError
from rdl.data.hm import load_hm
from rdl.predict import predict
from test_train import check_report, check_trained
from tests.conftest import task_overrides

RUN = ("compile.enabled=false",)  # eager: the same numbers as the eager prediction pass


def run_predict(rdl_cache, *overrides):
    env = {**os.environ, "RDL_CACHE": str(rdl_cache)}
    return command([sys.executable, "-m", "rdl.predict", *overrides], env=env, timeout=600)


def split_rows(tiny_cfg, rdl_cache, task_name, split):
    """The split's table, its entities as the files' ids (predictions report those)."""
    cfg = tiny_cfg(*task_overrides(task_name))
    task = instantiate(cfg.task, _convert_="all")
    db = load_hm(source="synthetic", seed=cfg.data.db.seed, scale=cfg.data.db.scale,
                 cache_dir=rdl_cache)
    df = task.split_table(split, db)
    return df.assign(**{task.entity_col: original(db, task.entity_table, df[task.entity_col])})


def original(db, table, rows) -> list:
    """Row positions of ``table`` as the ids of the files it was read from."""
    return list(db.keys[table][pd.Series(rows).astype(int).to_numpy()])


def now_rows(tiny_cfg, rdl_cache, task_name) -> tuple[pd.Timestamp, list[int]]:
    """The database's last time and, by pandas, the entities a prediction then scores:
    customers with a purchase in the last week (user-churn), every customer the task ever
    labelled (user-item-purchase)."""
    cfg = tiny_cfg(*task_overrides(task_name))
    db = load_hm(source="synthetic", seed=cfg.data.db.seed, scale=cfg.data.db.scale,
                 cache_dir=rdl_cache)
    tx, t = db["transactions"].df, db.max_time
    if task_name == "user-churn":
        week = tx[(tx["t_dat"] > t - pd.Timedelta("7D")) & (tx["t_dat"] <= t)]
        return t, sorted(original(db, "customer", week["customer_id"].unique()))
    labelled = [split_rows(tiny_cfg, rdl_cache, task_name, s)["customer_id"] for s in
                ("train", "val", "test")]
    return t, sorted(pd.concat(labelled).unique())


@pytest.mark.parametrize("task,splits", [
    ("user-churn", {"val": "csv", "now": "parquet"}),
    # slow (34 s of CI's 15 minutes, cold): a link task's predictions in RelBench's layout
    # are also written and validated by RelBench in test_relbench_workflow.py
    pytest.param("user-item-purchase", {"test": "parquet", "now": "parquet"},
                 marks=pytest.mark.slow)])
def test_predictions_cover_the_split_in_relbench_layout(tmp_path, run_train, tiny_cfg,
                                                        rdl_cache, task, splits):
    out = run_train(tmp_path / "run", *task_overrides(task), *RUN)
    results = check_report(out, tmp_path / "run", task)  # the short run's report (test_train)
    check_trained(results)
    trained = results["model"]
    ckpt = tmp_path / "run" / "checkpoints" / "best.ckpt"
    for split, fmt in splits.items():
        # A new process, and nothing of the training config but what the checkpoint holds.
        res = run_predict(rdl_cache, f"ckpt_path={ckpt}", f"split={split}", f"format={fmt}",
                          f"hydra.run.dir={tmp_path / 'predict'}")
        assert res.returncode == 0, res.stderr[-3000:]
        path = tmp_path / "run" / f"predictions_{split}.{fmt}"
        table = pd.read_parquet(path) if fmt == "parquet" else pd.read_csv(path)
        entity, target = "customer_id", "churn" if task == "user-churn" else "article_id"
        assert list(table.columns) == ["timestamp", entity, target]
        if split == "now":  # no labels: nothing scored, every eligible entity predicted
            t, ids = now_rows(tiny_cfg, rdl_cache, task)
            assert sorted(table[entity]) == ids and len(ids) > 0
            assert (pd.to_datetime(table["timestamp"]) == t).all()
            assert f"{split}: " not in res.stdout
        else:
            want = split_rows(tiny_cfg, rdl_cache, task, split)
            assert len(table) == len(want)
            assert (table[entity].to_numpy() == want[entity].to_numpy()).all()
            assert (pd.to_datetime(table["timestamp"]) == want["timestamp"]).all()
        if task == "user-churn":
            assert table[target].between(0, 1).all() and table[target].nunique() > 1
        else:  # the top 12 distinct article ids, best first
            lists = table[target].map(list)
            assert lists.map(len).eq(12).all() and lists.map(lambda x: len(set(x))).eq(12).all()
        if split == "now":
            continue
        # Scored as the training run scored the same checkpoint.
        line = next(x for x in res.stdout.splitlines() if x.startswith(f"{split}: "))
        printed = dict(kv.rsplit(" ", 1) for kv in line[len(split) + 2:].split(", "))
        for metric, value in trained[split].items():
            assert float(printed[metric]) == pytest.approx(value, abs=1e-4), metric


    if task == "user-churn":  # a database of another schema: customer.age dropped
        cfg = OmegaConf.create({"ckpt_path": str(ckpt), "split": "test", "format": "csv",
                                "output": str(tmp_path / "x.csv"), "accelerator": "cpu",
                                "run": {"data": {"cache_dir": str(rdl_cache),
                                                 "stypes": {"customer": {"age": None}}}}})
        with pytest.raises(DataError, match="the database differs from the one the model was "
                                            "trained on .*customer"):
            predict(cfg)
        assert not (tmp_path / "x.csv").exists()


def test_bad_requests_get_one_clear_error(tmp_path, rdl_cache):
    cfg = OmegaConf.create({"ckpt_path": str(tmp_path / "nope.ckpt"), "split": "test",
                            "format": "parquet", "output": None, "accelerator": "cpu", "run": {}})
    with pytest.raises(FileNotFoundError, match="nope.ckpt: no such file"):
        predict(cfg)
    for key, value, message in [("split", "train", "split='train': expected one of"),
                                ("format", "xlsx", "format='xlsx': expected one of")]:
        with pytest.raises(ValueError, match=message):
            predict(OmegaConf.merge(cfg, {key: value}))
    res = run_predict(rdl_cache, f"ckpt_path={tmp_path / 'nope.ckpt'}",
                      f"hydra.run.dir={tmp_path / 'predict'}")
    assert res.returncode == 1 and res.stderr.strip().endswith("nope.ckpt: no such file")
    assert "Traceback" not in res.stderr


def test_a_task_given_to_predict_says_what_to_do(tmp_path, rdl_cache):
    """``rdl.predict task=...`` (as one trains) answered with Hydra's "Could not override
    'task'"; the checkpoint carries its task (issue 38, point 8)."""
    res = run_predict(rdl_cache, f"ckpt_path={tmp_path / 'nope.ckpt'}", "task=relbench",
                      f"hydra.run.dir={tmp_path / 'predict'}")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith("error: task=...: rdl.predict takes the task from the "
                                 "checkpoint"), res.stderr
    assert "+run.<key>=<value>" in res.stderr


def test_a_checkpoint_of_an_older_rdl_gets_todays_defaults(tiny_cfg, caplog):
    """A checkpoint written before a data setting existed (the node prior's ``prior_*``,
    2026-11-28) failed in rdl.predict with "missing 3 required positional arguments"; the
    missing settings now take today's defaults, named in a warning."""
    from rdl.predict import newer_settings
    from rdl.training.data_settings import DataSettings

    cfg = tiny_cfg()
    old = OmegaConf.masked_copy(cfg, list(cfg))
    for key in ("prior_from", "prior_margin", "prior_trees"):
        del old.data[key]
    with pytest.raises(TypeError, match="prior_from"):
        DataSettings.from_config(old.data)
    with caplog.at_level("WARNING", logger="rdl.predict"):
        run = newer_settings(old, "old.ckpt")
    assert "old.ckpt was written by an older rdl" in caplog.text
    assert "data.prior_from, data.prior_margin, data.prior_trees" in caplog.text
    for key in ("prior_from", "prior_margin", "prior_trees"):
        assert run.data[key] == cfg.data[key]
    assert DataSettings.from_config(run.data).prior_from == cfg.data.prior_from
    caplog.clear()
    newer_settings(cfg, "new.ckpt")   # nothing missing: nothing said
    assert "older rdl" not in caplog.text
