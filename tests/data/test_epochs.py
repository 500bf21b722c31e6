"""Times written as numbers since 1970, as event exports write them (GA4's BigQuery export:
``event_timestamp`` in microseconds; Mixpanel's ``time`` in seconds; an app's
``created_at`` in milliseconds): stopped on until declared, drafted as declared
(rdl.data.epochs)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from rdl.data.epochs import epoch_unit
from tests.data.test_folder import fails

START = pd.Timestamp("2024-01-01")


def ga4(folder, users: int = 200, events: int = 3000, seed: int = 0):
    """Users and their events as GA4's export to BigQuery writes them (times in
    microseconds since 1970), as parquet and JSON Lines; returns the events' true times."""
    rng = np.random.default_rng(seed)
    first = START + pd.to_timedelta(rng.integers(0, 60 * 86400, users), unit="s")
    u = rng.integers(0, users, events)
    at = first[u] + pd.to_timedelta(rng.integers(0, 30 * 86400, events), unit="s")
    us = lambda t: (t - pd.Timestamp("1970-01-01")) // pd.Timedelta(1, "us")  # noqa: E731
    pd.DataFrame({"user_pseudo_id": [f"u{i}" for i in range(users)],
                  "user_first_touch_timestamp": us(first),
                  "geo_country": rng.choice(["US", "DE", "IN"], users)}
                 ).to_parquet(folder / "users.parquet", index=False)
    pd.DataFrame({"event_id": np.arange(events), "user_pseudo_id": [f"u{i}" for i in u],
                  "event_name": rng.choice(["page_view", "purchase"], events),
                  "event_timestamp": us(at), "value_usd": rng.random(events).round(2)}
                 ).to_json(folder / "events.jsonl", orient="records", lines=True)
    return pd.Series(at)


SCHEMA = {"tables": {
    "users": {"file": "users.parquet", "pkey": "user_pseudo_id"},
    "events": {"file": "events.jsonl", "pkey": "event_id",
               "fkeys": {"user_pseudo_id": "users"}}}}


def test_numbers_that_are_times_since_1970_stop_until_declared(tmp_path):
    truth = ga4(tmp_path)
    fails(tmp_path, "users.parquet (table 'users', column 'user_first_touch_timestamp'): holds "
          "numbers named as times and sized as us since 1970 (2024-01-01 to 2024-02-29",
          schema=SCHEMA)
    declared = yaml.safe_load(yaml.safe_dump(SCHEMA))
    declared["tables"]["users"].update(time="user_first_touch_timestamp",
                                       formats={"user_first_touch_timestamp": "epoch_us"})
    fails(tmp_path, "events.jsonl (table 'events', column 'event_timestamp'): holds numbers "
          "named as times and sized as us since 1970", "formats: {event_timestamp: epoch_us}",
          "time: event_timestamp", "stypes: {event_timestamp: numerical}", schema=declared)
    declared["tables"]["events"].update(time="event_timestamp",
                                        formats={"event_timestamp": "epoch_us"})
    db = load_folder(tmp_path, declared)
    times = db["events"].df.set_index(db.keys["events"])["event_timestamp"].sort_index()
    assert (times.to_numpy() == truth.to_numpy()).all()
    # declared numbers stay numbers
    as_numbers = yaml.safe_load(yaml.safe_dump(SCHEMA))
    for t, col in (("events", "event_timestamp"), ("users", "user_first_touch_timestamp")):
        as_numbers["tables"][t]["stypes"] = {col: "numerical"}
    assert pd.api.types.is_integer_dtype(load_folder(tmp_path, as_numbers)["events"].df[
        "event_timestamp"])


@pytest.mark.parametrize("name, values, unit", [
    ("created_at", [1_700_000_000_000, 1_710_000_000_000], "ms"),
    ("time", [1_700_000_000, 1_700_000_000.5], "s"),                # Mixpanel's, fractions
    ("eventTimestamp", [1_700_000_000_000_000_000], "ns"),
    ("dep_time", [517, 2359], None),                                # a clock: HHMM
    ("amount", [1_700_000_000, 1_710_000_000], None),               # not named as a time
    ("date_key", [20240131, 20240201], None),                       # a date key, not epoch
    ("updated", [1_700_000_000, 99], None),                          # not all of one size
])
def test_which_numbers_are_times_since_1970(name, values, unit):
    assert epoch_unit(name, pd.Series(values)) == unit


def test_the_draft_declares_them_and_its_schema_loads(tmp_path):
    ga4(tmp_path)
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    assert schema["events"]["formats"] == {"event_timestamp": "epoch_us"}
    assert schema["events"]["time"] == "event_timestamp"
    assert schema["users"]["time"] == "user_first_touch_timestamp"
    db = load_folder(tmp_path, {"tables": schema})
    assert db["events"].time_col == "event_timestamp"
    assert db["events"].df["event_timestamp"].between(START, START + pd.Timedelta(days=91)).all()


def test_a_spreadsheet_s_serial_days_stop_until_declared_and_are_drafted(tmp_path):
    """A date cell saved as its number (45292: 2024-01-01, Excel's day count), as a sheet
    formatted 'General' exports it: read as a number, the orders loaded static."""
    days = pd.to_datetime(["2024-01-01", "2024-01-03", "2024-02-10", "2024-03-31"])
    serial = (days - pd.Timestamp("1899-12-30")).days
    pd.DataFrame({"customer_id": [1, 2]}).to_csv(tmp_path / "customers.csv", index=False)
    pd.DataFrame({"order_no": [40001, 40002, 40003, 40004], "customer_id": [1, 2, 1, 2],
                  "order_date": serial, "quantity": [40000, 45000, 33000, 50000]}
                 ).to_csv(tmp_path / "orders.csv", index=False)
    schema = {"tables": {"customers": {"pkey": "customer_id"},
                         "orders": {"pkey": "order_no", "fkeys": {"customer_id": "customers"}}}}
    fails(tmp_path, "orders.csv (table 'orders', column 'order_date'): holds numbers named as "
          "times and sized as a spreadsheet's serial days", "(2024-01-01 to 2024-03-31 read so)",
          "formats: {order_date: excel}", schema=schema)
    text = draft(tmp_path)
    spec = yaml.safe_load(text)["tables"]["orders"]
    assert spec["formats"] == {"order_date": "excel"} and spec["time"] == "order_date"
    (tmp_path / "schema.yaml").write_text(text)
    db = load_folder(tmp_path)
    got = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    assert (got["order_date"].to_numpy() == days.to_numpy()).all()
    assert got["quantity"].tolist() == [40000, 45000, 33000, 50000]   # no date by its name
