"""rdl.data.hm, .kaggle, .relbench: frames -> Database, Kaggle CSV round trip, RelBench files
(rel-hm as any RelBench database: tests/data/test_relbench.py), the synthetic cache."""
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rdl
from rdl.data import DataError, Database, synthetic_hm
from rdl.data.hm import START, hm_database, load_hm, synthetic_cache_path, synthetic_hm_db
from rdl.data.kaggle import read_kaggle, write_kaggle
from rdl.data.relbench import load_relbench
from rdl.data.stored import load, save

SCALE = 0.001


@pytest.fixture(scope="module")
def frames():
    return synthetic_hm.generate(seed=0, scale=SCALE)


def copy(frames):
    return {k: v.copy() for k, v in frames.items()}


# -- hm_database ------------------------------------------------------------------------------
def test_hm_database_tables_and_keys(frames):
    db = hm_database(**frames)
    assert set(db.tables) == {"customer", "article", "transactions"}
    assert db["customer"].pkey == "customer_id" and db["article"].pkey == "article_id"
    tx = db["transactions"]
    assert tx.pkey is None and tx.time_col == "t_dat"
    assert tx.fkeys == {"customer_id": "customer", "article_id": "article"}
    for name in ["customer", "article"]:
        assert (db[name].df[db[name].pkey].to_numpy() == np.arange(len(db[name]))).all()
    assert tx.df["customer_id"].dtype == "Int64" and tx.df["article_id"].dtype == "Int64"
    assert tx.df["t_dat"].dtype == "datetime64[ns]"
    assert len(db["customer"]) == len(frames["customers"]) and len(db["article"]) == len(frames["articles"])
    db.validate()
    # the input frames are untouched
    assert frames["transactions"]["customer_id"].str.len().eq(64).all()
    # each row position keeps its id in the files (predictions report them): a purchase's
    # customer and article, looked up through the keys, are the file's own
    src = frames["transactions"]
    src = src[pd.to_datetime(src["t_dat"]) >= pd.Timestamp(START)].reset_index(drop=True)
    assert len(src) == len(tx)
    for col, table in (("customer_id", "customer"), ("article_id", "article")):
        ids = db.keys[table].to_numpy()[tx.df[col].to_numpy(dtype=np.int64)]
        assert (ids == src[col].to_numpy()).all()


def test_hm_database_trims_and_reindexes(frames, caplog):
    """Rows before ``start`` go, dangling ids become <NA> (counted in a warning), fkeys point
    at the right rows."""
    f = copy(frames)
    tx = f["transactions"]
    old = tx.iloc[:5].assign(t_dat=pd.Timestamp("2019-01-15"))
    dangling = tx.iloc[5:7].assign(customer_id="f" * 64)
    f["transactions"] = pd.concat([old, tx, dangling], ignore_index=True)
    # shuffle the entity rows: the new keys must follow the rows, not the ids' order
    f["customers"] = f["customers"].sample(frac=1, random_state=0)
    f["articles"] = f["articles"].sample(frac=1, random_state=0)
    with caplog.at_level("WARNING", logger="rdl.data.hm"):
        db = hm_database(**f, start="2019-09-07")
    assert "'transactions': 2 rows have a customer_id that matches no customer row" in caplog.text
    assert "article_id that matches" not in caplog.text
    t = db["transactions"].df
    assert len(t) == len(tx) + 2 and t["t_dat"].min() >= pd.Timestamp("2019-09-07")
    assert t["customer_id"].isna().sum() == 2 and t["customer_id"].iloc[-2:].isna().all()
    assert t["article_id"].notna().all()
    # join back: raw id of the referenced row == raw id in the raw transaction
    raw = f["transactions"][f["transactions"]["t_dat"] >= "2019-09-07"].reset_index(drop=True)
    ok = t["customer_id"].notna().to_numpy()
    cust_ids = f["customers"]["customer_id"].to_numpy()[t["customer_id"][ok].to_numpy(int)]
    assert (cust_ids == raw["customer_id"][ok].to_numpy()).all()
    art_ids = f["articles"]["article_id"].to_numpy()[t["article_id"].to_numpy(int)]
    assert (art_ids == raw["article_id"].to_numpy()).all()
    # and the features of the referenced rows are those of that id
    ages = db["customer"].df["age"].to_numpy()[t["customer_id"][ok].to_numpy(int)]
    raw_age = raw["customer_id"][ok].map(f["customers"].set_index("customer_id")["age"]).to_numpy()
    np.testing.assert_array_equal(ages, raw_age)
    # start=None keeps everything
    assert len(hm_database(**f, start=None)["transactions"]) == len(f["transactions"])


def test_hm_database_accepts_date_strings(frames):
    f = copy(frames)
    f["transactions"]["t_dat"] = f["transactions"]["t_dat"].dt.strftime("%Y-%m-%d")
    db = hm_database(**f)
    pd.testing.assert_frame_equal(db["transactions"].df, hm_database(**frames)["transactions"].df)


@pytest.mark.parametrize("key,table,col", [("customers", "customer", "age"),
                                           ("articles", "article", "detail_desc"),
                                           ("transactions", "transactions", "price")])
def test_hm_database_missing_column(frames, key, table, col):
    f = copy(frames)
    f[key] = f[key].drop(columns=col)
    with pytest.raises(DataError, match=rf"table '{table}'.*missing column '{col}'"):
        hm_database(**f)


def test_hm_database_bad_dates_and_duplicate_keys(frames):
    f = copy(frames)
    f["transactions"]["t_dat"] = f["transactions"]["t_dat"].dt.strftime("%Y-%m-%d")
    f["transactions"].loc[3, "t_dat"] = "not a date"
    with pytest.raises(DataError, match="t_dat"):
        hm_database(**f)
    f = copy(frames)
    f["articles"] = pd.concat([f["articles"], f["articles"].iloc[:1]])
    with pytest.raises(DataError, match="article_id.*duplicate"):
        hm_database(**f)


# -- Kaggle CSV files -------------------------------------------------------------------------
def test_kaggle_round_trip(frames, tmp_path):
    write_kaggle(frames, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["articles.csv", "customers.csv", "transactions_train.csv"]        # no temp files left
    back = read_kaggle(tmp_path)
    for key in frames:
        pd.testing.assert_frame_equal(back[key], frames[key])


def test_kaggle_file_format(frames, tmp_path):
    write_kaggle(frames, tmp_path)
    cust = (tmp_path / "customers.csv").read_text().splitlines()
    assert cust[0] == "customer_id,FN,Active,club_member_status,fashion_news_frequency,age,postal_code"
    assert re.fullmatch(r"[0-9a-f]{64},(1\.0)?,(1\.0)?,[A-Z -]*,[A-Za-z]*,(\d+\.0)?,[0-9a-f]{64}", cust[1])
    art = (tmp_path / "articles.csv").read_text().splitlines()
    assert art[0].startswith("article_id,product_code,prod_name,product_type_no,")
    assert re.match(r"0\d{9},0\d{6},", art[1])                        # 0108775015,0108775,...
    tx = (tmp_path / "transactions_train.csv").read_text().splitlines()
    assert tx[0] == "t_dat,customer_id,article_id,price,sales_channel_id"
    assert len(tx) == len(frames["transactions"]) + 1
    line = re.compile(r"\d{4}-\d{2}-\d{2},[0-9a-f]{64},0\d{9},[0-9.e-]+,[12]")
    assert all(line.fullmatch(x) for x in tx[1:200])
    assert tx[1].startswith("2019-09-07,")


def test_kaggle_missing_file_and_column(frames, tmp_path):
    write_kaggle(frames, tmp_path)
    (tmp_path / "articles.csv").unlink()
    with pytest.raises(DataError, match=r"articles\.csv: missing"):
        read_kaggle(tmp_path)
    write_kaggle(frames, tmp_path)
    path = tmp_path / "transactions_train.csv"
    frames["transactions"].drop(columns="price").head(5).to_csv(path, index=False)
    with pytest.raises(DataError, match=r"transactions_train\.csv: missing column 'price'"):
        read_kaggle(tmp_path)
    with pytest.raises(DataError, match="no such folder"):
        read_kaggle(tmp_path / "nope")


def test_kaggle_bad_value_names_the_file(frames, tmp_path):
    write_kaggle(frames, tmp_path)
    path = tmp_path / "transactions_train.csv"
    lines = path.read_text().splitlines()
    lines[2] = "2020-13-45" + lines[2][10:]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"transactions_train\.csv"):
        read_kaggle(tmp_path)


def test_write_kaggle_needs_all_frames(frames, tmp_path):
    with pytest.raises(DataError, match="transactions"):
        write_kaggle({"customers": frames["customers"], "articles": frames["articles"]}, tmp_path)


# -- RelBench files ---------------------------------------------------------------------------
def save_like_relbench(db: Database, folder, metadata=True):
    """What relbench.base.Table.save writes: parquet with JSON key metadata in the schema."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, tab in db:
        table = pa.Table.from_pandas(tab.df, preserve_index=False)
        if metadata:
            meta = {"fkey_col_to_pkey_table": tab.fkeys, "pkey_col": tab.pkey, "time_col": tab.time_col}
            table = table.replace_schema_metadata(
                {**table.schema.metadata, **{k: json.dumps(v).encode() for k, v in meta.items()}})
        pq.write_table(table, folder / f"{name}.parquet")


def test_read_relbench(frames, tmp_path):
    db = hm_database(**frames)
    save_like_relbench(db, tmp_path / "rel-hm" / "db")
    for folder in [tmp_path / "rel-hm" / "db", tmp_path / "rel-hm"]:
        back = load_relbench(folder)
        for name, tab in db:
            got = back[name]
            assert (got.pkey, got.fkeys, got.time_col) == (tab.pkey, tab.fkeys, tab.time_col)
            pd.testing.assert_frame_equal(got.df, tab.df)


def test_read_relbench_errors(frames, tmp_path):
    save_like_relbench(hm_database(**frames), tmp_path / "plain", metadata=False)
    # no key metadata: no guessing rel-hm's keys any more, one message saying what to do
    with pytest.raises(DataError, match=r"parquet schema lacks RelBench's metadata .*data=folder"):
        load_relbench(tmp_path / "plain")
    save_like_relbench(hm_database(**frames), tmp_path)
    (tmp_path / "article.parquet").unlink()
    with pytest.raises(DataError, match=r"transactions\.parquet \(table 'transactions', column "
                                        r"'article_id'\): foreign key references unknown table "
                                        r"'article'"):
        load_relbench(tmp_path)
    with pytest.raises(DataError, match="no such folder"):
        load_relbench(tmp_path / "nope")


# -- synthetic cache and load_hm --------------------------------------------------------------
def test_synthetic_cache(tmp_path, monkeypatch):
    db = synthetic_hm_db(seed=0, scale=SCALE, cache_dir=tmp_path)
    path = synthetic_cache_path(0, SCALE, tmp_path)
    assert path.name == f"synthetic-hm-v{synthetic_hm.GENERATOR_VERSION}-seed0-scale0.001"
    assert (path / "metadata.json").exists()

    def boom(**kwargs):
        raise AssertionError("generate must not run when the cache exists")

    monkeypatch.setattr(synthetic_hm, "generate", boom)
    again = synthetic_hm_db(seed=0, scale=SCALE, cache_dir=tmp_path)
    for name, tab in db:
        pd.testing.assert_frame_equal(again[name].df, tab.df)
        assert (again[name].pkey, again[name].fkeys, again[name].time_col) == \
            (tab.pkey, tab.fkeys, tab.time_col)
    with pytest.raises(AssertionError, match="must not run"):   # a new seed is a new entry
        synthetic_hm_db(seed=1, scale=SCALE, cache_dir=tmp_path)
    monkeypatch.undo()
    synthetic_hm_db(seed=1, scale=SCALE, cache_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        path.name, path.name.replace("seed0", "seed1")]


def test_a_cached_database_without_ids_is_made_again(tmp_path):
    """A synthetic database cached before databases kept the files' ids is generated again
    (else predictions would report row positions instead of ids)."""
    db = synthetic_hm_db(seed=0, scale=SCALE, cache_dir=tmp_path)
    path = synthetic_cache_path(0, SCALE, tmp_path)
    save(Database(db.tables), path)  # as an older rdl wrote it: no ids
    assert load(path).keys == {}
    again = synthetic_hm_db(seed=0, scale=SCALE, cache_dir=tmp_path)
    assert again.keys.keys() == {"customer", "article"} == load(path).keys.keys()
    assert list(again.keys["customer"]) == list(db.keys["customer"])


def test_kaggle_files_are_read_once(frames, tmp_path, monkeypatch):
    """The checked database of a Kaggle folder is cached, with the files' original ids, and
    read again when a file changes."""
    write_kaggle(frames, tmp_path / "kaggle")
    first = load_hm("kaggle", path=tmp_path / "kaggle", cache_dir=tmp_path / "cache")
    [entry] = (tmp_path / "cache").iterdir()
    assert entry.name.startswith("kaggle-hm-") and (entry / "metadata.json").exists()

    def boom(folder):
        raise AssertionError("read_kaggle must not run while the files are unchanged")

    monkeypatch.setattr(rdl.data.kaggle, "read_kaggle", boom)
    again = load_hm("kaggle", path=tmp_path / "kaggle", cache_dir=tmp_path / "cache")
    for name, tab in first:
        pd.testing.assert_frame_equal(again[name].df, tab.df)
    assert again.keys.keys() == first.keys.keys() == {"customer", "article"}
    for name, keys in first.keys.items():
        assert keys.equals(again.keys[name])
    assert list(again.keys["customer"][:3]) == list(frames["customers"]["customer_id"][:3])
    tx = tmp_path / "kaggle" / "transactions_train.csv"
    tx.write_text(tx.read_text())  # rewritten: another modification time
    with pytest.raises(AssertionError, match="must not run while"):
        load_hm("kaggle", path=tmp_path / "kaggle", cache_dir=tmp_path / "cache")


def test_cache_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "env"))
    assert rdl.cache_dir() == tmp_path / "env"
    assert synthetic_cache_path(2, 0.5).parent == tmp_path / "env"
    assert synthetic_cache_path(2, 0.5).name.endswith("seed2-scale0.5")


def test_load_hm_sources(frames, tmp_path):
    db = load_hm("synthetic", seed=0, scale=SCALE, cache_dir=tmp_path / "cache")
    write_kaggle(frames, tmp_path / "kaggle")
    kaggle = load_hm("kaggle", path=tmp_path / "kaggle", cache_dir=False)
    save_like_relbench(kaggle, tmp_path / "relbench")
    relbench = load_hm("relbench", path=str(tmp_path / "relbench"))
    for name, tab in db:
        pd.testing.assert_frame_equal(kaggle[name].df, tab.df)
        pd.testing.assert_frame_equal(relbench[name].df, tab.df)
    with pytest.raises(DataError, match="unknown H&M source 'csv'"):
        load_hm("csv")
    with pytest.raises(DataError, match="needs a path"):
        load_hm("kaggle")
    with pytest.raises(DataError, match="no such folder"):
        load_hm("relbench", path=tmp_path / "missing")
