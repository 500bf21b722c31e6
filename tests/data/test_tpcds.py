"""A warehouse's star schema, of TPC-DS's shape (dsdgen's tables, Kimball's
conventions): each dimension holds a surrogate key (``c_customer_sk``, whole numbers, the
key every fact names) beside its business key (``c_customer_id``, text, as unique); the
facts have no time of their own, only keys into a date dimension (``ss_sold_date_sk``:
days numbered as Julian days), some of them empty; a dimension's row may name a day
after its own (a store's opening). The draft takes the surrogate keys, dates the facts
through the calendar, drops the rows no day places (``untimed: drop``), and the schema it
writes loads."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import yaml
from hydra.utils import instantiate

from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder
from rdl.tasks.suggest import suggestions

JULIAN = 2450450   # dsdgen's d_date_sk of 1997-01-01


def star(folder, seed: int = 0) -> dict[str, pd.DataFrame]:
    """800 days from 1997, 120 customers, 60 items (their business key the first column),
    3 stores, 72 households, 100 addresses, 1,500 sales over 1998, 4 % of them without a
    day, 600 catalog orders, each shipped days after it is sold; the keys of households and addresses are numbers every table holds (1, 2, ...),
    named by abbreviations (``ss_hdemo_sk``, ``ss_addr_sk``)."""
    rng = np.random.default_rng(seed)
    days = pd.date_range("1997-01-01", periods=800, freq="D")
    ids = lambda p, n: [f"AAAAAAAA{p}{i:07d}" for i in range(1, n + 1)]  # noqa: E731
    t = {"date_dim": pd.DataFrame({
        "d_date_sk": np.arange(JULIAN, JULIAN + 800), "d_date_id": ids("D", 800),
        "d_date": days.strftime("%Y-%m-%d"), "d_year": days.year, "d_moy": days.month,
        "d_day_name": days.day_name(), "d_quarter_name": days.year.astype(str) + "Q"
        + days.quarter.astype(str)})}   # (read as times: the calendar's, no later event)
    t["household_demographics"] = pd.DataFrame({
        "hd_demo_sk": range(1, 73), "hd_buy_potential": rng.choice([">10000", "0-500"], 72),
        "hd_dep_count": rng.integers(0, 9, 72)})
    t["customer_address"] = pd.DataFrame({
        "ca_address_sk": range(1, 101), "ca_address_id": ids("A", 100),
        "ca_state": rng.choice(["TN", "GA", "OH"], 100)})
    t["customer"] = pd.DataFrame({
        "c_customer_sk": range(1, 121), "c_customer_id": ids("C", 120),
        "c_first_name": rng.choice(["Ann", "Bo", "Cy", "Di"], 120),
        "c_birth_country": rng.choice(["PERU", "CHAD", "FIJI"], 120),
        "c_current_addr_sk": rng.integers(1, 101, 120)})
    t["item"] = pd.DataFrame({
        "i_item_id": ids("I", 60), "i_item_sk": range(1, 61),
        "i_current_price": rng.uniform(1, 90, 60).round(2),
        "i_category": rng.choice(["Books", "Music", "Shoes"], 60)})
    t["store"] = pd.DataFrame({   # two stores open on a day after their records start
        "s_store_sk": [1, 2, 3], "s_store_id": ids("S", 3),
        "s_rec_start_date": ["1997-03-13", "1997-01-05", "1998-02-01"],
        "s_open_date_sk": [JULIAN + 60, JULIAN + 100, JULIAN + 420],
        "s_floor_space": [6000, 7500, 5200]})
    n = 1500
    sold = rng.integers(365, 765, n).astype("float64")
    sold[rng.random(n) < 0.04] = np.nan
    t["store_sales"] = pd.DataFrame({
        "ss_sold_date_sk": pd.array(np.where(np.isnan(sold), np.nan, sold + JULIAN),
                                    dtype="Int64"),
        "ss_item_sk": rng.integers(1, 61, n), "ss_customer_sk": rng.integers(1, 121, n),
        "ss_store_sk": rng.integers(1, 4, n), "ss_ticket_number": np.arange(n) // 3 + 1,
        "ss_hdemo_sk": rng.integers(1, 73, n), "ss_addr_sk": rng.integers(1, 101, n),
        "ss_quantity": rng.integers(1, 100, n),
        "ss_sales_price": rng.uniform(1, 200, n).round(2)}).drop_duplicates(
            ["ss_item_sk", "ss_ticket_number"])
    m = 600   # a catalog's orders: a bill-to customer (a role), shipped days after sold
    sold = rng.integers(365, 740, m)
    t["catalog_sales"] = pd.DataFrame({
        "cs_sold_date_sk": sold + JULIAN, "cs_ship_date_sk": sold + rng.integers(2, 20, m)
        + JULIAN, "cs_bill_customer_sk": rng.integers(1, 121, m),
        "cs_item_sk": rng.integers(1, 61, m), "cs_order_number": np.arange(m) + 1,
        "cs_quantity": rng.integers(1, 100, m)})
    for name, df in t.items():
        df.to_csv(folder / f"{name}.csv", index=False)
    return t


def test_the_draft_keys_a_star_by_its_surrogate_keys_and_dates_its_facts_by_the_calendar(
        tmp_path, caplog):
    t = star(tmp_path)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)
    tables = schema["tables"]
    assert {n: tables[n]["pkey"] for n in ("date_dim", "customer", "item", "store")} == {
        "date_dim": "d_date_sk", "customer": "c_customer_sk", "item": "i_item_sk",
        "store": "s_store_sk"}
    sales = tables["store_sales"]
    assert sales["time"] == {"column": "ss_sold_date_sk", "calendar": {
        "table": "date_dim", "period": "d_date_sk", "start": "d_date"}}
    assert sales["fkeys"] == {"ss_item_sk": "item", "ss_customer_sk": "customer",
                              "ss_store_sk": "store", "ss_hdemo_sk": "household_demographics",
                              "ss_addr_sk": "customer_address"}
    assert tables["customer"]["fkeys"] == {"c_current_addr_sk": "customer_address"}
    assert tables["catalog_sales"]["time"]["column"] == "cs_sold_date_sk"
    assert tables["catalog_sales"]["fkeys"] == {
        "cs_ship_date_sk": "date_dim", "cs_bill_customer_sk": "customer", "cs_item_sk": "item"}
    assert tables["date_dim"]["time"] == "d_date"   # (a store opens on a later day: still)
    assert "events" not in tables["date_dim"]
    assert tables["store"]["fkeys"] == {"s_open_date_sk": "date_dim"}
    untimed = int(t["store_sales"]["ss_sold_date_sk"].isna().sum())
    assert schema["untimed"] == "drop" and f"store_sales {untimed} of" in text
    (tmp_path / "schema.yaml").write_text(text)
    with caplog.at_level(logging.WARNING):
        db = load_folder(tmp_path)
    assert len(db["store_sales"]) == len(t["store_sales"]) - untimed > 0
    assert f"{untimed} of {len(t['store_sales'])} rows have no time: dropped" in caplog.text
    # a ship date, a store's opening: later days of the calendar, seen as they come
    assert "older than the 'date_dim' row" not in caplog.text
    assert len(db["customer"]) == 120 and db["store_sales"].time_col == "ss_sold_date_sk"
    told = "\n".join(suggestions(db, ["python -m rdl.train"]))
    assert "# customer (120 rows)" in told and "task.entity_table=customer" in told
    assert "date_dim" not in told.replace("date_dim.d_date", "")   # (a calendar's days)


def test_rows_without_a_time_stop_the_loader_unless_the_schema_drops_them(tmp_path, caplog):
    pd.DataFrame({"id": [1, 2, 3, 4], "at": ["2024-01-02", None, "2024-01-05", ""],
                  "x": [1.0, 2.0, 3.0, 4.0]}).to_csv(tmp_path / "visits.csv", index=False)
    pd.DataFrame({"visit_id": [1, 2, 4, 3], "on": ["2024-02-01"] * 4}).to_csv(
        tmp_path / "notes.csv", index=False)
    schema = {"tables": {"visits": {"pkey": "id", "time": "at"},
                         "notes": {"time": "on", "fkeys": {"visit_id": "visits"}}}}
    with pytest.raises(DataError, match=r"visits.csv \(table 'visits', column 'at'\): time "
                                        r"missing in 2 of 4 rows .*untimed: drop"):
        load_folder(tmp_path, schema)
    with caplog.at_level(logging.WARNING):
        db = load_folder(tmp_path, {**schema, "untimed": "drop"})
    assert list(db.keys["visits"]) == [1, 3]
    assert db["notes"].df["visit_id"].isna().sum() == 2   # (their references dangle)
    assert "2 of 4 rows have no time: dropped (untimed: drop; rows 1, 3)" in caplog.text
    with pytest.raises(DataError, match=r"untimed 'skip': expected one of \['fail', 'drop'\]"):
        load_folder(tmp_path, {**schema, "untimed": "skip"})


def test_a_table_of_one_line_as_dsdgen_writes_it_is_read_by_its_bars(tmp_path):
    """dsdgen's ``.dat`` files: no header, ``|`` between fields and ending each line,
    columns named by the kit's DDL beside them. At a small scale the store table is one
    line, whose description holds a comma: read by commas it was two fields, its one row
    taken for a header, and the table left out as empty."""
    (tmp_path / "tpcds.sql").write_text(
        "create table store (s_store_sk integer not null, s_store_id char(16) not null,\n"
        "  s_rec_start_date date, s_market_desc varchar(100), s_floor_space integer,\n"
        "  primary key (s_store_sk));\n"
        "create table store_sales (ss_sold_date_sk integer, ss_store_sk integer,\n"
        "  ss_ticket_number integer not null, ss_quantity integer);\n")
    (tmp_path / "store.dat").write_text(
        "1|AAAAAAAABAAAAAAA|1997-03-13|Enough high areas stop expectations. Elaborate, "
        "local is|5250760|\n")
    (tmp_path / "store_sales.dat").write_text("".join(
        f"{2450815 + i}|1|{i + 1}|{i % 7 + 1}|\n" for i in range(30)))
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert tables["store"]["pkey"] == "s_store_sk"
    assert tables["store"]["columns"][:2] == ["s_store_sk", "s_store_id"]
    assert tables["store_sales"]["fkeys"] == {"ss_store_sk": "store"}


def test_a_calendar_of_two_centuries_is_no_span_of_the_data(tmp_path, tiny_cfg):
    """TPC-DS's ``date_dim`` holds 1900 to 2100. Timed by its days, it was the data's span:
    an events task's train seed times began in 1900 (53.7M train rows at 7 days over
    10,000 customers, a century of windows before any fact), the trees fitted on a sample
    of them stopped at one, and the forward-chained prior of the last train weeks was one
    value (AUROC 0.5). The span is now the other tables'; so is the first time of a key
    a static table names (``implied: true``)."""
    t = star(tmp_path)
    days = pd.date_range("1900-01-02", "2100-01-01", freq="D")
    first = JULIAN - (pd.Timestamp("1997-01-01") - days[0]).days
    pd.DataFrame({"d_date_sk": np.arange(first, first + len(days)),
                  "d_date": days.strftime("%Y-%m-%d"), "d_year": days.year}).to_csv(
        tmp_path / "date_dim.csv", index=False)
    t["customer"].assign(c_salutation=np.where(np.arange(120) % 2, "Mr.", "Ms.")).to_csv(
        tmp_path / "customer.csv", index=False)
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    tables["salutations"] = {"pkey": "c_salutation", "implied": True}
    tables["customer"]["fkeys"]["c_salutation"] = "salutations"
    db = load_folder(tmp_path, {"untimed": "drop", "tables": tables})
    assert db["date_dim"].time_col == "d_date" and len(db["date_dim"]) == len(days)
    others = [tab.df[tab.time_col] for name, tab in db
              if tab.time_col and name not in ("date_dim", "salutations")]
    assert db.min_time == min(s.min() for s in others) >= pd.Timestamp("1997-01-01")
    assert db.max_time == max(s.max() for s in others) <= pd.Timestamp("2000-01-01")
    assert db["salutations"].df[db["salutations"].time_col].min() == db.min_time
    task = instantiate(tiny_cfg("task=events", "task.entity_table=customer",
                                "task.window=30d", "task.val_timestamp=1998-11-01",
                                "task.test_timestamp=1998-12-01").task, _convert_="all")
    train = task.timestamps("train", db)
    assert min(train) >= db.min_time and len(train) < 30


def test_a_number_of_a_composite_key_is_no_feature(tmp_path):
    """A sale is a ticket's line, keyed ``[ss_item_sk, ss_ticket_number]`` (its returns
    name both): the ticket number names, and as a feature the trees summed it (the second
    most-gain feature of LightGBM on TPC-DS's customers was ``ss_ticket_number.sum_12``).
    The draft drops it; the item stays a key."""
    t = star(tmp_path)
    sales = t["store_sales"].dropna(subset=["ss_sold_date_sk"]).iloc[:300]
    sales.assign(ss_sold_date_sk=sales["ss_sold_date_sk"].astype(int)).to_csv(
        tmp_path / "store_sales.csv", index=False)
    back = sales.iloc[::2]   # (two lines of a ticket, some: no key of its own)
    pd.DataFrame({"sr_returned_date_sk": back["ss_sold_date_sk"].astype(int) + 5,
                  "sr_item_sk": back["ss_item_sk"], "sr_ticket_number": back["ss_ticket_number"],
                  "sr_return_quantity": 1}).to_csv(tmp_path / "store_returns.csv", index=False)
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert tables["store_sales"]["pkey"] == ["ss_item_sk", "ss_ticket_number"]
    assert tables["store_sales"]["stypes"]["ss_ticket_number"] == "drop"
    assert tables["store_sales"]["fkeys"]["ss_item_sk"] == "item"
    assert "ss_quantity" not in tables["store_sales"]["stypes"]


def test_a_zip_code_is_no_key_of_a_table_numbered_past_it(tmp_path):
    """TPC-DS's ``ca_zip`` (digits, kept as text for the zeros some begin with) holds
    numbers below the count of its 192,080 demographics: 94 % of its values were keys of
    ``customer_demographics``, and the draft made it a foreign key, joining each address
    to a demographic at random. Digits as text are numbers: a column not named as a key
    is none by its values alone, as a number column is not."""
    star(tmp_path)
    rng = np.random.default_rng(1)
    pd.DataFrame({"cd_demo_sk": range(1, 30_001), "cd_gender": rng.choice(["M", "F"], 30_000)}
                 ).to_csv(tmp_path / "customer_demographics.csv", index=False)
    addresses = pd.read_csv(tmp_path / "customer_address.csv")
    zips = [f"{z:05d}" for z in rng.integers(10_000, 30_000, len(addresses))]
    zips[:3] = ["00501", "02134", "07030"]
    addresses.assign(ca_zip=zips).to_csv(tmp_path / "customer_address.csv", index=False)
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert "ca_zip" not in tables["customer_address"].get("fkeys", {})
    assert tables["customer"]["fkeys"] == {"c_current_addr_sk": "customer_address"}


def test_a_table_implied_by_a_prefixed_key_is_named_without_the_prefix(tmp_path):
    """TPC-DS gives each column its table's prefix (``i_``, ``wp_``): the tables implied by
    repeated keys no table holds were named ``i_brands``, ``wp_web_pages``, ``ca_suites``
    in the draft; a first word of one or two letters is that prefix, left out."""
    from rdl.data.draft_implied import implied_name
    t = star(tmp_path)
    item = t["item"].assign(i_brand_id=np.arange(60) % 12 + 1001)
    item.to_csv(tmp_path / "item.csv", index=False)
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert tables["item"]["fkeys"]["i_brand_id"] == "brands"
    assert tables["brands"]["pkey"] == "i_brand_id" and tables["brands"]["implied"] is True
    assert [implied_name(c) for c in ("wp_web_page_id", "ca_suite_number", "web_site_id",
                                      "species_id", "sm_code")] == [
        "web_pages", "suites", "web_sites", "species", "sms"]
