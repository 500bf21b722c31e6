"""Exports without a header row and parts without a data suffix, as databases write them
by default: PostgreSQL's ``COPY ... TO`` (tabs, ``\\N``), MySQL's ``INTO OUTFILE``,
Redshift's ``UNLOAD`` (``orders_0000_part_00``, ``|``, maybe gzipped), Hive's ``000000_0``.
A schema's ``columns:`` names the fields; the draft names them ``column_1``, ..."""
from __future__ import annotations

import gzip
import logging

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails

CUSTOMERS = "1\tAda\t2024-01-02 10:00:00\n2\t\\N\t2024-01-05 09:30:00\n3\tLin\t2024-02-01 12:00:00\n"
SCHEMA = {"tables": {
    "customers": {"file": "customers.tsv", "pkey": "id", "time": "joined",
                  "columns": ["id", "name", "joined"]},
    "orders": {"pkey": "order_id", "time": "ordered", "fkeys": {"customer_id": "customers"},
               "columns": ["order_id", "customer_id", "ordered", "amount"]}}}


def unload(folder, rows: int = 40):
    """customers as PostgreSQL's COPY TO writes them; orders as Redshift's UNLOAD writes
    them: pipe-delimited parts, one gzipped, no header, no suffix."""
    (folder / "customers.tsv").write_text(CUSTOMERS)
    parts = folder / "orders"
    parts.mkdir()
    lines = [f"{i}|{i % 3 + 1}|2024-03-{i % 28 + 1:02d} 08:00:00|{i * 1.5}" for i in range(rows)]
    (parts / "orders_0000_part_00").write_text("\n".join(lines[:20]) + "\n")
    with gzip.open(parts / "orders_0001_part_00.gz", "wt") as f:
        f.write("\n".join(lines[20:]) + "\n")
    (folder / "README").write_text("Unloaded from Redshift on 2024-04-01\nby the nightly job\n")


def test_named_columns_read_a_file_without_a_header(tmp_path, caplog):
    unload(tmp_path)
    db = load_folder(tmp_path, SCHEMA)
    c, o = db["customers"].df, db["orders"].df
    assert len(c) == 3 and c["name"].isna().tolist() == [False, True, False]
    assert pd.api.types.is_datetime64_any_dtype(c["joined"])
    assert len(o) == 40 and o["amount"].sum() == sum(i * 1.5 for i in range(40))
    assert o["customer_id"].notna().all()
    # a file whose header is what the schema names: the header left out, said so
    (tmp_path / "customers.tsv").write_text("id\tname\tjoined\n" + CUSTOMERS)
    with caplog.at_level(logging.WARNING):
        assert len(load_folder(tmp_path, SCHEMA)["customers"]) == 3
    assert "1 row repeats the header" in caplog.text


def test_without_columns_or_with_the_wrong_count_it_says_what_to_write(tmp_path):
    unload(tmp_path)
    bare = yaml.safe_load(yaml.safe_dump(SCHEMA))
    del bare["tables"]["customers"]["columns"]
    fails(tmp_path, "customers.tsv (table 'customers'): primary key 'id' missing",
          "the file's first row looks like data", "columns: [a, b, ...]", schema=bare)
    short = yaml.safe_load(yaml.safe_dump(SCHEMA))
    short["tables"]["orders"]["columns"] = ["order_id", "customer_id", "ordered"]
    fails(tmp_path, "orders_0000_part_00 (table 'orders'): its first row has 4 fields, and the "
          "schema's columns: names 3", schema=short)
    pq.write_table(pa.table({"id": [1], "name": ["a"], "joined": ["2024-01-01"]}),
                   tmp_path / "customers.parquet")
    parquet = yaml.safe_load(yaml.safe_dump(SCHEMA))
    parquet["tables"]["customers"]["file"] = "customers.parquet"
    fails(tmp_path, "a parquet or JSON file names its own", schema=parquet)
    twice = yaml.safe_load(yaml.safe_dump(SCHEMA))
    twice["tables"]["customers"]["columns"] = ["id", "id", "joined"]
    fails(tmp_path, "each once", schema=twice)


def test_the_draft_names_the_fields_and_its_schema_loads(tmp_path):
    unload(tmp_path)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)["tables"]
    assert set(schema) == {"customers", "orders"}   # the README is no table
    assert schema["customers"]["columns"] == ["column_1", "column_2", "column_3"]
    assert schema["orders"]["columns"] == ["column_1", "column_2", "column_3", "column_4"]
    assert schema["orders"]["time"] == "column_3" and schema["customers"]["time"] == "column_3"
    db = load_folder(tmp_path, {"tables": schema})
    assert len(db["orders"]) == 40 and len(db["customers"]) == 3


@pytest.mark.parametrize("name, kind", [("000000_0", "csv"), ("part_00.gz", "csv"),
                                        ("data.2024", "csv"), ("manifest", None),
                                        ("blob", "parquet")])
def test_what_a_file_without_a_data_suffix_holds(tmp_path, name, kind):
    from rdl.data import sources

    path = tmp_path / name
    if kind == "parquet":
        pq.write_table(pa.table({"a": [1]}), path)
    elif name == "manifest":
        path.write_text('{"entries": [{"url": "s3://b/orders_0000_part_00"}]}\n')
    elif name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write("1|a\n2|b\n")
    else:
        path.write_text("1\x01a\n2\x01b\n")
    assert sources.unnamed(path)
    assert (sources.is_csv(path), sources.is_parquet(path)) == (kind == "csv", kind == "parquet")


def test_a_hive_table_s_parts(tmp_path):
    """Hive's text tables: parts named 000000_0, fields delimited by \\x01, no header."""
    unload(tmp_path)
    (tmp_path / "visits").mkdir()
    (tmp_path / "visits" / "000000_0").write_text(
        "".join(f"{i % 3 + 1}\x012024-03-0{i + 1} 10:00:00\x01{i}\n" for i in range(5)))
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    schema["tables"]["visits"] = {"time": "at", "fkeys": {"customer_id": "customers"},
                                  "columns": ["customer_id", "at", "pages"]}
    visits = load_folder(tmp_path, schema)["visits"].df
    assert visits["pages"].tolist() == [0, 1, 2, 3, 4] and visits["customer_id"].notna().all()
