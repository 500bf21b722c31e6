"""Database -> HeteroData: node types, TensorFrames, time, f2p/rev edges, cache, errors."""
import numpy as np
import pandas as pd
import pytest
import torch
import torch_frame

from rdl.data import Database, DataError, Table
from rdl.graph.build import make_graph, to_seconds
from rdl.graph.text import HashingEmbedder


def db() -> Database:
    customer = pd.DataFrame({"customer_id": ["c", "a", "b"], "age": [20.0, None, 40.0],
                             "club": ["ACTIVE"] * 3})
    article = pd.DataFrame({"article_id": [10, 11],
                            "prod_name": ["Strap top", "Denim jeans blue"]})
    tx = pd.DataFrame({"t_dat": pd.to_datetime(["2020-01-02", "2020-01-01", "2020-01-03"]),
                       "customer_id": ["a", "b", "zz"],  # "zz" is dangling
                       "article_id": [11, 10, 10], "price": [0.1, 0.2, 0.3]})
    return Database({
        "customer": Table(customer, pkey="customer_id"),
        "article": Table(article, pkey="article_id"),
        "transactions": Table(tx, fkeys={"customer_id": "customer", "article_id": "article"},
                              time_col="t_dat"),
    }).reindex()


def test_graph_layout():
    d = db()
    data, stats = make_graph(d, {"article": {"prod_name": "text_embedded"},
                                 "customer": {"club": "categorical"}},
                             text_embedder=HashingEmbedder(16))
    assert set(data.node_types) == {"customer", "article", "transactions"}
    assert data["customer"].num_nodes == 3 and data["transactions"].num_nodes == 3
    # keys are not features; the time column is (as in RelBench)
    assert "customer_id" not in sum(data["transactions"].tf.col_names_dict.values(), [])
    assert data["transactions"].tf.col_names_dict[torch_frame.timestamp] == ["t_dat"]
    assert data["article"].tf.col_names_dict[torch_frame.embedding] == ["prod_name"]
    assert "time" in data["transactions"] and "time" not in data["customer"]
    assert data["transactions"].time.tolist() == to_seconds(d["transactions"].df["t_dat"]).tolist()
    # every non-null foreign key gives one f2p edge and its reverse
    e = data["transactions", "f2p_customer_id", "customer"].edge_index
    fk = d["transactions"].df["customer_id"]
    assert e.size(1) == fk.notna().sum() == 2
    for src, dst in e.t().tolist():
        assert fk[src] == dst
    rev = data["customer", "rev_f2p_customer_id", "transactions"].edge_index
    assert torch.equal(rev, e.flip(0))
    assert set(stats) == set(data.node_types)


def test_time_is_seconds_whatever_the_unit():
    for unit in ("s", "ms", "us", "ns"):
        ser = pd.Series(pd.to_datetime(["1970-01-02"])).astype(f"datetime64[{unit}]")
        assert to_seconds(ser).tolist() == [86400]


def test_cache_round_trip(tmp_path):
    d = db()
    a, _ = make_graph(d, cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    files = list(tmp_path.rglob("*.pt"))
    assert sorted(f.name for f in files) == ["article.pt", "customer.pt", "structure.pt",
                                             "transactions.pt"]
    b, _ = make_graph(d, cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    # the structure read back (as the build returned it, and again) is the one built
    # without a cache: node types, rows, times and edges, in their order
    fresh, _ = make_graph(d, text_embedder=HashingEmbedder(8))
    for one in (a, fresh):
        same_structure(one, b)
    # other stypes -> another cache entry
    make_graph(d, {"customer": {"club": None}}, cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    assert len({f.parent for f in tmp_path.rglob("*.pt")}) == 2


def same_structure(a, b) -> None:
    assert a.node_types == b.node_types and a.edge_types == b.edge_types
    for nt in a.node_types:
        assert a[nt].num_nodes == b[nt].num_nodes
        assert ("time" in a[nt]) == ("time" in b[nt])
        if "time" in a[nt]:
            assert torch.equal(a[nt].time, b[nt].time)
    for et in a.edge_types:
        assert torch.equal(a[et].edge_index, b[et].edge_index)
    for nt in a.node_types:
        for st, x in a[nt].tf.feat_dict.items():
            y = b[nt].tf.feat_dict[st]
            x, y = (v if isinstance(v, torch.Tensor) else v.values for v in (x, y))
            assert torch.allclose(x.double(), y.double(), equal_nan=True)


def test_bad_overrides_name_the_problem():
    with pytest.raises(DataError, match="'nope'"):
        make_graph(db(), {"customer": {"nope": "numerical"}})
    with pytest.raises(DataError, match="unknown stype 'numeric'"):
        make_graph(db(), {"customer": {"age": "numeric"}})
    with pytest.raises(DataError, match=r"names table\(s\) \[.custom.\] that the database does not have"):
        make_graph(db(), {"custom": {"age": "numerical"}})
    with pytest.raises(DataError, match="text embedder"):
        make_graph(db(), {"article": {"prod_name": "text_embedded"}})


def test_unreindexed_keys_are_an_error():
    d = db()
    d.tables["customer"].df["customer_id"] = [5, 6, 7]
    with pytest.raises(DataError, match="not 0..N-1"):
        make_graph(d)


def test_hashing_embedder_is_deterministic_and_sensible():
    emb = HashingEmbedder(32)
    x = emb(["Strap top", "strap TOP", "Denim jeans", None])
    assert x.shape == (4, 32)
    assert torch.allclose(x[0], x[1])               # case-insensitive
    assert torch.allclose(x[0].norm(), torch.tensor(1.0))
    assert x[3].abs().sum() == 0                    # missing text -> zeros
    assert (x[0] @ x[2]).abs() < 0.9                # different words differ


def test_given_stats_encode_later_rows_as_the_model_was_trained():
    """A graph of more rows (predictions at the database's end) encoded with the statistics
    of the training graph: the same rows get the same values, a category the training
    data never had encodes as missing, and numbers keep the training scale."""
    rows = pd.DataFrame({"t_dat": pd.date_range("2020-01-01", periods=6, freq="D"),
                         "channel": ["web", "shop", "web", "web", "shop", "phone"],
                         "price": [1.0, 2.0, 3.0, 4.0, 5.0, 600.0]})
    full = Database({"tx": Table(rows, time_col="t_dat")})
    cut = full.upto(pd.Timestamp("2020-01-05"))
    stypes = {"tx": {"channel": "categorical", "price": "numerical"}}
    train, stats = make_graph(cut, stypes)
    later, later_stats = make_graph(full, stypes, given_stats=stats)
    assert later_stats == stats
    cat = torch_frame.categorical
    a, b = train["tx"].tf.feat_dict[cat], later["tx"].tf.feat_dict[cat]
    assert torch.equal(b[:5], a) and int(b[5, 0]) == -1  # "phone": unseen, missing
    own, _ = make_graph(full, stypes)  # with its own statistics "phone" is a category
    assert int(own["tx"].tf.feat_dict[cat][5, 0]) >= 0


def test_any_table_name_is_cached(tmp_path):
    """Table names that are no file names ('a/b', '..') get cache files of their own."""
    d = db()
    names = {"customer": "dim/customer", "article": "..", "transactions": "fact tx"}
    renamed = Database({names[n]: Table(t.df, t.pkey, {c: names[r] for c, r in t.fkeys.items()},
                                        t.time_col) for n, t in d})
    stypes = {"dim/customer": {"club": "categorical"}, "..": {"prod_name": "categorical"}}
    built, _ = make_graph(renamed, stypes, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("graph-*")
    assert len(list(entry.glob("table-*.pt"))) == 3
    cached, _ = make_graph(renamed, stypes, cache_dir=tmp_path)
    for name in names.values():
        a, b = cached[name].tf, built[name].tf
        assert a.col_names_dict == b.col_names_dict and a.num_rows == b.num_rows
        for st in a.feat_dict:
            torch.testing.assert_close(a.feat_dict[st], b.feat_dict[st], equal_nan=True)


@pytest.mark.parametrize("values, changed", [
    (pd.Series([1.5, np.nan, 3.0]), pd.Series([1.5, np.nan, 3.5])),
    (pd.Series([1, 2, 3]), pd.Series([1, 2, 4])),
    (pd.Series(pd.to_datetime(["2020-01-01", None, "2020-01-03"])),
     pd.Series(pd.to_datetime(["2020-01-01", None, "2020-01-04"]))),
    (pd.Series([1, None, 0], dtype="Int64"), pd.Series([1, 0, 0], dtype="Int64")),
    (pd.Series([True, False]), pd.Series([True, True])),
    (pd.Series([True, None], dtype="boolean"), pd.Series([True, False], dtype="boolean")),
    (pd.Series(["a", None, "c"], dtype="string"), pd.Series(["a", "", "c"], dtype="string")),
    (pd.Series([np.array(["x"]), None], dtype=object), pd.Series([np.array(["y"]), None], dtype=object)),
])
def test_a_column_digest_is_its_values(values, changed):
    """Equal values give equal digests whatever the index; one changed cell (a missing value
    made 0 or empty among them) another."""
    from rdl.graph.build import column_digest
    assert column_digest(values) == column_digest(values.copy().set_axis(range(5, 5 + len(values))))
    assert column_digest(values) != column_digest(changed)


def mixed(n: int = 57, seed: int = 0) -> Database:
    """A table of every stype rdl encodes, with missing values and rare categories."""
    rng = np.random.default_rng(seed)
    t = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 10**7, n), unit="s")
    tags = [",".join(rng.choice(list("abcde"), rng.integers(0, 3), replace=False)) for _ in range(n)]
    df = pd.DataFrame({
        "id": range(n), "t": t,
        "x": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
        "cat": rng.choice(["p", "q", "r", None], n, p=[0.5, 0.3, 0.15, 0.05]),
        "tags": tags, "name": [f"item {i % 7} blue" for i in range(n)]})
    return Database({"items": Table(df, pkey="id", time_col="t")})


@pytest.mark.parametrize("stypes", [
    {"x": "numerical", "cat": "categorical"},                           # plain tensors
    {"x": "numerical", "tags": "multicategorical", "name": "text_embedded"}])   # nested
def test_a_large_table_in_chunks_is_the_frame_of_the_whole(monkeypatch, stypes):
    """Past CHUNK_ROWS rows a table is materialized a chunk at a time, with the whole
    columns' statistics: the same TensorFrame, bit for bit, and the same statistics."""
    from rdl.graph import build
    d, over = mixed(), {"items": {**{c: None for c in ("x", "cat", "tags", "name")}, **stypes}}
    whole, whole_stats = make_graph(d, over, text_embedder=HashingEmbedder(8))
    calls = []
    real = build._in_chunks
    monkeypatch.setattr(build, "CHUNK_ROWS", 10)   # 6 chunks, the last of 7 rows
    monkeypatch.setattr(build, "_in_chunks", lambda *a: calls.append(1) or real(*a))
    chunked, chunked_stats = make_graph(d, over, text_embedder=HashingEmbedder(8))
    assert calls == [1]
    a, b = whole["items"].tf, chunked["items"].tf
    assert a.col_names_dict == b.col_names_dict and a.num_rows == b.num_rows == 57
    for stype, x in a.feat_dict.items():
        y = b.feat_dict[stype]
        if isinstance(x, torch.Tensor):
            assert x.dtype == y.dtype and torch.equal(x.nan_to_num(-7.0), y.nan_to_num(-7.0))
        else:   # MultiNestedTensor / MultiEmbeddingTensor
            assert torch.equal(x.values, y.values) and torch.equal(x.offset, y.offset)
    assert repr(whole_stats) == repr(chunked_stats)
    # encoded with given statistics (predictions "now"), in chunks too
    given, _ = make_graph(d, over, text_embedder=HashingEmbedder(8), given_stats=whole_stats)
    for stype, x in given["items"].tf.feat_dict.items():
        if isinstance(x, torch.Tensor):
            assert torch.equal(x.nan_to_num(-7.0), a.feat_dict[stype].nan_to_num(-7.0))


def _times(n, seed, unit="ns", tz=None, missing=0, ties=False):
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 3_000 if not ties else 4, size=n)
    secs = rng.integers(0, 86_400, size=n) * (not ties)
    t = pd.Series(pd.Timestamp("1999-12-30") + pd.to_timedelta(days, "D")
                  + pd.to_timedelta(secs, "s")).astype(f"datetime64[{unit}]")
    if tz:
        t = t.dt.tz_localize(tz)
    t.iloc[rng.choice(n, size=missing, replace=False)] = pd.NaT
    return t


@pytest.mark.parametrize("times", [
    _times(1001, 0), _times(1000, 1, missing=37),                       # odd, even; NaT
    _times(500, 2, ties=True), _times(1, 3), _times(2, 4, missing=1),   # ties; one value
    _times(300, 5, unit="us"), _times(300, 6, unit="s"),
    _times(300, 7, tz="Europe/Stockholm", missing=3)])
def test_timestamp_stats_are_pytorch_frames(times):
    """rdl's statistics of a timestamp column (no sort) are PyTorch Frame's (a sort), to
    the last bit: years, oldest, newest and middle value, in units and time zones."""
    from torch_frame.data.stats import compute_col_stats
    from rdl.graph.build import column_stats
    df = pd.DataFrame({"t": times})
    want = compute_col_stats(df["t"], torch_frame.timestamp)
    got = column_stats(df, {"t": torch_frame.timestamp})["t"]
    assert repr(got) == repr(want)


@pytest.mark.parametrize("values", [
    [0.5, np.nan, 2.25, np.inf, -1.0, 1e-300, 7.0],                      # float64, NaN, inf
    np.array([1.5, 2.5, np.nan, -3.25], dtype=np.float32),
    np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64),
    np.array([7, 200, 3], dtype=np.uint8),
    [np.nan, np.inf, np.nan],                                              # nothing finite
    list(np.random.default_rng(1).lognormal(size=1001)) + [np.nan] * 5])
def test_numerical_stats_are_pytorch_frames(values):
    """rdl's statistics of a numerical column are PyTorch Frame's, to the last bit."""
    from torch_frame.data.stats import compute_col_stats
    from rdl.graph.build import column_stats
    df = pd.DataFrame({"x": values})
    want = compute_col_stats(df["x"], torch_frame.numerical)
    got = column_stats(df, {"x": torch_frame.numerical})["x"]
    assert repr(got) == repr(want)


def test_a_column_of_identifiers_is_warned_of_once(caplog):
    """A text column whose every value is distinct and one word (a UUID, an email) gives
    each row a vector of its own: warned of once a process, naming the table, the column
    and how to drop it; not for a declared one, nor for names of several words."""
    import logging

    from rdl.graph import build
    n = 1500
    df = pd.DataFrame({"uid": [f"u-{i:05d}-x" for i in range(n)],
                       "title": [f"blue shirt {i}" for i in range(n)],
                       "city": np.random.default_rng(0).choice(["Paris", "Lyon"], n)})
    table = Table(df)
    build._IDENTIFIERS.discard(("people", "uid"))
    with caplog.at_level(logging.WARNING, logger="rdl.graph.build"):
        build.infer_stypes(table, name="people")
        build.infer_stypes(table, name="people")
        build.infer_stypes(table, {"uid": "text_embedded"}, name="others")
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and warned[0].startswith("table 'people', column 'uid': every "
                                                     "value distinct and one word")
    assert "+data.stypes.people.uid=null" in warned[0]
