"""Task SQL against a tiny hand-made database whose labels are computed by hand."""
import numpy as np
import pandas as pd
import pytest

from rdl.data import Database, DataError, Table
from rdl.families.link import LinkTask
from rdl.families.node import NodeTask


def tiny_db() -> Database:
    customer = pd.DataFrame({"customer_id": [0, 1, 2, 3]})
    article = pd.DataFrame({"article_id": [0, 1, 2]})
    tx = pd.DataFrame({
        "t_dat": pd.to_datetime([
            "2020-01-01",  # c0 a0: exactly t - 7d -> outside (t - 7d, t]
            "2020-01-02",  # c1 a1: inside the look-back of t = 2020-01-08
            "2020-01-08",  # c2 a1: on the seed day: look-back (inclusive end)
            "2020-01-15",  # c1 a2: exactly t + 7d: inside the label window
            "2020-01-09",  # c0 a0: first day of the label window
            "2020-01-16",  # c2 a0: one day past the label window
            "2020-01-09",  # c0 a0: a repeat purchase, same day
        ]),
        "customer_id": pd.array([0, 1, 2, 1, 0, 2, 0], dtype="Int64"),
        "article_id": pd.array([0, 1, 1, 2, 0, 0, 0], dtype="Int64"),
        "price": [0.5, 0.1, 0.2, 0.3, 0.25, 0.7, 0.25],
    })
    return Database({
        "customer": Table(customer, pkey="customer_id"),
        "article": Table(article, pkey="article_id"),
        "transactions": Table(tx, fkeys={"customer_id": "customer", "article_id": "article"},
                              time_col="t_dat"),
    })


def task(name, entity_table, entity_col, target_col, kind):
    return NodeTask(name=name, sql=f"hm/{name}.sql", kind=kind, entity_table=entity_table,
                    entity_col=entity_col, target_col=target_col,
                    val_timestamp="2020-09-07", test_timestamp="2020-09-14")


T = pd.Timestamp("2020-01-08")


def test_user_churn_inclusion_and_window_edges():
    churn = task("user-churn", "customer", "customer_id", "churn", "binary_classification")
    df = churn.make_table(tiny_db(), [T])
    # c0 bought on t - 7d only (excluded: the look-back is (t - 7d, t]); c3 never bought.
    # c1 bought on t - 6d and again on t + 7d (window end is inclusive) -> not churned.
    # c2 bought on t (included) and next on t + 8d (outside the window) -> churned.
    assert df["customer_id"].tolist() == [1, 2]
    assert df["churn"].tolist() == [0, 1]
    assert (df["timestamp"] == T).all()


def test_user_churn_several_timestamps():
    churn = task("user-churn", "customer", "customer_id", "churn", "binary_classification")
    df = churn.make_table(tiny_db(), [T, T + pd.Timedelta("7D")])
    later = df[df["timestamp"] == T + pd.Timedelta("7D")]
    # (2020-01-08, 2020-01-15]: c0 (01-09), c1 (01-15); label window (01-15, 01-22]: c2 buys
    # on 01-16 but c2 is not a seed row (no purchase in the look-back); c0, c1 churn.
    assert later["customer_id"].tolist() == [0, 1]
    assert later["churn"].tolist() == [1, 1]


def test_item_sales_every_article_window_edges():
    sales = task("item-sales", "article", "article_id", "sales", "regression")
    df = sales.make_table(tiny_db(), [T])
    assert df["article_id"].tolist() == [0, 1, 2]  # every article, 0 if no sale
    # a0: 0.25 + 0.25 on t + 1d (repeat rows both count); 0.7 on t + 8d is outside.
    # a1: sold only on or before t -> 0.  a2: 0.3 exactly on t + 7d -> inside.
    assert df["sales"].tolist() == pytest.approx([0.5, 0.0, 0.3])


def test_splits_are_labelled_on_their_cut():
    db = tiny_db()
    sales = NodeTask(name="item-sales", sql="hm/item-sales.sql", kind="regression",
                     entity_table="article", entity_col="article_id", target_col="sales",
                     val_timestamp="2020-01-08", test_timestamp="2020-01-09", window="1d")
    # Train seed times run back from val - 1d to the first row; a train label window never
    # extends past val_timestamp, and the table is computed with rows <= val only.
    train = sales.split_table("train", db)
    assert train["timestamp"].max() == pd.Timestamp("2020-01-07")
    assert train["timestamp"].min() == pd.Timestamp("2020-01-01")
    val = sales.split_table("val", db)
    assert val["sales"].tolist() == pytest.approx([0.5, 0.0, 0.0])
    test = sales.split_table("test", db)
    assert test["sales"].tolist() == pytest.approx([0.0, 0.0, 0.0])


def test_backtest_moves_every_split_back_whole_windows():
    """backtest=k labels exactly what the split times k windows earlier label: the same
    tables, and the moved test split is labelled on the rows of its own window."""
    db = tiny_db()
    kw = dict(name="item-sales", sql="hm/item-sales.sql", kind="regression",
              entity_table="article", entity_col="article_id", target_col="sales", window="1d")
    moved = NodeTask(**kw, val_timestamp="2020-01-10", test_timestamp="2020-01-11", backtest=2)
    same = NodeTask(**kw, val_timestamp="2020-01-08", test_timestamp="2020-01-09")
    assert (moved.val_time, moved.test_time) == (same.val_time, same.test_time)
    for split in ("train", "val", "test"):
        pd.testing.assert_frame_equal(moved.split_table(split, db), same.split_table(split, db))
    assert moved.split_table("train", db)["timestamp"].max() == pd.Timestamp("2020-01-07")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=f"backtest {bad!r} must be a whole number"):
            NodeTask(**kw, val_timestamp="2020-01-08", test_timestamp="2020-01-09",
                     backtest=bad)


def test_train_windows_keeps_the_last_train_seed_times_only():
    """train_windows=k: the train rows of the k seed times nearest val, exactly as the
    full train split labels them; val and test as they were; bad values named."""
    db = tiny_db()
    kw = dict(name="item-sales", sql="hm/item-sales.sql", kind="regression",
              entity_table="article", entity_col="article_id", target_col="sales", window="1d",
              val_timestamp="2020-01-10", test_timestamp="2020-01-11")
    full, cut = NodeTask(**kw), NodeTask(**kw, train_windows=3)
    every = full.split_table("train", db)
    assert every["timestamp"].nunique() > 3
    kept = sorted(every["timestamp"].unique())[-3:]
    pd.testing.assert_frame_equal(
        cut.split_table("train", db),
        every[every["timestamp"].isin(kept)].reset_index(drop=True))
    for split in ("val", "test"):
        pd.testing.assert_frame_equal(cut.split_table(split, db), full.split_table(split, db))
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match=f"train_windows {bad!r} must be a whole number"):
            NodeTask(**kw, train_windows=bad)


def test_split_without_enough_future_rows_is_an_error():
    sales = NodeTask(name="item-sales", sql="hm/item-sales.sql", kind="regression",
                     entity_table="article", entity_col="article_id", target_col="sales",
                     val_timestamp="2020-01-08", test_timestamp="2020-01-14")
    with pytest.raises(DataError, match="test split is empty: test labels need rows up to"):
        sales.split_table("test", tiny_db())


def test_bad_sql_names_the_file(tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT nope FROM timestamps")
    t = NodeTask(name="bad", sql=str(bad), kind="regression", entity_table="article",
                 entity_col="article_id", target_col="sales",
                 val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    with pytest.raises(DataError, match="bad.sql"):
        t.make_table(tiny_db(), [T])


def test_unknown_kind_and_missing_sql():
    with pytest.raises(ValueError, match="kind"):
        task("user-churn", "customer", "customer_id", "churn", "classification")
    with pytest.raises(FileNotFoundError, match="nope.sql"):
        NodeTask(name="x", sql="hm/nope.sql", kind="regression", entity_table="a",
                 entity_col="a", target_col="y",
                 val_timestamp="2020-09-07", test_timestamp="2020-09-14")


def test_window_in_days_parses_without_pandas_deprecation():
    """'7d', every task YAML's window, is 7 days, and no warning that pandas 4 drops it."""
    import warnings
    kw = dict(name="s", sql="hm/item-sales.sql", kind="regression", entity_table="article",
              entity_col="article_id", target_col="sales",
              val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert NodeTask(**kw, window="7d").delta == pd.Timedelta(days=7)
        assert NodeTask(**kw, window="1d12h").delta == pd.Timedelta(hours=36)
        assert NodeTask(**kw, window="2 days").delta == pd.Timedelta(days=2)


def test_bad_window_and_dates_are_named():
    kw = dict(name="s", sql="hm/item-sales.sql", kind="regression", entity_table="article",
              entity_col="article_id", target_col="sales")
    with pytest.raises(ValueError, match="window 'abc'"):
        NodeTask(**kw, window="abc")
    with pytest.raises(ValueError, match="val_timestamp 'soon'"):
        NodeTask(**kw, val_timestamp="soon")
    with pytest.raises(ValueError, match="precedes"):
        NodeTask(**kw, val_timestamp="2020-09-14", test_timestamp="2020-09-07")


def test_user_item_purchase_lists_distinct_articles_in_the_window():
    t = LinkTask(name="user-item-purchase", sql="hm/user-item-purchase.sql", kind="link_prediction",
                 entity_table="customer", entity_col="customer_id", target_table="article",
                 target_col="article_id",
                 val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    df = t.make_table(tiny_db(), [T])
    # (t, t + 7d]: c0 bought a0 twice on t + 1d (one distinct article); c1 bought a2 on
    # t + 7d (inclusive end). c2 bought on t (not after t) and on t + 8d (outside): no row.
    assert df["customer_id"].tolist() == [0, 1]
    assert [list(x) for x in df["article_id"]] == [[0], [2]]


def test_link_task_needs_a_target_table():
    with pytest.raises(ValueError, match="target_table"):
        LinkTask(name="x", sql="hm/user-item-purchase.sql", kind="link_prediction",
                 entity_table="customer", entity_col="customer_id", target_col="article_id",
                 val_timestamp="2020-09-07", test_timestamp="2020-09-14")


def test_labels_repeat_to_the_last_bit():
    """Float sums over many rows (item-sales' prices): DuckDB in parallel adds them in an
    order that varies between runs; rdl's labels must not."""
    rng = np.random.default_rng(0)
    n, n_art = 600_000, 50
    tx = pd.DataFrame({"t_dat": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 28, n), "D"),
                       "customer_id": pd.array(np.zeros(n, dtype=np.int64), dtype="Int64"),
                       "article_id": pd.array(rng.integers(0, n_art, n), dtype="Int64"),
                       "price": rng.random(n) * 1e-3})
    db = Database({
        "customer": Table(pd.DataFrame({"customer_id": [0]}), pkey="customer_id"),
        "article": Table(pd.DataFrame({"article_id": np.arange(n_art)}), pkey="article_id"),
        "transactions": Table(tx, fkeys={"customer_id": "customer", "article_id": "article"},
                              time_col="t_dat")})
    sales = task("item-sales", "article", "article_id", "sales", "regression")
    times = [pd.Timestamp("2020-01-03"), pd.Timestamp("2020-01-10"), pd.Timestamp("2020-01-17")]
    first = sales.make_table(db, times)["sales"].to_numpy()
    for _ in range(5):
        assert np.array_equal(sales.make_table(db, times)["sales"].to_numpy(), first)


def test_a_task_has_no_default_split_dates():
    """The split times are a task's own: a generic task does not fall back on H&M's."""
    with pytest.raises(ValueError, match="val_timestamp is missing"):
        NodeTask(name="x", sql="hm/item-sales.sql", kind="regression", entity_table="article",
                 entity_col="article_id", target_col="sales")


def test_each_family_trains_its_own_kinds():
    """A node task cannot be link prediction, nor a link task regression: the kinds are
    the family's (a link task holds the link-only settings, a node task none of them)."""
    kw = dict(name="x", sql="hm/user-item-purchase.sql", entity_table="customer",
              entity_col="customer_id", target_col="article_id", val_timestamp="2020-09-07",
              test_timestamp="2020-09-14")
    with pytest.raises(ValueError, match="kind 'link_prediction' is not one of"):
        NodeTask(kind="link_prediction", **kw)
    with pytest.raises(ValueError, match="kind 'regression' is not one of"):
        LinkTask(kind="regression", target_table="article", **kw)
    assert not hasattr(NodeTask(kind="regression", **kw), "target_table")


def test_the_base_task_class_names_the_families():
    """A task YAML written before the families (``_target_: rdl.tasks.Task``) is told which
    class to name instead."""
    from rdl.tasks import Task
    with pytest.raises(ValueError, match="rdl.families.node.NodeTask"):
        Task(name="x", sql="hm/item-sales.sql", kind="regression", entity_table="article",
             entity_col="article_id", target_col="sales", val_timestamp="2020-09-07",
             test_timestamp="2020-09-14")


def test_train_windows_on_the_command_line_reaches_the_task(tiny_cfg):
    import rdl
    assert rdl.load_task(tiny_cfg("train_windows=4")).train_windows == 4
    assert rdl.load_task(tiny_cfg()).train_windows is None


def test_a_task_naming_no_metrics_is_scored_by_its_kind(tmp_path):
    """A YAML task with a monitor and no metrics (the LightGBM baseline once failed on it with
    KeyError 'mae') or with neither is scored by its kind's metrics; a metric monitored
    without a mode goes its own direction; one that has none needs the mode."""
    import torchmetrics
    from rdl.baselines.scoring import score
    kw = dict(name="s", sql="hm/item-sales.sql", kind="regression", entity_table="article",
              entity_col="article_id", target_col="sales",
              val_timestamp="2020-01-08", test_timestamp="2020-01-09")
    for t in (NodeTask(**kw, monitor="mae"), NodeTask(**kw)):
        assert set(t.metrics) == {"mae", "rmse", "r2"}
        assert (t.monitor, t.monitor_mode) == ("mae", "min")
    val = NodeTask(**kw).split_table("val", tiny_db())
    assert len(val) > 0
    got = score(NodeTask(**kw, monitor="mae"), np.zeros(len(val)), val)["mae"]
    assert got == pytest.approx(val["sales"].abs().mean(), rel=1e-6)
    assert NodeTask(**kw, monitor="rmse").monitor_mode == "min"
    assert NodeTask(**kw, monitor="r2").monitor_mode == "max"
    churn = task("user-churn", "customer", "customer_id", "churn", "binary_classification")
    assert (churn.monitor, churn.monitor_mode) == ("auroc", "max")
    # the direction is the metric's own (torchmetrics' higher_is_better), whatever its name
    assert NodeTask(**kw, monitor="err",
                    metrics={"err": torchmetrics.MeanAbsoluteError()}).monitor_mode == "min"

    class Pinball(torchmetrics.MeanAbsoluteError):
        higher_is_better = None   # a metric that does not say

    with pytest.raises(ValueError, match="monitor 'pinball' needs monitor_mode"):
        NodeTask(**kw, monitor="pinball", metrics={"pinball": Pinball()})


#: RelBench's user-churn query (relbench/tasks/hm.py), as rdl's manifest-style query text
RELBENCH_USER_CHURN = """
SELECT s.timestamp, c.customer_id, CAST(NOT EXISTS (
    SELECT 1 FROM transactions t WHERE t.customer_id = c.customer_id
      AND t.t_dat > s.timestamp AND t.t_dat <= s.timestamp + INTERVAL '{timedelta}'
) AS INTEGER) AS churn
FROM timestamps s, customer c
WHERE EXISTS (
    SELECT 1 FROM transactions t WHERE t.customer_id = c.customer_id
      AND t.t_dat > s.timestamp - INTERVAL '{timedelta}' AND t.t_dat <= s.timestamp)
"""


@pytest.mark.parametrize("step", ["7d", "3d", "11d"])
def test_user_churn_gives_relbench_s_rows(step):
    """rdl's user-churn SQL (a range join of the transactions with the seed times) gives
    the rows and labels of RelBench's (every seed time x customer, two EXISTS): seed times
    a window apart as the splits take them, and closer (a transaction in several seed
    times' windows) or further apart; transactions on the windows' edges (whole days),
    without a customer (a dangling key) or a time, and customers who never buy."""
    rng = np.random.default_rng(1)
    n, customers = 4000, 300
    days = rng.integers(0, 90, n)
    tx = pd.DataFrame({
        "t_dat": pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(days, "D"))
                   .mask(rng.random(n) < 0.01),
        # the files' ids are text; 2 % name no customer (a dangling key: no row)
        "customer_id": [f"c{i:03d}" if keep else "gone" for i, keep in
                        zip(rng.integers(0, customers - 20, n), rng.random(n) > 0.02)],
        "article_id": pd.array(np.zeros(n, dtype=np.int64), dtype="Int64")})
    db = Database({
        "customer": Table(pd.DataFrame({"customer_id": [f"c{i:03d}" for i in range(customers)]}),
                          pkey="customer_id"),
        "article": Table(pd.DataFrame({"article_id": [0]}), pkey="article_id"),
        "transactions": Table(tx, fkeys={"customer_id": "customer", "article_id": "article"},
                              time_col="t_dat")})
    db = db.reindex()
    times = list(pd.date_range("2020-01-05", "2020-03-20", freq=step.upper()))
    ours = task("user-churn", "customer", "customer_id", "churn", "binary_classification")
    theirs = NodeTask(name="user-churn", sql=None, query=RELBENCH_USER_CHURN,
                      kind="binary_classification", entity_table="customer",
                      entity_col="customer_id", target_col="churn", window="7d",
                      val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    want = theirs.make_table(db, times)
    got = ours.make_table(db, times)
    assert len(want) > 1000 and 0 < want["churn"].mean() < 1   # both kinds of label
    pd.testing.assert_frame_equal(got, want)
