"""Keys without their table (issue 50): households that exist only as a foreign key of the
transactions, or in a table that covers a third of them, become entities with one schema
line (``implied: true``, or ``dangling: add``); a household task then covers every
household that shops, and a household is visible only from its first appearance."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.families.node import NodeTask
from rdl.features.table import entity_features

START = pd.Timestamp("2024-01-01")
VAL, TEST = pd.Timestamp("2024-02-05"), pd.Timestamp("2024-02-12")
W = pd.Timedelta("7D")
#: a household task: next week's baskets of each household that shopped last week
SQL = """
SELECT s.timestamp, h.household_key,
       (SELECT COUNT(DISTINCT t.basket_id) FROM transactions t
        WHERE t.household_key = h.household_key
          AND t.day > s.timestamp AND t.day <= s.timestamp + $window) AS baskets
FROM timestamps s, households h
WHERE EXISTS (SELECT 1 FROM transactions t WHERE t.household_key = h.household_key
              AND t.day > s.timestamp - $window AND t.day <= s.timestamp)
"""
FACTS = """\
  products: {pkey: product_id, stypes: {brand: categorical}}
  transactions: {time: day, fkeys: {household_key: households, product_id: products}}
"""
#: the one line that makes the households entities
ONLY_IN_FACTS = "tables:\n  households: {pkey: household_key, implied: true}\n" + FACTS


def transactions(seed: int = 0, n: int = 600, days: int = 30) -> pd.DataFrame:
    """Baskets of 30 households; household k starts shopping on day 1.5 k and shops over
    ``days`` days from then."""
    rng = np.random.default_rng(seed)
    hh = rng.integers(0, 30, n)
    day = START + pd.to_timedelta((1.5 * hh).astype(int) + rng.integers(0, days, n), "D")
    return pd.DataFrame({"basket_id": rng.integers(0, 200, n), "household_key": 1000 + hh,
                         "product_id": rng.integers(1, 6, n), "day": day,
                         "amount": rng.exponential(3.0, n).round(2)})


def write(folder, schema: str, tx: pd.DataFrame | None = None, demographic: int = 10) -> None:
    """The retail folder: transactions (CSV), products and, with ``demographic``, a static
    household table covering the first ``demographic`` households."""
    (transactions() if tx is None else tx).to_csv(folder / "transactions.csv", index=False)
    pd.DataFrame({"product_id": range(1, 6), "brand": list("abcab")}).to_parquet(
        folder / "products.parquet", index=False)
    if demographic:
        pd.DataFrame({"household_key": 1000 + np.arange(demographic),
                      "income": np.arange(demographic) * 10.0,
                      "owner": np.arange(demographic) % 2 == 0}).to_parquet(
            folder / "hh_demographic.parquet", index=False)
    (folder / "schema.yaml").write_text(schema)


def household_task(tmp_path, entity_table: str = "households") -> NodeTask:
    sql = tmp_path / "baskets.sql"
    sql.write_text(SQL.replace("households h", f"{entity_table} h"))
    return NodeTask(name="household-baskets", sql=str(sql), kind="regression",
                    entity_table=entity_table, entity_col="household_key",
                    target_col="baskets", window="7d", val_timestamp=str(VAL.date()),
                    test_timestamp=str(TEST.date()), monitor="mae", monitor_mode="min")


def shoppers(tx: pd.DataFrame, t: pd.Timestamp) -> set:
    """The households with a transaction in ``(t - 7d, t]``."""
    return set(tx.loc[(tx["day"] > t - W) & (tx["day"] <= t), "household_key"])


def test_households_only_in_the_facts_become_a_timed_table(tmp_path, caplog):
    from rdl.graph.build import make_graph
    tx = transactions()
    write(tmp_path, ONLY_IN_FACTS, tx, demographic=0)
    with caplog.at_level(logging.INFO, logger="rdl.data.folder"):
        db = load_folder(tmp_path)
    hh = db["households"]
    assert hh.time_col == "first_seen" and list(hh.df.columns) == ["household_key", "first_seen"]
    assert sorted(db.keys["households"]) == sorted(tx["household_key"].unique())
    first = tx.groupby("household_key")["day"].min()
    got = pd.Series(hh.df["first_seen"].to_numpy(), index=db.keys["households"])
    pd.testing.assert_series_equal(got.sort_index(), first.sort_index().astype("datetime64[ns]"),
                                   check_names=False)
    # every transaction keeps its household
    keys = db["transactions"].df["household_key"]
    assert keys.notna().all()
    assert (db.keys["households"][keys.astype(int)] == tx["household_key"].to_numpy()).all()
    assert "table 'households': 30 rows, one per key of transactions.household_key" in caplog.text
    assert "set to missing" not in caplog.text
    data, _ = make_graph(db, db.stypes)
    assert data["households"].num_nodes == 30 and "time" in data["households"]


@pytest.mark.parametrize("schema", [
    ONLY_IN_FACTS,
    # the partial table, completed: one word on it
    "tables:\n  households: {file: hh_demographic.parquet, pkey: household_key, implied: true}\n"
    + FACTS,
    # every referenced table completed
    "tables:\n  households: {file: hh_demographic.parquet, pkey: household_key}\n" + FACTS
    + "dangling: add\n",
], ids=["only-in-facts", "partial-implied", "dangling-add"])
def test_a_household_task_covers_every_household_that_shops(tmp_path, schema):
    tx = transactions()
    write(tmp_path, schema, tx)
    db = load_folder(tmp_path)
    task = household_task(tmp_path)
    labels = task.make_table(db, [VAL - W, VAL])
    for t in (VAL - W, VAL):
        at = labels[labels["timestamp"] == t]
        ids = db.keys["households"][at["household_key"].astype(int)]
        assert set(ids) == shoppers(tx, t) and len(ids) == len(set(ids))
        later = tx[(tx["day"] > t) & (tx["day"] <= t + W)]
        want = later.groupby("household_key")["basket_id"].nunique()
        assert (at["baskets"].to_numpy() == want.reindex(ids).fillna(0).to_numpy()).all()


def test_without_the_declaration_a_third_of_the_households_are_seen(tmp_path, caplog):
    """What the declaration fixes: the partial table alone (dangling: null) keys only its
    own households, and the warning says how many rows lose theirs and what to declare."""
    tx = transactions()
    write(tmp_path, "tables:\n  households: {file: hh_demographic.parquet, pkey: household_key}\n"
          + FACTS, tx)
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        db = load_folder(tmp_path)
    lost = int((tx["household_key"] >= 1010).sum())
    assert (f"{lost} of {len(tx)} rows ({100 * lost / len(tx):.3g}%) have a foreign key "
            "matching no 'households' row") in caplog.text
    assert "'implied: true' on table 'households'" in caplog.text
    labels = household_task(tmp_path).make_table(db, [VAL])
    seen = set(db.keys["households"][labels["household_key"].astype(int)])
    assert seen == {h for h in shoppers(tx, VAL) if h < 1010} != shoppers(tx, VAL)


def test_added_rows_hold_only_their_key(tmp_path, caplog):
    """A partial static table stays static; its added rows' other columns are missing; a
    partial product table is completed too (dangling: add)."""
    tx = transactions().assign(product_id=lambda d: d["product_id"].where(d.index % 7 > 0, 99))
    write(tmp_path, "tables:\n  households: {file: hh_demographic.parquet, pkey: household_key}\n"
          + FACTS + "dangling: add\n", tx)
    with caplog.at_level(logging.INFO, logger="rdl.data.folder"):
        db = load_folder(tmp_path)
    hh = db["households"]
    assert hh.time_col is None and len(hh) == 30
    income = pd.Series(hh.df["income"].to_numpy(), index=db.keys["households"])
    assert income.loc[1000:1009].tolist() == [k * 10.0 for k in range(10)]
    assert income.loc[1010:].isna().all()
    owner = pd.Series(hh.df["owner"].to_numpy(), index=db.keys["households"])
    assert owner.loc[1000:1001].tolist() == [1.0, 0.0] and owner.loc[1010:].isna().all()
    assert 99 in set(db.keys["products"]) and db["transactions"].df["product_id"].notna().all()
    assert ("20 rows added, with only their key, for the keys of transactions.household_key "
            "that match none of its 10 rows (dangling: add)") in caplog.text


def test_an_added_row_of_a_timed_table_is_timed_by_its_first_appearance(tmp_path):
    tx = transactions()
    write(tmp_path, "tables:\n  households: {file: hh.csv, pkey: household_key, time: joined, "
          "implied: true}\n" + FACTS, tx, demographic=0)
    pd.DataFrame({"household_key": [1000, 1001], "joined": ["2023-12-01", "2023-12-02"]}).to_csv(
        tmp_path / "hh.csv", index=False)
    db = load_folder(tmp_path)
    joined = pd.Series(db["households"].df["joined"].to_numpy(), index=db.keys["households"])
    first = tx.groupby("household_key")["day"].min()
    assert joined.loc[1000] == pd.Timestamp("2023-12-01")
    assert (joined.drop([1000, 1001]).sort_index() == first.drop([1000, 1001])).all()


def test_an_implied_row_is_not_visible_before_its_first_appearance(tmp_path):
    """Leak test: garbage in every transaction after the seed time (other households, new
    ones, other baskets) changes neither the database as known at the seed time nor the
    seeds' features; a household first seen after it is not there."""
    tx = transactions()
    (tmp_path / "a").mkdir()
    write(tmp_path / "a", ONLY_IN_FACTS, tx, demographic=0)
    db = load_folder(tmp_path / "a")
    task = household_task(tmp_path)
    for s in (START + 2 * W, VAL):
        late = tx["day"] > s
        garbage = tx.copy()
        garbage.loc[late, "household_key"] = 5000 + tx.loc[late, "household_key"][::-1].to_numpy()
        garbage.loc[late, "basket_id"] = -1
        garbage.loc[late, "amount"] = 1e6
        extra = garbage[late].assign(household_key=7777, day=s + pd.Timedelta("1s"))
        folder = tmp_path / f"garbage-{s.date()}"
        folder.mkdir()
        write(folder, ONLY_IN_FACTS, pd.concat([garbage, extra], ignore_index=True), 0)
        other = load_folder(folder)
        before, after = db.upto(s), other.upto(s)
        seen = tx.loc[~late, "household_key"].unique()
        assert sorted(db.keys["households"][:len(before["households"])]) == sorted(seen)
        assert not set(db.keys["households"][len(before["households"]):]) & set(seen)
        pd.testing.assert_frame_equal(before["households"].df, after["households"].df)
        pd.testing.assert_frame_equal(before["transactions"].df, after["transactions"].df)
        seeds = task.make_table(db.upto(s), [s - W])[["timestamp", "household_key"]]
        seeds["timestamp"] = s
        empty = pd.DataFrame({"timestamp": pd.Series(dtype="datetime64[ns]"),
                              "household_key": pd.Series(dtype="int64"),
                              "baskets": pd.Series(dtype="float64")})
        history = task.history({"train": empty, "val": empty})
        pd.testing.assert_frame_equal(entity_features(task, db, seeds, history),
                                      entity_features(task, other, seeds, history))
        assert len(seeds) > 0


@pytest.mark.parametrize("schema,message", [
    ("tables:\n  households: {pkey: household_key, implied: true}\n  products: {pkey: product_id}"
     "\n  transactions: {time: day, fkeys: {product_id: products}}\n",
     "table 'households' is implied: true, but no foreign key references it"),
    (ONLY_IN_FACTS.replace("implied: true", "implied: yes please"),
     "table 'households': implied 'yes please': true"),
    (ONLY_IN_FACTS.replace("pkey: household_key, implied", "implied"),
     "implied: true needs its pkey"),
    (ONLY_IN_FACTS.replace("implied: true", "implied: true, stypes: {income: numerical}"),
     "implied, with no file (households.parquet or .csv)"),
])
def test_bad_implied_schema(tmp_path, schema, message):
    write(tmp_path, schema, demographic=0)
    with pytest.raises(DataError, match="schema.yaml") as e:
        load_folder(tmp_path)
    assert message in str(e.value)


def test_keys_written_differently_are_not_added(tmp_path):
    """Keys written differently on each side match nothing: adding them all as rows would
    hide it, so it is the one error (the type mismatch) as without the declaration."""
    tx = transactions().assign(household_key=lambda d: "H" + d["household_key"].astype(str))
    write(tmp_path, "tables:\n  households: {file: hh_demographic.parquet, pkey: household_key, "
          "implied: true}\n" + FACTS, tx)
    with pytest.raises(DataError) as e:
        load_folder(tmp_path)
    assert "transactions.csv (table 'transactions', column 'household_key'): none of its" in str(
        e.value) and "the types differ: text here, whole numbers there" in str(e.value)



def test_a_key_in_a_static_table_is_there_from_the_first_time(tmp_path):
    """A household only a static table names (a campaign list) is known all along: its
    first appearance is the database's first time."""
    tx = transactions()
    write(tmp_path, ONLY_IN_FACTS + "  campaigns: {fkeys: {household_key: households}}\n", tx,
          demographic=0)
    pd.DataFrame({"household_key": [1003, 4242], "campaign": ["A", "B"]}).to_csv(
        tmp_path / "campaigns.csv", index=False)
    db = load_folder(tmp_path)
    first = pd.Series(db["households"].df["first_seen"].to_numpy(), index=db.keys["households"])
    assert first.loc[4242] == tx["day"].min() and len(first) == 31
    assert first.loc[1003] == tx["day"].min() < tx.loc[tx["household_key"] == 1003, "day"].min()


def test_an_implied_table_with_no_key_at_all(tmp_path):
    write(tmp_path, ONLY_IN_FACTS, transactions().assign(household_key=None), demographic=0)
    with pytest.raises(DataError, match="table 'households' is implied: true, with no file, but "
                       "transactions.household_key hold no key: it would be empty"):
        load_folder(tmp_path)


def regression_task(name: str, table: str, entity: str, target: str, val: str,
                    test: str) -> str:
    """A weekly regression task's YAML, its SQL in ``<name>.sql`` beside it."""
    return f"""\
_target_: rdl.families.node.NodeTask
name: {name}
sql: {name}.sql
kind: regression
entity_table: {table}
entity_col: "{entity}"
target_col: {target}
window: 7d
val_timestamp: "{val}"
test_timestamp: "{test}"
monitor: mae
monitor_mode: min
metrics:
  mae: {{_target_: torchmetrics.MeanAbsoluteError}}
"""


TASK_YAML = regression_task("household-baskets", "households", "household_key", "baskets",
                            "2024-04-01", "2024-04-08")


def test_a_household_task_trains_on_a_folder_whose_households_are_only_keys(tmp_path,
                                                                            run_train):
    """The acceptance run: python -m rdl.train on the folder (one schema line names the
    households), the task's YAML and SQL in a config folder of the user's."""
    import json
    folder, conf = tmp_path / "retail", tmp_path / "conf" / "task"
    folder.mkdir()
    conf.mkdir(parents=True)
    write(folder, ONLY_IN_FACTS, transactions(n=4000, days=120), demographic=0)
    (conf / "household-baskets.yaml").write_text(TASK_YAML)
    (conf / "household-baskets.sql").write_text(SQL)
    run = tmp_path / "run"
    out = run_train(run, f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
                    "task=household-baskets", "data=folder", f"data.db.path={folder}",
                    "data.batch_size=16", "data.num_neighbors=[8,4]", "model.channels=8",
                    "model.encoder_layers=1", "trainer.max_epochs=1",
                    "trainer.limit_train_batches=2", "trainer.limit_val_batches=1",
                    "compile.enabled=false", tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run / "metrics.json").read_text())
    assert results["task"] == "household-baskets"
    assert np.isfinite(results["model"]["test"]["mae"])
    assert "table 'households': 30 rows, one per key of transactions.household_key" in (
        out.stdout + out.stderr)
