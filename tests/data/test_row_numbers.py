"""A frame's index, written with its rows (pandas' to_csv and to_parquet, R's write.csv),
read as pandas reads it back: row numbers left out, a named index a column
(rdl.data.row_numbers, rdl.data.parquet)."""
from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder

SCHEMA = {"tables": {"users": {"pkey": "user_id"},
                     "orders": {"time": "ts", "fkeys": {"user_id": "users"}}}}


def users(folder) -> None:
    pd.DataFrame({"user_id": [10, 11, 12], "age": [30, 40, 50]}).to_csv(
        folder / "users.csv", index=False)


def orders(n: int = 6, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"user_id": [10 + i % 3 for i in range(n)],
                         "ts": pd.date_range("2024-01-01", periods=n, freq="D"),
                         "amount": [1.5 * i for i in range(n)]},
                        index=range(start, start + n))


@pytest.mark.parametrize("write", [
    lambda f: orders().to_csv(f / "orders.csv"),                        # pandas: '' and 0, 1, ...
    lambda f: orders().to_csv(f / "orders.csv", index_label="Unnamed: 0"),   # read, written again
    lambda f: (f / "orders.csv").write_text(                                # R's write.csv
        '"","user_id","ts","amount"\n' + "".join(
            f'"{i + 1}",{10 + i % 3},"2024-01-0{i + 1}",{i}\n' for i in range(6))),
    lambda f: ((f / "orders").mkdir(), orders(3).to_csv(f / "orders" / "a.csv"),  # parts
               orders(3).to_csv(f / "orders" / "b.csv")),
    lambda f: orders().iloc[[0, 2, 1, 5, 3, 4]].to_parquet(f / "orders.parquet"),  # row labels
    lambda f: (f / "orders.csv").write_text(   # R: read.csv (row names as X), write.csv again
        '"","X","user_id","ts","amount"\n' + "".join(
            f'"{i + 1}",{i + 1},{10 + i % 3},"2024-01-0{i + 1}",{i}\n' for i in range(6))),
])
def test_row_numbers_written_with_the_rows_are_left_out(tmp_path, write, caplog):
    """Before, a column of row positions (unnamed_1, Unnamed: 0, __index_level_0__) was a
    feature, an id learnt by heart, and the draft's primary key."""
    users(tmp_path)
    write(tmp_path)
    df = load_folder(tmp_path, SCHEMA)["orders"].df
    assert list(df.columns) == ["user_id", "ts", "amount"] and len(df) == 6
    assert "pkey" not in yaml.safe_load(draft(tmp_path))["tables"]["orders"]


def test_an_index_that_is_no_row_number_or_that_the_schema_names_stays(tmp_path):
    users(tmp_path)
    cars = '"","user_id","ts","amount"\n"Mazda RX4",10,2024-01-01,1\n"Datsun 710",11,2024-01-02,2\n'
    (tmp_path / "orders.csv").write_text(cars)   # R's row names that are names: a column
    assert "unnamed_1" in load_folder(tmp_path, SCHEMA)["orders"].df.columns
    orders().to_csv(tmp_path / "orders.csv")
    named = {"tables": {**SCHEMA["tables"], "orders": {**SCHEMA["tables"]["orders"],
                                                       "pkey": "unnamed_1"}}}
    assert len(load_folder(tmp_path, named)["orders"]) == 6   # the schema's key: kept


def test_a_parquet_file_s_named_index_is_a_column_as_pandas_reads_it(tmp_path):
    """to_parquet of set_index("user_id") where the ids are 1, 2, 3, ... keeps them as a
    range in the file's metadata alone: before, the key was missing from the table."""
    pd.DataFrame({"user_id": [1, 2, 3], "age": [30, 40, 50]}).set_index("user_id").to_parquet(
        tmp_path / "users.parquet")
    assert pq.read_schema(tmp_path / "users.parquet").names == ["age"]   # (no column)
    orders().assign(user_id=[1, 2, 3, 3, 2, 1]).to_parquet(tmp_path / "orders.parquet")
    db = load_folder(tmp_path, SCHEMA)
    assert db.keys["users"].tolist() == [1, 2, 3]
    assert db["orders"].df["user_id"].tolist() == [0, 1, 2, 2, 1, 0]
