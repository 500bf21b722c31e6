"""data=relbench: RelBench's fake database, written by RelBench's own code in both layouts,
read with no schema; every column type it has reaches the graph; clear errors."""
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch_frame
import yaml

from rdl.data import DataError
from rdl.data.relbench import dataset_times, load_relbench
from rdl.graph.build import fingerprint, infer_stypes, make_graph
from rdl.graph.columns import hashable
from rdl.graph.text import HashingEmbedder


def test_both_layouts_read_as_relbench_wrote_them(relbench_v1, relbench_v3):
    v1, v3 = load_relbench(relbench_v1), load_relbench(relbench_v3 / "db")  # db/ works too
    assert set(v1.tables) == set(v3.tables) == {"customer", "product", "review", "relations"}
    for name, tab in v1:
        other = v3[name]
        assert (tab.pkey, tab.fkeys, tab.time_col) == (other.pkey, other.fkeys, other.time_col)
        pd.testing.assert_frame_equal(tab.df, other.df, check_dtype=False)
    review, relations = v1["review"], v1["relations"]
    assert review.time_col == "review_time" and review.pkey is None
    assert review.fkeys == {"customer_id": "customer", "product_id": "product"}
    assert relations.time_col is None and relations.feature_cols == []  # keys only
    # RelBench's foreign keys that match no row (FakeDataset draws customers past the
    # table) are missing, as in RelBench's own database
    raw = pq.read_table(relbench_v1 / "db" / "review.parquet").to_pandas()
    assert raw["customer_id"].isna().sum() > 0
    assert review.df["customer_id"].isna().sum() == raw["customer_id"].isna().sum()
    # ids are RelBench's: row positions, no mapping
    assert v1.keys == {} and (v1["customer"].df["customer_id"] == np.arange(100)).all()
    assert dataset_times(relbench_v3) == (pd.Timestamp("1972-08-16 09:36"),
                                          pd.Timestamp("1972-12-14 04:48"))
    assert dataset_times(relbench_v1) is None


def test_every_column_type_reaches_the_graph(relbench_v1, tmp_path):
    """FakeDataset's list-of-strings column (with None and [] cells), its text column and
    numbers become features; the graph is cached and read back (the fingerprint hashes
    numpy-array cells, which pandas cannot)."""
    db = load_relbench(relbench_v1)
    product = db["product"]
    assert isinstance(product.df["category"].dropna().iloc[-1], np.ndarray)
    stypes = infer_stypes(product)
    assert stypes["category"] == torch_frame.multicategorical
    assert stypes["title"] == torch_frame.text_embedded
    assert stypes["price"] == torch_frame.numerical
    data, stats = make_graph(db, {}, HashingEmbedder(dim=8), tmp_path)
    again, _ = make_graph(db, {}, HashingEmbedder(dim=8), tmp_path)  # from the cache
    assert len(list(tmp_path.glob("graph-*"))) == 1
    tf = data["product"].tf
    # the list column: multi-hot over its categories (toy, health) and one for any other
    names = tf.col_names_dict[torch_frame.embedding]
    assert "category" in names and "title" in names
    hot = tf.feat_dict[torch_frame.embedding].values[:, :3]
    assert hot[0].tolist() == [0, 0, 0] and hot[2].tolist() == [1, 1, 0]  # None; [toy, health]
    assert again["product"].tf.feat_dict[torch_frame.embedding].values.equal(
        tf.feat_dict[torch_frame.embedding].values)
    assert data["relations"].num_nodes == 20 and data["review"].time.shape == (600,)


def test_booleans_timestamps_and_nullable_numbers(tmp_path):
    df = pd.DataFrame({"id": np.arange(6), "flag": pd.array([True, False, None] * 2, "boolean"),
                       "when": pd.to_datetime(["2020-01-01", None, "2021-05-02"] * 2),
                       "n": pd.array([1, None, 3, 4, 5, 6], "Int64"),
                       "x": pd.array([1.5, None, 3.0, 4.0, 5.0, 6.0], "Float64"),
                       "tags": [["a"], None, [], ["a", "b"], ["c"], ["b"]]})
    from rdl.data.database import Database, Table
    db = Database({"t": Table(df, pkey="id")})
    stypes = infer_stypes(db["t"])
    assert stypes["when"] == torch_frame.timestamp and stypes["tags"] == torch_frame.multicategorical
    data, _ = make_graph(db, {"t": {"n": "numerical"}}, HashingEmbedder(dim=8), tmp_path)
    assert data["t"].tf.num_rows == 6


def test_the_fingerprint_covers_exactly_the_columns_used(relbench_v1):
    db = load_relbench(relbench_v1)
    used = {n: infer_stypes(t) for n, t in db}
    base = fingerprint(db, columns=used)
    assert fingerprint(db, columns=used) == base
    df = db["product"].df
    db["product"].df = df.assign(price=df["price"] + 1)           # a used column
    assert fingerprint(db, columns=used) != base
    db["product"].df = df
    dropped = {**used, "product": {k: v for k, v in used["product"].items() if k != "price"}}
    other = fingerprint(db, columns=dropped)
    db["product"].df = df.assign(price=df["price"] + 1)           # a column the graph drops
    assert fingerprint(db, columns=dropped) == other
    cells = df["category"]
    changed = pd.Series([*cells.iloc[:2], np.array(["toy"], dtype=object),
                         *cells.iloc[3:]], dtype=object)
    assert not hashable(cells).equals(hashable(changed))


def _copy_v1(src, dst):
    (dst / "db").mkdir(parents=True)
    for f in (src / "db").glob("*.parquet"):
        (dst / "db" / f.name).write_bytes(f.read_bytes())
    return dst


def test_errors_name_the_file_and_what_to_do(relbench_v1, relbench_v3, tmp_path):
    with pytest.raises(DataError, match="no such folder"):
        load_relbench(tmp_path / "nope")
    with pytest.raises(DataError, match="data.db.path"):
        load_relbench(None)
    # a parquet file without RelBench's metadata (and no manifest)
    bad = _copy_v1(relbench_v1, tmp_path / "plain")
    pd.read_parquet(bad / "db" / "product.parquet").to_parquet(bad / "db" / "product.parquet")
    with pytest.raises(DataError, match=r"product\.parquet: its parquet schema lacks RelBench's "
                                        r"metadata.*data=folder"):
        load_relbench(bad)
    # a primary key that is not 0..N-1
    shuffled = _copy_v1(relbench_v1, tmp_path / "shuffled")
    t = pq.read_table(shuffled / "db" / "customer.parquet")
    ids = t.column("customer_id").to_pandas().to_numpy()[::-1].copy()
    t = t.set_column(0, "customer_id", pa.array(ids, pa.int64())).replace_schema_metadata(
        t.schema.metadata)
    pq.write_table(t, shuffled / "db" / "customer.parquet")
    with pytest.raises(DataError, match=r"customer\.parquet \(table 'customer', column "
                                        r"'customer_id'\): primary key is not 0..N-1"):
        load_relbench(shuffled)
    # a manifest naming a column the file lacks, before any table is read in full
    m3 = tmp_path / "v3"
    (m3 / "db").mkdir(parents=True)
    for f in (relbench_v3 / "db").glob("*.parquet"):
        (m3 / "db" / f.name).write_bytes(f.read_bytes())
    manifest = yaml.safe_load((relbench_v3 / "manifest.yaml").read_text())
    manifest["tables"]["review"]["time_col"] = "created"
    (m3 / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    with pytest.raises(DataError, match=r"review\.parquet \(table 'review'\): time column "
                                        r"'created' missing"):
        load_relbench(m3)
    manifest["tables"]["review"]["time_col"] = "review_time"
    manifest["tables"]["review"]["fkeys"]["product_id"] = "item"
    (m3 / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    with pytest.raises(DataError, match="references unknown table 'item'"):
        load_relbench(m3)


def test_relbench_metadata_is_json(relbench_v1):
    """What this reader relies on, as RelBench 1.1.0 writes it."""
    meta = pq.read_schema(relbench_v1 / "db" / "review.parquet").metadata
    assert json.loads(meta[b"time_col"]) == "review_time"
    assert json.loads(meta[b"pkey_col"]) is None
