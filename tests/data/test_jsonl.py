"""JSON files as tables (rdl.data.jsonl): JSON Lines or an array of objects, compressed or
in parts, nested objects as columns, as event logs and warehouses export them."""
from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.graph.build import make_graph

SCHEMA = """\
tables:
  users: {pkey: user_id, implied: true}
  events:
    pkey: event_id
    time: ts
    fkeys: {user_id: users}
    stypes: {kind: categorical, context_device: categorical, coupon: categorical}
"""


def events(n: int = 12) -> list[dict]:
    """Events as a tracker logs them: a nested context, a list of tags, ISO times with
    their offset; the last one has a key none before it has."""
    rows = [{"event_id": i, "user_id": f"u{i % 3}", "kind": ["view", "buy"][i % 2],
             "ts": f"2023-01-{1 + i % 9:02d}T10:00:00+01:00",
             "context": {"device": ["ios", "web"][i % 2], "screen": {"w": 300 + i, "h": 600}},
             "amount": 1.5 * i, "tags": ["a", "b", "c"][: i % 3]} for i in range(n)]
    rows[-1]["coupon"] = "XMAS"
    return rows


def write(folder, rows: list[dict], name: str = "events.jsonl", schema: str = SCHEMA) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(r) for r in rows) + "\n"
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    elif name.endswith(".json"):
        path.write_text(json.dumps(rows, indent=1))   # one array, over many lines
    else:
        path.write_text(text)
    (folder / "schema.yaml").write_text(schema)


def test_json_lines_load_with_their_nested_objects_as_columns(tmp_path):
    write(tmp_path, events())
    db = load_folder(tmp_path)
    df = db["events"].df
    assert {"context_device", "context_screen_w", "context_screen_h", "coupon"} <= set(df)
    assert "context" not in df and pd.api.types.is_integer_dtype(df["context_screen_w"])
    assert df["coupon"].notna().sum() == 1   # a key seen on the last line only
    # times with their offset, in UTC; the keys' rows implied; lists stay lists
    assert df["ts"].min() == pd.Timestamp("2023-01-01 09:00")
    assert list(db.keys["users"]) == ["u0", "u1", "u2"]
    assert df["tags"].map(len).sum() == sum(i % 3 for i in range(12))
    data, _ = make_graph(db, db.stypes)
    assert data["events", "f2p_user_id", "users"].edge_index.shape[1] == 12


@pytest.mark.parametrize("name", ["events.jsonl.gz", "events.json", "events.ndjson",
                                  "events/day=1/part-0.jsonl"])
def test_compressed_an_array_or_parts_read_the_same(tmp_path, name):
    write(tmp_path / "lines", events())
    want = load_folder(tmp_path / "lines")["events"].df
    if name.startswith("events/"):   # a folder of parts, its partition a column
        rows = events()
        write(tmp_path / "other", rows[:6], "events/day=1/part-0.jsonl")
        write(tmp_path / "other", rows[6:], "events/day=2/part-0.jsonl")
        got = load_folder(tmp_path / "other")["events"].df
        assert sorted(got.pop("day").unique()) == [1, 2]
        want = want.drop(columns="coupon")    # ... a key of the second part only:
        got = got.drop(columns="coupon")      # compared apart
    else:
        write(tmp_path / "other", events(), name, SCHEMA.replace(
            "    pkey: event_id", f"    file: {name}\n    pkey: event_id"))
        got = load_folder(tmp_path / "other")["events"].df
    pd.testing.assert_frame_equal(got, want)


def test_a_broken_line_or_mixed_kinds_stop_naming_the_file(tmp_path):
    write(tmp_path, events())
    with open(tmp_path / "events.jsonl", "a") as f:
        f.write('{"event_id": 99, "ts": "2023-01-02T00:00:00Z", \n')
    with pytest.raises(DataError, match=r"events.jsonl.*not readable as JSON Lines"):
        load_folder(tmp_path)
    write(tmp_path, events(), "events/part-0.jsonl")
    pd.DataFrame(events()).drop(columns=["context", "tags"]).to_csv(
        tmp_path / "events" / "part-1.csv", index=False)
    (tmp_path / "events.jsonl").unlink()
    with pytest.raises(DataError, match=r"holds CSV and JSON files \(part-1.csv, part-0.jsonl\)"):
        load_folder(tmp_path)


def test_values_of_mixed_types_are_read_as_a_csv_s_text(tmp_path, caplog):
    """A key whose values differ in type across lines: its values as text, as a CSV's,
    read as numbers where they all are, with the same warning where most are."""
    rows = events()
    for i, r in enumerate(rows):
        r["amount"] = str(r["amount"]) if i % 2 else r["amount"]   # "1.5" and 3.0
        r["score"] = "pending" if i == 3 else i
        r["day"] = f"{1 + i % 9:02d}.01.2023"    # a dotted date, day first
    write(tmp_path, rows)
    db = load_folder(tmp_path)
    df = db["events"].df.assign(id=db.keys["events"]).sort_values("id")
    assert df["amount"].tolist() == [1.5 * i for i in range(12)]
    assert df["score"].tolist()[:4] == ["0", "1", "2", "pending"]
    assert "column 'score'): 1 of 12 values are not numbers (e.g. 'pending')" in caplog.text
    assert df["day"].dt.day.tolist()[:3] == [1, 2, 3]


def test_the_rows_are_read_in_the_types_their_columns_were_checked_in(tmp_path):
    """The folder's column check infers every column's type from every line; the read that
    follows takes those types instead of inferring them again (a pass over the files), and
    gives the table inference would: late keys, mixed types, structs and lists. A file
    changed in between is inferred anew."""
    from rdl.data import jsonl
    rows = events()
    rows[3]["amount"] = "n/a"   # a column of mixed types: text
    write(tmp_path, rows)
    found = [tmp_path / "events.jsonl"]
    inferred = jsonl.table(found, "events")
    checked = jsonl.schema(found, "events")
    assert jsonl.table(found, "events") == inferred and checked == inferred.schema
    assert inferred.column("coupon").to_pylist()[-1] == "XMAS"
    assert inferred.column("amount").to_pylist()[3] == "n/a"
    jsonl.schema(found, "events")
    write(tmp_path, [{**r, "late": 1} for r in rows])   # changed after its check
    assert jsonl.table(found, "events").column("late").to_pylist() == [1] * len(rows)


def test_mongoexport_s_extended_json_is_the_values_it_wraps(tmp_path):
    """``mongoexport`` wraps ids, dates and numbers (``{"$oid": ...}``, ``{"$date": ...}``,
    ``{"$numberDecimal": "12.50"}``): each column is its value, named as the field, and
    the draft finds the keys and the time by those names (before: ``user_id_$oid``)."""
    from rdl.data.draft import draft
    oid = lambda p, i: {"$oid": f"{p}{i:021x}"}  # noqa: E731
    users = [{"_id": oid("65b", i), "name": f"u{i}"} for i in range(4)]
    orders = [{"_id": oid("66c", i), "user_id": oid("65b", i % 4),
               "created": {"$date": f"2024-02-{i + 1:02d}T10:00:00.000Z"},
               "total": {"$numberDecimal": f"{i}.50"}, "qty": {"$numberLong": str(i)}}
              for i in range(8)]
    for name, rows in (("users", users), ("orders", orders)):
        (tmp_path / f"{name}.json").write_text("\n".join(map(json.dumps, rows)) + "\n")
    spec = __import__("yaml").safe_load(draft(tmp_path))["tables"]
    assert spec["orders"]["pkey"] == "_id" and spec["orders"]["time"] == "created"
    assert spec["orders"]["fkeys"] == {"user_id": "users"}
    db = load_folder(tmp_path, {"tables": spec})
    df = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    assert df["total"].tolist() == [i + 0.5 for i in range(8)] and df["qty"].dtype == "int64"
    assert df["created"].iloc[0] == pd.Timestamp("2024-02-01 10:00")
    assert db.keys["users"][df["user_id"].iloc[1]] == f"65b{1:021x}"


@pytest.mark.parametrize("wrapped", [
    lambda rows: {"data": rows, "meta": {"page": 1, "total": len(rows)}, "next": None},
    lambda rows: {"@odata.context": "$metadata#Orders", "value": rows},
    lambda rows: {"orders": rows}])   # (named as the file)
def test_an_api_s_response_saved_as_a_file_is_its_rows(tmp_path, wrapped):
    """A REST API's page saved as ``orders.json``: the rows are the objects of its one list
    (before: one row, its list a column that no feature holds)."""
    rows = [{"order_id": i, "user_id": f"u{i % 2}", "ts": f"2023-01-0{i + 1}T10:00:00Z"}
            for i in range(3)]
    (tmp_path / "orders.json").write_text(json.dumps(wrapped(rows)))
    db = load_folder(tmp_path, {"tables": {"users": {"pkey": "user_id", "implied": True},
                                           "orders": {"pkey": "order_id", "time": "ts",
                                                      "fkeys": {"user_id": "users"}}}})
    assert sorted(db.keys["orders"]) == [0, 1, 2] and len(db["users"]) == 2
    # a one-row table whose list is named otherwise is that row (its line items)
    (tmp_path / "orders.json").write_text(json.dumps({"order_id": 7, "ts": "2023-01-01",
                                                      "user_id": "u0", "lines": rows}))
    assert list(load_folder(tmp_path, {"tables": {"users": {"pkey": "user_id", "implied": True},
                                                  "orders": {"pkey": "order_id", "time": "ts",
                                                             "fkeys": {"user_id": "users"},
                                                             "stypes": {"lines": None}}}}
                            ).keys["orders"]) == [7]


ORDERS = pd.DataFrame({"order_id": [10, 11, 12], "user_id": ["u0", "u1", "u0"],
                       "ts": ["2023-01-01T10:00:00Z", "2023-01-02T10:00:00Z",
                              "2023-01-03T10:00:00Z"], "amount": [1.5, 2.0, 7.25]})
SHOP = {"tables": {"users": {"pkey": "user_id", "implied": True},
                   "orders": {"pkey": "order_id", "time": "ts", "fkeys": {"user_id": "users"}}}}


@pytest.mark.parametrize("write", [
    lambda p: ORDERS.to_json(p),                     # pandas' default: orient="columns"
    lambda p: ORDERS.to_json(p, orient="index"),
    lambda p: ORDERS.to_json(p, orient="split"),
    lambda p: ORDERS.to_json(p, orient="table"),     # its "index" column left out
    lambda p: p.write_text(json.dumps(ORDERS.to_dict(orient="list"))),   # a list per column
    lambda p: p.write_text(json.dumps(                # Firebase: records keyed by their ids
        {f"-Nx{i}": r for i, r in ORDERS.to_dict(orient="index").items()})),
    lambda p: p.write_text(json.dumps(                # ... named as the file
        {"orders": {f"-Nx{i}": r for i, r in ORDERS.to_dict(orient="index").items()}})),
])
def test_a_table_in_one_json_object_is_its_rows(tmp_path, write):
    """Before, each was one row of a column per key (a struct per record, or a column's
    values): the schema's columns were missing, or a bare KeyError."""
    write(tmp_path / "orders.json")
    db = load_folder(tmp_path, SHOP)
    df = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    assert df["amount"].tolist() == [1.5, 2.0, 7.25] and len(db["users"]) == 2
    assert not {"index", "columns", "data"} & set(df.columns)
    if "id" in df.columns:   # the records' keys
        assert df["id"].tolist() == ["-Nx0", "-Nx1", "-Nx2"]


def test_an_object_the_schema_names_as_a_key_or_time_stops_naming_its_fields(tmp_path):
    """A column of objects (a struct) named as the table's time: before, a bare KeyError."""
    (tmp_path / "orders.jsonl").write_text("\n".join(json.dumps(
        {"order_id": i, "user_id": "u0", "ts": {"date": "2023-01-01", "tz": "UTC"}})
        for i in range(3)) + "\n")
    with pytest.raises(DataError) as e:
        load_folder(tmp_path, SHOP)
    assert "orders.jsonl (table 'orders'), column 'ts': an object of fields, read as the " \
        "columns ['ts_date', 'ts_tz']" in str(e.value)
