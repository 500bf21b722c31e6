"""rdl.duck: DuckDB within a memory limit, spilling to disk past it, gives what DuckDB gave
before (a plain connection on one thread): the split tables, the label history and the
depth-2 features (its category codes now in a byte or two, not eight), row for row, bit
for bit, dtypes and order included, with the synthesis's queries on cursors of one
database (``duck.shared``); the limit's setting, its default from the machine's memory,
and its error."""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os

import duckdb
import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate

from rdl import duck
from rdl.api import data_settings, load_database, load_task
from rdl.data.forum import forum_db
from rdl.features.deep import deep_features
from rdl.features.synthesis import Synthesis
from rdl.preparation import graph_database, split_tables, task_database
from tests.test_tasks import RELBENCH_USER_CHURN


@contextlib.contextmanager
def plain(ordered: bool = False):
    """The connection every query had before rdl.duck: one thread, DuckDB's defaults, a
    new one each query (``ordered``: the synthesis's join as written)."""
    con = duckdb.connect(config={"threads": 1})
    try:
        if ordered:
            con.execute(f"SET disabled_optimizers = '{duck.ORDERED}'")
        yield con
    finally:
        con.close()


@contextlib.contextmanager
def no_spilling():
    """rdl.duck's connections, but with no room on disk: a query that must spill fails."""
    made = duckdb.connect

    def connect(*args, config=None, **kwargs):
        return made(*args, config={**(config or {}), "max_temp_directory_size": "0KB"},
                    **kwargs)
    duckdb.connect = connect
    try:
        yield
    finally:
        duckdb.connect = made


def outputs(task, db, settings, deep: bool = True) -> dict:
    """What the tables and depth2 stages make: the split tables, the label history and
    each split's depth-2 features (as the trees run the synthesis)."""
    tables = split_tables(task, db, now=False)
    history = task.history(tables)
    out = {f"table {s}": df for s, df in tables.items()} | {"history": history}
    if deep:
        graph_db = graph_database(task, db, settings)[0]
        out |= {f"deep {s}": deep_features(task, graph_db, df, history, settings.strict,
                                           settings.deep_features)
                for s, df in tables.items()}
    return out


def assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for name in want:
        assert len(want[name]) > 0, name
        # every value exact (NaN where NaN), dtypes, column names and the row index
        pd.testing.assert_frame_equal(got[name], want[name], check_exact=True, obj=name)


def as_before(monkeypatch, compute):
    """``compute()`` as before rdl.duck: plain connections, and the synthesis's category
    codes as int64 (a byte or two each now)."""
    made = Synthesis.codes

    def wide(self, *args, **kwargs):
        codes, top = made(self, *args, **kwargs)
        return codes.astype(np.int64), top
    with monkeypatch.context() as m:
        m.setattr(duck, "connect", plain)
        m.setattr(duck, "cursor", plain)
        m.setattr(Synthesis, "codes", wide)
        return compute()


def hm(tiny_cfg, task: str, scale: float):
    cfg = tiny_cfg(f"task={task}", f"data.db.scale={scale}")
    task, settings = load_task(cfg), data_settings(cfg)
    return task, task_database(task, load_database(cfg), settings), settings


@pytest.mark.parametrize("task_name", ["user-churn", "item-sales"])
def test_spilled_to_disk_the_tables_are_those_of_before(tiny_cfg, monkeypatch, tmp_path,
                                                        task_name):
    """At a tenth of a percent of rel-hm's size, 64 MB are too few for the labels' joins
    of RelBench's user-churn query (every seed time x customer; rdl's own is a range join,
    which fits): with no room to spill the split tables fail; spilled, they are the same,
    bit for bit (item-sales: float sums)."""
    task, db, settings = hm(tiny_cfg, task_name, 0.01)
    if task_name == "user-churn":   # a user's SQL, as heavy as RelBench's
        task = dataclasses.replace(task, sql=None, query=RELBENCH_USER_CHURN)
    want = as_before(monkeypatch, lambda: outputs(task, db, settings, deep=False))
    with duck.configured(memory_limit="64MB", spill_dir=str(tmp_path)):
        if task_name == "user-churn":
            with no_spilling(), pytest.raises(MemoryError, match="duckdb.memory_limit"):
                split_tables(task, db, now=False)
        assert_same(outputs(task, db, settings, deep=False), want)
    assert list(tmp_path.iterdir()) == []   # each connection's spill folder removed


def test_spilled_depth2_features_are_those_of_before(tiny_cfg, monkeypatch, tmp_path):
    task, db, settings = hm(tiny_cfg, "user-churn", 0.01)
    want = as_before(monkeypatch, lambda: outputs(task, db, settings))
    with duck.configured(memory_limit="64MB", spill_dir=str(tmp_path)):
        assert_same(outputs(task, db, settings), want)


@contextlib.contextmanager
def counting_databases():
    """The configs of the DuckDB databases opened while inside (a list)."""
    made, opened = duckdb.connect, []

    def connect(*args, config=None, **kwargs):
        opened.append(config)
        return made(*args, config=config, **kwargs)
    duckdb.connect = connect
    try:
        yield opened
    finally:
        duckdb.connect = made


def test_inside_shared_the_queries_are_cursors_of_one_database(tmp_path):
    """Inside ``duck.shared()`` a cursor a query, of one database per setting (a new
    database costs ten times a cursor: benchmarks/duck_connect.py); a cursor sees only its
    own frames; the ordered database has the join optimisers off, the other not; they
    close, their spill folders removed, on leaving. Outside, a database a query."""
    frame = pd.DataFrame({"a": [1, 2]})

    def query(**kwargs):
        with duck.cursor(**kwargs) as con:
            con.register("f", frame)
            assert con.execute("SELECT sum(a) FROM f").fetchone()[0] == 3
            return con.execute("SELECT current_setting('threads'), "
                               "current_setting('disabled_optimizers')").fetchone()
    with duck.configured(memory_limit="1GB", spill_dir=str(tmp_path)), \
            counting_databases() as opened:
        with duck.shared():
            assert [query() for _ in range(3)] == [(1, "")] * 3
            with duck.shared():   # nested: the same database
                assert query(ordered=True) == (1, duck.ORDERED)
                with duck.cursor() as con, pytest.raises(duckdb.CatalogException):
                    con.execute("SELECT * FROM f")
            assert len(opened) == 2 and len(list(tmp_path.iterdir())) == 2
        assert list(tmp_path.iterdir()) == []
        query(), query()
        assert len(opened) == 4 and list(tmp_path.iterdir()) == []


def test_a_killed_processs_spill_folder_goes_when_the_next_database_opens(tmp_path):
    """A process killed mid-query leaves its spill folder and what it spilled; the next
    database opened there removes it, and leaves a live process's."""
    import subprocess
    import sys

    from rdl import caching
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)
    gone = tmp_path / f".duckdb.tmp-{caching._host()}-{dead}-x1"
    live = tmp_path / f".duckdb.tmp-{caching._host()}-{os.getppid()}-x2"
    for folder in (gone, live):
        folder.mkdir()
        (folder / "duckdb_temp_storage-0.tmp").write_bytes(b"spilled")
    with duck.configured(spill_dir=str(tmp_path)), duck.connect() as con:
        con.execute("SELECT 1")
        assert not gone.exists() and live.exists()
    assert list(tmp_path.iterdir()) == [live]


def test_depth2_features_open_a_database_or_two_not_one_a_query(tiny_cfg):
    """The synthesis runs many small queries (a database each cost a tiny rel-stack task's
    ranker half its 24 s); one call opens a database for them, two with ordered joins."""
    task, db, settings = hm(tiny_cfg, "user-churn", 0.01)
    tables = split_tables(task, db, now=False)
    history = task.history(tables)
    graph_db = graph_database(task, db, settings)[0]
    with counting_databases() as opened:
        deep_features(task, graph_db, tables["val"], history, settings.strict,
                      settings.deep_features)
    assert 1 <= len(opened) <= 2, len(opened)


def test_a_forked_process_leaves_its_parents_database_alone(tmp_path):
    """A fork (a DataLoader worker's, a zygote's) inside ``duck.shared()`` opens databases
    of its own, and leaving the scope it neither closes its copy of its parent's nor
    removes the parent's spill folder."""
    with duck.configured(spill_dir=str(tmp_path)):
        with duck.shared():
            with duck.cursor() as con:
                con.execute("SELECT 1")
            pid = os.fork()
            if pid == 0:   # the child: exits with 0 only if all holds
                ok = False
                try:
                    with duck.cursor() as con:
                        ok = con.execute("SELECT 42").fetchone()[0] == 42
                        ok &= len(list(tmp_path.iterdir())) == 2   # its own, the parent's
                except BaseException:
                    os._exit(1)
            else:   # the parent waits in the scope, the child leaves it
                _, status = os.waitpid(pid, 0)
                assert os.waitstatus_to_exitcode(status) == 0
                with duck.cursor() as con:   # the parent's database still answers
                    assert con.execute("SELECT 7").fetchone()[0] == 7
        if pid == 0:
            os._exit(0 if ok and len(list(tmp_path.iterdir())) == 1 else 1)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("task_name", ["user-churn", "item-sales"])
def test_tiny_hm_as_before(tiny_cfg, monkeypatch, task_name):
    task, db, settings = hm(tiny_cfg, task_name, 0.001)
    want = as_before(monkeypatch, lambda: outputs(task, db, settings))
    assert_same(outputs(task, db, settings), want)


def test_a_folder_database_as_before(tiny_cfg, rdl_cache, monkeypatch):
    """The forum, read from its folder as data=folder reads a user's files: string keys,
    a self-referencing foreign key, a static table, a timed entity table."""
    db = forum_db(scale=0.002, cache_dir=rdl_cache)
    cfg = tiny_cfg("task=forum-user-active", "data.stypes=null")   # the schema's stypes
    task, settings = instantiate(cfg.task, _convert_="all"), data_settings(cfg)
    db = task_database(task, db, settings)
    want = as_before(monkeypatch, lambda: outputs(task, db, settings))
    assert_same(outputs(task, db, settings), want)


def test_the_limit_auto_is_a_quarter_of_the_memory_said_once(monkeypatch, caplog):
    monkeypatch.setattr(duck, "usable_memory", lambda: (8 * 2**30, "the cgroup's memory limit"))
    monkeypatch.setattr(duck, "_said", set())
    with caplog.at_level(logging.INFO, logger="rdl.duck"), duck.configured():
        assert duck.memory_limit() == "2048MiB"
        with duck.connect() as con:
            limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
            threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        duck.memory_limit()
    assert limit.startswith(("2.0 GiB", "2.1 GB", "2.0GiB")) and threads == 1, (limit, threads)
    said = [r.getMessage() for r in caplog.records if "DuckDB memory limit" in r.getMessage()]
    assert len(said) == 1 and "2.0 GiB" in said[0] and "cgroup" in said[0], said
    with duck.configured(memory_limit="3GB"):
        assert duck.memory_limit() == "3GB"
    assert duck.SETTINGS["memory_limit"] == "auto"   # put back


def test_usable_memory_is_the_least_of_the_machine_and_its_cgroup(machine, tmp_path):
    machine(2, v2={"/": "max 100000"})
    own = duck.usable_memory.__wrapped__()
    assert own[1] == "this machine's memory" and own[0] > 2**28
    (next(tmp_path.glob("cgroup*")) / "unified" / "memory.max").write_text(f"{2**28}\n")
    assert duck.usable_memory.__wrapped__() == (2**28, "the cgroup's memory limit")


@pytest.mark.parametrize("value", ["lots", "8", 8, None, "-1GB"])
def test_a_bad_limit_is_named(value):
    with pytest.raises(ValueError, match="duckdb.memory_limit"):
        duck.check(value)


def test_too_little_memory_names_the_setting(tmp_path):
    with duck.configured(memory_limit="1MB", spill_dir=str(tmp_path)):
        with pytest.raises(MemoryError, match=r"duckdb.memory_limit"):
            with duck.connect() as con:
                con.execute("SELECT count(DISTINCT i) FROM range(10000000) t(i)").fetchall()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("task_name", ["user-churn", "item-sales", "user-item-purchase",
                                       "forum-user-active"])
def test_seed_times_a_few_at_a_time_give_the_rows_of_one_query(tiny_cfg, rdl_cache, caplog,
                                                                task_name):
    """A task's SQL on a split's seed times in groups (``duckdb.label_pairs``: one, then
    three seed times a query) gives the split tables and the label history of one query
    over them all: bit for bit (user-item-purchase: lists), but for the last bits of
    item-sales' float sums (DuckDB's plan for one seed time adds them in another order)."""
    if task_name.startswith("forum"):
        cfg = tiny_cfg(f"task={task_name}", "data.stypes=null")
        task, settings = instantiate(cfg.task, _convert_="all"), data_settings(cfg)
        db = task_database(task, forum_db(scale=0.002, cache_dir=rdl_cache), settings)
    else:
        task, db, settings = hm(tiny_cfg, task_name, 0.003)
    def outputs_(task, db, settings, deep):   # a link task has no label history
        if hasattr(task, "history"):
            return outputs(task, db, settings, deep)
        return {f"table {s}": df for s, df in split_tables(task, db, now=False).items()}
    want = outputs_(task, db, settings, deep=False)
    assert len(want["table train"]["timestamp"].unique()) > 3
    entities = len(db[task.entity_table])
    for per in (1, 3):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="rdl.tasks"), \
                duck.configured(label_pairs=per * entities):
            got = outputs_(task, db, settings, deep=False)
        said = [r.getMessage() for r in caplog.records if "label queries" in r.getMessage()]
        assert said and f"of at most {per} (duckdb.label_pairs)" in said[0], said
        if task_name == "item-sales":
            for name in want:
                pd.testing.assert_frame_equal(got[name], want[name], check_exact=False,
                                              rtol=1e-12, atol=0, obj=name)
                assert (got[name]["sales"] == want[name]["sales"]).mean() > 0.99, name
        else:
            assert_same(got, want)


def test_seed_time_groups_keep_the_order_and_one_group_where_they_fit():
    times = list(range(7))
    with duck.configured(label_pairs=30):
        assert duck.seed_time_groups(times, 10) == [[0, 1, 2], [3, 4, 5], [6]]
        assert duck.seed_time_groups(times, 100) == [[t] for t in times]   # at least one
        assert duck.seed_time_groups(times, 4) == [times]
        assert duck.seed_time_groups([], 4) == [[]]


@pytest.mark.parametrize("value", [0, -5, 2.5, "many", True])
def test_a_bad_label_pairs_is_named(value):
    with pytest.raises(ValueError, match="duckdb.label_pairs"):
        duck.check_pairs(value)
