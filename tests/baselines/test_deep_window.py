"""The depth-2 synthesis cut to each chunk's windows (rdl/features/synthesis.py,
``Synthesis.window``): each chunk's joins read only the rows its seeds' windows can hold,
and the features are those of the whole tables (``WINDOWED = False``), bit for bit (values,
NaN where NaN, dtypes, columns, index, order), on every database the tests have, strict and
not, in many chunks; rows exactly on a window's edges count; and a window whose rows are
fewer than its seeds still adds each seed's rows in their order."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rdl.data import Database, Table
from rdl.features import synthesis
from rdl.features.deep import deep_features
from .shop import VAL, W, make_task
from .test_deep import chain_db

NS = pd.Timedelta(1, "ns")


def spied(monkeypatch) -> list:
    """The rows of each table frame every query of the synthesis reads (seeds aside)."""
    made, reads = synthesis._duck, []

    def duck(sql, ordered=False, **frames):
        reads.append(sum(len(f) for name, f in frames.items() if name not in ("q", "s", "pop")))
        return made(sql, ordered, **frames)
    monkeypatch.setattr(synthesis, "_duck", duck)
    return reads


def assert_windowed_as_whole(monkeypatch, task, db, df, history, strict, chunks=6):
    """In ``chunks`` chunks (or more) of seed times, the windowed features are those over
    the whole tables, bit for bit, and the windows read fewer rows."""
    assert df["timestamp"].nunique() >= chunks, "too few seed times for many chunks"
    size = max(1, len(df) // chunks)
    reads = spied(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(synthesis, "WINDOWED", False)
        whole = deep_features(task, db, df, history, strict, chunk_rows=size)
    read_whole = sum(reads)
    reads.clear()
    windowed = deep_features(task, db, df, history, strict, chunk_rows=size)
    assert len(whole) == len(df) and whole.shape[1] > 10
    pd.testing.assert_frame_equal(windowed, whole, check_exact=True)
    assert sum(reads) < read_whole, (sum(reads), read_whole)


# -- the databases the tests have ----------------------------------------------------------
def tiny_hm(tiny_cfg, name):
    from rdl.api import data_settings, load_database, load_task
    from rdl.preparation import graph_database, split_tables, task_database
    cfg = tiny_cfg(f"task={name}", "data.db.scale=0.001")
    task, settings = load_task(cfg), data_settings(cfg)
    db = task_database(task, load_database(cfg), settings)
    tables = split_tables(task, db, now=False)
    return task, graph_database(task, db, settings)[0], tables["train"], task.history(tables)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("name", ["user-churn", "item-sales"])
def test_tiny_hm(tiny_cfg, monkeypatch, name, strict):
    assert_windowed_as_whole(monkeypatch, *tiny_hm(tiny_cfg, name), strict)


@pytest.mark.parametrize("strict", [False, True])
def test_forum(tiny_cfg, rdl_cache, monkeypatch, strict):
    """The forum (experiment=forum-user-active's database): a self-referencing key, a
    timed entity table, posts with children (grandchildren of the users)."""
    from hydra.utils import instantiate

    from rdl.api import data_settings
    from rdl.data.forum import forum_db
    from rdl.preparation import graph_database, split_tables, task_database
    cfg = tiny_cfg("task=forum-user-active", "data.stypes=null")
    task, settings = instantiate(cfg.task, _convert_="all"), data_settings(cfg)
    db = task_database(task, forum_db(scale=0.002, cache_dir=rdl_cache), settings)
    tables = split_tables(task, db, now=False)
    assert_windowed_as_whole(monkeypatch, task, graph_database(task, db, settings)[0],
                             tables["train"], task.history(tables), strict)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    pytest.importorskip("relbench.tasks.stack", reason="the relbench test extra")
    from relbench_shapes import STACK_TASKS, write_rel_f1, write_rel_stack
    return {"rel-stack": write_rel_stack(tmp_path_factory.mktemp("rel-stack"), tasks=STACK_TASKS),
            "rel-f1": write_rel_f1(tmp_path_factory.mktemp("rel-f1"))}


# strict on RelBench's shapes is slow-marked (CI's 15 minutes): the tiny H&M, the forum and
# the windows' edges run strict in CI
@pytest.mark.parametrize("strict", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize("dataset,name", [("rel-stack", "post-votes"),
                                          ("rel-stack", "user-engagement"),
                                          ("rel-f1", "driver-position")])
def test_relbench_shapes(shapes, monkeypatch, dataset, name, strict):
    """RelBench-written rel-stack (posts referring to posts, comments and votes under
    posts) and rel-f1 (races with results, standings)."""
    from rdl.data.relbench import load_relbench
    from rdl.families import relbench_task
    root = shapes[dataset]
    task = relbench_task(root / "tasks" / name)
    db = task.database(load_relbench(root))
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    train = tables["train"]
    assert_windowed_as_whole(monkeypatch, task, db.upto(task.test_time), train,
                             task.history(tables), strict,
                             chunks=min(6, train["timestamp"].nunique()))


# -- rows on the windows' edges ------------------------------------------------------------
def edge_db(in_order: bool) -> tuple[Database, pd.DataFrame]:
    """:func:`chain_db` with, for each seed time ``s`` and a few shops, sales (with their
    reviews) and campaigns exactly on the edges of the windows before ``s``: at ``s``,
    just before it, at the opening of the last 1, 4 and 12 windows and just after;
    ``in_order``: each table's rows in time order (a window is a slice of them)."""
    db, labels = chain_db(3)
    sale, review, campaign = db["sale"].df, db["review"].df, db["campaign"].df
    times = pd.DatetimeIndex(sorted(labels["timestamp"].unique()))
    edges = [pd.Timedelta(0), -NS] + [d for n in (1, 4, 12) for d in (-n * W, -n * W + NS)]
    rng = np.random.default_rng(3)
    at = np.array([s + d for s in times for d in edges for _ in range(3)])
    n = len(at)
    new = pd.DataFrame({"sale_id": np.arange(n) + len(sale), "t": at,
                        "shop_id": pd.array(rng.integers(0, 30, n), dtype="Int64"),
                        "product_id": pd.array(rng.integers(0, 12, n), dtype="Int64"),
                        "amount": rng.exponential(1.0, n),
                        "channel": rng.choice(["web", "till"], n)})
    sale = pd.concat([sale, new], ignore_index=True)
    review = pd.concat([review, pd.DataFrame({"sale_id": pd.array(new["sale_id"], dtype="Int64"),
                                              "t": at, "stars": rng.integers(1, 6, n) * 1.0})],
                       ignore_index=True)
    campaign = pd.concat([campaign, pd.DataFrame({
        "region_id": pd.array(rng.integers(0, 4, n), dtype="Int64"), "t": at,
        "budget": rng.random(n)})], ignore_index=True)
    if in_order:
        sale, review, campaign = (d.sort_values("t", kind="stable", ignore_index=True)
                                  for d in (sale, review, campaign))
    tables = {name: t for name, t in db} | {
        "sale": Table(sale, pkey="sale_id", time_col="t",
                      fkeys={"shop_id": "shop", "product_id": "product"}),
        "review": Table(review, fkeys={"sale_id": "sale"}, time_col="t"),
        "campaign": Table(campaign, fkeys={"region_id": "region"}, time_col="t")}
    return Database(tables), labels


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("chunk_rows,in_order", [(30, False), (90, True)])
def test_rows_on_the_windows_edges_count(monkeypatch, strict, chunk_rows, in_order):
    """The windowed features are the whole tables' with rows exactly on each window's
    edges; and those rows matter: a window cut one nanosecond short at its start (the
    earliest seed's window) or at its end (the latest seed) gives other features. One seed
    time a chunk, rows in any order; three, rows in time order."""
    db, labels = edge_db(in_order)
    task = make_task()
    history = task.history({"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]})
    # the seed times with 12 windows of rows before them, interleaved
    df = labels[labels["timestamp"] >= labels["timestamp"].min() + 10 * W]
    df = df.sample(frac=1.0, random_state=0)
    run = lambda: deep_features(task, db, df, history, strict, chunk_rows=chunk_rows)
    with monkeypatch.context() as m:
        m.setattr(synthesis, "WINDOWED", False)
        whole = run()
    pd.testing.assert_frame_equal(run(), whole, check_exact=True)
    opens, visible = synthesis.Synthesis.opens, synthesis.visible
    late = lambda self, n: opens(self, n) + 1                   # opens 1 ns late
    early = lambda t, s, strict: visible(t, s - 1, strict)      # ends 1 ns early
    for owner, name, wrong in ((synthesis.Synthesis, "opens", late),
                               (synthesis, "visible", early)):
        with monkeypatch.context() as m:
            m.setattr(owner, name, wrong)
            off = run()
        changed = [c for c in whole if not off[c].equals(whole[c])]
        # the child rows, their parents' popularity and their children each lose rows
        assert any(c.startswith("sale.amount") for c in changed), (name, changed)
        assert any(c.startswith("sale<review") for c in changed), (name, changed)
        assert any("<sale.count_4" in c for c in changed), (name, changed)


# -- the join's order ----------------------------------------------------------------------
def test_a_window_with_fewer_rows_than_seeds(monkeypatch):
    """One chunk of seeds, each many times over, whose windows hold fewer sales than there
    are seeds (the whole table more): the features are the whole table's, bit for bit.
    DuckDB, left to itself, would hash the fewer rows and hand each seed its rows from the
    hash table, in another order, and their sums would differ."""
    rng = np.random.default_rng(5)
    s, shops, recent, old = VAL - 4 * W, 200, 4000, 20000
    t = np.concatenate([s - rng.integers(0, 12 * 7 * 24, recent) * pd.Timedelta("1h"),
                        s - 12 * W - rng.integers(0, 400, old) * pd.Timedelta("1D")])
    # amounts of +-1e16 among small ones: the order of a sum shows even in float32
    # (1 + 1e16 - 1e16 is 0, 1e16 - 1e16 + 1 is 1)
    amount = rng.normal(0, 1, recent + old) + rng.choice([0, 1e16, -1e16], recent + old)
    sale = pd.DataFrame({"shop_id": rng.integers(0, shops, recent + old), "t": t,
                         "amount": amount})
    db = Database({"shop": Table(pd.DataFrame({"shop_id": range(shops)}), pkey="shop_id"),
                   "sale": Table(sale, fkeys={"shop_id": "shop"}, time_col="t")})
    df = pd.DataFrame({"timestamp": s, "shop_id": np.tile(range(shops), 40),
                       "y": rng.random(40 * shops)})
    task = make_task()
    reads = spied(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(synthesis, "WINDOWED", False)
        whole = deep_features(task, db, df, None)
    assert reads == [len(sale)]
    windowed = deep_features(task, db, df, None)
    assert reads[1] == recent < len(df) < len(sale)
    pd.testing.assert_frame_equal(windowed, whole, check_exact=True)
