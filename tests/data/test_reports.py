"""CSV files written as reports: an accounting package's title and period above the
header and its totals below the rows, an analytics export's ``#`` notes; left out as a
workbook's are, while files whose first line is their header read as before
(rdl.data.reports)."""
from __future__ import annotations

import logging

import pandas as pd
import pytest

from rdl.data.folder import load_folder
from tests.data.test_folder import fails

REPORT = ("Sales by Customer Detail\r\n"
          "Acme Trading Ltd\r\n"
          "January 2024\r\n"
          "\r\n"
          "Customer,Date,Num,Amount,Memo\r\n"
          "Acme,2024-01-03,1001,250.00,\r\n"
          "Beta,2024-01-05,1002,\"1,200.50\",rush\r\n"
          "Total,,,\"1,450.50\",\r\n")
SCHEMA = {"tables": {"sales": {"pkey": "Num", "time": "Date"}}}


def test_a_report_s_title_and_totals_are_left_out(tmp_path, caplog):
    (tmp_path / "sales.csv").write_text(REPORT)
    with caplog.at_level(logging.INFO, logger="rdl.data.files"):
        db = load_folder(tmp_path, SCHEMA)
    df = db["sales"].df
    assert list(db.keys["sales"]) == [1001, 1002]
    assert df["Amount"].tolist() == [250.0, 1200.5] and df["Customer"].tolist() == ["Acme", "Beta"]
    assert "4 line(s) above the header left out" in caplog.text
    assert "1 row(s) of totals after the data left out" in caplog.text


def test_notes_above_the_header_and_other_delimiters(tmp_path):
    (tmp_path / "sales.csv").write_text("# Analytics export\n# 20240101-20240131\n\n"
                                        "Date;Num;Users\n2024-01-01;1;12\n2024-01-02;2;15\n")
    df = load_folder(tmp_path, SCHEMA)["sales"].df
    assert df["Users"].tolist() == [12, 15]


def test_files_whose_first_line_is_the_header_read_as_before(tmp_path):
    # an index written without a name (pandas' to_csv): its header's first field is empty
    (tmp_path / "sales.csv").write_text(",Num,Date\n0,1,2024-01-01\n1,2,2024-01-02\n")
    sales = load_folder(tmp_path, SCHEMA)   # (its row numbers left out: rdl.data.row_numbers)
    assert list(sales["sales"].df.columns) == ["Num", "Date"] and sorted(sales.keys["sales"]) == [
        1, 2]
    # a row named Total with every field filled is a row
    (tmp_path / "sales.csv").write_text("Num,Date,Kind\n1,2024-01-01,a\n2,2024-01-02,Total\n")
    assert load_folder(tmp_path, SCHEMA)["sales"].df["Kind"].tolist() == ["a", "Total"]
    # a delimiter ending every data row, not the header: the header is still the header
    (tmp_path / "sales.csv").write_text("Num,Date\n1,2024-01-01,\n2,2024-01-02,\n"
                                        "3,2024-01-03,\n")
    assert sorted(load_folder(tmp_path, SCHEMA).keys["sales"]) == [1, 2, 3]
    # rows of more fields than the header are no header: the load says which they are
    (tmp_path / "sales.csv").write_text("Num,Date\n1,2024-01-01,x,y\n2,2024-01-02\n3,2024-01-03\n")
    fails(tmp_path, "sales.csv (table 'sales'): 1 row does not have the header's 2 fields",
          schema=SCHEMA)


def test_a_report_in_parts_and_a_report_without_its_table(tmp_path):
    (tmp_path / "sales").mkdir()
    for i, (num, day) in enumerate([(1001, "2024-01-03"), (1002, "2024-01-05")]):
        (tmp_path / "sales" / f"part-{i}.csv").write_text(
            f"Sales report\n\nNum,Date,Amount\n{num},{day},10\nTotal,,10\n")
    db = load_folder(tmp_path, SCHEMA)
    assert sorted(db.keys["sales"]) == [1001, 1002]
    assert pd.api.types.is_datetime64_any_dtype(db["sales"].df["Date"])
    (tmp_path / "sales" / "part-1.csv").write_text("Sales report\n\n")
    fails(tmp_path, "part-1.csv (table 'sales'): columns ['Sales report'] share none with "
          "those of part-0.csv", schema=SCHEMA)


def test_codes_written_as_text_for_excel_and_words_for_missing(tmp_path):
    """="00123" keeps a code's zeros in Excel; N/A, None and (null) in a column of numbers
    are missing (before: the column was read as text, its numbers categories)."""
    (tmp_path / "sales.csv").write_text(
        'Num,Date,Account,Amount\n1,2024-01-01,="00123",N/A\n2,2024-01-02,="00456",5.5\n'
        '3,2024-01-03,="00123",None\n4,2024-01-04,="00789",(null)\n')
    df = load_folder(tmp_path, SCHEMA)["sales"].df
    assert df["Account"].tolist() == ["00123", "00456", "00123", "00789"]
    assert pd.api.types.is_float_dtype(df["Amount"]) and df["Amount"].notna().sum() == 1


@pytest.mark.parametrize("console,head,foot", [
    ("sqlcmd", "Num,Date,Amount\n---,----------,------\n", "\n(3 rows affected)\n\n"
     "Completion time: 2024-02-01T10:00:00.123+01:00\n"),
    ("psql -A", "Num,Date,Amount\n", "(3 rows)\n"),
    ("SQL*Plus", "Num,Date,Amount\n", "\n3 rows selected.\n"),
    ("mysql", "Num,Date,Amount\n", "3 rows in set (0.00 sec)\n")])
def test_a_consoles_rule_and_count_of_rows_are_left_out(tmp_path, console, head, foot):
    """A query's rows as a database's console writes them to a file: a rule of dashes
    under the header, the count of rows after them."""
    rows = "1,2024-01-01,12.5\n2,2024-01-02,NULL\n3,2024-01-03,7\n"
    (tmp_path / "sales.csv").write_text(head + rows + foot)
    db = load_folder(tmp_path, SCHEMA)
    assert sorted(db.keys["sales"]) == [1, 2, 3]
    assert db["sales"].df["Amount"].dtype == "float64"   # (no dashes among its numbers)
    # a rule in the middle, or a count of something else, is data: the load says so
    (tmp_path / "sales.csv").write_text(head + rows + "(3 apples)\n")
    fails(tmp_path, "1 row does not have the header's 3 fields", "(3 apples)", schema=SCHEMA)


def test_a_statement_s_labels_above_the_header_are_left_out(tmp_path):
    """A bank's statement: each label and its value a line of as many fields as the rows
    (``Account:,12345678,,``), and a line of delimiters only, above the header."""
    (tmp_path / "sales.csv").write_text(
        "Account:,12345678,,\r\nPeriod:,2024-01-01 to 2024-01-31,,\r\n,,,\r\n"
        "Date,Num,Memo,Amount\r\n2024-01-02,1,Coffee,-3.50\r\n2024-01-03,2,Rent,-500.00\r\n")
    df = load_folder(tmp_path, SCHEMA)["sales"].df
    assert list(df.columns) == ["Date", "Num", "Memo", "Amount"]
    assert df["Amount"].tolist() == [-3.5, -500.0]
    # a header of fewer names than fields, over full rows, is still the header
    (tmp_path / "sales.csv").write_text("Date,Num,,\r\n2024-01-02,1,a,b\r\n2024-01-03,2,c,d\r\n")
    assert sorted(load_folder(tmp_path, SCHEMA).keys["sales"]) == [1, 2]


def test_a_total_named_for_what_it_counts_is_left_out_but_a_row_named_total_is_kept(tmp_path):
    # Kaggle's pizza orders as a report (a title above, a count of orders below); the last
    # order's customer is a shop named Total Wine, every field filled
    (tmp_path / "sales.csv").write_text(
        "Pizza Place Sales - Orders 2015\n\nCustomer,Date,Num,Amount,Memo\n"
        "Acme,2024-01-03,1001,250.00,x\nTotal Wine,2024-01-04,1002,12.50,y\n"
        "Total orders,2,,,\n")
    df = load_folder(tmp_path, SCHEMA)["sales"].df
    assert df["Customer"].tolist() == ["Acme", "Total Wine"]
