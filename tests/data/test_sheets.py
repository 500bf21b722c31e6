"""Excel workbooks as small businesses keep their data (rdl.data.sheets): a table per sheet
read as a database file, or one workbook a table in a folder; titles above the header,
empty rows and columns after the data, date cells, failed formulas."""
from __future__ import annotations

import datetime as dt
import logging

import openpyxl
import pandas as pd
import pytest
import yaml

from rdl.data import dbfile
from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "cache"))


def shop(path, orders: int = 120):
    """customers, products and orders sheets as a person keeps them: a title and a blank
    row above the orders' header, text ids with leading zeros, date cells, a failed
    formula, formatting that runs past the data."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "customers"
    ws.append(["customer_id", "name", "joined"])
    for i in range(1, 21):
        ws.append([f"C{i:04d}", f"Customer {i}", dt.datetime(2023, 1, 1) + dt.timedelta(days=i)])
    products = wb.create_sheet("products")
    products.append(["sku", "title", "price"])
    for i in range(1, 11):
        products.append([f"00{i:03d}", f"Product {i}", 2.5 * i])
    sheet = wb.create_sheet("orders")
    sheet.append(["Orders, 2023 (exported from the till)"])
    sheet.append([])
    sheet.append(["order_id", "customer_id", "sku", "ordered", "quantity", "margin"])
    for i in range(1, orders + 1):
        sheet.append([i, f"C{i % 20 + 1:04d}", f"00{i % 10 + 1:03d}",
                      dt.datetime(2023, 2, 1) + dt.timedelta(hours=7 * i), i % 3 + 1,
                      "#DIV/0!" if i % 40 == 0 else round(0.1 * (i % 7), 2)])
    sheet.append([])
    sheet.append(["Total", None, None, None, f"=SUM(E4:E{orders + 3})", None])
    sheet.cell(row=orders + 10, column=9).value = ""   # formatting far below and right
    wb.save(path)
    return path


def test_a_workbook_of_a_table_per_sheet_is_a_database(tmp_path, caplog):
    path = shop(tmp_path / "shop.xlsx")
    assert dbfile.kind(path) == "xlsx"
    schema = yaml.safe_load(draft(path))["tables"]
    assert schema["orders"]["pkey"] == "order_id" and schema["orders"]["time"] == "ordered"
    assert schema["orders"]["fkeys"] == {"customer_id": "customers", "sku": "products"}
    assert schema["customers"]["pkey"] == "customer_id"
    dbfile.schema_beside(path).write_text(yaml.safe_dump({"tables": schema}))
    with caplog.at_level(logging.INFO):
        db = load_folder(path)
    orders = db["orders"].df
    assert len(orders) == 120 and list(orders.columns) == [
        "order_id", "customer_id", "sku", "ordered", "quantity", "margin"]   # title left out
    assert orders["ordered"].iloc[0] == pd.Timestamp("2023-02-01 07:00:00")
    assert orders["margin"].isna().sum() == 3 and pd.api.types.is_float_dtype(orders["margin"])
    assert "3 of 120 values are Excel's error values" in caplog.text
    # ids as written: leading zeros kept, every order's product found
    assert set(db.keys["products"]) == {f"00{i:03d}" for i in range(1, 11)}
    assert orders["sku"].notna().all() and orders["customer_id"].notna().all()


def test_a_workbook_in_a_folder_is_the_table_of_its_name(tmp_path):
    wb = shop(tmp_path / "book.xlsx")
    book = openpyxl.load_workbook(wb)
    for name in ("customers", "products"):
        del book[name]
    book.save(tmp_path / "orders.xlsx")
    wb.unlink()
    pd.DataFrame({"customer_id": [f"C{i:04d}" for i in range(1, 21)]}).to_csv(
        tmp_path / "customers.csv", index=False)
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    assert schema["orders"]["file"] == "orders.xlsx"
    # (the products' sheet gone, their repeated codes are a table implied: true)
    assert schema["orders"]["fkeys"] == {"customer_id": "customers", "sku": "skus"}
    assert schema["skus"] == {"pkey": "sku", "implied": True}
    db = load_folder(tmp_path, {"tables": schema})
    assert len(db["orders"]) == 120 and db["orders"].time_col == "ordered"
    # several sheets in a folder: a database of its own, said so
    shop(tmp_path / "orders.xlsx")
    fails(tmp_path, "a workbook of 3 sheets (['customers', 'products', 'orders'])",
          "data.db.path=", schema={"tables": schema})


def test_excel_97_workbooks_and_erp_exports_named_xls(tmp_path):
    """An .xls as Excel 97-2003 writes it (dates as serial numbers with a date format); a
    tab-separated text export named .xls, and an HTML one (what ERP systems call Excel)."""
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("orders")
    day = xlwt.easyxf(num_format_str="YYYY-MM-DD HH:MM")
    for j, name in enumerate(["order_id", "customer_id", "ordered", "amount"]):
        sheet.write(0, j, name)
    for i in range(1, 31):
        sheet.write(i, 0, i)
        sheet.write(i, 1, f"C{i % 5:04d}")
        sheet.write(i, 2, dt.datetime(2024, 1, 1, 8) + dt.timedelta(days=i), day)
        sheet.write(i, 3, 2.5 * i)
    book.save(str(tmp_path / "orders.xls"))
    (tmp_path / "customers.xls").write_text(
        "customer_id\tname\n" + "".join(f"C{i:04d}\tname {i}\n" for i in range(5)))
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    assert schema["orders"]["time"] == "ordered"
    assert schema["orders"]["fkeys"] == {"customer_id": "customers"}
    db = load_folder(tmp_path, {"tables": schema})
    assert db["orders"].df["ordered"].min() == pd.Timestamp("2024-01-02 08:00")
    assert len(db["customers"]) == 5
    (tmp_path / "customers.xls").write_text("<html><table><tr><td>customer_id</td></tr>"
                                            "</table></html>\n")
    fails(tmp_path, "customers.xls: not a readable Excel workbook: an HTML table named as one",
          "save it as .xlsx or CSV", schema={"tables": schema})
