"""The prepared data's cache (rdl/prepared_cache.py): a restart reads what the first run
computed, bit for bit and mapped from the file; another setting is another entry; a
half-written entry is never read; a run's metrics are the same whichever it was."""
from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rdl import api, caching
from rdl.prepared_cache import DATA, _write, entry_of, shared
from rdl.preparation import task_database
from tests.conftest import task_overrides

ROOT = Path(__file__).resolve().parents[1]


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "prepared").iterdir() if ".tmp-" not in p.name)


def temporaries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "prepared").iterdir() if ".tmp-" in p.name)


def mapped(x, path: Path) -> bool:
    """Whether ``x`` (a tensor or an array) lies in this process's mapping of ``path``."""
    ptr = x.data_ptr() if isinstance(x, torch.Tensor) else x.__array_interface__["data"][0]
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.endswith(" " + str(path)):
            lo, hi = (int(a, 16) for a in line.split()[0].split("-"))
            if lo <= ptr < hi:
                return True
    return False


def same_bits(a, b) -> None:
    """Equal, and bit for bit where the values are NumPy's (NaN where NaN, -0.0 as -0.0)."""
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        assert a.index.equals(b.index)
        for c in a.columns:
            if isinstance(a[c].dtype, np.dtype) and a[c].dtype != object:
                same_bits(a[c].to_numpy(), b[c].to_numpy())
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes()
    else:
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def prepare(tiny_cfg, db, cache: Path, *overrides: str):
    return api.prepare(tiny_cfg(f"data.cache_dir={cache}", *overrides), db).prepared


@pytest.mark.parametrize("task", ["user-churn", "user-item-purchase"])
def test_a_restart_reads_the_cache_bit_for_bit_and_mapped(tiny_cfg, tmp_path, caplog, task):
    overrides = task_overrides(task)
    db = api.load_database(tiny_cfg(*overrides))   # the session's cached database
    with caplog.at_level(logging.INFO, "rdl.preparation"):
        first = prepare(tiny_cfg, db, tmp_path, *overrides)
        (entry,) = entries(tmp_path)
        assert f"prepared data computed and cached in {entry}" in caplog.text
        caplog.clear()
        again = prepare(tiny_cfg, db, tmp_path, *overrides)
        assert "prepared data read from the cache: " in caplog.text
        assert f"; {entry} (mapped)" in caplog.text
    assert "computed" not in caplog.text and entries(tmp_path) == [entry]
    file = entry / DATA
    for split, df in first.tables.items():
        same_bits(df, again.tables[split])
    assert mapped(again.tables["train"]["timestamp"].to_numpy(), file)
    if task != "user-churn":
        return
    same_bits(first.history, again.history)
    assert again.prior_name == first.prior_name
    assert again.seed_feature_names == first.seed_feature_names
    for split in first.prior:
        same_bits(first.prior[split], again.prior[split])
        same_bits(first.seed_x[split], again.seed_x[split])
        assert mapped(again.prior[split], file) and mapped(again.seed_x[split], file)
    # the tree baselines score as the fitted trees did, from the stored raw scores
    assert again.tree_fits.keys() == first.tree_fits.keys()
    assert again.tree_fit.name == first.tree_fit.name
    assert again.tree_fit is again.tree_fits[again.tree_fit.name]
    for name, fit in first.tree_fits.items():
        assert again.tree_fits[name].scores() == fit.scores()
        if hasattr(fit, "fits"):   # the mean of both LightGBMs: of the restored two
            assert [f.name for f in again.tree_fits[name].fits] == [f.name for f in fit.fits]
            assert all(a is again.tree_fits[f.name] for a, f in
                       zip(again.tree_fits[name].fits, fit.fits))
        else:
            assert again.tree_fits[name].rounds == fit.rounds
    assert any(hasattr(fit, "fits") for fit in again.tree_fits.values())


def test_a_restart_hashes_no_row(tiny_cfg, tmp_path, monkeypatch, task="user-churn"):
    """A database saved in rdl's cache keeps its rows' digest (digest.json): the first run
    hashes every row twice, once as the database is saved (the prepared data's digest
    takes that one) and once for the graph's fingerprint; a restart, the database loaded
    from its cache, hashes none: the prepared data's digest is the stored one and the
    graph cache finds its entry by it (rdl.graph.build: ``keys/``). A database not from
    the cache is hashed. The restart does not cut the database either, nor infer a
    column's stype: the graph is found by the digest alone (rdl.graph.store.cached_graph);
    it reads no row of the database (rdl.data.stored.StoredTable: read when needed).
    No trees here: they change nothing in this."""
    from rdl.data import digest as rows
    from rdl.data.hm import synthetic_hm_db
    from rdl.families.node import prepare as node_prepare
    from rdl.graph import build
    hashed = []

    def counted(real):
        def count(*args, **kwargs):
            hashed.append(real.__name__)
            return real(*args, **kwargs)
        return count
    monkeypatch.setattr(build, "fingerprint", counted(build.fingerprint))
    monkeypatch.setattr(rows, "rows_digest", counted(rows.rows_digest))
    monkeypatch.setattr(node_prepare, "graph_database", counted(node_prepare.graph_database))
    monkeypatch.setattr(build, "infer_stypes", counted(build.infer_stypes))
    overrides = (*task_overrides(task), "data.tree_prior=false", "data.deep_features=null",
                 "data.seed_features=false")
    scale = tiny_cfg(*overrides).data.db.scale
    db = synthetic_hm_db(scale=scale, cache_dir=tmp_path / "db")   # made and saved
    assert hashed == ["rows_digest"]
    first = prepare(tiny_cfg, db, tmp_path, *overrides)
    assert not any(t.read for _, t in db)          # the rows it read released (read again
    assert len(db["transactions"].df) == len(db["transactions"]) > 0   # if asked for)
    assert [h for h in hashed if h != "infer_stypes"] == ["rows_digest", "graph_database",
                                                        "fingerprint"]
    assert hashed.count("infer_stypes") == len(first.data.node_types)
    hashed.clear()
    loaded = synthetic_hm_db(scale=scale, cache_dir=tmp_path / "db")   # a restart
    again = prepare(tiny_cfg, loaded, tmp_path, *overrides)
    assert not any(t.read for _, t in loaded)     # nor reads the database's rows
    assert hashed == [] and len(list((tmp_path / "graphs").glob("graph-*"))) == 1
    assert len(list((tmp_path / "prepared").glob("*"))) == 1   # the same entry
    assert again.data.node_types == first.data.node_types
    for nt in first.data.node_types:
        assert again.data[nt].num_nodes == first.data[nt].num_nodes
    prepare(tiny_cfg, loaded, tmp_path, *overrides, "data.label_history=false")  # another graph
    assert [h for h in hashed if h != "infer_stypes"] == ["graph_database", "fingerprint"]
    assert len(list((tmp_path / "graphs").glob("graph-*"))) == 2
    hashed.clear()
    copied = type(loaded)(dict(loaded.tables), keys=dict(loaded.keys))   # not from the cache
    prepare(tiny_cfg, copied, tmp_path, *overrides)
    assert hashed == ["rows_digest"] and len(list((tmp_path / "prepared").glob("*"))) == 1


def test_another_setting_is_another_entry(tiny_cfg, tmp_path, caplog):
    db = api.load_database(tiny_cfg())

    def entry(*overrides: str, database=db) -> Path:
        cfg = tiny_cfg(f"data.cache_dir={tmp_path}", *overrides)
        task, settings = api.load_task(cfg), api.data_settings(cfg)
        return entry_of(task, task_database(task, database, settings), settings)

    base = entry()
    for changed in ("backtest=1", "train_windows=2", "seed=1", "data.deep_features=null",
                    "data.deep_features.top_k=3", "data.tree_prior=false",
                    "data.seed_features=false", "data.strict=true", "data.prior_margin=2.0",
                    "data.tree_blocks=2", "data.tree_rows=100", "task=item-sales"):
        assert entry(changed) != base, changed
    for same in ("data.batch_size=7", "data.num_workers=0", "data.label_history=false",
                 "data.num_neighbors=[4,4]", "model.channels=8", "trainer.max_epochs=3",
                 "lr=0.5"):
        assert entry(same) == base, same
    # a database with one value changed
    customers = db["customer"].df.copy()
    customers.iloc[0, -1] = customers.iloc[1, -1] if customers.iloc[0, -1] != \
        customers.iloc[1, -1] else customers.iloc[2, -1]
    other = type(db)({**db.tables, "customer": type(db["customer"])(
        customers, db["customer"].pkey, db["customer"].fkeys, db["customer"].time_col)},
        keys=db.keys, stypes=db.stypes)
    assert entry(database=other) != base

    # and a run with another setting computes its own entry beside the first
    prepare(tiny_cfg, db, tmp_path)
    with caplog.at_level(logging.INFO, "rdl.preparation"):
        prepare(tiny_cfg, db, tmp_path, "backtest=1")
    assert "prepared data computed and cached in" in caplog.text
    assert entries(tmp_path) == sorted([base, entry("backtest=1")])


# Dies while writing the entry's file, half of it written: what a killed writer leaves.
KILL_WRITER = """
import os, signal, sys, torch
from rdl import api
cfg = api.config("debug=tiny", f"data.cache_dir={sys.argv[1]}", f"data.db.cache_dir={sys.argv[2]}",
                 f"output_dir={sys.argv[1]}/run")
save = torch.save
def save_half_then_die(obj, f, *args, **kwargs):
    save(obj, f, *args, **kwargs)
    if str(f).endswith("prepared.pt"):
        os.truncate(f, os.path.getsize(f) // 2)
        os.kill(os.getpid(), signal.SIGKILL)
torch.save = save_half_then_die
api.prepare(cfg)
"""


def test_a_half_written_entry_is_never_read(tiny_cfg, tmp_path, rdl_cache, caplog):
    out = subprocess.run([sys.executable, "-c", KILL_WRITER, str(tmp_path), str(rdl_cache)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    (left,) = temporaries(tmp_path)                     # the killed writer's folder
    assert (left / DATA).exists() and entries(tmp_path) == []
    db = api.load_database(tiny_cfg())
    with caplog.at_level(logging.INFO, "rdl.preparation"):
        first = prepare(tiny_cfg, db, tmp_path)
    assert "prepared data computed and cached in" in caplog.text
    assert temporaries(tmp_path) == []                  # the dead writer's is removed
    (entry,) = entries(tmp_path)
    assert caching.complete(entry)

    # an entry whose file lost its end (its size no longer the marker's) is computed again
    size = (entry / DATA).stat().st_size
    Path.write_bytes(entry / DATA, (entry / DATA).read_bytes()[: size // 2])
    caplog.clear()
    with caplog.at_level(logging.INFO, "rdl.preparation"):
        again = prepare(tiny_cfg, db, tmp_path)
    assert "read from the cache" not in caplog.text
    assert "prepared data computed and cached in" in caplog.text
    assert caching.complete(entry) and (entry / DATA).stat().st_size == size
    same_bits(first.prior["val"], again.prior["val"])


def test_a_run_scores_the_same_from_the_cache(run_train, tmp_path, rdl_cache):
    """The metrics (model and baselines, the tree baselines scored from their stored raw
    scores) of a run that computed its prepared data and of one that read it."""
    cache = tmp_path / "cache"
    runs = [tmp_path / "computed", tmp_path / "cached"]
    for run in runs:
        out = run_train(run, "task=user-churn", f"data.cache_dir={cache}",
                        f"data.db.cache_dir={rdl_cache}", "compile.enabled=false")
        assert out.returncode == 0, out.stderr[-3000:]
    logs = [(run / "train.log").read_text() for run in runs]
    assert "prepared data computed and cached in" in logs[0]
    assert "prepared data read from the cache" in logs[1]
    for work in ("split tables (the task's SQL)...", "depth-1 features...", "LightGBM..."):
        assert work in logs[0] and work not in logs[1], work   # computed once
    computed, cached = (json.loads((run / "metrics.json").read_text()) for run in runs)
    assert cached == computed
    assert any(k.startswith("LightGBM") for k in computed)


def small(tiny_cfg, cache) -> tuple:
    """A task, its database and settings with ``data.cache_dir=cache``, for :func:`shared`."""
    cfg = tiny_cfg(f"data.cache_dir={cache}")
    task, settings = api.load_task(cfg), api.data_settings(cfg)
    return task, task_database(task, api.load_database(tiny_cfg()), settings), settings


OUT = {"tables": {"train": pd.DataFrame({"timestamp": pd.to_datetime(["2020-01-01"] * 2),
                                         "y": [0.5, np.nan]})},
       "prior": {"val": np.arange(3.0)}}


def never() -> dict:
    raise AssertionError("a process other than the first computed the prepared data")


@pytest.mark.parametrize("cache", ["off", "unwritable"])
def test_without_a_cache_the_run_folder_file_is_shared(tiny_cfg, tmp_path, monkeypatch, cache):
    """``data.cache_dir=false``, or a cache folder rdl cannot write: the first process of
    a multi-process run leaves the data in the run folder, and the others read it there."""
    task, db, settings = small(tiny_cfg, False if cache == "off" else tmp_path / "cache")
    if cache == "unwritable":
        monkeypatch.setattr(caching, "writable", lambda folder: False)
    path = str(tmp_path / "run" / ".prepared-x.pt")
    (tmp_path / "run").mkdir()
    for name in ("LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "SLURM_LOCALID", "SLURM_NODEID"):
        monkeypatch.delenv(name, raising=False)
    assert shared(task, db, settings, lambda: OUT, shared_path=path) is OUT
    assert Path(path).exists() and not (tmp_path / "cache" / "prepared").exists()
    monkeypatch.setenv("LOCAL_RANK", "1")
    back = shared(task, db, settings, never, shared_path=path)
    same_bits(back["tables"]["train"], OUT["tables"]["train"])
    same_bits(back["prior"]["val"], OUT["prior"]["val"])


def test_the_other_processes_wait_for_the_first_s_entry(tiny_cfg, tmp_path, monkeypatch):
    """A process other than the first computes nothing: it waits for the entry the first
    writes (here a second later) and maps it."""
    task, db, settings = small(tiny_cfg, tmp_path)
    entry = entry_of(task, db, settings)
    monkeypatch.setenv("LOCAL_RANK", "1")
    writer = threading.Timer(1.0, lambda: _write(entry, OUT))
    writer.start()
    back = shared(task, db, settings, never, shared_path=str(tmp_path / ".prepared-x.pt"))
    writer.join()
    same_bits(back["prior"]["val"], OUT["prior"]["val"])
    assert mapped(back["prior"]["val"], entry / DATA)
    assert not (tmp_path / ".prepared-x.pt").exists()


def test_a_tasks_training_budget_keeps_its_prepared_data_and_file_names(tiny_cfg):
    """``trainer_defaults`` changes how long a run trains, not what it prepares: the
    prepared data's task key and the shared file's key stay; a label setting moves both."""
    import dataclasses

    from rdl.prepared_cache import task_key
    from rdl.settings import data_key

    cfg = tiny_cfg(*task_overrides("user-item-purchase"))
    task = api.load_task(cfg)
    other = tiny_cfg(*task_overrides("user-item-purchase"), "task.trainer_defaults.max_epochs=9")
    assert task_key(dataclasses.replace(task, trainer_defaults={"max_epochs": 9})) == task_key(task)
    assert data_key(other) == data_key(cfg)
    assert task_key(dataclasses.replace(task, window="14d")) != task_key(task)
    assert data_key(tiny_cfg(*task_overrides("user-item-purchase"), "task.window=14d")) != data_key(cfg)
