"""rdl.data.stored.save / load (rdl's database cache): the tables as Arrow IPC files, equal to
what was saved, dtypes included; the rows' digest stored with them and handed on only
while the tables keep the shape they were saved with; older parquet saves still load."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rdl.data import digest as rows
from rdl.data.database import Database, Table
from rdl.data.stored import DIGEST_FILE, load, save


def small() -> Database:
    users = pd.DataFrame({"user_id": range(4), "name": ["a", None, "c", "d"],
                          "age": pd.array([30, None, 41, 22], dtype="Int64"),
                          "joined": pd.to_datetime(["2020-01-01", "2020-02-01",
                                                    "2020-03-01", "2020-04-01"])})
    orders = pd.DataFrame({"user_id": pd.array([0, 1, None, 3, 3], dtype="Int64"),
                           "price": [1.5, np.nan, 2.0, 3.25, 0.0],
                           "t": pd.to_datetime(["2020-05-01"] * 5),
                           "paid": [True, False, True, True, False]})
    return Database({"users": Table(users, "user_id", {}, "joined"),
                     "orders": Table(orders, None, {"user_id": "users"}, "t")},
                    keys={"users": pd.Index(["u7", "u3", "u9", "u1"])})


def test_saved_and_loaded_the_same_with_its_digest(tmp_path):
    db = small()
    save(db, tmp_path / "db")
    assert sorted(p.name for p in (tmp_path / "db").iterdir()) == [
        DIGEST_FILE, "metadata.json", "orders.arrow", "users.arrow", "users.keys.arrow"]
    loaded = load(tmp_path / "db")
    for name, tab in db:
        pd.testing.assert_frame_equal(loaded[name].df, tab.df, check_exact=True)
    pd.testing.assert_index_equal(loaded.keys["users"], db.keys["users"], check_names=False)
    # the stored digest is the digest of the rows loaded, and no row is hashed for it
    assert loaded.stored_digest[0] == rows.rows_digest(loaded) == db.digest()
    assert loaded.digest() == loaded.stored_digest[0]


def test_a_changed_database_is_hashed_again(tmp_path, monkeypatch):
    save(small(), tmp_path / "db")
    loaded = load(tmp_path / "db")
    stored = loaded.digest()
    cut = loaded.upto("2020-02-15")            # another database: hashed, another digest
    assert cut.stored_digest is None and cut.digest() != stored
    orders = loaded["orders"]                  # a table replaced with fewer rows
    loaded.tables["orders"] = Table(orders.df.head(3), None, orders.fkeys, orders.time_col)
    assert loaded.digest() == rows.rows_digest(loaded) != stored
    for value in ({"version": rows.ROWS_VERSION + 1, "digest": "x"}, "not json"):
        (tmp_path / "db" / DIGEST_FILE).write_text(json.dumps(value) if isinstance(
            value, dict) else value)
        assert load(tmp_path / "db").stored_digest is None   # hashed when asked
    (tmp_path / "db" / DIGEST_FILE).unlink()
    assert load(tmp_path / "db").digest() == stored


def test_a_value_changes_the_digest():
    db = small()
    before = rows.rows_digest(db)
    db["orders"].df.loc[1, "price"] = 9.0
    assert rows.rows_digest(db) != before
    db = small()
    db.keys["users"] = pd.Index(["u7", "u3", "u9", "u2"])
    assert rows.rows_digest(db) != before


def test_an_older_parquet_save_still_loads(tmp_path):
    """rdl saved its database cache as parquet before: such a folder loads, the same
    frames, its digest hashed (it has none stored)."""
    db = small()
    folder = tmp_path / "old"
    folder.mkdir()
    for name, tab in db:
        tab.df.to_parquet(folder / f"{name}.parquet", index=False)
    pd.DataFrame({"key": db.keys["users"]}).to_parquet(folder / "users.keys.parquet",
                                                       index=False)
    (folder / "metadata.json").write_text(json.dumps({n: t.meta() for n, t in db}))
    loaded = load(folder)
    for name, tab in db:
        pd.testing.assert_frame_equal(loaded[name].df, tab.df, check_exact=True)
    assert loaded.stored_digest is None and loaded.digest() == db.digest()


def test_a_missing_table_file_is_named(tmp_path):
    save(small(), tmp_path / "db")
    (tmp_path / "db" / "orders.arrow").unlink()
    with pytest.raises(Exception, match=r"orders.arrow: missing, but .*lists table 'orders'"):
        load(tmp_path / "db")


def test_a_table_is_saved_in_one_piece(tmp_path):
    """One record batch a table, whatever its rows (pandas joins pieces one by one)."""
    import pyarrow.feather as feather
    n = 200_000   # over pyarrow's default batch of 64k rows
    db = Database({"t": Table(pd.DataFrame({"i": pd.array(range(n), dtype="Int64"),
                                            "x": np.arange(n) * 0.5}), "i")})
    save(db, tmp_path / "db")
    table = feather.read_table(tmp_path / "db" / "t.arrow")
    assert [table.column(c).num_chunks for c in ("i", "x")] == [1, 1]
    pd.testing.assert_frame_equal(load(tmp_path / "db")["t"].df, db["t"].df)


def test_a_loaded_table_reads_its_rows_when_first_asked_for(tmp_path):
    """A loaded table (StoredTable) knows its layout, length and feature columns from the
    saved digest, reads one column alone, and reads its rows only when ``df`` is asked
    for: then the rows saved. The digest is the stored one throughout, with no row read;
    it pickles unread (a loader worker, a DDP process) and reads its rows there."""
    import pickle

    from rdl.data.stored import StoredTable

    db = small()
    save(db, tmp_path / "db")
    loaded = load(tmp_path / "db")
    users = loaded["users"]
    assert isinstance(users, StoredTable) and not users.read
    assert len(users) == 4 and users.feature_cols == ["name", "age", "joined"]
    assert users.layout() == db["users"].layout()
    pd.testing.assert_series_equal(users.column("age"), db["users"].df["age"])
    assert loaded.digest() == db.digest() and "rows=4" in repr(users)
    assert not any(t.read for _, t in loaded)
    again = pickle.loads(pickle.dumps(loaded))
    assert not any(t.read for _, t in again)
    for name, tab in db:
        pd.testing.assert_frame_equal(again[name].df, tab.df, check_exact=True)
    pd.testing.assert_frame_equal(users.df, db["users"].df, check_exact=True)
    assert users.read and not loaded["orders"].read
    assert loaded.digest() == db.digest()        # read, the same layout: still the stored one


def test_a_file_changed_since_the_save_is_caught_at_its_read(tmp_path):
    """The layout a loaded table reports before its rows are read is the saved one; a
    file replaced since (another table's rows) shows another layout when read, and the
    stored digest is then no longer handed on."""
    from rdl.data.stored import write_table

    save(small(), tmp_path / "db")
    loaded = load(tmp_path / "db")
    stored = loaded.digest()
    write_table(small()["orders"].df.head(2), tmp_path / "db" / "orders.arrow")
    assert len(loaded["orders"].df) == 2
    assert loaded.digest() != stored


def test_released_rows_are_read_again_when_asked_for(tmp_path):
    """``Database.release``: the rows of the tables read from the cache are dropped and
    read again, the same, when next asked for; a table not from the cache keeps its rows."""
    from rdl.data.stored import cached_database

    made = cached_database(tmp_path / "db", small)     # made, saved: its rows in memory
    assert all(t.read for _, t in made)
    made.release()
    assert not any(t.read for _, t in made)
    for name, tab in small():
        pd.testing.assert_frame_equal(made[name].df, tab.df, check_exact=True)
    plain = small()
    plain.release()
    assert len(plain["users"].df) == 4


@pytest.mark.parametrize("order", ["sorted", "shuffled", "missing time"])
def test_upto_keeps_the_rows_up_to_t_and_shares_a_sorted_table_s(order):
    """``Table.upto(t)``: the rows with time <= t, in their order, whatever the table's
    order; a table in time order gives a slice that shares its rows (no copy)."""
    rng = np.random.default_rng(0)
    times = pd.Series(pd.to_datetime("2020-01-01") + pd.to_timedelta(
        np.sort(rng.integers(0, 100, 1000)), unit="D"))
    if order == "shuffled":
        times = times.sample(frac=1, random_state=1).reset_index(drop=True)
    if order == "missing time":
        times = times.mask(pd.Series(rng.random(1000) < 0.05))
    tab = Table(pd.DataFrame({"t": times, "x": np.arange(1000.0)}), time_col="t")
    for t in ("2019-12-31", "2020-01-01", "2020-02-15", "2020-04-09", "2030-01-01"):
        got = tab.upto(pd.Timestamp(t))
        want = tab.df[tab.df["t"] <= pd.Timestamp(t)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got.df, want, check_exact=True)
        if order == "sorted" and len(want):
            assert np.shares_memory(got.df["x"].to_numpy(), tab.df["x"].to_numpy())
