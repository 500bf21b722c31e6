"""The leak-free feature table, against a plain pandas computation row by row, and a leak
test: rewriting everything after a seed time leaves that seed's features unchanged."""
import numpy as np
import pandas as pd
import pytest

from rdl.features.table import entity_features, feature_columns, is_free_text, is_name
from rdl.data import Database, Table
from .shop import VAL, W, make_task, shop_db, shop_tables


def seeds() -> pd.DataFrame:
    """Every shop at VAL, and shop 0 at a few other times."""
    return pd.DataFrame({"timestamp": [VAL] * 4 + [VAL - W, VAL - 2 * W, VAL + W],
                         "shop_id": [0, 1, 2, 3, 0, 0, 0]})


def by_hand(db, tables, e, s, strict) -> dict:
    """The features of (shop e, time s), computed plainly."""
    sale = db["sale"].df
    sale = sale[sale["shop_id"].notna() & (sale["shop_id"] == e)]
    seen = sale[sale["t"] < s] if strict else sale[sale["t"] <= s]
    shop = db["shop"].df.set_index("shop_id").loc[e]
    out = {"shop.size": shop["size"], "shop.kind": shop["kind"], "shop.open": str(shop["open"]),
           "shop.opened": (s - shop["opened"]).total_seconds()}
    for n in (1, 4, 12):
        rows = seen[seen["t"] > s - n * W]
        out[f"sale.count_{n}"] = len(rows)
        out[f"sale.amount.sum_{n}"] = rows["amount"].sum()
        out[f"sale.online.sum_{n}"] = rows["online"].sum()
    out["sale.count_all"] = len(seen)
    out["sale.amount.sum_all"] = seen["amount"].sum()
    out["sale.online.sum_all"] = seen["online"].sum()
    day = pd.Timedelta("1D")
    out["sale.days_since_last"] = (s - seen["t"].max()) / day if len(seen) else np.nan
    out["sale.days_since_first"] = (s - seen["t"].min()) / day if len(seen) else np.nan
    h = pd.concat([tables["train"], tables["val"]])
    h = h[(h["shop_id"] == e) & (h["timestamp"] + W <= s)].sort_values("timestamp")
    out["history.count"] = len(h)
    out["history.windows_since"] = ((s - h["timestamp"].iloc[-1] - W) / W) if len(h) else np.nan
    out["history.last"] = h["y"].iloc[-1] if len(h) else np.nan
    out["history.mean_4"] = h["y"].tail(4).mean() if len(h) else np.nan
    out["history.mean_all"] = h["y"].mean() if len(h) else np.nan
    return out


@pytest.mark.parametrize("strict", [False, True])
def test_features_match_pandas(strict):
    task, db, tables = make_task(), shop_db(), shop_tables()
    df = seeds()
    df.index = df.index * 10  # the output follows df's index
    X = entity_features(task, db, df, task.history(tables), strict=strict)
    assert list(X.index) == list(df.index)
    assert {str(X[c].dtype) for c in ("shop.kind", "shop.open")} == {"category"}
    for (i, row), (_, got) in zip(df.iterrows(), X.iterrows()):
        want = by_hand(db, tables, row["shop_id"], row["timestamp"], strict)
        assert set(got.index) == set(want), "no other features (keys, 'note' are left out)"
        for col, value in want.items():
            g = got[col]
            if isinstance(value, str) or col == "shop.kind":
                assert (pd.isna(g) and pd.isna(value)) or str(g) == str(value), (i, col)
            else:
                assert g == pytest.approx(value, nan_ok=True), (i, col, g, value)


def test_window_edges_by_hand():
    """The exact boundaries, spelled out for shop 0 at VAL (see ``shop_db``)."""
    task, db, tables = make_task(), shop_db(), shop_tables()
    df = pd.DataFrame({"timestamp": [VAL], "shop_id": [0]})
    for strict, at_seed in ((False, 1.0), (True, 0.0)):
        x = entity_features(task, db, df, task.history(tables), strict=strict).iloc[0]
        # last window (s - 1w, s]: the row at s (non-strict) and two at s - 1w + 1d; the
        # row at exactly s - 1w is out
        assert x["sale.amount.sum_1"] == at_seed + 4 + 8
        # last 4 windows add s - 1w and s - 3w; s - 4w is out
        assert x["sale.amount.sum_4"] == at_seed + 4 + 8 + 2 + 1024
        assert x["sale.amount.sum_12"] == at_seed + 4 + 8 + 2 + 1024 + 16
        assert x["sale.amount.sum_all"] == at_seed + 4 + 8 + 2 + 1024 + 16 + 32
        assert x["sale.days_since_last"] == (0.0 if not strict else 6.0)
        assert x["history.count"] == 6 and x["history.last"] == 13.0  # available == s counts
    # a shop with no visible rows: zero counts, NaN times; the missing amount adds nothing
    x = entity_features(task, db, pd.DataFrame({"timestamp": [VAL] * 2, "shop_id": [2, 1]}),
                        task.history(tables))
    assert x["sale.count_all"].tolist() == [0, 2]
    assert x["sale.amount.sum_all"].tolist() == [0.0, 128.0]
    assert np.isnan(x["sale.days_since_last"].iloc[0])


def test_long_free_text_is_dropped():
    long = pd.Series([f"a long description of item number {i}, in words" for i in range(200)])
    assert is_free_text(long)
    assert not is_free_text(pd.Series(["a rather long but repeated category name"] * 200))
    assert not is_free_text(pd.Series([f"name {i}" for i in range(200)]))
    task, tables = make_task(), shop_tables()
    db = shop_db()
    shop = db["shop"].df.assign(desc=long[:4].to_numpy())
    shop = pd.concat([shop, pd.DataFrame({"shop_id": range(4, 200), "desc": long[4:].to_numpy()})])
    db = Database({**db.tables, "shop": Table(shop, pkey="shop_id")})
    X = entity_features(task, db, seeds(), task.history(tables))
    assert "shop.desc" not in X and "shop.kind" in X


def test_a_name_of_every_entity_is_dropped():
    """A title distinct for each of 1,200 shops is each shop's id to the trees (MovieLens'
    titles: LightGBM's most-gain feature, and a loss on test); a repeated name is kept."""
    titles = pd.Series([f"Shop {i % 1150} (Main St)" for i in range(1200)])   # (50 twice)
    assert is_name(titles) and not is_free_text(titles)
    assert not is_name(titles[:999]) and not is_name(pd.Series(["Mall", "Street"] * 600))
    assert not is_name(pd.Series([f"Shop {i % 1000}" for i in range(1200)]))   # 83 %
    task, tables = make_task(), shop_tables()
    db = shop_db()
    shop = db["shop"].df.assign(title=titles[:4].to_numpy(), area=["north", "south"] * 2)
    more = pd.DataFrame({"shop_id": range(4, 1200), "title": titles[4:].to_numpy(),
                         "area": "east"})
    db = Database({**db.tables, "shop": Table(pd.concat([shop, more]), pkey="shop_id")})
    X = entity_features(task, db, seeds(), task.history(tables))
    assert "shop.title" not in X and "shop.area" in X and "shop.kind" in X


def random_db(seed: int) -> tuple[Database, pd.DataFrame]:
    """30 shops, 3000 sales over 20 weeks, some at exactly the weekly seed times."""
    rng = np.random.default_rng(seed)
    start = VAL - 20 * W
    t = start + pd.to_timedelta(rng.integers(0, 20 * 7, 3000), "D")
    t = t.where(rng.random(3000) > 0.2, start + W * rng.integers(0, 20, 3000))
    sale = pd.DataFrame({"sale_id": range(3000), "t": t,
                         "shop_id": pd.array(rng.integers(0, 30, 3000), dtype="Int64"),
                         "amount": rng.exponential(1.0, 3000), "online": rng.random(3000) < 0.5})
    shop = pd.DataFrame({"shop_id": range(30), "size": rng.random(30),
                         "kind": rng.choice(["mall", "street"], 30)})
    db = Database({"shop": Table(shop, pkey="shop_id"),
                   "sale": Table(sale, pkey="sale_id", fkeys={"shop_id": "shop"}, time_col="t")})
    times = [start + k * W for k in range(2, 20)]
    labels = pd.DataFrame({"timestamp": np.repeat(times, 30), "shop_id": np.tile(range(30), 18),
                           "y": rng.random(30 * 18)})
    return db, labels


@pytest.mark.parametrize("strict", [False, True])
def test_nothing_after_the_seed_time_changes_its_features(strict):
    task = make_task()
    db, labels = random_db(0)
    for s in sorted(labels["timestamp"].unique())[::4]:
        s = pd.Timestamp(s)
        tables = {"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]}
        df = labels[labels["timestamp"] == s]
        before = entity_features(task, db, df, task.history(tables), strict=strict)
        # garbage in every sale after s (at s too, when strict), in new sales after s and in
        # every label whose window closes after s (and in the seeds' own labels)
        sale = db["sale"].df.copy()
        late = sale["t"] >= s if strict else sale["t"] > s
        sale.loc[late, "amount"] = 1e9
        sale.loc[late, "online"] = ~sale.loc[late, "online"]
        sale.loc[late, "shop_id"] = sale.loc[late, "shop_id"][::-1].to_numpy()
        extra = sale[late].assign(sale_id=lambda d: d["sale_id"] + 10**6, amount=-5.0)
        garbage_db = Database({"shop": db["shop"], "sale": Table(
            pd.concat([sale, extra], ignore_index=True), pkey="sale_id",
            fkeys={"shop_id": "shop"}, time_col="t")})
        garbage = labels.copy()
        garbage.loc[garbage["timestamp"] + W > s, "y"] = -1e9
        tables = {"train": garbage, "val": labels.iloc[:0], "test": labels.iloc[:0]}
        after = entity_features(task, garbage_db, garbage[garbage["timestamp"] == s],
                                task.history(tables), strict=strict)
        pd.testing.assert_frame_equal(before, after)
        assert before["sale.count_all"].gt(0).all()


def test_a_static_child_table_is_counted():
    """A child table without time (a shop's licences) adds all-time counts and sums, the
    same at every seed time; a timed child's features are unchanged by it."""
    db = shop_db()
    licence = pd.DataFrame({"shop_id": pd.array([0, 0, 2, None], dtype="Int64"),
                            "fee": [1.5, np.nan, 4.0, 9.0], "kind": ["a", "b", "a", "a"]})
    with_licences = Database({**db.tables, "licence": Table(licence, fkeys={"shop_id": "shop"})})
    task, tables = make_task(), shop_tables()
    history = task.history(tables)
    X = entity_features(task, with_licences, seeds(), history)
    assert X["licence.count_all"].tolist() == [2, 0, 1, 0, 2, 2, 2]
    assert X["licence.fee.sum_all"].tolist() == [1.5, 0, 4.0, 0, 1.5, 1.5, 1.5]
    plain = entity_features(task, db, seeds(), history)
    pd.testing.assert_frame_equal(X.drop(columns=["licence.count_all", "licence.fee.sum_all"]),
                                  plain)


def test_the_schema_counts_the_child_columns_the_features_make():
    """:func:`feature_columns`, counted from the schema before any feature is computed
    (what ``data.feature_cells`` divides by), is the number of child-table columns the
    feature table has: the sale table's counts, sums and days since."""
    task, db, tables = make_task(), shop_db(), shop_tables()
    X = entity_features(task, db, seeds(), task.history(tables), own=False)
    made = [c for c in X.columns if c.startswith("sale.")]
    assert feature_columns(db, "shop") == len(made) == 3 * 4 + 2
    assert feature_columns(db, "sale") == 0


def test_feature_cells_bound_the_train_rows_by_the_feature_table_s_width(caplog):
    """``data.feature_cells``: the train split keeps at most that many cells over the
    feature columns a row (a seeded sample, said in the log), where ``data.train_seeds``
    would keep more; the label history keeps every label."""
    import logging
    from types import SimpleNamespace
    from rdl.families.node.prepare import labelled
    task, db, tables = make_task(), shop_db(), shop_tables()
    tables["train"] = pd.concat([tables["train"]] * 5, ignore_index=True)   # 40 rows
    width = feature_columns(db, "shop") + len(db["shop"].df.columns)
    settings = SimpleNamespace(train_seeds=30, feature_cells=width * 12 + 5, random_seed=0,
                               now=False)
    with caplog.at_level(logging.INFO):
        out = labelled(task, db, settings, dict(tables))
    assert len(out["tables"]["train"]) == 12 and len(out["history"]) == 40 + 4
    assert f"a sample of 12 of its 40 rows (data.feature_cells: about {width}" in caplog.text
    loose = SimpleNamespace(**{**vars(settings), "feature_cells": width * 1000})
    assert len(labelled(task, db, loose, dict(tables))["tables"]["train"]) == 30
    unbound = SimpleNamespace(**{**vars(settings), "feature_cells": None, "train_seeds": None})
    assert len(labelled(task, db, unbound, dict(tables))["tables"]["train"]) == 40
