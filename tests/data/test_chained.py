"""Entities that chain in a flat export: each invoice line names its invoice, and each
invoice one customer (the UCI Online Retail file's shape: InvoiceNo, StockCode,
Description, Quantity, InvoiceDate, UnitPrice, CustomerID, Country). Declared so, the
customer is an attribute of the invoice and its foreign key (``implied.py``): customers
hold their invoices, not their lines; their keys, times and own columns come from the
lines. The draft keeps every key on the lines and tells the chain."""
from __future__ import annotations

import json
import shlex

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder

SCHEMA = """\
tables:
  lines:
    time: InvoiceDate
    fkeys: {InvoiceNo: invoices, StockCode: stocks}
  invoices: {pkey: InvoiceNo, implied: true, attributes: [CustomerID],
             fkeys: {CustomerID: customers}}
  customers: {pkey: CustomerID, implied: true, attributes: [Country]}
  stocks: {pkey: StockCode, implied: true, attributes: [Description]}
"""


def lines(n_invoices: int = 300, seed: int = 0) -> pd.DataFrame:
    """Invoice lines as the shop exported them: an invoice's lines at one time, its
    customer on each (missing for a guest, a fifth of them), the customer's country
    beside; cancellations' numbers start with C; stock codes some with a letter."""
    rng = np.random.default_rng(seed)
    customers = [str(12346 + i) for i in range(50)]
    country = {c: ["United Kingdom", "France", "EIRE"][i % 3] for i, c in enumerate(customers)}
    rows = []
    for i in range(n_invoices):
        who = customers[rng.integers(len(customers))] if rng.random() > 0.2 else None
        at = pd.Timestamp("2010-12-01 08:26") + pd.Timedelta(hours=20 * i)
        number = ("C" if i % 37 == 5 else "") + str(536365 + i)
        for _ in range(rng.integers(1, 6)):
            k = int(rng.integers(30))
            rows.append({"InvoiceNo": number, "StockCode": f"{85123 + k}" + "A" * (k % 5 == 0),
                         "Description": f"ITEM {k}", "Quantity": int(rng.integers(1, 12)),
                         "InvoiceDate": at.strftime("%m/%d/%Y %H:%M"),
                         "UnitPrice": round(float(rng.uniform(0.5, 9)), 2),
                         "CustomerID": who, "Country": country.get(who, "United Kingdom")})
    return pd.DataFrame(rows)


def original(db, table: str, col: str) -> pd.Series:
    """A table's column as the file wrote it: positions of its key mapped back to ids."""
    values = db[table].df[col]
    ref = db[table].fkeys.get(col, table if col == db[table].pkey else None)
    if ref is None:
        return values
    ids = db.keys[ref].to_numpy()
    return pd.Series([None if pd.isna(v) else str(ids[int(v)]) for v in values], dtype=object)


def test_an_invoice_holds_its_customer_and_customers_their_invoices(tmp_path):
    df = lines()
    df.to_csv(tmp_path / "lines.csv", index=False)
    (tmp_path / "schema.yaml").write_text(SCHEMA)
    db = load_folder(tmp_path)
    assert db["invoices"].fkeys == {"CustomerID": "customers"}
    assert db["lines"].fkeys == {"InvoiceNo": "invoices", "StockCode": "stocks"}
    assert not {"CustomerID", "Country", "Description"} & set(db["lines"].df.columns)
    # each invoice's customer is the one on its lines (a guest's: missing)
    invoices = dict(zip(original(db, "invoices", "InvoiceNo"),
                        original(db, "invoices", "CustomerID")))
    assert invoices == {k: None if pd.isna(v) else v for k, v in df.drop_duplicates(
        "InvoiceNo").set_index("InvoiceNo")["CustomerID"].items()}
    # a customer from its first line, with its country; none for the guests
    customers = db["customers"].df.set_index(original(db, "customers", "CustomerID"))
    first = pd.to_datetime(df["InvoiceDate"], format="%m/%d/%Y %H:%M").groupby(
        df["CustomerID"]).min()
    assert customers["first_seen"].to_dict() == first.to_dict()
    assert customers["Country"].to_dict() == df.dropna(subset=["CustomerID"]).drop_duplicates(
        "CustomerID").set_index("CustomerID")["Country"].to_dict()
    # no customer after the invoices that name it (the loader's own check passed too)
    inv = db["invoices"].df.dropna(subset=["CustomerID"])
    seen = db["customers"].df["first_seen"].to_numpy()[inv["CustomerID"].astype(int)]
    assert (seen <= inv["first_seen"].to_numpy()).all()


def test_three_levels_chain(tmp_path):
    """A customer's sales region on each line: the region is the customer's, the customer
    the invoice's; the regions' times are their customers' first lines."""
    df = lines().assign(RegionID=lambda d: d["CustomerID"].map(
        lambda c: None if c is None or pd.isna(c) else f"R{int(c) % 4}"))
    df.to_csv(tmp_path / "lines.csv", index=False)
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace(
        "attributes: [Country]}", "attributes: [Country, RegionID],\n"
        "              fkeys: {RegionID: regions}}\n  regions: {pkey: RegionID, implied: true}"))
    db = load_folder(tmp_path)
    assert db["customers"].fkeys == {"RegionID": "regions"}
    assert len(db["regions"]) == 4 and "RegionID" not in db["lines"].df.columns
    times = pd.to_datetime(df["InvoiceDate"], format="%m/%d/%Y %H:%M")
    assert db["regions"].df["first_seen"].min() == times[df["RegionID"].notna()].min()


def test_an_invoice_with_two_customers_stops_the_load(tmp_path):
    df = lines()
    two = df.index[df["InvoiceNo"] == df["InvoiceNo"][df["CustomerID"].notna()].iloc[0]]
    df.loc[two[-1], "CustomerID"] = "99999" if len(two) > 1 else None
    df = pd.concat([df, df.loc[[two[0]]].assign(CustomerID="99999")], ignore_index=True)
    df.to_csv(tmp_path / "lines.csv", index=False)
    (tmp_path / "schema.yaml").write_text(SCHEMA)
    with pytest.raises(DataError) as e:
        load_folder(tmp_path)
    assert "column 'CustomerID'): attributes of table 'invoices': 1 of 300 keys hold more " \
           "than one 'CustomerID'" in str(e.value)


def test_a_table_without_a_file_has_foreign_keys_only_among_its_attributes(tmp_path):
    lines().to_csv(tmp_path / "lines.csv", index=False)
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("attributes: [CustomerID],", ""))
    with pytest.raises(DataError, match=r"table 'invoices'.*implied, with no file: its "
                                        r"foreign keys \['CustomerID'\] are among none of its "
                                        r"attributes \(none\)"):
        load_folder(tmp_path)


def test_the_draft_keeps_every_key_and_tells_the_chain(tmp_path, run_train, capsys):
    """Drafted from the file alone: the lines keep the invoice, the stock and the customer
    (a chained schema put the stocks a customer buys a hop further, where the link model
    found half as much: docs/results.md), the customers take their country (no invoice's
    too: before, it was an attribute of both), and the chain is told on the invoices' line.
    Written as told, suggest adds up a customer's lines and links them to stocks through
    their invoices, and the sum trains as printed."""
    from rdl.data.draft import main as draft_main
    from rdl.tasks.suggest import main as suggest
    from tests.test_forum import SMALL

    lines(n_invoices=1200, seed=1).to_csv(tmp_path / "lines.csv", index=False)
    text = draft(tmp_path)
    tables = yaml.safe_load(text)["tables"]
    assert tables["lines"]["fkeys"] == {"InvoiceNo": "Invoices", "StockCode": "Stocks",
                                        "CustomerID": "Customers"}
    assert tables["Invoices"] == {"pkey": "InvoiceNo", "implied": True}
    assert tables["Customers"] == {"pkey": "CustomerID", "implied": True,
                                   "attributes": ["Country"]}
    assert tables["Stocks"]["attributes"] == ["Description"]
    assert "CustomerID: one per InvoiceNo, the key of a coarser entity (attributes: " \
           "[CustomerID], fkeys: {CustomerID: Customers} here, and none on the rows, would " \
           "chain them" in text
    draft_main([str(tmp_path), "--write"])   # then chained as the comment says
    schema = yaml.safe_load((tmp_path / "schema.yaml").read_text())
    del schema["tables"]["lines"]["fkeys"]["CustomerID"]
    schema["tables"]["Invoices"].update(attributes=["CustomerID"],
                                        fkeys={"CustomerID": "Customers"})
    (tmp_path / "schema.yaml").write_text(yaml.safe_dump(schema))
    capsys.readouterr()
    suggest([str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    printed = [line for line in out
               if "entity_table=Customers" in line and "task.value=Quantity" in line]
    assert len(printed) == 1 and "task.events={lines:[InvoiceNo,CustomerID]}" in printed[0]
    assert any("task=events-links task.entity_table=Customers" in line and "task.events="
               "{lines:[InvoiceNo,CustomerID]}' task.target_table=Stocks model.num_layers=3 "
               "'data.num_neighbors=[128,64,32]'" in line for line in out)   # (three hops)
    run = tmp_path / "run"
    out = run_train(run, *shlex.split(printed[0])[3:], *SMALL, tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads((run / "metrics.json").read_text())["task"] == "Customers-sum"


def test_keys_that_vary_together_do_not_chain(tmp_path):
    """Ratings name a movie and a user, neither one per the other: two foreign keys of the
    rows, as before; a key of as many values as another (two ids of one thing) neither."""
    rng = np.random.default_rng(0)
    movie = rng.integers(0, 40, 2000)
    pd.DataFrame({"userId": rng.integers(0, 30, 2000), "movieId": 100 + movie,
                  "movie_code": [f"m{m}" for m in movie],
                  "at": pd.date_range("2024-01-01", periods=2000, freq="h")}).to_csv(
        tmp_path / "ratings.csv", index=False)
    text = draft(tmp_path)
    assert set(yaml.safe_load(text)["tables"]["ratings"]["fkeys"]) == {"userId", "movieId",
                                                                       "movie_code"}
    assert "the key of a coarser entity" not in text


def test_text_with_columns_of_its_own_is_noted_as_an_entity(tmp_path):
    """A pizza place's order lines (R's gt ``pizzaplace``: id, date, time, name, size,
    type, price): the pizza's name is no key by its name, but each has one type. The draft
    notes the table it would make, which loads as written; a size (no column of its own)
    and a type (no column of one value per type) are no entities. Before, nothing said so,
    and suggest found no task (an order's lines all at its time)."""
    rng = np.random.default_rng(0)
    pizzas = {f"p{i}": ["classic", "veggie", "supreme"][i % 3] for i in range(20)}
    rows = [(f"2015-{o:06d}", str(pd.Timestamp("2015-01-01") + pd.Timedelta(hours=3 * o)),
             name, rng.choice(["S", "M", "L"]), kind, 10 + rng.integers(0, 8))
            for o in range(1, 400) for _ in range(rng.integers(1, 4))
            for name, kind in [list(pizzas.items())[rng.integers(20)]]]
    pd.DataFrame(rows, columns=["id", "date", "name", "size", "type", "price"]).to_csv(
        tmp_path / "pizzaplace.csv", index=False)
    text = draft(tmp_path)
    assert "# name: 20 values, each with one type: if each is an entity (a product, a place), " \
           "a table of them: names: {pkey: name, implied: true, attributes: [type]}, and " \
           "fkeys: {name: names} here" in text
    assert "# size:" not in text and "# type:" not in text
    schema = yaml.safe_load(text)
    # as drafted, suggest finds no task (an order's lines all at its time) and says why
    (tmp_path / "schema.yaml").write_text(yaml.safe_dump(schema))
    from rdl.tasks.suggest import suggestions
    with pytest.raises(DataError, match=r"; pizzaplace\.name: 20 values, each with one type: "
                                        r"if each is an entity"):
        suggestions(load_folder(tmp_path), [])
    schema["tables"]["pizzaplace"]["fkeys"]["name"] = "names"
    schema["tables"]["names"] = yaml.safe_load(
        "{pkey: name, implied: true, attributes: [type]}")
    db = load_folder(tmp_path, schema)
    assert len(db["names"]) == 20 and "type" in db["names"].df.columns
    assert any("task.entity_table=names" in line for line in suggestions(db, []))


def test_a_customer_s_purchases_through_the_chain_are_those_of_the_flat_rows(tmp_path):
    """The link task a shop is judged on (which stock codes a customer buys next week) and
    a customer's spend, through the invoices (``task.events={lines: [InvoiceNo,
    CustomerID]}``): the same labels as with the lines naming the customer directly.
    Before, a link task's events had to reference the entity themselves."""
    import rdl
    from hydra.utils import instantiate

    df = lines(n_invoices=900, seed=2)
    for name, schema in (("chained", SCHEMA), ("direct", SCHEMA.replace(
            "StockCode: stocks}", "StockCode: stocks, CustomerID: customers}").replace(
            "attributes: [CustomerID],\n             fkeys: {CustomerID: customers}}", "}"))):
        (tmp_path / name).mkdir()
        df.to_csv(tmp_path / name / "lines.csv", index=False)
        (tmp_path / name / "schema.yaml").write_text(schema)
    labels = {}
    for name in ("chained", "direct"):
        cfg = rdl.config("data=folder", f"data.db.path={tmp_path / name}")
        db = rdl.load_database(cfg)
        path = "{lines:[InvoiceNo,CustomerID]}" if name == "chained" else "lines"
        common = ["task.entity_table=customers", "task.window=7d",
                  "task.val_timestamp=2011-10-01", "task.test_timestamp=2011-11-01",
                  f"task.events={path}"]
        links = instantiate(rdl.config("task=events-links", *common,
                                       "task.target_table=stocks").task, _convert_="all")
        spend = instantiate(rdl.config("task=events", *common, "task.label=sum",
                                       "task.value=Quantity").task, _convert_="all")
        ids, stocks = db.keys["customers"].to_numpy(), db.keys["stocks"].to_numpy()
        labels[name] = [sorted((str(r.timestamp), str(ids[r.CustomerID]),
                                tuple(sorted(str(stocks[s]) for s in r.StockCode)))
                               for r in links.split_table("train", db).itertuples()),
                        sorted((str(r.timestamp), str(ids[r.CustomerID]), r.sum)
                               for r in spend.split_table("train", db).itertuples())]
    assert len(labels["direct"][0]) > 100 and len(labels["direct"][1]) > 100
    assert labels["chained"] == labels["direct"]


def test_a_link_model_two_layers_from_its_targets_is_told(tmp_path, caplog):
    """Stocks three hops from customers in a chained schema, a model of two layers: the
    run says so and what reaches them (a model that scores only its subgraph stops, as
    before). On H&M's purchases so chained the model alone found half as much."""
    from types import SimpleNamespace

    from rdl.families.link import FAMILY

    lines().to_csv(tmp_path / "lines.csv", index=False)
    (tmp_path / "schema.yaml").write_text(SCHEMA)
    db = load_folder(tmp_path)
    task = SimpleNamespace(name="customers-links", entity_table="customers",
                           target_table="stocks")
    with caplog.at_level("WARNING", logger="rdl.train"):
        FAMILY.check_schema(SimpleNamespace(num_neighbors=(128, 64)), task, db, object)
    assert "'stocks' lies 3 hops from 'customers' (customers - invoices - lines - stocks), " \
           "beyond the model's 2 layers" in caplog.text
    assert "model.num_layers=3 with 3 fan-outs in data.num_neighbors reaches them" in caplog.text
    caplog.clear()
    FAMILY.check_schema(SimpleNamespace(num_neighbors=(128, 64, 32)), task, db, object)
    assert not caplog.text
    with pytest.raises(ValueError, match="so it would score none of them"):
        FAMILY.check_schema(SimpleNamespace(num_neighbors=(128, 64)), task, db,
                            type("Local", (), {"scores_in_subgraph_only": True}))


def test_suggest_s_fan_outs_are_the_runs_default():
    """suggest's layers for a path extend rdl's default fan-outs, which it cannot import
    (a floor above it): the two must stay equal."""
    from rdl.tasks.suggest import FAN_OUTS
    from rdl.training.data_settings import DataSettings
    assert tuple(DataSettings.num_neighbors) == FAN_OUTS
