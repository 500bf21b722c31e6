"""Real exports through load_folder (issue 30): each kind of file a warehouse writes either
loads as it means (here) or stops with one DataError naming the file, table, column and
rows, and what to do (tests/data/test_file_errors.py); nothing is written (``fails``
checks the folder)."""
from __future__ import annotations

import codecs
import gzip
import logging

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rdl.data.database import DataError
from rdl.data.folder import load_folder
from tests.data.test_folder import SCHEMA, fails, write


def users_csv(folder, text: str, encoding: str = "utf-8") -> None:
    """Replaces users.csv with ``text`` (columns user_id, age, signup)."""
    (folder / "users.csv").write_bytes(text.encode(encoding))


USERS = "user_id,age,signup\n10,30,2024-01-01\n11,,2024-01-02\n12,41,2024-01-03\n"


# -- loads as it means -------------------------------------------------------------------------
def test_a_csv_over_1mb_with_line_breaks_in_quoted_values_loads(tmp_path):
    """RFC 4180: a quoted value may hold line breaks (and "" for a quote); pyarrow split
    such a file's blocks at a line break inside a value once it passed 1 MB."""
    write(tmp_path)
    n = 40_000
    bio = '"line one, with a comma\nline two with ""quotes""\r\nline three"'
    rows = [f"{10 + i},{20 + i % 50},2024-01-01,{bio}" for i in range(n)]
    users_csv(tmp_path, "user_id,age,signup,bio\n" + "\n".join(rows) + "\n")
    assert (tmp_path / "users.csv").stat().st_size > 2_000_000
    users = load_folder(tmp_path)["users"].df
    assert len(users) == n
    assert users["bio"].iloc[-1] == ('line one, with a comma\nline two with "quotes"\r\n'
                                     "line three")


def test_repeated_header_names_are_renamed(tmp_path, caplog):
    write(tmp_path)
    users_csv(tmp_path, "user_id,age,signup,score,Score, score\n10,30,2024-01-01,1,2,3\n"
                        "11,31,2024-01-02,4,5,6\n")
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        df = load_folder(tmp_path)["users"].df
    assert list(df.columns) == ["user_id", "age", "signup", "score", "Score_2", "score_3"]
    assert df["score_3"].tolist() == [3, 6]
    assert "users.csv" in caplog.text and "'Score' (column 5) -> 'Score_2'" in caplog.text
    # a column the schema names, repeated: which one is the key cannot be guessed
    users_csv(tmp_path, "user_id,age,signup,User_ID\n10,30,2024-01-01,1\n")
    fails(tmp_path, "users.csv (table 'users', column 'user_id')",
          "names the primary key 2 times (['user_id', 'User_ID'])", "Rename the others")
    # parquet: names that differ in case only are renamed too (DuckDB, where tasks' SQL
    # runs, would read 'Score' for 'score')
    write(tmp_path, posts=lambda df: df.assign(Score=[1, 2, 3], score=[4, 5, 6]))
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        assert load_folder(tmp_path)["posts"].df["score_2"].tolist()[0] in (4, 5, 6)
    assert ("posts.parquet (table 'posts'): header names renamed: 'score' (column 7) -> "
            "'score_2'") in caplog.text
    # parquet can hold repeated names too
    write(tmp_path)
    pq.write_table(pa.table([pa.array([1, 2, 3]), pa.array([4, 5, 6])], names=["x", "x"])
                   .append_column("post_id", pa.array([100, 101, 102])),
                   tmp_path / "posts.parquet")
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace(
        "    time: created\n    fkeys: {author_id: users, parent_id: posts, tag_id: tags}\n", ""))
    fails(tmp_path, "posts.parquet (table 'posts')", "column names repeated: ['x']")


def test_ids_longer_than_19_digits_stay_text(tmp_path):
    big = ["123456789012345678901234", "123456789012345678901235", "9007199254740993"]
    write(tmp_path, users=lambda df: df.assign(user_id=big),
          posts=lambda df: df.assign(author_id=big))
    # a foreign key column with a missing value and ids float64 cannot hold exactly
    (tmp_path / "votes.csv").write_text("user_id,post_id,created\n" + "".join(
        f"{u},{p},2024-01-0{d}\n" for u, p, d in [(big[2], 101, 6), ("", 101, 7),
                                                   (big[0], 102, 7)]))
    (tmp_path / "votes.parquet").unlink()
    db = load_folder(tmp_path)
    assert list(db.keys["users"]) == big
    votes = db["votes"].df
    assert [db.keys["users"][int(i)] if pd.notna(i) else None
            for i in votes["user_id"]] == [big[2], None, big[0]]
    assert db["posts"].df["author_id"].notna().all()
    # parquet: a decimal of 38 digits (how warehouses type a NUMBER(38) id) is text too
    write(tmp_path)
    ids = pa.array([10**30, 10**30 + 1, 10**30 + 2], pa.decimal128(38, 0))
    table = pq.read_table(tmp_path / "posts.parquet")
    pq.write_table(table.set_column(0, "post_id", ids), tmp_path / "posts.parquet")
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace(
        "  votes: {time: created, fkeys: {user_id: users, post_id: posts}}\n", "").replace(
        "parent_id: posts, ", ""))
    assert list(load_folder(tmp_path).keys["posts"])[:1] == [str(10**30 + 1)]


@pytest.mark.parametrize("encoding,name", [
    ("utf-8-sig", None), ("utf-16", None), ("utf-32", None), ("cp1252", "cp1252"),
    ("latin-1", "latin-1")])
def test_encodings(tmp_path, caplog, encoding, name):
    """BOMs are read, not taken for a column's name; a file that is not UTF-8 is read as
    cp1252 (latin-1 where cp1252 has no letter for a byte) and a warning says so."""
    write(tmp_path)
    text = "Zoë €" if encoding != "latin-1" else "Zoë \x81"   # \x81: no cp1252 letter
    rows = "".join(f"{10 + i},{30 + i % 9},2024-01-01,x\n" for i in range(50_000))
    users_csv(tmp_path, f"user_id,age,signup,name\n{rows}1000000,30,2024-01-02,{text}\n", encoding)
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        df = load_folder(tmp_path)["users"].df
    assert list(df.columns) == ["user_id", "age", "signup", "name"]
    assert df["name"].iloc[-1] == text and df["user_id"].dtype == "int64"
    if name:
        assert "users.csv: not UTF-8" in caplog.text and f"read as {name}" in caplog.text
        assert "line 50002" in caplog.text
    else:
        assert "UTF-8" not in caplog.text


def test_other_delimiters_and_a_trailing_delimiter(tmp_path):
    write(tmp_path)
    users_csv(tmp_path, USERS.replace(",", ";"))
    assert load_folder(tmp_path)["users"].df["age"].tolist()[::2] == [30, 41]
    users_csv(tmp_path, USERS.replace("\n", "\t\n").replace(",", "\t"))   # header too
    assert list(load_folder(tmp_path)["users"].df.columns) == ["user_id", "age", "signup"]
    users_csv(tmp_path, USERS.replace("\n1", ",\n1").replace("3\n", "3,\n"))  # rows only
    assert list(load_folder(tmp_path)["users"].df.columns) == ["user_id", "age", "signup"]


def test_quotes_escaped_with_a_backslash(tmp_path):
    """MySQL's exports write a quote in a value as \\" (RFC 4180: "")."""
    write(tmp_path)
    users_csv(tmp_path, 'user_id,age,signup,bio\n10,30,2024-01-01,"say \\"hi\\", ok"\n'
                        '11,31,2024-01-02,plain\n')
    assert load_folder(tmp_path)["users"].df["bio"].tolist() == ['say "hi", ok', "plain"]


def test_null_spellings_are_missing(tmp_path):
    write(tmp_path)
    users_csv(tmp_path, "user_id,age,signup,city,invited\n10,NULL,2024-01-01,\\N,0000-00-00\n"
                        "11,\\N,2024-01-02,NaN,2023-12-01\n12,41,2024-01-03,NA,\n"
                        "13,#N/A,2024-01-04,,0000-00-00 00:00:00\n")
    df = load_folder(tmp_path)["users"].df
    assert df["age"].isna().tolist() == [True, True, False, True]
    assert df["age"].dtype == "float64"
    assert df["city"].isna().tolist() == [True, True, False, True]   # NA: Namibia
    assert df["invited"].isna().tolist() == [True, False, True, True]   # MySQL's zero dates
    assert df["invited"].dtype == "datetime64[ns]"


def test_thousands_separators(tmp_path):
    write(tmp_path)
    users_csv(tmp_path, 'user_id,age,signup,income\n10,30,2024-01-01,"1,234,567.5"\n'
                        '11,31,2024-01-02,"12,000"\n12,32,2024-01-03,950\n')
    assert load_folder(tmp_path)["users"].df["income"].tolist() == [1234567.5, 12000, 950]


def users_logged(folder, caplog, text: str) -> pd.DataFrame:
    """The users table of ``write``'s database with ``text`` as users.csv, loaded while
    rdl.data.checks' messages are captured."""
    write(folder)
    users_csv(folder, text)
    with caplog.at_level(logging.INFO, logger="rdl.data.checks"):
        return load_folder(folder)["users"].df


def test_decimal_commas(tmp_path, caplog):
    """Numbers as exports in German, French, ... locales write them (a decimal comma, a
    dot grouping thousands) are numbers, undeclared or declared numerical (age); a comma
    with three digits after it stays a thousands separator unless another value says
    otherwise, and a leading 0 never groups thousands."""
    df = users_logged(tmp_path, caplog, "user_id;age;signup;income;ratio;count\n"
                                        "10;30,5;2024-01-01;1.234.567,89;0,125;1,500\n"
                                        "11;31;2024-01-02;2690,72;1,5;2,000\n"
                                        "12;;2024-01-03;950;2;12\n")
    assert df["age"].tolist()[:2] == [30.5, 31] and df["age"].isna().iloc[2]
    assert df["income"].tolist() == [1234567.89, 2690.72, 950]
    assert df["ratio"].tolist() == [0.125, 1.5, 2]
    assert df["count"].tolist() == [1500, 2000, 12]
    # keys stay as written: 1,20 and 1,2 are two keys, not one number (1,234 is 1234)
    from rdl.data.checks import numbers
    df = numbers(pd.DataFrame({"k": ["1,2", "1,20"], "g": ["1,234", "5"], "v": ["1,2", "1,20"]}),
                 lambda col: col, keys={"k", "g"})
    assert df["k"].tolist() == ["1,2", "1,20"] and df["g"].tolist() == [1234, 5]
    assert df["v"].tolist() == [1.2, 1.2]
    # French (spaces, no-break or narrow no-break, between thousands) and Swiss grouping
    df = numbers(pd.DataFrame({"fr": ["1 234,56", "1\u00a0000", "2\u202f500,5 €"],
                               "ch": ["1'234.50", "12", "3'000"]}), lambda col: col)
    assert df["fr"].tolist() == [1234.56, 1000, 2500.5]
    assert df["ch"].tolist() == [1234.5, 12, 3000]
    assert "column 'income'): numbers with a decimal comma (e.g. '1.234.567,89')" in caplog.text
    assert "column 'count'): numbers with thousands separators (e.g. '1,500')" in caplog.text


def test_a_utf16_export_with_semicolons_and_decimal_commas(tmp_path):
    """UTF-16 (a byte-order mark): the header is found from the whole file, whose data rows,
    read as if comma-delimited, have other numbers of fields than the header."""
    write(tmp_path)
    users_csv(tmp_path, "user_id;age;signup;credit\n10;30;2024-01-01;4752,32\n"
                        "11;31;2024-01-02;720,8\n", "utf-16")
    assert load_folder(tmp_path)["users"].df["credit"].tolist() == [4752.32, 720.8]


def test_currency_percent_and_accounting_negatives(tmp_path, caplog):
    """A spreadsheet's formatted numbers: a currency sign (before or after, with a decimal
    comma too), a percent sign, parentheses for negatives."""
    df = users_logged(tmp_path, caplog, 'user_id,age,signup,balance,fee,discount\n'
                                        '10,30,2024-01-01,"$1,234.50","12,50 €",12.5%\n'
                                        '11,31,2024-01-02,"($20.00)","3 €",0%\n'
                                        '12,32,2024-01-03,7,"1.000,25 €",100 %\n'
                                        '13,33,2024-01-04,"-$3.10",1 €,1%\n')   # Excel's minus
    assert df["balance"].tolist() == [1234.5, -20, 7, -3.1]
    assert df["fee"].tolist() == [12.5, 3, 1000.25, 1]
    assert df["discount"].tolist() == [12.5, 0, 100, 1]
    assert "column 'balance'): numbers with thousands separators and a '$' sign and " \
        "parentheses for negatives (e.g. '$1,234.50')" in caplog.text
    users_csv(tmp_path, "user_id;age;signup;amount\n10;30;2024-01-01;1.234,56-\n"
                        "11;31;2024-01-02;20,5\n12;32;2024-01-03;7-\n")   # SAP's negatives
    assert load_folder(tmp_path)["users"].df["amount"].tolist() == [-1234.56, 20.5, -7]


@pytest.mark.parametrize("values, numbers", [
    (["1 234.50", "12.00", "2\u00a0000"], [1234.5, 12, 2000]),   # spaces between thousands
    (["EUR 12.50", "EUR 1,200.00", "EUR (3.00)"], [12.5, 1200, -3]),   # a currency's code
    (["12,50 SEK", "1.000,25 SEK"], [12.5, 1000.25]),
    # a magnitude's letter: an analytics export's counts, an app store's sizes
    (["950", "1.2K", "3.4M", "12k"], [950, 1200, 3.4e6, 12000]),
    (["19M", "201k", "8.7M"], [19e6, 201e3, 8.7e6]),
    (["1.2bn", "300M", "-2B"], [1.2e9, 3e8, -2e9]),
])
def test_numbers_with_spaced_thousands_a_currency_s_code_or_a_magnitude(values, numbers):
    """Before, each column was text (categories)."""
    from rdl.data.numbers import written_numbers
    assert written_numbers(pd.Series(values))[0].tolist() == numbers


@pytest.mark.parametrize("values", [
    ["INV 123", "INV 5"], ["EUR 12", "USD 5"], ["12 KGS", "3 KGS"],
    ["1.2.3", "1.10.0"], ["10.0.0.1", "192.168.1.1"], ["A1", "B2"], ["+1 555 1234", "12"],
    ["$1", "€2"], ["(note)", "(5)"], ["1,2,3", "4"], ["12%", "abc"], ["(5", "6)"],
    ["2024-01-05", "2024-02-06"], ["5-7", "12-"], ["12--", "3"], ["12 34", "5"],
    ["1 2 3", "4"], ["a b", "c"],
    ["18K", "14K", "18k"], ["5M", "5M"], ["19M", "Varies with device"], ["3m", "4k"]])
def test_text_that_is_no_number_stays_text(values):
    from rdl.data.numbers import written_numbers
    assert written_numbers(pd.Series(values)) is None


def posts_with(folder, **columns) -> None:
    """posts.parquet of ``write``'s database with more (arrow) columns."""
    posts = pq.read_table(folder / "posts.parquet")
    for name, values in columns.items():
        posts = posts.append_column(name, values)
    pq.write_table(posts, folder / "posts.parquet")


def test_parquet_ids_as_bytes_are_keys_and_half_floats_numbers(tmp_path):
    """PostgreSQL's UUIDs as DuckDB writes them to parquet (16 bytes), other ids as bytes (a
    hash), half floats: before, a UUID key stopped the load as duplicated (its bytes read
    as text, cut at their NULs)."""
    import uuid
    ids = [uuid.UUID(int=i + 1) for i in range(4)]
    pq.write_table(pa.table({"customer_id": pa.array([u.bytes for u in ids], pa.binary(16)),
                             "digest": pa.array([b"\x00\xff", None, b"\x01", b"\x02"]),
                             "score": pa.array([0.5, 1.5, 2.5, 3.5], pa.float16())}),
                   tmp_path / "customers.parquet")
    pq.write_table(pa.table({"order_id": [1, 2, 3],
                             "customer_id": pa.array([ids[0].bytes, ids[3].bytes, None],
                                                     pa.binary(16))}), tmp_path / "orders.parquet")
    db = load_folder(tmp_path, {"tables": {"customers": {"pkey": "customer_id"},
                                           "orders": {"pkey": "order_id",
                                                      "fkeys": {"customer_id": "customers"}}}})
    keys = db.keys["customers"]
    assert list(keys) == [str(u) for u in ids]   # 00000000-0000-0000-0000-000000000001
    linked = db["orders"].df.set_index(db.keys["orders"]).sort_index()["customer_id"]
    assert [None if pd.isna(i) else keys[int(i)] for i in linked] == [str(ids[0]),
                                                                      str(ids[3]), None]
    df = db["customers"].df
    assert df["digest"].tolist()[:1] == ["00ff"] and df["score"].dtype == "float32"


def test_parquet_ids_past_int64_are_keys(tmp_path):
    """ClickHouse's UInt64 ids (hashes) past int64's range: before, a bare TypeError."""
    big = pa.array([2 ** 64 - 1, 2 ** 63 + 5, 7], pa.uint64())
    pq.write_table(pa.table({"user_id": big}), tmp_path / "users.parquet")
    pq.write_table(pa.table({"event_id": [1, 2], "user_id": big.take([0, 2])}),
                   tmp_path / "events.parquet")
    db = load_folder(tmp_path, {"tables": {"users": {"pkey": "user_id"},
                                           "events": {"pkey": "event_id",
                                                      "fkeys": {"user_id": "users"}}}})
    assert list(db.keys["users"]) == [str(2 ** 64 - 1), str(2 ** 63 + 5), "7"]
    events = db["events"].df.set_index(db.keys["events"]).sort_index()
    assert [db.keys["users"][i] for i in events["user_id"]] == [str(2 ** 64 - 1), "7"]


def test_parquet_structs_durations_and_nested_columns(tmp_path):
    """A warehouse's parquet types: a struct is a column per field (the schema may name
    them), a duration is seconds; a map or a list of structs stops with one error naming
    it, unless the schema drops it, as it may drop a whole struct."""
    write(tmp_path, SCHEMA.replace(
        "  posts:\n", "  posts:\n    stypes: {meta_source_app: categorical}\n"))
    meta = pa.array([{"lang": "en", "source": {"app": "ios"}}, None,
                     {"lang": "de", "source": {"app": "web"}}])
    posts_with(tmp_path, meta=meta, took=pa.array([90, 1500, None], pa.duration("ms")))
    df = load_folder(tmp_path)["posts"].df   # in time order: posts 101, 100, 102
    assert pd.isna(df["meta_lang"].iloc[0]) and df["meta_lang"].tolist()[1:] == ["en", "de"]
    assert df["meta_source_app"].tolist()[1:] == ["ios", "web"]
    assert df["took"].tolist()[:2] == [1.5, 0.09] and df["took"].dtype == "float64"
    assert "meta" not in df.columns
    posts_with(tmp_path, extra=pa.array([[{"k": 1}], [], None]))
    fails(tmp_path, "posts.parquet (table 'posts'), column 'extra'", "of type list<element: struct",
          "unnest: {<this table>: extra}), or drop it (stypes: {extra: null})")
    schema = (tmp_path / "schema.yaml").read_text()
    (tmp_path / "schema.yaml").write_text(schema.replace(
        "stypes: {meta_source_app: categorical}", "stypes: {extra: null, meta: null}"))
    df = load_folder(tmp_path)["posts"].df   # the model never sees them; SQL may
    assert [c for c in df.columns if c.startswith(("meta", "extra"))] == ["meta", "extra"]
    assert df["took"].notna().sum() == 2


def test_a_cp1252_export_with_semicolons_and_decimal_commas(tmp_path, capfd, caplog):
    """A spreadsheet's export in a European locale: cp1252, ``;`` between fields, decimal
    commas. Read as if comma-delimited, its data rows have the wrong number of fields and
    bytes that are not UTF-8, which pyarrow's handler of such rows failed on (printing
    "Exception ignored" and stopping the read); the header alone finds the delimiter."""
    write(tmp_path)
    users_csv(tmp_path, "user_id;age;signup;name;credit\n10;30;2024-01-01;Müller;4752,32\n"
                        "11;31;2024-01-02;Schön;720,8\n", "cp1252")
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        df = load_folder(tmp_path)["users"].df
    assert df["name"].tolist() == ["Müller", "Schön"]
    assert df["credit"].tolist() == [4752.32, 720.8]
    assert "read as cp1252" in caplog.text
    assert "Exception ignored" not in capfd.readouterr().err
    # a row with a field too many, in a file that is not UTF-8: the rows' error, decoded
    users_csv(tmp_path, "user_id,age,signup\n10,30,2024-01-01\n11,31,Schön,2024-01-02\n",
              "cp1252")
    fails(tmp_path, "users.csv (table 'users'): 1 row does not have the header's 3 fields",
          "'11,31,Schön,2024-01-02' (4 fields)")
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_mostly_numeric_column_warns(tmp_path, caplog):
    write(tmp_path)
    users_csv(tmp_path, "user_id,age,signup,size\n" + "".join(
        f"{i},30,2024-01-01,{'unknown' if i == 13 else i}\n" for i in range(10, 20)))
    with caplog.at_level(logging.WARNING, logger="rdl.data.checks"):
        df = load_folder(tmp_path)["users"].df
    assert df["size"].iloc[3] == "unknown"
    assert "table 'users', column 'size'): 1 of 10 values are not numbers (e.g. 'unknown')" \
        in caplog.text


def test_day_first_month_first_and_zoned_times(tmp_path, caplog):
    write(tmp_path, users=lambda df: df.assign(signup=["01/31/2024", "02/01/2024", "12/13/2024"]))
    assert load_folder(tmp_path)["users"].df["signup"].dt.month.tolist() == [1, 2, 12]
    write(tmp_path, users=lambda df: df.assign(signup=["31/01/2024", "02/01/2024", "13/12/2024"]))
    assert load_folder(tmp_path)["users"].df["signup"].dt.month.tolist() == [1, 1, 12]
    write(tmp_path, users=lambda df: df.assign(signup=["01/02/2024", "02/01/2024", "03/01/2024"]))
    fails(tmp_path, "users.csv (table 'users', column 'signup')", "times such as '01/02/2024' "
          "read both as month/day/year and as day/month/year", "ISO 8601")
    write(tmp_path, users=lambda df: df.assign(signup=["2024-01-01T05:00:00+01:00",
                                                       "2024-01-02 00:00", "2024-01-03T00:00Z"]))
    with caplog.at_level(logging.WARNING, logger="rdl.data.checks"):
        signup = load_folder(tmp_path)["users"].df["signup"]
    assert signup.tolist() == [pd.Timestamp("2024-01-01 04:00"), pd.Timestamp("2024-01-02"),
                               pd.Timestamp("2024-01-03")]
    assert "column 'signup'): 1 of 3 times have no UTC offset" in caplog.text
    # Oracle's default TIMESTAMP and a DD-MON-YYYY date
    write(tmp_path, users=lambda df: df.assign(signup=[
        "05-JAN-24 10.00.00.000000 AM", "06-FEB-24 11.30.00.500000 PM", "07-MAR-24 12.00.00.0 AM"]))
    assert load_folder(tmp_path)["users"].df["signup"].tolist() == [
        pd.Timestamp("2024-01-05 10:00"), pd.Timestamp("2024-02-06 23:30:00.5"),
        pd.Timestamp("2024-03-07")]
    write(tmp_path, users=lambda df: df.assign(signup=["05-JAN-2024 10:00:00",
                                                       "06-FEB-2024 23:30:00", "07-MAR-2024 00:00:00"]))
    assert load_folder(tmp_path)["users"].df["signup"].dt.day.tolist() == [5, 6, 7]


def test_a_misspelt_column_is_suggested(tmp_path):
    write(tmp_path, users=lambda df: df.rename(columns={"signup": "Sign_Up"}))
    fails(tmp_path, "users.csv (table 'users')", "time column 'signup' missing (did you mean "
          "'Sign_Up'?)")


def test_gzip_utf16_csv(tmp_path):
    """Compression and encoding together: decompressed first, then decoded."""
    write(tmp_path, SCHEMA.replace("file: tag_list.csv", "file: tag_list.csv.gz"))
    (tmp_path / "tag_list.csv.gz").write_bytes(gzip.compress(
        codecs.BOM_UTF16_LE + "tag_id,name\na,Zoë\nb,rust\n".encode("utf-16-le")))
    assert load_folder(tmp_path)["tags"].df["name"].tolist() == ["Zoë", "rust"]


def test_a_table_written_as_parts(tmp_path, caplog):
    """Spark, Snowflake, BigQuery and Redshift export a table as a folder of part files
    (with markers beside them), or as numbered files a wildcard names."""
    write(tmp_path)
    users = (tmp_path / "users.csv").read_text().splitlines()
    (tmp_path / "users.csv").unlink()
    (tmp_path / "users").mkdir()
    for i, row in enumerate(users[1:]):
        (tmp_path / "users" / f"part-{i:05d}.csv.gz").write_bytes(
            gzip.compress(f"{users[0]}\n{row}\n".encode()))
    (tmp_path / "users" / "_SUCCESS").write_text("")
    (tmp_path / "users" / ".part-00000.csv.gz.crc").write_text("x")
    # votes as parquet parts in hive partitions: the day is a column of the folder names
    votes = pq.read_table(tmp_path / "votes.parquet").to_pandas()
    (tmp_path / "votes.parquet").unlink()
    for day, rows in votes.groupby(votes["created"].dt.day):
        (tmp_path / "votes" / f"day={day}").mkdir(parents=True)
        rows.drop(columns="created").assign(created=rows["created"]).to_parquet(
            tmp_path / "votes" / f"day={day}" / "part-0.parquet", index=False)
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("file: tag_list.csv",
                                                         "file: 'tag_list*.csv'"))
    db = load_folder(tmp_path)
    assert list(db.keys["users"]) == [10, 11, 12]
    assert sorted(db["votes"].df["day"]) == [6, 7, 7, 8] and len(db["votes"]) == 4
    # a part of other columns, in another order (the export changed): each where it is
    (tmp_path / "users" / "part-00009.csv.gz").write_bytes(gzip.compress(
        b"signup,user_id,plan\n2024-01-04,13,pro\n"))
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        db = load_folder(tmp_path)
    users = db["users"].df.set_index(db.keys["users"])
    assert users.loc[13, "plan"] == "pro" and users["plan"].isna().sum() == 3
    assert users.loc[13, "signup"] == pd.Timestamp("2024-01-04") and pd.isna(users.loc[13, "age"])
    assert "its 4 parts do not all have the same columns: 'age' missing in 1 (part-00009.csv.gz)" \
        in caplog.text and "'plan' missing in 3 (part-00000.csv.gz, part-00001.csv.gz, ...)" \
        in caplog.text
    (tmp_path / "users" / "part-00009.csv.gz").unlink()
    (tmp_path / "users" / "part-00009.parquet").write_bytes(b"")
    fails(tmp_path, "users (table 'users'): holds CSV and parquet files")
    for p in (tmp_path / "users").iterdir():
        p.unlink()
    fails(tmp_path, "users: no CSV, parquet or JSON file in it (the data file of table 'users')")


def test_parquet_parts_whose_columns_changed_over_time(tmp_path, caplog):
    """A daily export gains a column from some day on, and a number's type widens: every
    part's columns are read (before: the first part's only, the new column lost)."""
    for day, extra in ((1, {}), (2, {"channel": ["web", "app"]})):
        (tmp_path / "orders" / f"day={day}").mkdir(parents=True)
        pd.DataFrame({"order_id": [2 * day, 2 * day + 1], **extra,
                      "amount": [1, 2] if day == 1 else [2.5, 3.5],
                      "created": pd.to_datetime([f"2024-01-0{day}"] * 2)}).to_parquet(
            tmp_path / "orders" / f"day={day}" / "part-0.parquet", index=False)
    schema = {"tables": {"orders": {"pkey": "order_id", "time": "created",
                                    "stypes": {"channel": "categorical"}}}}
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        db = load_folder(tmp_path, schema)
    df = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    assert df["channel"].tolist()[2:] == ["web", "app"] and df["channel"].isna().sum() == 2
    assert df["amount"].tolist() == [1, 2, 2.5, 3.5] and df["day"].tolist() == [1, 1, 2, 2]
    assert "'channel' missing in 1 (part-0.parquet)" in caplog.text
    pd.DataFrame({"order_id": [6], "amount": ["n/a"], "created": pd.to_datetime(["2024-01-03"])}
                 ).to_parquet(tmp_path / "orders" / "day=2" / "part-1.parquet", index=False)
    fails(tmp_path, "(table 'orders'): its parts' columns are of types that do not merge",
          schema=schema)


def test_padded_keys_and_a_header_repeated_in_the_rows(tmp_path, caplog):
    """CHAR(n) columns are exported padded with spaces; parts joined with ``cat`` repeat
    their header."""
    write(tmp_path, tags=lambda df: df.assign(tag_id=["a  ", " b"]))
    users_csv(tmp_path, USERS + USERS.replace("10,", "13,").replace("11,", "14,")
              .replace("12,", "15,"))
    with caplog.at_level(logging.WARNING, logger="rdl.data.files"):
        db = load_folder(tmp_path)
    assert list(db.keys["tags"]) == ["a", "b"] and db["posts"].df["tag_id"].notna().all()
    assert sorted(db.keys["users"]) == [10, 11, 12, 13, 14, 15]
    assert db["users"].df["age"].dtype == "float64"
    assert "users.csv (table 'users'): 1 row repeats the header (rows 5," in caplog.text


def test_file_names_as_exports_write_them(tmp_path):
    write(tmp_path)
    (tmp_path / "users.csv").rename(tmp_path / "USERS.CSV")          # Windows
    assert len(load_folder(tmp_path)["users"]) == 3
    (tmp_path / "USERS.CSV").rename(tmp_path / "user.csv")
    fails(tmp_path, "users.parquet or users.csv: missing (did you mean 'user.csv'?)")
    (tmp_path / "user.csv").write_text(USERS.replace(",", "\t"))
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("users: {", "users: {file: user.csv, "))
    assert len(load_folder(tmp_path)["users"]) == 3                   # tabs, named .csv
    (tmp_path / "user.csv").rename(tmp_path / "user.tsv")
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("users: {", "users: {file: user.tsv, "))
    assert len(load_folder(tmp_path)["users"]) == 3
    (tmp_path / "user.xlsx").write_bytes(b"PK")
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("users: {", "users: {file: user.xlsx, "))
    fails(tmp_path, "user.xlsx: not a readable Excel workbook")
    (tmp_path / "user.ods").write_bytes(b"PK")
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("users: {", "users: {file: user.ods, "))
    fails(tmp_path, "user.ods (table 'users'): user.ods is neither a CSV, a parquet nor a JSON "
          "file", "a spreadsheet: save it as .xlsx, or each sheet as CSV")


def test_table_names_sql_cannot_tell_apart(tmp_path, tiny_cfg):
    """DuckDB, where a task's SQL runs, does not tell Users from users; and a table named
    timestamps would be replaced by the task's seed times."""
    from hydra.utils import instantiate

    from rdl.data.database import Database
    from rdl.preparation import check_task_tables
    task = instantiate(tiny_cfg("task=forum-user-active").task, _convert_="all")
    write(tmp_path)
    db = load_folder(tmp_path)
    check_task_tables(task, db)
    with pytest.raises(DataError, match="table 'users' has the name of table 'Users'"):
        check_task_tables(task, Database({"Users": db["tags"], **db.tables}))
    with pytest.raises(DataError, match="table 'Timestamps' has the name of the task's seed "
                                        "times"):
        check_task_tables(task, Database({**db.tables, "Timestamps": db["tags"]}))


@pytest.mark.parametrize("name", ["orders.tsv", "orders.txt", "orders.csv.gz"])
def test_a_tables_file_is_found_by_its_name_in_text_forms(tmp_path, name):
    text = "order_id\tamount\n1\t2.5\n2\t3\n"
    if name.endswith(".gz"):
        (tmp_path / name).write_bytes(gzip.compress(text.replace("\t", ",").encode()))
    else:
        (tmp_path / name).write_text(text)
    db = load_folder(tmp_path, {"tables": {"orders": {"pkey": "order_id"}}})
    assert db["orders"].df["amount"].tolist() == [2.5, 3.0]
