"""Times that would let a seed see its future (rdl/data/leaks.py), on a folder in the
shape of MySQL's Sakila export (tests/data/sakila_like.py): a rental's later
``return_date``, ``last_update`` change times, customers created after their rentals;
and the draft (rdl/data/draft.py) that declares them so that the folder loads as meant."""
from __future__ import annotations

import json
import logging

import pandas as pd
import pytest
import yaml

from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.sakila_like import write_sakila
from tests.data.test_folder import fails
from tests.data.test_implied import regression_task

#: the schema a person writes first: each table timed by its obvious column
SCHEMA = {"tables": {
    "language": {"pkey": "language_id", "stypes": {"last_update": "drop"}},
    "store": {"pkey": "store_id", "stypes": {"last_update": "drop"}},
    "film": {"pkey": "film_id", "fkeys": {"language_id": "language"},
             "stypes": {"last_update": "drop"}},
    "inventory": {"pkey": "inventory_id", "fkeys": {"film_id": "film", "store_id": "store"},
                  "stypes": {"last_update": "drop"}},
    "customer": {"pkey": "customer_id", "time": "create_date", "fkeys": {"store_id": "store"},
                 "stypes": {"last_update": "drop"}},
    "rental": {"pkey": "rental_id", "time": "rental_date",
               "fkeys": {"inventory_id": "inventory", "customer_id": "customer"},
               "stypes": {"last_update": "drop"}},
    "payment": {"pkey": "payment_id", "time": "payment_date",
                "fkeys": {"customer_id": "customer", "rental_id": "rental"},
                "stypes": {"last_update": "drop"}}}}


#: customers declared static, their times dropped (as the draft declares them)
STATIC = {"time": None, "stypes": {"last_update": "drop", "create_date": "drop"}}


def schema(**changes) -> dict:
    """SCHEMA with tables' entries updated (``rental={"stypes": {...}}``)."""
    out = json.loads(json.dumps(SCHEMA))
    for table, spec in changes.items():
        out["tables"][table].update(spec)
    return out


def test_a_column_of_later_times_stops_until_the_schema_says_what_it_is(tmp_path):
    folder = write_sakila(tmp_path / "sakila")
    rental = pd.read_csv(folder / "rental.csv")
    later = int((rental["return_date"] > rental["rental_date"]).sum())
    fails(folder, "rental.csv (table 'rental', column 'return_date')",
          f"{later} of {int(rental['return_date'].notna().sum())} rows", "rows 0, 1, 2",
          "leak of the future", "events: [return_date]", "stypes: {return_date: drop}",
          "stypes: {return_date: timestamp}", "time: return_date", schema=SCHEMA)
    stypes = {"last_update": "drop", "return_date": "drop"}
    db = load_folder(folder, schema(rental={"stypes": stypes}))
    assert db.stypes["rental"]["return_date"] is None    # dropped: no feature
    # but times still, for a task's SQL to compare with its seeds' (a label on returns),
    # from a parquet file's text too
    assert pd.api.types.is_datetime64_any_dtype(db["rental"].df["return_date"])
    pd.read_csv(folder / "rental.csv", dtype=str).to_parquet(folder / "rental.parquet")
    (folder / "rental.csv").rename(folder / "rental.csv.bak")
    db = load_folder(folder, schema(rental={"stypes": stypes}))
    assert pd.api.types.is_datetime64_any_dtype(db["rental"].df["return_date"])
    (folder / "rental.parquet").unlink()
    (folder / "rental.csv.bak").rename(folder / "rental.csv")
    stypes["return_date"] = "timestamp"                  # known ahead: kept, as a time
    db = load_folder(folder, schema(rental={"stypes": stypes}))
    assert pd.api.types.is_datetime64_any_dtype(db["rental"].df["return_date"])
    # a change time is one too: undeclared, last_update stops the load
    bare = schema(rental={"stypes": {"last_update": "drop", "return_date": "drop"}})
    del bare["tables"]["payment"]["stypes"]
    fails(folder, "(table 'payment', column 'last_update')", "the row's last change",
          schema=bare)


def test_a_few_later_times_are_no_leak_worth_stopping_for(tmp_path, caplog):
    folder = write_sakila(tmp_path / "sakila")
    rental = pd.read_csv(folder / "rental.csv")
    rental["return_date"] = rental["rental_date"]   # returned as rented ...
    rental.loc[3, "return_date"] = "2005-09-30 10:00:00"   # ... but one in 1,500
    rental.to_csv(folder / "rental.csv", index=False)
    with caplog.at_level(logging.INFO, logger="rdl.data.folder"):
        db = load_folder(folder, schema(customer=STATIC))
    assert len(db["rental"]) == 1500
    assert "(table 'rental', column 'return_date'): 1 of 1500 rows" in caplog.text


def test_rows_older_than_the_rows_they_reference_are_warned_of(tmp_path, caplog):
    """Sakila's customers were created on 2006-02-14, after their rentals of 2005: timed
    so, every rental loses its customer until then; declared static, none does."""
    folder = write_sakila(tmp_path / "sakila")
    stypes = {"last_update": "drop", "return_date": "drop"}
    with caplog.at_level(logging.WARNING):
        load_folder(folder, schema(rental={"stypes": stypes}))
    for fk in ("rental.csv (table 'rental', column 'customer_id')",
               "payment.csv (table 'payment', column 'customer_id')"):
        assert fk + ": 1500 of 1500 rows (100%) are older than the 'customer' row" in caplog.text
    assert "customer.create_date" in caplog.text and "declare it with no time" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_folder(folder, schema(rental={"stypes": stypes}, customer=STATIC))
    assert "older than" not in caplog.text


def test_a_few_rows_older_than_their_reference_are_only_logged(tmp_path, caplog):
    folder = write_sakila(tmp_path / "sakila")
    customer = pd.read_csv(folder / "customer.csv")
    customer["create_date"] = "2005-01-01 00:00:00"
    customer.loc[0, "create_date"] = "2005-06-01 00:00:00"   # one customer joins late
    customer.to_csv(folder / "customer.csv", index=False)
    rental = pd.read_csv(folder / "rental.csv")
    early = int(((rental["customer_id"] == 1)
                 & (rental["rental_date"] < "2005-06-01")).sum())
    assert 0 < early < 15   # under 1 % of 1,500
    stypes = {"last_update": "drop", "return_date": "drop"}
    with caplog.at_level(logging.INFO, logger="rdl.data.folder"):
        load_folder(folder, schema(rental={"stypes": stypes}))
    line = next(r for r in caplog.records if "(table 'rental', column 'customer_id')" in
                r.getMessage())
    assert line.levelno == logging.INFO and f": {early} of 1500 rows" in line.getMessage()


def test_the_draft_declares_the_times_as_they_are_and_loads_without_a_warning(tmp_path,
                                                                             caplog):
    folder = write_sakila(tmp_path / "sakila")
    text = draft(folder)
    tables = yaml.safe_load(text)["tables"]
    assert tables["rental"]["time"] == "rental_date"
    assert tables["payment"]["time"] == "payment_date"
    assert tables["rental"]["stypes"] == {"last_update": "drop"}
    assert tables["rental"]["events"] == ["return_date"]   # a table seeds see once returned
    for name in ("film", "inventory", "language", "store"):   # their only time: a change's
        assert "time" not in tables[name] and tables[name]["stypes"] == {"last_update": "drop"}
    assert "time" not in tables["customer"]   # created after its rentals: static
    assert tables["customer"]["stypes"] == {"last_update": "drop", "create_date": "drop"}
    assert "# time: create_date   # not declared: 100% of " in text
    (folder / "schema.yaml").write_text(text)
    with caplog.at_level(logging.WARNING):
        db = load_folder(folder)
    assert "older than" not in caplog.text and len(db["rental"]) == 1500


def test_the_draft_keeps_a_time_known_ahead_and_times_a_row_by_its_first(tmp_path):
    orders = pd.DataFrame({
        "order_id": [1, 2, 3], "customer_id": [7, 8, 7],
        "shipped_date": ["2024-01-04", "2024-01-06", None],
        "order_date": ["2024-01-02", "2024-01-03", "2024-01-05"],
        "required_date": ["2024-01-30", "2024-01-31", "2024-02-02"]})
    (tmp_path / "db").mkdir()
    orders.to_csv(tmp_path / "db" / "orders.csv", index=False)
    spec = yaml.safe_load(draft(tmp_path / "db"))["tables"]["orders"]
    assert spec["time"] == "order_date"   # of three dates, the one the others follow
    assert spec["stypes"] == {"required_date": "timestamp"}
    assert spec["events"] == ["shipped_date"]
    # without a key of its own for the events to reference, a later event is dropped
    orders.drop(columns="order_id").to_csv(tmp_path / "db" / "orders.csv", index=False)
    spec = yaml.safe_load(draft(tmp_path / "db"))["tables"]["orders"]
    assert spec["stypes"] == {"shipped_date": "drop", "required_date": "timestamp"}


RENTALS_SQL = """
SELECT s.timestamp, c.customer_id,
       (SELECT COUNT(*) FROM rental r WHERE r.customer_id = c.customer_id
          AND r.rental_date > s.timestamp AND r.rental_date <= s.timestamp + $window) AS rentals
FROM timestamps s, customer c
WHERE EXISTS (SELECT 1 FROM rental r WHERE r.customer_id = c.customer_id
              AND r.rental_date <= s.timestamp)
"""


@pytest.mark.parametrize("timed", [True, False])
def test_a_task_on_customers_says_why_its_split_is_empty_or_trains(tmp_path, timed):
    import rdl
    folder = write_sakila(tmp_path / "sakila")
    conf = tmp_path / "conf" / "task"
    conf.mkdir(parents=True)
    (conf / "customer-rentals.yaml").write_text(regression_task(
        "customer-rentals", "customer", "customer_id", "rentals", "2005-08-01", "2005-08-08"))
    (conf / "customer-rentals.sql").write_text(RENTALS_SQL)
    spec = yaml.safe_load(draft(folder))
    if timed:   # as the draft did before: customers from their create_date on
        spec["tables"]["customer"]["time"] = "create_date"
        del spec["tables"]["customer"]["stypes"]["create_date"]
    (folder / "schema.yaml").write_text(yaml.safe_dump(spec))
    cfg = rdl.config(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=customer-rentals",
                     f"task.sql={conf / 'customer-rentals.sql'}", "data=folder",
                     f"data.db.path={folder}")
    db, task = rdl.load_database(cfg), rdl.load_task(cfg)
    if not timed:
        assert len(task.split_table("train", db)) > 0
        return
    with pytest.raises(DataError) as e:
        task.split_table("train", db)
    assert "60 of the 60 'customer' rows begin after its last seed time" in str(e.value)
    assert "customer.create_date from 2006-02-14 22:04:36 on" in str(e.value)


def test_a_static_table_s_times_in_the_data_s_span_stop_unless_known_ahead(tmp_path):
    """A CRM's customers, static, with the date of their last order (a churn label for
    any seed before it) and their signup: every seed would see both. A birth date, a
    date dimension's days and a declared stype pass."""
    (tmp_path / "orders.csv").write_text(
        "order_id,customer_id,placed\n1,1,2024-01-03\n2,2,2024-02-01\n3,1,2024-03-05\n")
    (tmp_path / "customers.csv").write_text(
        "customer_id,born,last_order,signup\n1,1980-04-02,2024-03-05,2023-12-01\n"
        "2,1975-10-10,2024-02-01,2024-01-20\n")
    (tmp_path / "days.csv").write_text("day_id,day\n1,2024-01-03\n2,2024-01-04\n3,2024-01-05\n")
    tables = {"orders": {"pkey": "order_id", "time": "placed",
                         "fkeys": {"customer_id": "customers"}},
              "customers": {"pkey": "customer_id"}, "days": {"pkey": "day_id"}}
    fails(tmp_path, "customers.csv (table 'customers', column 'last_order'): 2 of 2 rows",
          "timed rows start 2024-01-03", "stypes: {last_order: drop}", "time: last_order",
          schema={"tables": tables})
    tables["customers"]["stypes"] = {"last_order": "drop"}
    fails(tmp_path, "(table 'customers', column 'signup'): 1 of 2 rows (50%)", "row 1)",
          schema={"tables": tables})
    tables["customers"]["time"] = "signup"
    db = load_folder(tmp_path, {"tables": tables})
    assert db["customers"].time_col == "signup" and "day" in db["days"].df
    # the draft declares them so: timed by the signup, the last order dropped
    spec = yaml.safe_load(draft(tmp_path))["tables"]
    assert spec["customers"]["time"] == "signup"
    assert spec["customers"]["stypes"] == {"last_order": "drop"}   # born: before signup


def shop(folder, orders: int = 200, customers: int = 30):
    """A shop's export: its customers with the totals it computed when exporting them
    (as Shopify's customers.csv has Total Orders and Total Spent), its orders."""
    import numpy as np
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    o = pd.DataFrame({"order_id": range(1, orders + 1),
                      "customer_id": rng.integers(1, customers + 1, orders),
                      "created_at": pd.Timestamp("2024-01-01") + pd.to_timedelta(
                          rng.uniform(0, 90, orders), unit="D"),
                      "total": rng.uniform(5, 100, orders).round(2),
                      "items": rng.integers(1, 4, orders)})
    o.to_csv(folder / "orders.csv", index=False)
    per = o.groupby("customer_id")
    c = pd.DataFrame({"customer_id": range(1, customers + 1), "city": "Lyon"})
    c["Total Orders"] = c["customer_id"].map(per.size()).fillna(0).astype(int)
    c["Total Spent"] = c["customer_id"].map(per["total"].sum()).fillna(0).round(2)
    c.to_csv(folder / "customers.csv", index=False)
    pd.DataFrame({"item_id": range(int(o["items"].sum())),
                  "order_id": o["order_id"].repeat(o["items"]).to_numpy()}).to_csv(
        folder / "items.csv", index=False)
    return {"tables": {
        "customers": {"pkey": "customer_id"},
        "orders": {"pkey": "order_id", "time": "created_at",
                   "fkeys": {"customer_id": "customers"}},
        "items": {"pkey": "item_id", "time": {"via": "order_id"},
                  "fkeys": {"order_id": "orders"}}}}


def test_totals_a_shop_computed_on_export_stop_until_declared(tmp_path):
    folder = tmp_path / "shop"
    spec = shop(folder)
    fails(folder, "customers.csv (table 'customers', column 'Total Orders'): in 30 of the 30",
          "equals the number of orders rows that reference it (orders.customer_id)",
          "stypes: {Total Orders: drop}", schema=spec)
    spec["tables"]["customers"]["stypes"] = {"Total Orders": "drop"}
    fails(folder, "(table 'customers', column 'Total Spent')", "the sum of orders.total",
          schema=spec)
    spec["tables"]["customers"]["stypes"]["Total Spent"] = "numerical"   # said: known then
    db = load_folder(folder, spec)
    # an order's count of its items is no leak: they come with it (its time)
    assert (db["orders"].df["items"].to_numpy() == pd.Series(
        db["items"].df["order_id"].to_numpy()).value_counts().sort_index().to_numpy()).all()


def test_averages_and_rates_a_shop_computed_on_export_stop_but_a_fixed_price_loads(tmp_path):
    """Besides counts and sums: a customer's average order and return rate (in percent)
    as exported; a product's price, equal to the mean price of its sales because it never
    changed, is no average of what came later and loads."""
    import numpy as np
    folder = tmp_path / "shop"
    spec = shop(folder)
    rng = np.random.default_rng(1)
    o = pd.read_csv(folder / "orders.csv")
    o["returned"] = rng.integers(0, 2, len(o))
    o["product_id"] = rng.integers(1, 11, len(o))
    o["unit_price"] = o["product_id"] * 2.5
    o.to_csv(folder / "orders.csv", index=False)
    per = o.groupby("customer_id")
    c = pd.read_csv(folder / "customers.csv").drop(columns=["Total Orders", "Total Spent"])
    c["Avg Order Value"] = c["customer_id"].map(per["total"].mean()).round(2)
    c["Return Rate"] = c["customer_id"].map(per["returned"].mean() * 100).round(1)
    c.to_csv(folder / "customers.csv", index=False)
    pd.DataFrame({"product_id": range(1, 11), "price": np.arange(1, 11) * 2.5}).to_csv(
        folder / "products.csv", index=False)
    spec["tables"]["products"] = {"pkey": "product_id"}
    spec["tables"]["orders"]["fkeys"]["product_id"] = "products"
    fails(folder, "(table 'customers', column 'Avg Order Value'): in 30 of the 30",
          "the mean of orders.total over them", "stypes: {Avg Order Value: drop}", schema=spec)
    spec["tables"]["customers"]["stypes"] = {"Avg Order Value": "drop"}
    fails(folder, "(table 'customers', column 'Return Rate')",
          "the share of them with orders.returned in percent", schema=spec)
    spec["tables"]["customers"]["stypes"]["Return Rate"] = "drop"
    db = load_folder(folder, spec)   # products.price: a fixed price, each sale's own
    assert db["products"].df["price"].tolist() == (np.arange(1, 11) * 2.5).tolist()
    # the draft drops both before the loader would stop on them, and keeps the price
    drafted = yaml.safe_load(draft(folder))["tables"]
    assert drafted["customers"]["stypes"] == {"Avg Order Value": "drop",
                                              "Return Rate": "drop"}
    assert "stypes" not in drafted["products"]
    assert len(load_folder(folder, {"tables": drafted})["customers"].df) == 30


def test_the_draft_drops_the_totals_the_loader_would_stop_on(tmp_path):
    folder = tmp_path / "shop"
    shop(folder)
    drafted = yaml.safe_load(draft(folder))["tables"]
    assert drafted["customers"]["stypes"] == {"Total Orders": "drop", "Total Spent": "drop"}
    db = load_folder(folder, {"tables": drafted})
    assert db.stypes["customers"] == {"Total Orders": None, "Total Spent": None}   # dropped


def test_a_dropped_column_reaches_neither_the_graph_nor_the_trees(tmp_path):
    """A schema's drop and data.stypes' null: the columns are gone from what the graph,
    LightGBM's features and the prior read (a dropped Total Orders was LightGBM's first
    feature before, scoring test AUROC 0.79 on orders with no signal); the task's SQL
    still reads them."""
    import rdl
    from rdl.api import data_settings
    from rdl.features.table import entity_features
    from rdl.preparation import graph_database
    folder, conf = tmp_path / "shop", tmp_path / "conf" / "task"
    spec = shop(folder)
    spec["tables"]["customers"]["stypes"] = {"Total Orders": "drop", "Total Spent": "drop"}
    (folder / "schema.yaml").write_text(yaml.safe_dump(spec))
    customers = pd.read_csv(folder / "customers.csv")
    customers.assign(visits=customers["customer_id"] % 7).to_csv(folder / "customers.csv",
                                                                 index=False)
    conf.mkdir(parents=True)
    (conf / "spent.yaml").write_text(regression_task("spent", "customers", "customer_id",
                                                     "spent", "2024-03-01", "2024-03-15"))
    (conf / "spent.sql").write_text(
        'SELECT s.timestamp, c.customer_id, c."Total Orders" + 0 * epoch($window) AS spent '
        "FROM timestamps s, customers c")
    cfg = rdl.config(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=spent",
                     f"task.sql={conf / 'spent.sql'}", "data=folder", f"data.db.path={folder}",
                     "+data.stypes.customers.visits=null")
    db, task = rdl.load_database(cfg), rdl.load_task(cfg)
    train = task.split_table("train", db)     # the SQL reads a dropped column
    assert (train["spent"] > 0).any()
    view, stypes = graph_database(task, db, data_settings(cfg))
    assert stypes["customers"] == {"Total Orders": None, "Total Spent": None, "visits": None}
    assert {"Total Orders", "Total Spent", "visits"} & set(view["customers"].df.columns) == set()
    assert "city" in view["customers"].df.columns and "Total Orders" in db["customers"].df
    splits = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    features = entity_features(task, view, train, task.history(splits))
    assert not [c for c in features.columns if "Total" in c or "visits" in c]


def star(folder, days: int = 150, sales: int = 3000):
    """A warehouse's star schema: sales dated only by their ``date_key`` into ``dim_date``
    (a row a day, surrogate keys 1, 2, ...), and customers."""
    import numpy as np
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    dates = pd.date_range("2023-01-01", periods=days)
    pd.DataFrame({"date_key": range(1, days + 1), "full_date": dates.strftime("%Y-%m-%d"),
                  "weekday": dates.day_name()}).to_csv(folder / "dim_date.csv", index=False)
    pd.DataFrame({"customer_key": range(1, 51), "segment": rng.choice(["a", "b"], 50)}).to_csv(
        folder / "dim_customer.csv", index=False)
    ordered = rng.integers(1, days - 29, sales)
    pd.DataFrame({"sale_id": range(10 ** 6, 10 ** 6 + sales),
                  "customer_key": rng.integers(1, 51, sales),
                  "date_key": ordered, "amount": rng.uniform(1, 100, sales).round(2),
                  "ship_date_key": ordered + rng.integers(0, 6, sales)}).to_csv(
        folder / "fact_sales.csv", index=False)
    lines = rng.integers(1, 4, sales)   # each sale's lines, numbered 1, 2, ...
    pd.DataFrame({"sale_id": np.repeat(np.arange(10 ** 6, 10 ** 6 + sales), lines),
                  "line_number": np.concatenate([np.arange(1, n + 1) for n in lines]),
                  "quantity": rng.integers(1, 5, int(lines.sum()))}).to_csv(
        folder / "fact_sale_lines.csv", index=False)
    return folder


def test_facts_dated_by_a_date_dimension_stop_static_and_load_through_the_calendar(tmp_path):
    """Left static, every seed would see every sale; the draft times them through the
    calendar, each sale at the end of its day (a seed at a day's start sees none of it).
    The day a sale ships, a key into the same calendar, would show a seed after the order
    when it ships where the calendar is static: it stops. Timed by its days (as drafted),
    the calendar shows a day's row once the day has come, and the key passes."""
    folder = star(tmp_path / "star")
    fkeys = {"customer_key": "dim_customer", "date_key": "dim_date"}
    tables = {"dim_date": {"pkey": "date_key"}, "dim_customer": {"pkey": "customer_key"},
              "fact_sales": {"pkey": "sale_id", "fkeys": fkeys,
                             "stypes": {"ship_date_key": "drop"}}}
    fails(folder, "fact_sales.csv (table 'fact_sales', column 'date_key'): references "
          "'dim_date', a calendar", "time: {column: date_key, calendar: {table: dim_date, "
          "period: date_key, start: full_date}}", schema={"tables": tables})
    tables["fact_sales"] = {"pkey": "sale_id", "fkeys": {
        "customer_key": "dim_customer", "ship_date_key": "dim_date"}, "time": {
        "column": "date_key", "calendar": {"table": "dim_date", "period": "date_key",
                                           "start": "full_date"}}}
    fails(folder, "(table 'fact_sales', column 'ship_date_key'): ", "reference a day of the "
          "calendar 'dim_date' after the row's own time", "(table 'dim_date': time: "
          "full_date)", schema={"tables": tables})
    drafted = yaml.safe_load(draft(folder))["tables"]
    assert drafted["dim_date"]["time"] == "full_date"   # its days seen as they come
    assert drafted["fact_sales"]["time"] == tables["fact_sales"]["time"]
    assert drafted["fact_sales"]["fkeys"] == {"customer_key": "dim_customer",
                                              "ship_date_key": "dim_date"}
    assert drafted["fact_sale_lines"]["time"] == {"via": "sale_id"}   # at their sale's time
    db = load_folder(folder, {"tables": drafted})
    lines, sales = db["fact_sale_lines"], db["fact_sales"]
    assert (lines.df[lines.time_col].to_numpy() == sales.df[sales.time_col].to_numpy()[
        lines.df["sale_id"].to_numpy(dtype="int64")]).all()
    raw = pd.read_csv(folder / "fact_sales.csv")
    day = pd.Timestamp("2023-01-01") + pd.to_timedelta(raw["date_key"] - 1, unit="D")
    order = db.keys["fact_sales"].to_numpy() - 10 ** 6   # each row's line of the file
    got = db["fact_sales"].df["date_key"].to_numpy()
    assert (got == (day + pd.Timedelta(days=1)).to_numpy()[order]).all()
