"""``python -m rdl.bench dfs`` and ``trees``: one tiny case each end to end, its report written."""
import csv

import pytest

from rdl.bench import dfs


@pytest.mark.slow  # a fresh database per scale; the trees benchmark stays in CI
def test_the_dfs_benchmark_reports_rows_features_and_memory(tmp_path, rdl_cache, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(rdl_cache))
    dfs.main(["--scale", "0.002", "--tasks", "item-sales", "--splits", "val", "test",
              "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "dfs.csv")))
    assert [r["split"] for r in rows] == ["val", "test"]
    for r in rows:
        assert int(r["rows"]) > 0 and int(r["depth 2 features"]) > int(r["depth 1 features"]) > 0
        assert float(r["depth 2 s"]) > 0 and float(r["peak GiB"]) > 0
        assert 0 < float(r["depth 2 peak GiB"]) <= float(r["peak GiB"])
        assert float(r["data and labels peak GiB"]) <= float(r["peak GiB"])  # the whole process


def test_the_trees_benchmark_scores_both_depths_every_week(tmp_path, rdl_cache, monkeypatch):
    from rdl.bench import trees

    monkeypatch.setenv("RDL_CACHE", str(rdl_cache))
    trees.main(["--tasks", "user-churn", "--backtest", "0", "1", "--set", "data=hm-tiny",
                "data.deep_features.select=[0,5]", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "trees.csv")))
    assert [(r["backtest"], r["split"]) for r in rows] == [
        ("0", "val"), ("0", "test"), ("1", "val"), ("1", "test")]
    assert rows[0]["time"] > rows[2]["time"]  # backtest=1 is a week earlier
    for r in rows:
        assert 0 < float(r["LightGBM"]) <= 1 and 0 < float(r["LightGBM (depth 2)"]) <= 1
        # chosen on val among depth 1 alone, 5 and all depth-2 features: not worse on val
        if r["split"] == "val":
            assert float(r["LightGBM (depth 2, chosen)"]) >= float(r["LightGBM (depth 2)"])
    lead = list(csv.DictReader(open(tmp_path / "trees-leads.csv")))[0]
    assert lead["weeks"] == "4" and "+-" in lead["depth 2 over depth 1"]
    assert "+-" in lead["chosen over depth 2"]
    gain = list(csv.DictReader(open(tmp_path / "trees-gain.csv")))[0]
    shares = {k: float(v.rstrip(" %")) for k, v in gain.items() if k != "task"}
    assert shares["label history"] > 0 and abs(sum(shares.values()) - 100) < 0.5, shares


def test_feature_families_by_name():
    from rdl.bench.trees import family

    depth1 = {"customer.age", "transactions.n_4", "history.last"}
    got = {c: family(c, "customer", depth1, {"club_id": "club"}) for c in [
        "customer.age", "transactions.n_4", "history.mean_4", "group[club].label_last",
        "customer>club.size", "customer>club<events.count_1", "transactions.price.std_4",
        "transactions>article.price.avg_4", "transactions>article<transactions.count_1",
        "transactions<returns.n"]}
    assert list(got.values()) == [
        "own row", "children", "label history", "groups", "parents", "parents",
        "children (depth 2)", "child rows' parents", "child rows' parents", "grandchildren"]
    # posts answering posts (rel-stack): the post a post answers is a parent; the answers'
    # authors are the child rows' parents, though their path starts at the entity too
    keys = {"OwnerUserId": "users", "ParentId": "posts", "AcceptedAnswerId": "posts"}
    got = {c: family(c, "posts", set(), keys) for c in [
        "posts>users.Reputation", "posts.ParentId>posts.Title",
        "posts.AcceptedAnswerId>posts<votes.count_1", "posts.ParentId>users.Reputation.avg_4",
        "posts.ParentId<votes.count_12", "posts.ParentId.trend_1_4"]}
    assert list(got.values()) == ["parents", "parents", "parents", "child rows' parents",
                                  "grandchildren", "children (depth 2)"]


def test_a_step_s_peak_memory_is_its_own():
    """The dfs benchmark's per-step peaks: reset before a step, the peak of what it held."""
    import numpy as np

    from rdl.bench.report import reset_peak_rss, step_peak_rss_gib

    if not reset_peak_rss():
        pytest.skip("this system does not let a process reset its peak memory")
    base = step_peak_rss_gib()
    big = np.ones(2**28 // 8)  # 256 MiB, every page written
    held = step_peak_rss_gib()
    del big
    assert held - base >= 0.24
    assert reset_peak_rss() and step_peak_rss_gib() < held - 0.2  # freed, then reset


def test_the_trees_benchmark_keeps_the_train_rows_the_run_keeps(rdl_cache, monkeypatch):
    """The benchmark fitted on every train row: on TPC-DS's customers (3.58M rows, 774
    feature columns) it filled 24 GiB and was killed, where the run keeps the rows
    data.train_seeds and data.feature_cells allow; and it saw the columns the run drops."""
    import rdl.baselines.trees
    from rdl.bench import trees

    class Seen(Exception):
        pass

    def fit(task, db, tables, *a, **k):
        raise Seen(len(tables["train"]), len(tables["val"]), list(db["customer"].df.columns))
    monkeypatch.setenv("RDL_CACHE", str(rdl_cache))
    monkeypatch.setattr(rdl.baselines.trees, "fit_tree_baselines", fit)
    with pytest.raises(Seen) as every:
        trees.week_rows("user-churn", 0, ["data=hm-tiny"])
    with pytest.raises(Seen) as kept:
        trees.week_rows("user-churn", 0, ["data=hm-tiny", "data.train_seeds=50",
                                          "data.stypes.customer.age=null"])
    assert every.value.args[0] > 50 and kept.value.args[:2] == (50, every.value.args[1])
    # nor the columns the run drops (TPC-DS's ss_ticket_number: summed by the benchmark)
    assert "age" in every.value.args[2] and "age" not in kept.value.args[2]


def test_the_trees_benchmark_leaves_out_the_features_asked(rdl_cache, monkeypatch):
    """``--without customer.c_first_name``: the ablation that said whether TPC-DS's names
    help its trees (docs/results.md); a name of no feature stops, named."""
    import rdl.baselines.trees
    from rdl.bench import trees

    class Seen(Exception):
        pass

    def fit(task, db, tables, *a, features=None, **k):
        raise Seen(None if features is None else list(features["train"].columns))
    monkeypatch.setenv("RDL_CACHE", str(rdl_cache))
    monkeypatch.setattr(rdl.baselines.trees, "fit_tree_baselines", fit)
    with pytest.raises(Seen) as every:
        trees.week_rows("user-churn", 0, ["data=hm-tiny"], ("history.count",))
    columns = every.value.args[0]
    assert columns and "history.count" not in columns and "history.mean_all" in columns
    with pytest.raises(SystemExit, match="--without customer.nothing: no such depth-1 feature"):
        trees.week_rows("user-churn", 0, ["data=hm-tiny"], ("customer.nothing",))
