"""The LightGBM ranker (rdl.baselines.ranker): retrieval and pair features on a hand-made
database, computed by hand; the visibility rule; labels as events where no table bridges
the task; its settings; and its scores on the tiny synthetic H&M database."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rdl import CONF_DIR
from rdl.baselines.ranker import NAME, RankerSettings, ranker_baseline
from rdl.baselines.ranker.events import bridges, events
from rdl.baselines.ranker.features import Featuriser
from rdl.data.database import Database, DataError, Table
from rdl.features.deep import DeepSettings

T = pd.Timestamp


def purchase_task():
    return instantiate(OmegaConf.load(CONF_DIR / "task/user-item-purchase.yaml"),
                       _convert_="all")


def shop(extra=()) -> Database:
    """4 customers, 6 articles (product codes: 0,1 share 10; 3,4 share 11), and purchases:
    customer 0 buys article 1 twice and 2 once; customer 1 buys 1 and 3; customer 2 buys 3
    and 5; ``extra``: more (customer, article, day) rows."""
    rows = [(0, 1, "2020-08-20"), (0, 1, "2020-08-30"), (0, 2, "2020-08-25"),
            (1, 1, "2020-08-28"), (1, 3, "2020-08-29"), (2, 3, "2020-08-26"),
            (2, 5, "2020-08-27"), *extra]
    tx = pd.DataFrame(rows, columns=["customer_id", "article_id", "t_dat"])
    tx["t_dat"] = pd.to_datetime(tx["t_dat"])
    tx = tx.astype({"customer_id": "Int64", "article_id": "Int64"})
    customers = pd.DataFrame({"customer_id": range(4), "club": ["a", "a", "b", "b"]})
    articles = pd.DataFrame({"article_id": range(6), "product_code": [10, 10, 12, 11, 11, 13],
                             "colour": ["red", "blue", "red", "red", "blue", "red"]})
    return Database({"customer": Table(customers, "customer_id"),
                     "article": Table(articles, "article_id"),
                     "transactions": Table(tx, None, {"customer_id": "customer",
                                                      "article_id": "article"}, "t_dat")})


def split(customer, articles, t="2020-08-31"):
    return pd.DataFrame({"timestamp": [T(t)] * len(customer), "customer_id": customer,
                         "article_id": articles})


def features(db, df, strict=False, deep=None, **settings):
    task = purchase_task()
    tables = {"train": df, "val": df, "test": df}
    f = Featuriser(task, db, tables, RankerSettings(**settings), strict, deep)
    try:
        return f.split(df)
    finally:
        f.close()


def row(f, rid, item):
    hit = np.flatnonzero((f.rid == rid) & (f.item == item))
    return None if len(hit) == 0 else f.X.iloc[hit[0]]


def test_bridges_are_tables_keyed_to_both_ends():
    assert bridges(purchase_task(), shop()) == [("transactions", "customer_id", "article_id")]


def test_retrieval_and_pair_features_by_hand():
    f = features(shop(), split([0, 3], [[3], [1]]), parent_columns=("product_code",))
    c0 = set(f.item[f.rid == 0].tolist())
    # past: 1, 2; co-occurrence (customer 1 bought 1 and 3): 3; parents: 0 shares code 10
    # with 1 but has no recent sale (siblings must be sold in the last 4 windows), so not;
    # popular: 1, 3, 2, 5 (every sold article)
    assert c0 == {1, 2, 3, 5}
    one = row(f, 0, 1)
    assert one["pair_count"] == 2 and one["pair_count_1"] == 1   # 08-30 within the last week
    assert one["pair_days_since_last"] == 1 and one["pair_days_since_first"] == 11
    assert one["rank_past"] == 1                                 # bought twice: first
    assert row(f, 0, 3)["cooc_sum"] == 1 and row(f, 0, 3)["pair_count"] == 0
    assert row(f, 0, 5)["cooc_sum"] == 0                          # nobody bought 5 with 1 or 2
    assert row(f, 0, 1)["item_count_4"] == 3                      # article 1 sold 3 times
    # customer 3 has no history: popular items (its segment, club b: customer 2 bought 3, 5)
    assert set(f.item[f.rid == 1].tolist()) == {1, 2, 3, 5}
    assert row(f, 1, 3)["segment_count_4_0"] == 1 and row(f, 1, 1)["segment_count_4_0"] == 0
    # labels and recall: customer 0 wants 3 (found), customer 3 wants 1 (found)
    assert row(f, 0, 3) is not None and f.label[(f.rid == 0) & (f.item == 3)][0] == 1
    assert f.candidate_recall() == 1.0
    # the entity's and the item's own columns ride along
    assert "entity.customer.club" in f.X.columns and "item.article.colour" in f.X.columns


def test_retrieval_runs_within_rdls_duckdb_memory_limit(tmp_path):
    """The ranker's DuckDB session has rdl's memory limit and a spill folder of its own
    under duckdb.spill_dir, removed when it closes (rdl/duck.py): it had DuckDB's
    defaults, up to 80 % of the machine's memory."""
    from rdl import duck
    df = split([0, 3], [[3], [1]])
    with duck.configured(memory_limit="300MB", spill_dir=str(tmp_path)):
        with duck.connect() as con:
            want = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        f = Featuriser(purchase_task(), shop(), {"train": df, "val": df, "test": df},
                       RankerSettings(), False, None)
        limit, folder = f.retrieval.con.execute(
            "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
        ).fetchone()
        assert limit == want and Path(folder).parent == tmp_path
        f.close()
    assert list(tmp_path.iterdir()) == []


def test_parent_columns_add_siblings_sold_recently():
    # article 4 shares product code 11 with 3 (bought by customer 1) and sold on 08-28
    db = shop(extra=[(2, 4, "2020-08-28")])
    f = features(db, split([1], [[4]]), parent_columns=("product_code",))
    assert row(f, 0, 4)["parent_hits_0"] == 1
    f0 = features(db, split([1], [[4]]), parent_columns=(), popular=0, segments=0,
                  cooccurrence=0)
    assert row(f0, 0, 4) is None   # only parents retrieve it (past: 1, 3)


def test_the_newest_items_are_candidates_once_they_exist():
    db = shop()
    art = db["article"]
    art.df["added"] = pd.to_datetime(["2020-01-01", "2020-02-01", "2020-03-01", "2020-08-29",
                                      "2020-08-30", "2020-09-03"])   # 5 arrives after the seed
    art.time_col = "added"
    f = features(db, split([3], [[4]]), new=2, past=0, cooccurrence=0, segments=0, popular=0)
    assert sorted(f.item.tolist()) == [3, 4]            # the two newest at 08-31, not 5
    assert row(f, 0, 4)["rank_new"] == 1 and row(f, 0, 3)["rank_new"] == 2


@pytest.mark.parametrize("deep", [None, DeepSettings()], ids=["depth 1", "depth 2"])
def test_nothing_after_the_seed_time_is_seen(deep):
    df = split([0, 1, 2], [[3], [1], [5]])
    before = features(shop(), df, deep=deep)
    if deep is not None:   # the rows' depth-2 features are there (the item's buyers' club)
        assert any(c.startswith("item.") and "club" in c for c in before.X.columns)
    # garbage after the seed time: purchases of every article by every customer
    later = [(c, a, d) for c in range(4) for a in range(6) for d in ("2020-09-01", "2020-09-05")]
    after = features(shop(extra=later), df, deep=deep)
    pd.testing.assert_frame_equal(before.X, after.X)
    assert (before.item == after.item).all()


@pytest.mark.parametrize("strict", [False, True])
def test_a_row_at_the_seed_time_follows_the_strict_rule(strict):
    db = shop(extra=[(3, 0, "2020-08-31")])      # at the seed time exactly
    f = features(db, split([3], [[0]]), strict=strict)
    seen = row(f, 0, 0)
    if strict:   # RelBench v3: strictly older only
        assert seen is None or seen["pair_count"] == 0
    else:
        assert seen["pair_count"] == 1


def test_labels_are_the_events_where_no_table_bridges_the_task():
    db = shop()
    db.tables.pop("transactions")
    task = purchase_task()
    train = pd.concat([split([0], [[4]], "2020-08-17"), split([0], [[2]], "2020-08-24")])
    val = split([0], [[4]], "2020-08-31")
    ev = events(task, db, {"train": train, "val": val, "test": val}, strict=False)
    # each label visible once its window closed: timestamp + 7 days
    got = sorted(zip(ev.frame["i"], pd.to_datetime(ev.frame["v"])))
    assert got == [(2, T("2020-08-31")), (4, T("2020-08-24")), (4, T("2020-09-07"))]
    f = Featuriser(task, db, {"train": train, "val": val, "test": val}, RankerSettings(), False)
    try:
        x = f.split(val)
    finally:
        f.close()
    assert row(x, 0, 4)["pair_count"] == 1 and row(x, 0, 2)["pair_count"] == 1  # not 09-07's


def test_settings_fail_naming_the_setting():
    with pytest.raises(ValueError, match=r"data.ranker: unknown setting\(s\) \['candidate'\]"):
        RankerSettings.of({"candidate": 3})
    with pytest.raises(ValueError, match="data.ranker.past=-1"):
        RankerSettings(past=-1)
    with pytest.raises(ValueError, match="every source is off"):
        RankerSettings(past=0, cooccurrence=0, parents=0, segments=0, popular=0, new=0)
    assert RankerSettings.of(None) is None and RankerSettings.of(False) is None
    with pytest.raises(DataError, match="table 'article' has no column 'code'"):
        features(shop(), split([0], [[1]]), parent_columns=("code",))


def test_scores_on_the_tiny_database(tiny_cfg):
    from rdl.api import prepare
    data = prepare(tiny_cfg("experiment=user-item-purchase"))
    out = ranker_baseline(data.task, data.db, data.tables, RankerSettings(rounds=30))[NAME]
    for split in ("val", "test"):
        m = out[split]
        assert 0 < m["map"] <= 1 and 0 < m["candidate_recall"] <= 1
        # no ranking finds what retrieval did not: recall@k is at most the candidates' recall
        assert m["recall"] <= m["candidate_recall"] + 1e-6
    # deterministic: the same seed, the same scores
    again = ranker_baseline(data.task, data.db, data.tables, RankerSettings(rounds=30))[NAME]
    assert again == out


def test_the_packaged_settings_are_the_documented_defaults():
    from rdl.training.data_settings import DataSettings
    assert DataSettings.of().ranker == RankerSettings()
