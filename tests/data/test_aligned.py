"""Text tables whose fields are separated by blanks (a data archive's ``.txt`` as CDNOW's
purchase log ships in the PyPI package lifetimes, R's ``write.table``, a report's fixed
widths under a rule of dashes), and whole numbers named as dates written ``yyyymmdd``:
read as their fields and dates, not as one column of whole lines (rdl.data.aligned,
rdl.data.epochs)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails

#: the purchase log's first lines as the package ships it: blanks before and between the
#: fields, padded; zero-padded ids; dates as yyyymmdd numbers; Windows line ends
CDNOW = (" customer_id  date number_of_cds  dollar_value\r\n"
         " 00001 19970101  1   11.77\r\n"
         " 00002 19970112  1   12.00\r\n"
         " 00002 19970112  5   77.00\r\n"
         " 00003 19970102  2   20.76\r\n"
         " 00003 19970330  2   20.76\r\n"
         " 00003 19970402  2   19.54\r\n"
         " 00003 19971115  5   57.45\r\n")
SCHEMA = {"tables": {"customers": {"pkey": "customer_id", "implied": True},
                     "purchases": {"file": "log.txt", "time": "date",
                                   "fkeys": {"customer_id": "customers"}}}}


def test_fields_between_runs_of_blanks_load_as_columns(tmp_path):
    (tmp_path / "log.txt").write_bytes(CDNOW.encode())
    db = load_folder(tmp_path, SCHEMA)
    df = db["purchases"].df
    assert list(df.columns) == ["customer_id", "date", "number_of_cds", "dollar_value"]
    assert sorted(db.keys["customers"]) == ["00001", "00002", "00003"]   # as written
    assert sorted(df["date"]) == sorted(pd.to_datetime(
        ["1997-01-01", "1997-01-12", "1997-01-12", "1997-01-02", "1997-03-30", "1997-04-02",
         "1997-11-15"]))
    assert df["dollar_value"].sum() == pytest.approx(219.28)


def test_dates_written_as_numbers_time_a_table_of_facts(tmp_path):
    """Read as numbers, the dates of a table of purchases escaped the check that a table
    of facts declares its time: every seed would have seen every purchase."""
    (tmp_path / "log.txt").write_bytes(CDNOW.encode())
    schema = {"tables": {**SCHEMA["tables"], "purchases": {
        "file": "log.txt", "fkeys": {"customer_id": "customers"}}}}
    fails(tmp_path, "(table 'purchases', column 'date'): column(s) ['date'] hold times in 7 of "
          "7 rows, but the schema declares no time", schema=schema)
    assert "time: date   # its only column of times" in draft(tmp_path)


def test_a_date_key_stays_a_key_and_numbers_that_are_no_dates_stay_numbers(tmp_path):
    pd.DataFrame({"sale_id": [1, 2, 3], "date_key": [20240101, 20240102, 20240102],
                  "day": [20240101, 20240199, 20240102], "date": [20240101, 20240102, 20240103]}
                 ).to_csv(tmp_path / "sales.csv", index=False)
    df = load_folder(tmp_path, {"tables": {"sales": {"pkey": "sale_id"}}})["sales"].df
    assert df["date_key"].dtype == np.int64 and df["day"].dtype == np.int64
    assert pd.api.types.is_datetime64_any_dtype(df["date"])


def test_r_write_table_quoted_with_row_names(tmp_path):
    (tmp_path / "people.txt").write_text(
        '"id" "name" "city" "score"\n"1" "p1" "Ann Lee" "New York" 3.5\n'
        '"2" "p2" "Bob" "York" NA\n"3" "p3" "Cy ""Jr"" Day" "Hull" 1\n')
    df = load_folder(tmp_path, {"tables": {"people": {"file": "people.txt", "pkey": "id"}}}
                     )["people"].df
    assert list(df.columns) == ["id", "name", "city", "score"]   # row names 1..n left out
    assert df["name"].tolist() == ["Ann Lee", "Bob", 'Cy "Jr" Day']
    assert df["score"].isna().tolist() == [False, True, False]
    (tmp_path / "people.txt").write_text('"x" "y"\n"a" 1 2\n"b" 3 4\n')   # named rows: data
    df = load_folder(tmp_path, {"tables": {"people": {"file": "people.txt"}}})["people"].df
    assert df["row_names"].tolist() == ["a", "b"] and df["y"].tolist() == [2, 4]


def test_fixed_widths_with_blanks_in_values_under_a_rule(tmp_path):
    (tmp_path / "stores.txt").write_text(
        "STORE_ID CITY            OPENED          SALES\n"
        "-------- --------------- ---------- ----------\n"
        "       1 New York        2020-01-05     1204.5\n"
        "      12 Salt Lake City  2021-03-01         17\n"
        "     103 Hull            2019-11-30\n")
    df = load_folder(tmp_path, {"tables": {"stores": {"file": "stores.txt",
                                                      "pkey": "STORE_ID"}}})["stores"].df
    assert df["CITY"].tolist() == ["New York", "Salt Lake City", "Hull"]
    assert df["SALES"].tolist()[:2] == [1204.5, 17] and np.isnan(df["SALES"].iloc[2])
    assert df["OPENED"].tolist() == list(pd.to_datetime(["2020-01-05", "2021-03-01",
                                                         "2019-11-30"]))


def test_lines_that_split_neither_way_stop_naming_the_file(tmp_path):
    (tmp_path / "t.txt").write_text("customer name   city\nAnn Lee   New York\nBob  Hull x y\n")
    fails(tmp_path, "t.txt (table 't'): its header is one field holding runs of blanks",
          schema={"tables": {"t": {"file": "t.txt"}}})
    (tmp_path / "t.txt").write_text("customer name\nAnn Lee\nBob\n")   # one column, as before
    df = load_folder(tmp_path, {"tables": {"t": {"file": "t.txt"}}})["t"].df
    assert list(df.columns) == ["customer name"] and df.iloc[:, 0].tolist() == ["Ann Lee", "Bob"]


def test_a_line_with_an_extra_field_stops_naming_it(tmp_path):
    (tmp_path / "log.txt").write_bytes((CDNOW + "\n".join([" 00004 19970101  1   11.77"] * 300)
                                        + "\n 00005 19970101  1   11.77  9\n").encode())
    fails(tmp_path, "log.txt (table 'purchases'): a text table whose fields are separated by "
          "blanks, but", "Expected 4 fields in line 309, saw 5", schema=SCHEMA)


#: one query's rows as three consoles print them: psql (its null empty), mysql's box (its
#: NULL) and a Markdown table, each around the same four rows
BOARDS = {
    "psql": (" customer_id |    date    | number_of_cds | dollar_value\n"
             "-------------+------------+---------------+--------------\n"
             " 00001       | 1997-01-01 |             1 |        11.77\n"
             " 00002       | 1997-01-12 |               |        12.00\n"
             " 00002       | 1997-01-12 |             5 |     1,077.00\n"
             " 00003       | 1997-01-02 |             2 |        20.76\n"
             "(4 rows)\n\n"),
    "mysql": ("+-------------+------------+---------------+--------------+\n"
              "| customer_id | date       | number_of_cds | dollar_value |\n"
              "+-------------+------------+---------------+--------------+\n"
              "| 00001       | 1997-01-01 |             1 |        11.77 |\n"
              "| 00002       | 1997-01-12 |          NULL |        12.00 |\n"
              "| 00002       | 1997-01-12 |             5 |     1,077.00 |\n"
              "| 00003       | 1997-01-02 |             2 |        20.76 |\n"
              "+-------------+------------+---------------+--------------+\n"
              "4 rows in set (0.00 sec)\n"),
    "markdown": ("| customer_id | date | number_of_cds | dollar_value |\n"
                 "|:---|:---:|---:|--:|\n"
                 "| 00001 | 1997-01-01 | 1 | 11.77 |\n"
                 "| 00002 | 1997-01-12 |  | 12.00 |\n"
                 "| 00002 | 1997-01-12 | 5 | 1,077.00 |\n"
                 "| 00003 | 1997-01-02 | 2 | 20.76 |\n")}


@pytest.mark.parametrize("console", BOARDS)
def test_a_consoles_table_loads_its_fields_between_bars(tmp_path, console):
    (tmp_path / "log.txt").write_text(BOARDS[console])
    db = load_folder(tmp_path, SCHEMA)
    df = db["purchases"].df.sort_values("dollar_value")
    assert list(df.columns) == ["customer_id", "date", "number_of_cds", "dollar_value"]
    assert sorted(db.keys["customers"]) == ["00001", "00002", "00003"]   # as written
    assert df["dollar_value"].tolist() == [11.77, 12.0, 20.76, 1077.0]
    assert df["number_of_cds"].isna().tolist() == [False, True, False, False]
    assert df["date"].min() == pd.Timestamp("1997-01-01")


def test_a_value_holding_a_bar_stops_naming_its_line(tmp_path):
    lines = BOARDS["psql"].splitlines(keepends=True)
    lines[3] = " 00002       | 1997-01-12 | 1 | 2 |        12.00\n"
    (tmp_path / "log.txt").write_text("".join(lines))
    fails(tmp_path, "log.txt (table 'purchases'): a console's table of 4 columns between bars",
          "line 4 has 5 fields", "psql --csv", schema=SCHEMA)
