"""Tables that take their time from the rows they reference (``time: {via: fkey}``,
rdl/data/inherit.py), on a folder in the shape of the Olist export
(tests/data/olist_like.py), whose items and payments hold no time of their own, and the
draft that declares it (rdl/data/draft.py)."""
from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.olist_like import write_olist
from tests.data.test_folder import fails
from tests.data.test_implied import regression_task

ORDERS, ITEMS, PAYMENTS = ("olist_orders_dataset", "olist_order_items_dataset",
                           "olist_order_payments_dataset")


@pytest.fixture(scope="module")
def olist_drafted(tmp_path_factory):
    """The Olist-shaped folder and its draft, written once (drafting reads every file)."""
    folder = write_olist(tmp_path_factory.mktemp("olist") / "olist")
    return folder, draft(folder)


@pytest.fixture()
def olist(olist_drafted, tmp_path):
    """A copy of the Olist-shaped folder and its drafted schema (a dict), each test's own."""
    import shutil
    folder = shutil.copytree(olist_drafted[0], tmp_path / "olist")
    return folder, yaml.safe_load(olist_drafted[1])


def test_the_draft_times_items_and_payments_by_their_order_and_names_keys_as_exports_do(
        olist):
    _, spec = olist
    tables = spec["tables"]
    assert tables[ITEMS]["time"] == {"via": "order_id"}
    assert tables[PAYMENTS]["time"] == {"via": "order_id"}
    # order_id is the orders' key (their name claims it), a foreign key of the others
    assert tables[ORDERS]["pkey"] == "order_id" and "pkey" not in tables[PAYMENTS]
    for name in (ITEMS, PAYMENTS, "olist_order_reviews_dataset"):
        assert tables[name]["fkeys"]["order_id"] == ORDERS
    assert tables[ITEMS]["stypes"] == {"shipping_limit_date": "timestamp"}   # a deadline
    reviews = tables["olist_order_reviews_dataset"]
    assert reviews["time"] == "review_creation_date"   # its creation, not its answer
    assert reviews["stypes"] == {"review_answer_timestamp": "drop"}
    assert tables[ORDERS]["stypes"] == {"order_estimated_delivery_date": "timestamp"}
    assert tables[ORDERS]["events"] == [   # tables of their own, seen once they happened
        "order_approved_at", "order_delivered_carrier_date", "order_delivered_customer_date"]


def test_each_row_takes_the_time_of_the_row_it_references(olist, caplog):
    folder, spec = olist
    with caplog.at_level(logging.WARNING):
        db = load_folder(folder, spec)
    assert caplog.text == ""
    items, orders = db[ITEMS], db[ORDERS]
    assert items.time_col == "order_purchase_timestamp"
    order = items.df["order_id"].to_numpy(dtype="int64")
    assert (items.df[items.time_col].to_numpy()
            == orders.df[orders.time_col].to_numpy()[order]).all()
    raw = pd.read_csv(folder / f"{ITEMS}.csv")
    assert len(items.df) == len(raw)
    # a seed before an order sees none of its items (the database as known then)
    t = orders.df[orders.time_col].sort_values().iloc[100]
    known = db.upto(t)
    assert len(known[ITEMS]) == int((items.df[items.time_col] <= t).sum()) < len(raw)
    # undeclared, a deadline after the order's time stops the load, as a column of the
    # table's own time would
    del spec["tables"][ITEMS]["stypes"]
    fails(folder, f"(table '{ITEMS}', column 'shipping_limit_date')", "100%", schema=spec)


def test_the_time_may_be_named_and_taken_in_turn(tmp_path):
    (tmp_path / "orders.csv").write_text("order_id,placed\n1,2024-01-02\n2,2024-01-05\n")
    (tmp_path / "items.csv").write_text("item_id,order_id,qty\n10,1,3\n11,2,1\n12,2,4\n")
    (tmp_path / "returns.csv").write_text("item_id,reason\n10,size\n12,colour\n")
    db = load_folder(tmp_path, {"tables": {
        "orders": {"pkey": "order_id", "time": "placed"},
        "items": {"pkey": "item_id", "time": {"via": "order_id", "column": "ordered"},
                  "fkeys": {"order_id": "orders"}},
        "returns": {"time": {"via": "item_id"}, "fkeys": {"item_id": "items"}}}})
    assert db["items"].df["ordered"].dt.day.tolist() == [2, 5, 5]
    assert db["returns"].time_col == "ordered"
    assert db["returns"].df["ordered"].dt.day.tolist() == [2, 5]


def write_small(folder, items: str = "item_id,order_id\n10,1\n11,2\n12,\n13,9\n"):
    (folder / "orders.csv").write_text("order_id,placed\n1,2024-01-02\n2,2024-01-05\n")
    (folder / "items.csv").write_text(items)
    (folder / "brands.csv").write_text("brand_id\n1\n")


def schema(time=None, **tables) -> dict:
    out = {"tables": {"orders": {"pkey": "order_id", "time": "placed"},
                      "brands": {"pkey": "brand_id"},
                      "items": {"pkey": "item_id", "fkeys": {"order_id": "orders"},
                                "time": time or {"via": "order_id"}}}}
    for name, spec in tables.items():
        out["tables"][name].update(spec)
    return json.loads(json.dumps(out))


def test_rows_with_no_row_to_take_a_time_from_stop_or_are_dropped(tmp_path, caplog):
    write_small(tmp_path)
    fails(tmp_path, "items.csv (table 'items', column 'order_id'): 2 of 4 rows",
          "missing (1) or matches no row (1; rows 2, 3)", "dangling: drop", schema=schema())
    with caplog.at_level(logging.WARNING):
        db = load_folder(tmp_path, schema(), dangling="drop")
    assert db.keys["items"].tolist() == [10, 11]
    assert "2 of 4 rows match no 'orders' row: dropped, having no time" in caplog.text


def test_what_a_time_is_taken_from_is_checked_before_any_file_is_read(tmp_path):
    write_small(tmp_path, "item_id,order_id,brand_id\n10,1,1\n11,2,1\n")
    items = {"fkeys": {"order_id": "orders", "brand_id": "brands"}}
    fails(tmp_path, "table 'items': time {via: qty}", "none of its foreign keys",
          schema=schema({"via": "qty"}, items=items))
    fails(tmp_path, "time {via: brand_id}: table 'brands' has no time to take",
          "a static table", schema=schema({"via": "brand_id"}, items=items))
    fails(tmp_path, "take their times from each other (orders -> items -> orders)",
          schema=schema(orders={"time": {"via": "first_item"},
                                "fkeys": {"first_item": "items"}}))
    fails(tmp_path, "time {'via': 'order_id', 'at': 'end'}", "{via: <foreign key>}",
          schema=schema({"via": "order_id", "at": "end"}))
    (tmp_path / "items.csv").write_text("item_id,order_id,placed\n10,1,2024-01-01\n")
    fails(tmp_path, "(table 'items', column 'placed'): the file has a column 'placed'",
          "column: <a new name>", schema=schema())


def test_a_task_trains_on_items_timed_by_their_orders(olist, tmp_path, run_train):
    folder, spec = olist
    (folder / "schema.yaml").write_text(yaml.safe_dump(spec))
    conf = tmp_path / "conf" / "task"
    conf.mkdir(parents=True)
    orders = pd.read_csv(folder / f"{ORDERS}.csv")["order_purchase_timestamp"]
    val = (pd.Timestamp(orders.max()) - pd.Timedelta(days=21)).strftime("%Y-%m-%d")
    test = (pd.Timestamp(orders.max()) - pd.Timedelta(days=14)).strftime("%Y-%m-%d")
    (conf / "product-sales.yaml").write_text(regression_task(
        "product-sales", "olist_products_dataset", "product_id", "sales", val, test))
    (conf / "product-sales.sql").write_text(f"""
SELECT s.timestamp, p.product_id,
       (SELECT COUNT(*) FROM {ITEMS} i WHERE i.product_id = p.product_id
          AND i.order_purchase_timestamp > s.timestamp
          AND i.order_purchase_timestamp <= s.timestamp + $window) AS sales
FROM timestamps s, olist_products_dataset p
""")
    run = tmp_path / "run"
    out = run_train(run, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=product-sales",
                    "data=folder", f"data.db.path={folder}", "compile.enabled=false")
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run / "metrics.json").read_text())
    assert np.isfinite(results["model"]["test"]["mae"])


def test_the_draft_leaves_rows_that_may_come_later_to_a_person(tmp_path):
    """A user's logins come after the signup, each at a time the file does not hold:
    taking the signup's time would show a seed logins from its future."""
    (tmp_path / "users.csv").write_text("user_id,signup\n1,2024-01-02\n2,2024-01-05\n")
    (tmp_path / "logins.csv").write_text("user_id,device\n1,ios\n1,web\n2,ios\n1,ios\n")
    text = draft(tmp_path)
    assert "time" not in yaml.safe_load(text)["tables"]["logins"]
    assert "    # time: {via: user_id}   # no time of its own: if its rows begin with the users " \
           "row they reference" in text


CUSTOMERS = "olist_customers_dataset"


def test_a_row_per_order_is_seen_from_its_order_on_and_so_is_the_person_behind_it(olist,
                                                                                 caplog):
    """Olist's customers hold a row per order, with no time: static, a seed would see the
    rows of a person's later orders (how many orders it will place: a repeat-purchase
    task's label). Seen in the orders, each row exists from its order's time, and the
    persons the rows imply from their first order's."""
    folder, spec = olist
    assert spec["tables"][CUSTOMERS]["time"] == {"seen_in": ORDERS}
    # the persons, drafted as the table implied: true of their repeated ids
    assert spec["tables"][CUSTOMERS]["fkeys"] == {"customer_unique_id": "customer_uniques"}
    spec["tables"]["persons"] = spec["tables"].pop("customer_uniques")
    spec["tables"][CUSTOMERS]["fkeys"] = {"customer_unique_id": "persons"}
    db = load_folder(folder, spec)
    customers, orders, persons = db[CUSTOMERS], db[ORDERS], db["persons"]
    assert customers.time_col == "first_seen" and persons.time_col == "first_seen"
    placed = pd.Series(orders.df[orders.time_col].to_numpy(),
                       index=orders.df["customer_id"].to_numpy())
    assert (customers.df["first_seen"] == placed.sort_index().to_numpy()).all()
    t = orders.df[orders.time_col].sort_values().iloc[300]
    known = db.upto(t)
    assert len(known[CUSTOMERS]) == len(known[ORDERS]) == 301
    # a person exists from the first of its orders
    raw = pd.read_csv(folder / f"{CUSTOMERS}.csv").merge(
        pd.read_csv(folder / f"{ORDERS}.csv"), on="customer_id")
    first = pd.to_datetime(raw.groupby("customer_unique_id")["order_purchase_timestamp"].min())
    assert len(known["persons"]) == int((first <= t).sum()) < len(persons)
    # left static, the rows are loaded as they were, with a warning naming the fix
    static = json.loads(json.dumps(spec))
    del static["tables"][CUSTOMERS]["time"]
    with caplog.at_level(logging.WARNING):
        assert db.keys[CUSTOMERS].size == load_folder(folder, static)[CUSTOMERS].df.shape[0]
    assert (f"(table '{CUSTOMERS}'): no time, but 600 of its 600 rows are each referenced by "
            f"one '{ORDERS}' row ({ORDERS}.customer_id)") in caplog.text
    assert f"declare time: {{seen_in: {ORDERS}}}" in caplog.text
    caplog.clear()
    # a customer no order references has no time: dropped, with a warning
    extra = pd.read_csv(folder / f"{CUSTOMERS}.csv")
    extra = pd.concat([extra, extra.iloc[:2].assign(customer_id=["c1", "c2"])])
    extra.to_csv(folder / f"{CUSTOMERS}.csv", index=False)
    with caplog.at_level(logging.WARNING):
        db = load_folder(folder, spec)
    assert len(db[CUSTOMERS]) == 600
    assert f"2 of 602 rows are referenced by no row of {ORDERS}: dropped" in caplog.text


def test_a_time_seen_in_tables_is_checked_before_any_file_is_read(tmp_path):
    write_small(tmp_path, "item_id,order_id,brand_id\n10,1,1\n11,2,1\n")
    items = {"fkeys": {"order_id": "orders", "brand_id": "brands"}}
    fails(tmp_path, "table 'brands': time {seen_in: ['orders']}",
          "table 'orders' holds no foreign key of one column to 'brands'",
          schema=schema(items=items, brands={"time": {"seen_in": "orders"}}))
    fails(tmp_path, "no table 'order'", schema=schema(
        items=items, brands={"time": {"seen_in": ["items", "order"]}}))
    fails(tmp_path, "{via: <foreign key>}", schema=schema(
        items=items, brands={"time": {"seen_in": "items", "via": "x"}}))
    db = load_folder(tmp_path, schema(items=items, brands={
        "time": {"seen_in": "items", "column": "launched"}}))
    assert db["brands"].df["launched"].dt.day.tolist() == [2]   # its first item's order's


def write_show(folder):
    """A TV contest as R's ``bakeoff`` package exports it: series (premiere), each
    episode's ratings keyed by ``(series, episode)`` with its air date, the episodes keyed
    alike with no time, the bakers keyed by ``(series, baker)``, whose first appearance is
    missing for the last series, and a challenge per baker and episode, with no time."""
    folder.mkdir()
    premieres = pd.to_datetime(["2010-08-17", "2011-08-14", "2012-08-14"])
    series = pd.DataFrame({"series": [1, 2, 3], "premiere": premieres})
    eps = [(s, e) for s in (1, 2, 3) for e in range(1, 5)]
    air = [premieres[s - 1] + pd.Timedelta(weeks=e - 1) for s, e in eps]
    ratings = pd.DataFrame({"series": [s for s, _ in eps], "episode": [e for _, e in eps],
                            "uk_airdate": air, "viewers": np.arange(len(eps)) / 2})
    episodes = pd.DataFrame({"series": [s for s, _ in eps], "episode": [e for _, e in eps],
                             "bakers_out": [1] * len(eps)})
    bakers = pd.DataFrame([(s, b, premieres[s - 1] if s < 3 else None, 30 + b)
                           for s in (1, 2, 3) for b in range(4)],
                          columns=["series", "baker", "first_appeared", "age"])
    bakers["baker"] = [f"b{s}{b}" for s, b in zip(bakers["series"], bakers["baker"])]
    challenges = pd.DataFrame([(s, e, f"b{s}{b}", "IN") for s, e in eps for b in range(4)
                               if b < 5 - e], columns=["series", "episode", "baker", "result"])
    for name, df in dict(series=series, ratings=ratings, episodes=episodes, bakers=bakers,
                         challenges=challenges).items():
        df.to_csv(folder / f"{name}.csv", index=False)
    return folder, ratings, challenges


def test_tables_keyed_alike_times_through_a_composite_key_and_a_time_with_gaps(tmp_path):
    """The draft of such an export loads as written: the episodes take the air date of
    their ratings row (a composite foreign key that is their own key), one link between
    the two tables; the bakers, whose own time is missing in some rows, the premiere of
    their series; the challenges' time through their episode is left to a person."""
    folder, ratings, challenges = write_show(tmp_path / "show")
    text = draft(folder)
    tables = yaml.safe_load(text)["tables"]
    assert tables["episodes"]["time"] == {"via": "series, episode"}
    assert tables["episodes"]["fkeys"]["series, episode"] == "ratings"
    assert "series, episode" not in tables["ratings"]["fkeys"]   # one link is enough
    assert '# "series, episode": episodes: one to one with episodes' in text
    assert tables["bakers"]["time"] == {"via": "series"}
    assert "its first_appeared is missing in 4 of 12 rows (the loader stops)" in text
    assert "    # time: {via: \"series, episode\"}   # no time of its own: if its rows begin " \
           "with the ratings row" in text
    (folder / "schema.yaml").write_text(text.replace('    # time: {via: "series, episode"}',
                                                     '    time: {via: "series, episode"}'))
    db = load_folder(folder)
    # each episode at its air date, each challenge at its episode's
    aired = dict(zip(ratings["series"].astype(str) + "|" + ratings["episode"].astype(str),
                     ratings["uk_airdate"]))
    for name, df in (("episodes", ratings), ("challenges", challenges)):
        t = db[name]
        got = t.df.sort_values(t.time_col)[t.time_col].tolist()
        assert got == sorted(aired[f"{s}|{e}"] for s, e in zip(df["series"], df["episode"]))
    # the episodes' key and the foreign key to their ratings name the same episode
    e = db["episodes"]
    assert e.fkeys["series, episode (ratings)"] == "ratings"
    assert list(db.keys["ratings"][e.df["series, episode (ratings)"].to_numpy()]) == \
        list(db.keys["episodes"][e.df["series, episode"].to_numpy()])
