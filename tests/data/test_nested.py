"""Tables nested in a column of lists (an order's ``line_items`` as Shopify's and
``mongoexport``'s JSON holds them, a BigQuery ``REPEATED RECORD`` in parquet): a row per
element, keyed to the row holding it and timed as it (rdl.data.nested)."""
from __future__ import annotations

import json
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails

ORDERS = [
    {"id": 1, "customer_id": 10, "created_at": "2024-01-01T10:00:00Z",
     "line_items": [{"id": 100, "product_id": 5, "quantity": 2, "price": "9.50"},
                    {"id": 101, "product_id": 6, "quantity": 1, "price": "3.00"}],
     "tags": ["gift", "web"]},
    {"id": 2, "customer_id": 11, "created_at": "2024-01-05T11:00:00Z", "line_items": [],
     "tags": []},
    {"id": 3, "customer_id": 10, "created_at": "2024-01-09T12:00:00Z",
     "line_items": [{"id": 102, "product_id": 5, "quantity": 1, "price": "9.50",
                     "discount": {"code": "X", "amount": 1.0}}], "tags": ["web"]},
]
SCHEMA = {"tables": {
    "customers": {"pkey": "customer_id", "implied": True},
    "products": {"pkey": "product_id", "implied": True},
    "orders": {"file": "orders.jsonl", "pkey": "id", "time": "created_at",
               "fkeys": {"customer_id": "customers"}},
    "order_items": {"unnest": {"orders": "line_items"}, "pkey": "id",
                    "fkeys": {"product_id": "products"}},
}}


def write(folder, orders=ORDERS):
    (folder / "orders.jsonl").write_text("".join(json.dumps(o) + "\n" for o in orders))


def items_of(db) -> pd.DataFrame:
    df = db["order_items"].df.copy()
    df["id"] = db.keys["order_items"][df.index]
    df["order"] = db.keys["orders"][df["orders_id"]]
    return df.set_index("id").sort_index()


def test_a_list_of_objects_is_a_table_keyed_and_timed_by_its_row(tmp_path):
    write(tmp_path)
    db = load_folder(tmp_path, SCHEMA)
    items = items_of(db)
    assert items["order"].tolist() == [1, 1, 3]      # 'id' is the items': the key orders_id
    assert db["order_items"].fkeys == {"product_id": "products", "orders_id": "orders"}
    assert items["price"].tolist() == [9.5, 3.0, 9.5] and items["quantity"].tolist() == [2, 1, 1]
    assert items["discount_code"].isna().tolist() == [True, True, False]
    assert db["order_items"].time_col == "created_at"   # each at its order's time
    assert items["created_at"].tolist() == list(pd.to_datetime(
        ["2024-01-01 10:00", "2024-01-01 10:00", "2024-01-09 12:00"]))
    assert len(db["order_items"].upto(pd.Timestamp("2024-01-05")).df) == 2
    assert db.stypes["orders"]["line_items"] is None   # the lists leave the orders' features


def test_a_list_of_values_is_a_table_of_one_column(tmp_path):
    write(tmp_path)
    schema = {"tables": {**SCHEMA["tables"], "order_tags": {"unnest": {"orders": "tags"}}}}
    db = load_folder(tmp_path, schema)
    tags = db["order_tags"].df
    assert sorted(zip(db.keys["orders"][tags["id"]], tags["tags"])) == [
        (1, "gift"), (1, "web"), (3, "web")]   # the orders' key, named as it (no clash)


def test_parquet_parts_of_repeated_records(tmp_path):
    (tmp_path / "orders").mkdir()
    for i, o in enumerate(ORDERS):
        row = {k: [v] for k, v in o.items() if k != "tags"}
        row["created_at"] = [pd.Timestamp(o["created_at"]).tz_localize(None)]
        items = pa.array([o["line_items"]], pa.list_(pa.struct(
            [("id", pa.int64()), ("product_id", pa.int64()), ("quantity", pa.int64()),
             ("price", pa.string())])))
        pq.write_table(pa.table({**{k: v for k, v in row.items() if k != "line_items"},
                                 "line_items": items}), tmp_path / "orders" / f"part-{i}.parquet")
    schema = {"tables": {**SCHEMA["tables"], "orders": {**SCHEMA["tables"]["orders"],
                                                        "file": "orders"}}}
    items = items_of(load_folder(tmp_path, schema))
    assert items["order"].tolist() == [1, 1, 3] and items["price"].tolist() == [9.5, 3.0, 9.5]


def test_written_once_again_when_the_file_changes(tmp_path):
    write(tmp_path)
    assert len(load_folder(tmp_path, SCHEMA)["order_items"]) == 3
    time.sleep(0.01)
    more = ORDERS + [{"id": 4, "customer_id": 11, "created_at": "2024-01-10T09:00:00Z",
                      "line_items": [{"id": 103, "product_id": 7, "quantity": 3,
                                      "price": "1.00"}], "tags": []}]
    write(tmp_path, more)
    db = load_folder(tmp_path, SCHEMA)
    assert len(db["order_items"]) == 4 and 7 in set(db.keys["products"])


@pytest.mark.parametrize("change, message", [
    ({"unnest": {"orders": "customer_id"}}, "'customer_id' is of type int64, not a list"),
    ({"unnest": {"orders": "lines"}}, "orders.jsonl has no column 'lines'"),
    ({"unnest": {"sales": "line_items"}}, "no table 'sales'"),
    ({"unnest": "orders.line_items"}, "unnest 'orders.line_items': the table and its column"),
    ({"file": "items.csv"}, "unnest: and file: both"),
    ({"fkeys": {"orders_id": "orders"}}, "'orders_id' is the key to 'orders' it is given"),
])
def test_what_cannot_be_unnested_stops_naming_it(tmp_path, change, message):
    write(tmp_path)
    spec = {**SCHEMA["tables"]["order_items"], **change}
    fails(tmp_path, "table 'order_items': unnest", message,
          schema={"tables": {**SCHEMA["tables"], "order_items": spec}})


def test_a_table_of_text_holds_no_lists(tmp_path):
    pd.DataFrame({"id": [1], "line_items": ["[]"]}).to_csv(tmp_path / "orders.csv", index=False)
    fails(tmp_path, "orders.csv holds no lists (a JSON or parquet file does)",
          schema={"tables": {"orders": {"pkey": "id"},
                             "items": {"unnest": {"orders": "line_items"}}}})


def test_without_unnest_a_list_of_objects_stops_saying_what_to_write(tmp_path):
    write(tmp_path)
    fails(tmp_path, "orders.jsonl (table 'orders'), column 'line_items'", "a list's elements are "
          "a table of their own (a table with unnest: {<this table>: line_items})",
          schema={"tables": {"orders": {"file": "orders.jsonl", "pkey": "id"}}})


def test_the_draft_makes_a_list_of_objects_a_table_and_guesses_its_keys(tmp_path):
    write(tmp_path)
    pd.DataFrame({"product_id": [5, 6, 7], "title": ["a", "b", "c"]}).to_csv(
        tmp_path / "products.csv", index=False)
    text = draft(tmp_path)
    spec = yaml.safe_load(text)["tables"]["orders_line_items"]
    assert spec["unnest"] == {"orders": "line_items"} and spec["pkey"] == "id"
    assert spec["fkeys"] == {"product_id": "products"} and "file" not in spec
    (tmp_path / "schema.yaml").write_text(text)
    db = load_folder(tmp_path)
    assert len(db["orders_line_items"]) == 3 and db["orders_line_items"].time_col == "created_at"


def test_the_missing_file_of_the_table_holding_the_lists_is_named(tmp_path):
    fails(tmp_path, "table 'order_items': unnest", "orders.jsonl: missing (the data file of "
          "table 'orders')", schema=SCHEMA)


def test_the_lists_of_a_table_named_by_a_wildcard(tmp_path):
    for i, chunk in enumerate((ORDERS[:2], ORDERS[2:])):
        (tmp_path / f"orders_{i}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in chunk))
    schema = {"tables": {**SCHEMA["tables"], "orders": {**SCHEMA["tables"]["orders"],
                                                        "file": "orders_*.jsonl"}}}
    assert items_of(load_folder(tmp_path, schema))["order"].tolist() == [1, 1, 3]
