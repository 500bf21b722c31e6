"""The synthetic H&M generator: contract columns, determinism, scale, and learnable signal."""
import numpy as np
import pandas as pd
import pytest

from rdl.data import synthetic_hm
from rdl.data.synthetic_hm import ARTICLE_COLUMNS, CUSTOMER_COLUMNS, TRANSACTION_COLUMNS, generate

HEX64 = r"^[0-9a-f]{64}$"
START, END = pd.Timestamp("2019-09-07"), pd.Timestamp("2020-09-22")
WEEK = pd.Timedelta(days=7)


@pytest.fixture(scope="module")
def tiny():
    return generate(seed=0, scale=0.001)


@pytest.fixture(scope="module")
def small():
    """Big enough for signal statistics (about 4k customers, 45k transactions)."""
    return generate(seed=0, scale=0.003)


def auroc(score, label) -> float:
    """Rank formula (Mann-Whitney U); ties get average ranks."""
    score, label = np.asarray(score, float), np.asarray(label, bool)
    rank = pd.Series(score).rank().to_numpy()
    n1, n0 = label.sum(), (~label).sum()
    return (rank[label].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


def test_auroc_helper():
    assert auroc([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]) == 1.0
    assert auroc([0.4, 0.3, 0.2, 0.1], [0, 0, 1, 1]) == 0.0
    assert auroc([1, 1, 1, 1], [0, 1, 0, 1]) == 0.5


# -- contract ---------------------------------------------------------------------------------
def test_columns_in_contract_order(tiny):
    assert list(tiny) == ["customers", "articles", "transactions"]
    assert list(tiny["customers"].columns) == CUSTOMER_COLUMNS
    assert list(tiny["articles"].columns) == ARTICLE_COLUMNS
    assert list(tiny["transactions"].columns) == TRANSACTION_COLUMNS
    assert len(CUSTOMER_COLUMNS) + len(ARTICLE_COLUMNS) + len(TRANSACTION_COLUMNS) == 37


def test_customer_columns(tiny):
    c = tiny["customers"]
    for col in ["customer_id", "postal_code"]:
        assert pd.api.types.is_string_dtype(c[col])
        assert c[col].str.fullmatch(HEX64).all()
    assert c["customer_id"].is_unique and c["customer_id"].is_monotonic_increasing
    for col in ["FN", "Active"]:
        assert c[col].dtype == np.float64 and set(c[col].dropna()) == {1.0}
    assert set(c["club_member_status"].dropna()) <= {"ACTIVE", "PRE-CREATE", "LEFT CLUB"}
    assert set(c["fashion_news_frequency"].dropna()) <= {"NONE", "Regularly", "Monthly"}
    assert c["age"].dtype == np.float64 and c["age"].dropna().between(16, 99).all()
    # postal codes: very skewed (one code for ~9% of customers) and a long tail
    counts = c["postal_code"].value_counts()
    assert 0.04 < counts.iloc[0] / len(c) < 0.15 and counts.iloc[1] < counts.iloc[0] / 2
    assert c["postal_code"].nunique() > 0.1 * len(c)


def test_article_columns(tiny):
    a = tiny["articles"]
    assert a["article_id"].dtype == np.int64 and a["article_id"].is_unique
    assert a["article_id"].between(10**8, 10**9 - 1).all()   # 10 digits with a leading zero
    assert (a["product_code"] == a["article_id"] // 1000).all()
    ints = [c for c in ARTICLE_COLUMNS if c.endswith(("_no", "_id", "_code")) and c != "index_code"]
    for col in ints:
        assert a[col].dtype == np.int64, col
    for col in set(ARTICLE_COLUMNS) - set(ints):
        assert pd.api.types.is_string_dtype(a[col]), col
    # code <-> name pairs are consistent
    pairs = [("product_type_no", "product_type_name"), ("graphical_appearance_no", "graphical_appearance_name"),
             ("colour_group_code", "colour_group_name"), ("perceived_colour_value_id", "perceived_colour_value_name"),
             ("perceived_colour_master_id", "perceived_colour_master_name"), ("index_code", "index_name"),
             ("index_group_no", "index_group_name"), ("section_no", "section_name"),
             ("garment_group_no", "garment_group_name")]
    for code, name in pairs:
        assert (a.groupby(code)[name].nunique() == 1).all(), code
        assert (a.groupby(name)[code].nunique() == 1).all(), name
    assert (a.groupby("department_no")["department_name"].nunique() == 1).all()
    assert (a.groupby("product_type_no")["product_group_name"].nunique() == 1).all()
    assert (a.groupby("index_code")["index_group_no"].nunique() == 1).all()
    assert (a.groupby("section_no")["index_code"].nunique() == 1).all()
    # text built from attribute words; one product -> one name
    assert (a.groupby("product_code")["prod_name"].nunique() == 1).all()
    assert a.apply(lambda r: r["product_type_name"] in r["prod_name"], axis=1).all()
    assert a["detail_desc"].dropna().str.endswith(".").all()


def test_transaction_columns(tiny):
    t, c, a = tiny["transactions"], tiny["customers"], tiny["articles"]
    assert t["t_dat"].dtype == "datetime64[ns]"
    assert (t["t_dat"] == t["t_dat"].dt.normalize()).all()            # day granular
    assert t["t_dat"].min() >= START and t["t_dat"].max() <= END
    assert t["t_dat"].is_monotonic_increasing
    assert t["t_dat"].dt.normalize().nunique() > 350                  # spans the whole year
    assert t["customer_id"].isin(c["customer_id"]).all()
    assert t["article_id"].isin(a["article_id"]).all()
    assert t["article_id"].dtype == np.int64 and t["sales_channel_id"].dtype == np.int64
    assert set(t["sales_channel_id"]) == {1, 2}
    assert t["price"].dtype == np.float64
    assert t["price"].between(0, 0.6, inclusive="right").all()
    assert 0.012 < t["price"].mean() < 0.045                          # real: 0.028 (full scale: 0.027)
    assert 0.55 < (t["sales_channel_id"] == 2).mean() < 0.85
    assert t.duplicated().any()                                        # repeat units: identical rows


def test_missing_values_where_the_real_data_has_them(tiny):
    allowed = {"FN", "Active", "club_member_status", "fashion_news_frequency", "age", "detail_desc"}
    for name, df in tiny.items():
        for col in df.columns:
            has_nan = df[col].isna().any()
            assert has_nan == (col in allowed), (name, col)
    c = tiny["customers"]
    assert 0.2 < c["FN"].notna().mean() < 0.5 and 0.2 < c["Active"].notna().mean() < 0.5


# -- determinism and scale ------------------------------------------------------------------
def test_same_seed_same_frames(tiny):
    again = generate(seed=0, scale=0.001)
    for key in tiny:
        pd.testing.assert_frame_equal(tiny[key], again[key])


def test_other_seed_other_frames(tiny):
    other = generate(seed=1, scale=0.001)
    for key in tiny:
        assert not tiny[key].equals(other[key]), key
    assert not set(tiny["customers"]["customer_id"]) & set(other["customers"]["customer_id"])


def test_scale_is_linear(tiny):
    triple = generate(seed=0, scale=0.003)
    for key, lo, hi in [("customers", 2.95, 3.05), ("articles", 2.9, 3.1), ("transactions", 2.6, 3.4)]:
        assert lo < len(triple[key]) / len(tiny[key]) < hi, key
    # about RelBench's size per unit of scale
    assert 1_300 < len(tiny["customers"]) < 1_450 and 95 < len(tiny["articles"]) < 115
    assert 11_000 < len(tiny["transactions"]) < 19_000


def test_start_and_end():
    f = generate(seed=3, scale=0.001, start="2020-01-01", end="2020-03-31")
    t = f["transactions"]["t_dat"]
    assert t.min() == pd.Timestamp("2020-01-01") and t.max() == pd.Timestamp("2020-03-31")
    # fewer days, fewer transactions; same entity tables' size
    assert len(f["transactions"]) < 0.4 * 15_190 and len(f["customers"]) == 1372


def test_bad_arguments():
    with pytest.raises(ValueError, match="scale"):
        generate(scale=0)
    with pytest.raises(ValueError, match="7 days"):
        generate(scale=0.001, start="2020-01-01", end="2020-01-03")


# -- signal -----------------------------------------------------------------------------------
def churn_rows(frames, timestamps):
    """RelBench user-churn rows: customers active in (t-7d, t]; label 1 if none in (t, t+7d].

    Features: days since the customer's last purchase before the current week, distinct
    purchase days in the 90 days up to t, and the customer table's FN / Active / age / club.
    """
    t_all, cust = frames["transactions"], frames["customers"].set_index("customer_id")
    rows = []
    for t in timestamps:
        past = t_all[t_all["t_dat"] <= t]
        last = past.groupby("customer_id")["t_dat"].max()
        ids = last.index[last > t - WEEK]
        future = t_all.loc[(t_all["t_dat"] > t) & (t_all["t_dat"] <= t + WEEK), "customer_id"]
        before = past[past["t_dat"] <= t - WEEK].groupby("customer_id")["t_dat"].max()
        days90 = past[past["t_dat"] > t - 90 * pd.Timedelta(days=1)].groupby("customer_id")["t_dat"].nunique()
        c = cust.loc[ids]
        rows.append(pd.DataFrame({
            "label": ~ids.isin(future),
            "gap": (t - before.reindex(ids)).dt.days.fillna(1000).to_numpy(),
            "days90": days90.reindex(ids).to_numpy(),
            "FN": c["FN"].fillna(0).to_numpy(), "Active": c["Active"].fillna(0).to_numpy(),
            "age": c["age"].fillna(c["age"].mean()).to_numpy(),
            "club": (c["club_member_status"] != "ACTIVE").to_numpy(float)}))
    return pd.concat(rows, ignore_index=True)


def test_churn_signal_lives_in_the_transactions(small):
    times = [pd.Timestamp("2020-09-07") - k * WEEK for k in range(0, 48, 2)]
    rows = churn_rows(small, times)
    assert len(rows) > 3000
    pos = rows["label"].mean()
    assert 0.65 < pos < 0.85                                  # real rel-hm: about 0.82
    # recency / frequency separate churners from returners, but far from perfectly
    gap_auc = auroc(rows["gap"], rows["label"])
    freq_auc = auroc(-rows["days90"], rows["label"])
    assert 0.6 < gap_auc < 0.9 and 0.6 < freq_auc < 0.9
    # a customer-table-only feature does much worse (either sign)
    entity = max(max(auroc(rows[c], rows["label"]), 1 - auroc(rows[c], rows["label"]))
                 for c in ["FN", "Active", "age", "club"])
    assert entity < 0.58 and entity < gap_auc - 0.05


def test_item_sales_autocorrelate(small):
    t, a = small["transactions"], small["articles"]
    week = (t["t_dat"] - START).dt.days // 7
    sales = (t.groupby([week.rename("week"), "article_id"])["price"].sum()
             .unstack(fill_value=0.0).reindex(columns=a["article_id"], fill_value=0.0).to_numpy())
    now, nxt = sales[10:50].ravel(), sales[11:51].ravel()
    assert np.median(nxt) == 0.0                              # most articles sell nothing in a week
    assert 0.1 < (nxt > 0).mean() < 0.5
    assert np.corrcoef(np.log1p(100 * now), np.log1p(100 * nxt))[0, 1] > 0.6
    # last week's sales beat predicting 0 by far (MAE), an article-only constant cannot see this
    assert np.abs(nxt - now).mean() < 0.6 * np.abs(nxt).mean()


def test_seasons_swing_sales(small):
    t = small["transactions"].merge(small["articles"][["article_id", "product_group_name", "product_type_name"]])
    month = t["t_dat"].dt.month
    share = lambda mask: mask.groupby(month).mean()  # noqa: E731
    swim = share(t["product_group_name"] == "Swimwear")
    knit = share(t["product_type_name"].isin(["Sweater", "Cardigan", "Coat", "Hoodie"]))
    assert swim[[5, 6, 7]].mean() > 1.5 * swim[[11, 12, 1]].mean()
    assert knit[[11, 12, 1]].mean() > 1.5 * knit[[5, 6, 7]].mean()


def test_purchases_follow_taste_and_history(small):
    t = small["transactions"].merge(small["articles"][["article_id", "section_no"]])
    cut = pd.Timestamp("2020-06-01")
    past, future = t[t["t_dat"] <= cut], t[(t["t_dat"] > cut) & (t["t_dat"] <= cut + 4 * WEEK)]
    future = future[future["customer_id"].isin(past["customer_id"])]
    top = past.groupby("customer_id")["section_no"].agg(lambda s: s.value_counts().index[0])
    in_top = (future["section_no"] == future["customer_id"].map(top)).mean()
    base = future["section_no"].value_counts(normalize=True)
    chance = (base.reindex(future["customer_id"].map(top)).fillna(0)).mean()
    assert in_top > 2 * chance                                # taste: the graph tells sections
    # history: customers re-buy their own articles far more often than someone else's
    bought = set(zip(past["customer_id"], past["article_id"]))
    own = np.mean([(c, a) in bought for c, a in zip(future["customer_id"], future["article_id"])])
    other = np.random.default_rng(0).permutation(future["customer_id"].to_numpy())
    someone = np.mean([(c, a) in bought for c, a in zip(other, future["article_id"])])
    assert own > 1.3 * someone and own < 0.9


def test_generator_version_is_an_int():
    assert isinstance(synthetic_hm.GENERATOR_VERSION, int)
