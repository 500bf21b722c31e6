"""Deep feature synthesis (depth 2): values against plain pandas, and a leak test: rewriting
everything after a seed time (rows of every timed table, labels) leaves that seed's
features unchanged."""
import numpy as np
import pandas as pd
import pytest

from rdl.data import Database, Table
from rdl.features.deep import DeepSettings, deep_features
from .shop import VAL, W, make_task

DAY = pd.Timedelta("1D")
START = VAL - 20 * W


def chain_db(seed: int = 0, late: pd.Timestamp | None = None) -> tuple[Database, pd.DataFrame]:
    """Shops in regions (a timed parent with campaigns), sales of products (a parent of
    the child rows) with reviews (children of the child rows); ``late``: every row after
    it rewritten (garbage of the same kinds), and new rows after it."""
    rng = np.random.default_rng(seed)
    n = 2000
    region = pd.DataFrame({"region_id": range(4), "rent": [1.0, 2.0, 3.0, np.nan],
                           "climate": ["wet", "dry", "wet", "cold"],
                           "since": START - pd.to_timedelta([30, 20, 10, -200], "D")})
    shop = pd.DataFrame({"shop_id": range(30), "size": rng.random(30),
                         "kind": rng.choice(["mall", "street", "kiosk"], 30),
                         "region_id": pd.array(rng.integers(0, 4, 30), dtype="Int64")})
    product = pd.DataFrame({"product_id": range(12), "price": rng.exponential(1.0, 12),
                            "colour": rng.choice(["red", "blue", "green"], 12)})
    t = START + pd.to_timedelta(rng.integers(0, 20 * 7, n), "D")
    t = t.where(rng.random(n) > 0.2, START + W * rng.integers(0, 20, n))  # on seed times
    sale = pd.DataFrame({"sale_id": range(n), "t": t,
                         "shop_id": pd.array(rng.integers(0, 30, n), dtype="Int64"),
                         "product_id": pd.array(rng.integers(0, 12, n), dtype="Int64"),
                         "amount": rng.exponential(1.0, n),
                         "channel": rng.choice(["web", "till"], n)})
    m = 600
    of = rng.integers(0, n, m)
    review = pd.DataFrame({"sale_id": pd.array(of, dtype="Int64"),
                           "t": sale["t"].to_numpy()[of] + pd.to_timedelta(
                               rng.integers(0, 10, m), "D"),
                           "stars": rng.integers(1, 6, m).astype(float)})
    campaign = pd.DataFrame({"region_id": pd.array(rng.integers(0, 4, 300), dtype="Int64"),
                             "t": START + pd.to_timedelta(rng.integers(0, 140, 300), "D"),
                             "budget": rng.random(300)})
    if late is not None:
        for df, cols in ((sale, ["amount"]), (review, ["stars"]), (campaign, ["budget"])):
            after = df["t"] > late
            for c in cols:
                df.loc[after, c] = 1e9
            fk = [c for c in df.columns if c.endswith("_id") and c != "sale_id"] or ["sale_id"]
            for c in fk:
                df.loc[after, c] = df.loc[after, c][::-1].to_numpy()
        sale.loc[sale["t"] > late, "channel"] = "till"
        region.loc[region["since"] > late, "climate"] = "dry"
        extra = sale[sale["t"] > late].assign(sale_id=lambda d: d["sale_id"] + n, amount=-5.0)
        sale = pd.concat([sale, extra], ignore_index=True)
        extra_reviews = review[review["t"] > late].assign(stars=-3.0)
        review = pd.concat([review, extra_reviews], ignore_index=True)
    db = Database({
        "region": Table(region, pkey="region_id", time_col="since"),
        "shop": Table(shop, pkey="shop_id", fkeys={"region_id": "region"}),
        "product": Table(product, pkey="product_id"),
        "sale": Table(sale, pkey="sale_id", fkeys={"shop_id": "shop", "product_id": "product"},
                      time_col="t"),
        "review": Table(review, fkeys={"sale_id": "sale"}, time_col="t"),
        "campaign": Table(campaign, fkeys={"region_id": "region"}, time_col="t"),
    })
    times = [START + k * W for k in range(2, 20)]
    labels = pd.DataFrame({"timestamp": np.repeat(times, 30), "shop_id": np.tile(range(30), 18),
                           "y": rng.random(30 * 18)})
    return db, labels


def features(db, labels, df, strict=False, **kw):
    task = make_task()
    tables = {"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]}
    return deep_features(task, db, df, task.history(tables), strict=strict,
                         settings=DeepSettings(**kw))


@pytest.mark.parametrize("strict", [False, True])
def test_nothing_after_the_seed_time_changes_its_features(strict):
    db, labels = chain_db()
    for s in sorted(labels["timestamp"].unique())[3::10]:
        s = pd.Timestamp(s)
        df = labels[labels["timestamp"] == s]
        before = features(db, labels, df, strict)
        late = s - DAY / 2 if strict else s  # strict: a row at s is in the future too
        garbage_db, _ = chain_db(late=late)
        garbage = labels.copy()
        garbage.loc[garbage["timestamp"] + W > s, "y"] = -1e9
        after = features(garbage_db, garbage, garbage[garbage["timestamp"] == s], strict)
        # the top-k values are chosen on rows up to the val time, as the trees are fitted
        # on the train labels: with k above each column's values the columns are the same
        # (a categorical column's categories are all its table's values, even those of
        # rows from after s, whose values are missing here: compare values, not dtypes)
        plain = lambda X: X.sort_index(axis=1).apply(
            lambda c: c.astype(object) if isinstance(c.dtype, pd.CategoricalDtype) else c)
        pd.testing.assert_frame_equal(plain(before), plain(after))


def test_every_kind_of_feature_is_there_and_matches_pandas():
    db, labels = chain_db(1)
    df = labels[labels["timestamp"] == labels["timestamp"].max()].iloc[:12]
    X = features(db, labels, df)
    s = df["timestamp"].iloc[0]
    sale, product, review = db["sale"].df, db["product"].df, db["review"].df
    for i, e in enumerate(df["shop_id"]):
        x = X.iloc[i]
        mine = sale[(sale["shop_id"] == e) & (sale["t"] <= s)]
        w4 = mine[mine["t"] > s - 4 * W]
        w12 = mine[mine["t"] > s - 12 * W]
        assert x["sale.amount.avg_4"] == pytest.approx(w4["amount"].mean(), nan_ok=True)
        assert x["sale.amount.max_12"] == pytest.approx(w12["amount"].max(), nan_ok=True)
        assert x["sale.product_id.distinct_4"] == w4["product_id"].nunique()
        assert x["sale.channel=web.count_12"] == (w12["channel"] == "web").sum()
        prices = product["price"].to_numpy()[w12["product_id"].to_numpy(dtype=int)]
        assert x["sale>product.price.avg_12"] == pytest.approx(prices.mean(), nan_ok=True)
        colours = product["colour"].to_numpy()[w12["product_id"].to_numpy(dtype=int)]
        assert x["sale>product.colour=red.count_12"] == (colours == "red").sum()
        # popularity of what the shop sold: each product's sales (any shop) in the last
        # window before s, averaged over the shop's sales of the last 12
        seen = sale[(sale["t"] <= s) & (sale["t"] > s - W)]
        pop = seen.groupby("product_id").size()
        want = pop.reindex(w12["product_id"]).fillna(0).mean() if len(w12) else np.nan
        assert x["sale>product<sale.count_1.avg_12"] == pytest.approx(want, nan_ok=True)
        # reviews of the shop's sales, both visible
        r = review.merge(sale[["sale_id", "shop_id", "t"]], on="sale_id", suffixes=("", "_s"))
        r = r[(r["shop_id"] == e) & (r["t"] <= s) & (r["t_s"] <= s) & (r["t"] > s - 12 * W)]
        assert x["sale<review.count_12"] == len(r)
        # the shop's region: its columns, and its campaigns in the last 4 windows
        reg = db["shop"].df.loc[e, "region_id"]
        assert x["shop>region.rent"] == pytest.approx(db["region"].df.loc[reg, "rent"],
                                                      nan_ok=True)
        camp = db["campaign"].df
        camp = camp[(camp["region_id"] == reg) & (camp["t"] <= s) & (camp["t"] > s - 4 * W)]
        assert x["shop>region<campaign.count_4"] == len(camp)
    # a region that opens after the seed time: its columns are not known yet
    late = db["region"].df["since"] > s
    assert late.any()
    shops = db["shop"].df["region_id"].to_numpy(dtype=float)[df["shop_id"]]
    unknown = np.isin(shops, np.flatnonzero(late))
    assert X["shop>region.rent"][unknown].isna().all()
    # group histories: the kind's mean label at its last closed window
    assert "group[kind].label_last" in X and X["group[kind].label_last"].notna().any()
    kind = db["shop"].df["kind"]
    closed = labels[labels["timestamp"] + W <= s]
    last = closed[closed["timestamp"] == closed["timestamp"].max()]
    means = last.assign(kind=kind.to_numpy()[last["shop_id"]]).groupby("kind")["y"].mean()
    for i, e in enumerate(df["shop_id"]):
        assert X["group[kind].label_last"].iloc[i] == pytest.approx(means[kind[e]])


def test_the_feature_cap_and_top_k_bound_the_count():
    db, labels = chain_db()
    df = labels[labels["timestamp"] == labels["timestamp"].max()]
    full = features(db, labels, df)
    assert full.shape[1] > 20
    capped = features(db, labels, df, max_features=10)
    assert list(capped.columns) == list(full.columns[:10])
    for cap in (10, 12):   # (the parts after the cap are not made: the first are the same)
        pd.testing.assert_frame_equal(features(db, labels, df, max_features=cap),
                                      full.iloc[:, :cap])
    one = features(db, labels, df, top_k=1)
    assert sum("=" in c for c in one.columns) < sum("=" in c for c in full.columns)
    with pytest.raises(ValueError, match="data.deep_features.top_k"):
        DeepSettings(top_k=0)


def test_chunks_of_seed_times_give_the_same_features():
    """A full-size split goes through in chunks of whole seed times (bounded memory): the
    features, their order and index are those of one pass."""
    db, labels = chain_db(2)
    df = labels.sample(frac=1.0, random_state=0)  # seed times interleaved
    task = make_task()
    history = task.history({"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]})
    whole = deep_features(task, db, df, history, chunk_rows=10**9)
    chunked = deep_features(task, db, df, history, chunk_rows=70)
    assert list(chunked.index) == list(df.index) and len(whole) == len(df)
    pd.testing.assert_frame_equal(whole, chunked)


def test_a_wide_split_goes_in_chunks_sized_by_its_width_and_keeps_only_its_cap(monkeypatch):
    """The first chunk's width sizes the chunks after it (``CHUNK_CELLS`` over its
    features), and only the ``max_features`` kept are held for the split's rows: the
    features are those of one pass, capped."""
    from rdl.features import deep
    db, labels = chain_db(2)
    df = labels.sample(frac=1.0, random_state=0)
    task = make_task()
    history = task.history({"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]})
    capped = DeepSettings(max_features=12)
    whole = deep_features(task, db, df, history, settings=capped, chunk_rows=10**9)
    made = deep._features
    sizes, widths = [], []

    def counted(syn, hist, *rest):
        out = made(syn, hist, *rest)
        sizes.append(len(syn.ids))
        widths.append(out.shape[1])
        return out
    monkeypatch.setattr(deep, "_features", counted)
    monkeypatch.setattr(deep, "FIRST_CHUNK", 40)
    deep_features(task, db, df.iloc[:5], history, settings=capped)
    width, sizes[:] = widths[0], []   # (the parts until 12 columns: more than 12)
    monkeypatch.setattr(deep, "CHUNK_CELLS", width * 90)
    chunked = deep_features(task, db, df, history, settings=capped, chunk_rows=10**9)
    assert list(whole.columns) == list(chunked.columns) and len(whole.columns) == 12 < width
    pd.testing.assert_frame_equal(whole, chunked)
    assert sizes[0] == 60 and set(sizes[1:-1]) == {90} and len(sizes) > 3   # (30 a time)


def test_chunks_with_other_columns_are_put_together_as_frames(monkeypatch):
    """The chunks' features are written in place while every chunk has the first one's
    float32 columns; a chunk with another column (or another type) turns the rows so far
    back into frames, put together as before: every column, NaN where a chunk had none."""
    from rdl.features import deep
    db, labels = chain_db(2)
    df = labels.sample(frac=1.0, random_state=0)
    task = make_task()
    history = task.history({"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]})
    made = deep._features
    seen = []

    def odd(syn, hist, *rest):   # the third chunk has a column more, of float64
        out = made(syn, hist, *rest)
        seen.append(len(out))
        return out.assign(extra=np.arange(len(out), dtype=np.float64)) if len(seen) == 3 else out
    whole = deep_features(task, db, df, history, chunk_rows=10**9)
    monkeypatch.setattr(deep, "_features", odd)
    chunked = deep_features(task, db, df, history, chunk_rows=70)
    assert len(seen) > 3
    assert list(chunked.columns) == [*whole.columns, "extra"]
    pd.testing.assert_frame_equal(chunked[whole.columns], whole)
    extra = chunked["extra"]
    assert extra.notna().sum() == seen[2] and extra.dtype == np.float32


def test_a_parent_of_many_columns_makes_no_fragmented_frame():
    """A child's rows carry each parent's numbers (a warehouse's dimensions: hundreds);
    they were inserted into a frame one by one, which pandas warned of at every chunk."""
    import warnings
    db, labels = chain_db(1)
    product = db["product"].df
    for j in range(120):
        product[f"m{j}"] = np.arange(len(product), dtype=float) * j
    task = make_task()
    history = task.history({"train": labels, "val": labels.iloc[:0], "test": labels.iloc[:0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        out = deep_features(task, db, labels.iloc[:60], history,
                            settings=DeepSettings(max_features=10**6))
    assert sum(".m119." in c for c in out.columns) > 0
