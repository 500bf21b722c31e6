"""Real exports through load_folder (issue 30) that stop before any heavy work (graph,
LightGBM, training): one DataError naming the file, table, column, the rows and what to
do; nothing is written (``fails`` checks the folder)."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rdl.data.database import DataError
from rdl.data.folder import load_folder
from tests.data.test_files import USERS, users_csv
from tests.data.test_folder import SCHEMA, fails, write


def test_empty_file(tmp_path):
    write(tmp_path)
    users_csv(tmp_path, "")
    fails(tmp_path, "users.csv (table 'users')", "the file is empty (0 bytes")
    users_csv(tmp_path, "user_id,age,signup\n")
    fails(tmp_path, "users.csv (table 'users')", "the table is empty (0 rows)")


def test_a_file_without_a_header(tmp_path):
    write(tmp_path)
    users_csv(tmp_path, USERS.split("\n", 1)[1])
    fails(tmp_path, "users.csv (table 'users'): primary key 'user_id' missing",
          "the file's first row looks like data: add a header row of names")


def test_ragged_rows(tmp_path):
    write(tmp_path)
    users_csv(tmp_path, USERS + "13,50\n14,51,2024-01-04,x,y\n15,52,2024-01-05\n")
    message = fails(tmp_path, "users.csv (table 'users')",
                    "2 rows do not have the header's 3 fields",
                    "row 5: '13,50' (2 fields); row 6: '14,51,2024-01-04,x,y' (5 fields)",
                    "Quote values that hold the delimiter")
    assert "Expected" not in message   # pyarrow's words


def test_lines_of_blanks_and_dos_end_of_file_are_no_rows(tmp_path):
    """A line of spaces (a hand-edited file) or DOS's ^Z after the last row: before, each
    stopped the load as a row of one field; a ragged row is still one."""
    write(tmp_path)
    users_csv(tmp_path, USERS.replace("\n11,", "\n   \n11,") + " \t \n\x1a")
    assert load_folder(tmp_path)["users"].df.index.size == USERS.count("\n") - 1
    users_csv(tmp_path, USERS + "   \n13,50\n")
    fails(tmp_path, "1 row does not have the header's 3 fields", "row 6: '13,50'")


@pytest.mark.parametrize("value,shown", [("inf", "inf"), ("-Infinity", "-inf"),
                                         ("1e400", "inf"), ("1e39", "1e+39")])
def test_infinities_and_overflows_in_a_csv(tmp_path, value, shown):
    write(tmp_path)
    users_csv(tmp_path, USERS.replace(",41,", f",{value},"))
    fails(tmp_path, "users.csv (table 'users', column 'age')",
          f"1 of 3 values are infinite or beyond float32 (±3.4e38), e.g. {shown} (row 2)",
          "write them empty")


def test_infinities_in_parquet(tmp_path):
    write(tmp_path, posts=lambda df: df.assign(score=[1.0, np.inf, -np.inf]))
    fails(tmp_path, "posts.parquet (table 'posts', column 'score')",
          "2 of 3 values are infinite", "rows 1, 2")
    # declared a category, or dropped, it is no number: nothing to check
    write(tmp_path, SCHEMA.replace("tag_id: tags}", "tag_id: tags}\n    stypes: {score: null}"),
          posts=lambda df: df.assign(score=[1.0, np.inf, -np.inf]))
    assert len(load_folder(tmp_path)["posts"]) == 3


def test_a_duplicated_key_says_how_to_declare_a_composite_one(tmp_path):
    write(tmp_path, posts=lambda df: pd.concat([df, df.iloc[[0, 1]].assign(length=[7, 8])],
                                               ignore_index=True))
    fails(tmp_path, "posts.parquet (table 'posts', column 'post_id')",
          "primary key duplicated: 4 rows share 2 values, e.g. 100 (rows 0, 3), 101 (rows 1, 4)",
          "declare them all (pkey: [order_id, line])")
    # declared so, the key is the pair (tests/data/test_composite.py)
    write(tmp_path, SCHEMA.replace("pkey: post_id", "pkey: [post_id, tag_id]"))
    fails(tmp_path, "table 'posts': foreign key 'parent_id' has 1 column(s), the primary key "
          "'post_id, tag_id' of table 'posts' 2")


def test_out_of_range_times(tmp_path):
    write(tmp_path, users=lambda df: df.assign(signup=["2024-01-01", "9999-12-31", "1500-01-01"]))
    fails(tmp_path, "users.csv (table 'users', column 'signup')",
          "2 of 3 times are outside the years 1678 to 2261", "rows 1, 2", "9999-12-31")
    # a parquet column of times, "valid until 9999-12-31": missing, or dropped
    valid_to = pa.array([pd.Timestamp("2025-01-01").to_pydatetime(),
                         pd.Timestamp("9999-12-31").to_pydatetime(), None], pa.timestamp("us"))
    write(tmp_path)
    table = pq.read_table(tmp_path / "posts.parquet").append_column("valid_to", valid_to)
    pq.write_table(table, tmp_path / "posts.parquet")
    fails(tmp_path, "posts.parquet (table 'posts', column 'valid_to')", "1 of 3 times",
          "(row 1)", "Declare it missing (the table's missing: ['9999-12-31']) or write "
          "those empty")
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace(
        "tag_id: tags}", "tag_id: tags}\n    stypes: {valid_to: null}"))
    assert "valid_to" in load_folder(tmp_path)["posts"].df.columns
    # declared missing, as the message says: the placeholder, and only it, is missing
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace(
        "tag_id: tags}", "tag_id: tags}\n    missing: ['9999-12-31']\n"
        "    stypes: {valid_to: timestamp}"))
    valid = load_folder(tmp_path)["posts"].df["valid_to"]
    assert valid.isna().sum() == 2 and valid.max() == pd.Timestamp("2025-01-01")


def test_text_in_a_timestamp_column(tmp_path):
    write(tmp_path, SCHEMA.replace("age: numerical", "age: numerical, last_seen: timestamp"),
          users=lambda df: df.assign(last_seen=["2024-02-01", "never", None]))
    fails(tmp_path, "users.csv (table 'users', column 'last_seen')",
          "1 of 3 times do not parse as dates", "e.g. 'never' (row 1)")
    # undeclared, a column whose first values are times is one: text deep in it stops here
    n = 500

    def last_seen(values):
        users = pd.DataFrame({"user_id": range(n), "signup": "2024-01-01", "age": 30,
                              "last_seen": values})
        write(tmp_path, users=lambda df: users, posts=lambda df: df.assign(author_id=[0, 1, 2]),
              votes=lambda df: df.assign(user_id=[0, 1, 2, 0]))
    for written in ("2024-02-01", "Feb 1, 2024", "2024/02/01 10:00:00"):  # forms of times
        last_seen([written] * (n - 1) + ["unknown"])
        fails(tmp_path, "column 'last_seen'", "1 of 500 times do not parse", "(row 499)")
    last_seen([f"2024020{i % 9 + 1}" for i in range(n)])     # digits only: numbers
    assert load_folder(tmp_path)["users"].df["last_seen"].dtype == "int64"
    last_seen(["2024-02-01"] * (n - 1) + ["unknown"])
    (tmp_path / "schema.yaml").write_text(SCHEMA.replace("age: numerical",
                                                         "age: numerical, last_seen: categorical"))
    db = load_folder(tmp_path)
    assert db["users"].df["last_seen"].iloc[-1] == "unknown"
    # declared on the command line (data.stypes): checked before the task tables and trees
    from rdl.graph.build import check_stypes
    with pytest.raises(DataError, match=r"data.stypes.users.last_seen: table 'users', column "
                                        r"'last_seen': 1 of 500 times do not parse as dates .*"
                                        r"e.g. 'unknown' \(row 499\)"):
        check_stypes(db, {"users": {"last_seen": "timestamp"}})
    with pytest.raises(DataError, match="data.stypes.users.last_seen: .* 500 of 500 values are "
                                        "not numbers"):
        check_stypes(db, {"users": {"last_seen": "numerical"}})


def test_times_written_as_numbers(tmp_path):
    write(tmp_path, users=lambda df: df.assign(signup=[45292, 45293, 45294]))
    fails(tmp_path, "users.csv (table 'users', column 'signup')", "3 of 3 values are numbers, "
          "not times, e.g. 45292 (rows 0, 1, 2)", "Excel serial days",
          "(time: {column: signup, epoch: s}, or ms, us, ns, excel)",
          "(formats: {signup: epoch_s}, or excel, ...)")
    # a warehouse's date keys: yyyymmdd, every one a date
    write(tmp_path, users=lambda df: df.assign(signup=[20240101, 20240102, 20240103]))
    assert load_folder(tmp_path)["users"].df["signup"].dt.day.tolist() == [1, 2, 3]
    write(tmp_path, users=lambda df: df.assign(signup=[20240101, 20241350, 20240103]))
    fails(tmp_path, "column 'signup'", "3 of 3 values are numbers, not times")
    write(tmp_path, users=lambda df: df.assign(signup=["1/5/24", "12/31/24", "2/1/24"]))
    signup = load_folder(tmp_path)["users"].df["signup"]   # sorted by time
    assert signup.tolist() == [pd.Timestamp(t) for t in ("2024-01-05", "2024-02-01",
                                                          "2024-12-31")]


def test_a_foreign_key_matching_nothing(tmp_path):
    """Keys written differently on each side (a type mismatch) match no row: all of them
    set missing would train a model without the table's links."""
    write(tmp_path, posts=lambda df: df.assign(author_id=["u10", "u11", "u12"]))
    fails(tmp_path, "posts.parquet (table 'posts', column 'author_id'): none of its 3 values "
          "matches a key of table 'users' (", "users.csv (table 'users', column 'user_id')",
          "the types differ: text here, whole numbers there",
          "This column holds e.g. 'u10', 'u11', 'u12'; users.user_id holds e.g. 10, 11, 12")
    write(tmp_path, posts=lambda df: df.assign(author_id=[1, 2, 3]))
    fails(tmp_path, "column 'author_id'): none of its 3 values", "both are whole numbers")


def test_an_undeclared_time_column_stops_the_leak(tmp_path, caplog):
    """A fact table with a column of times and no declared time would let every seed see
    its future rows: it stops, naming the opt-in (issue 38, point 5)."""
    write(tmp_path, SCHEMA.replace("votes: {time: created,", "votes: {"))
    fails(tmp_path, "votes.parquet (table 'votes', column 'created'): column(s) ['created'] "
          "hold times in ", "but the schema declares no time",
          "every seed would see all its rows, its future ones included",
          "table 'votes': time: created", "stypes: {created: timestamp}")
    write(tmp_path, SCHEMA.replace("votes: {time: created,", "votes: {stypes: {created: "
                                   "timestamp},"))
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        db = load_folder(tmp_path)   # the opt-in: a static table with a time feature
    assert db["votes"].time_col is None
    assert "hold times" not in caplog.text


def test_rows_repeated_in_every_column_are_read_once(tmp_path, caplog):
    """Exports of overlapping days repeat rows: the same row twice is one row (counted
    twice, every total over it would be wrong), not two rows sharing a key."""
    write(tmp_path, posts=lambda df: pd.concat([df, df.iloc[[0, 1]]], ignore_index=True))
    with caplog.at_level(logging.WARNING, logger="rdl.data.checks"):
        db = load_folder(tmp_path)
    assert sorted(db.keys["posts"]) == [100, 101, 102]
    assert "posts.parquet (table 'posts'): 2 rows repeat another row in every column" \
        in caplog.text


def test_a_compressed_file_cut_short_stops_naming_it(tmp_path):
    """A ``.gz`` cut short in transfer: before, a bare OSError from pyarrow."""
    import gzip
    data = gzip.compress(("id,amount\n" + "".join(f"{i},{i}\n" for i in range(50000))).encode())
    schema = {"tables": {"orders": {"file": "orders.csv.gz", "pkey": "id"}}}
    for cut in (len(data) // 2, 12):   # (mid-file: the rows; at its start: the header)
        (tmp_path / "orders.csv.gz").write_bytes(data[:cut])
        fails(tmp_path, "orders.csv.gz (table 'orders'): not readable",
              "a compressed file cut short?", schema=schema)


def test_a_semicolon_file_with_decimal_commas_and_a_cp1252_header(tmp_path):
    """A spreadsheet's export from a European locale: ``;`` between fields, a decimal comma
    in each row (which splits it by ``,`` as many times as ``;`` does), and ``é`` in the
    header in cp1252: before, its first row was taken for a title, and its header stopped
    the load as not UTF-8."""
    (tmp_path / "orders.csv").write_bytes("id;montant;catégorie\n1;1,5;a\n2;2,25;b\n"
                                          .encode("cp1252"))
    db = load_folder(tmp_path, {"tables": {"orders": {"pkey": "id"}}})
    df = db["orders"].df
    assert list(df.columns) == ["id", "montant", "catégorie"]
    assert df["montant"].tolist() == [1.5, 2.25]
    # one decimal comma only, after a byte-order mark: the rows split by , unevenly
    (tmp_path / "orders.csv").write_bytes("\ufeffid;montant\n1;2,5\n2;3\n3;4\n".encode())
    df = load_folder(tmp_path, {"tables": {"orders": {"pkey": "id"}}})["orders"].df
    assert df["montant"].tolist() == [2.5, 3.0, 4.0]
