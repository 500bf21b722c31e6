"""Tables in a lake's format: a Delta Lake table's folder keeps the files its updates and
deletes replaced; only those its log holds now are read, its rows as the table has them
(checked against delta-rs' own reading of a table it wrote, by hand: docs/data.md); what
rdl cannot apply, and Iceberg's and Hudi's folders, stop naming it (rdl.data.lakes)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails

SCHEMA = {"tables": {"customers": {"pkey": "customer_id"},
                     "orders": {"pkey": "order_id", "time": "ordered_at",
                                "fkeys": {"customer_id": "customers"}}}}


def _part(folder, name: str, df: pd.DataFrame, text=pa.string()) -> str:
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    texts = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    pq.write_table(table.cast(pa.schema([f.with_type(text) if any(t(f.type) for t in texts)
                                         else f for f in table.schema])), folder / name)
    return name


def _commit(log, version: int, *actions: dict) -> None:
    log.mkdir(parents=True, exist_ok=True)
    info = {"commitInfo": {"timestamp": 1700000000000 + version, "operation": "WRITE"}}
    (log / f"{version:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in [info, *actions]) + "\n")


def _add(path: str, **more) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 0,
                    "dataChange": True, **more}}


def _remove(path: str) -> dict:
    return {"remove": {"path": path, "deletionTimestamp": 0, "dataChange": True}}


META = {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                     "schemaString": "{}", "partitionColumns": [], "configuration": {}}}
PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def lake(folder, n: int = 120) -> pd.DataFrame:
    """A shop whose orders are a Delta table as delta-rs writes one: two appends, a delete
    that rewrote the first file (its old file kept, logged removed), an update of the
    second (likewise); returns the orders the table holds now."""
    rng = np.random.default_rng(0)
    pd.DataFrame({"customer_id": range(10), "tier": ["a", "b"] * 5}).to_csv(
        folder / "customers.csv", index=False)
    orders = pd.DataFrame({"order_id": np.arange(n), "customer_id": rng.integers(0, 10, n),
                           "ordered_at": pd.date_range("2024-01-01", periods=n, freq="6h"),
                           "amount": rng.random(n).round(2), "note": ["x"] * n})
    first, second = orders.iloc[: n // 2], orders.iloc[n // 2:]
    log, t = folder / "orders" / "_delta_log", folder / "orders"
    _commit(log, 0, PROTOCOL, META, _add(_part(t, "part-0-a.snappy.parquet", first)))
    _commit(log, 1, _add(_part(t, "part-0-b.snappy.parquet", second, pa.large_string())))
    kept = first[first["amount"] >= 0.2]
    _commit(log, 2, _add(_part(t, "part-0-c.zstd.parquet", kept, pa.string_view())),
            _remove("part-0-a.snappy.parquet"))
    updated = second.assign(amount=second["amount"] * 2)
    _commit(log, 3, _add(_part(t, "part-0-d.zstd.parquet", updated)),
            _remove("part-0-b.snappy.parquet"))
    return pd.concat([kept, updated])


def test_a_delta_table_reads_the_files_its_log_holds_now(tmp_path):
    now = lake(tmp_path)
    db = load_folder(tmp_path, SCHEMA)
    df = db["orders"].df.set_index(db.keys["orders"]).sort_index()
    assert list(df.index) == sorted(now["order_id"])   # before: the replaced files' rows too
    assert np.allclose(df["amount"], now.sort_values("order_id")["amount"])


def test_the_draft_reads_a_delta_table_as_one(tmp_path):
    lake(tmp_path)
    spec = __import__("yaml").safe_load(draft(tmp_path))["tables"]["orders"]
    assert spec["file"] == "orders" and spec["pkey"] == "order_id"


def test_a_checkpoint_stands_in_for_commits_cleaned_up(tmp_path):
    now = lake(tmp_path)
    log = tmp_path / "orders" / "_delta_log"
    live = [{"path": "part-0-c.zstd.parquet", "size": 1, "deletionVector": None}, None,
            {"path": "part-0-b.snappy.parquet", "size": 1, "deletionVector": None}]
    pq.write_table(pa.table({"add": live, "remove": [None, {"path": "part-0-a.snappy.parquet"},
                                                     None]}),
                   log / f"{2:020d}.checkpoint.parquet")
    for v in (0, 1, 2):
        (log / f"{v:020d}.json").unlink()
    db = load_folder(tmp_path, SCHEMA)
    assert sorted(db.keys["orders"]) == sorted(now["order_id"])
    mapped = pa.table({"add": [None], "metaData": [{"configuration": [
        ("delta.columnMapping.mode", "id")], "partitionColumns": []}]})
    pq.write_table(mapped, log / f"{2:020d}.checkpoint.0000000002.0000000002.parquet")
    fails(tmp_path, "its columns are mapped (delta.columnMapping.mode: id)", schema=SCHEMA)
    (log / f"{2:020d}.checkpoint.0000000002.0000000002.parquet").unlink()
    (log / f"{2:020d}.checkpoint.parquet").unlink()
    fails(tmp_path, "(a Delta Lake table): its first commits are gone", schema=SCHEMA)


@pytest.mark.parametrize("change,said", [
    ({"add": {"deletionVector": {"storageType": "u", "pathOrInlineDv": "ab", "offset": 1,
                                 "sizeInBytes": 36, "cardinality": 2}}},
     "1 of its 2 files have rows deleted by deletion vectors"),
    ({"metaData": {"configuration": {"delta.columnMapping.mode": "name"}}},
     "its columns are mapped (delta.columnMapping.mode: name)"),
    ({"metaData": {"partitionColumns": ["region"]}},
     "its partition columns ['region'] are not in the paths of 2 of its files"),
    ({"add": {"path": "s3://bucket/orders/part-9.parquet"}}, "names a file outside its folder"),
    ({"add": {"path": "part-0-missing.parquet"}}, "1 of the 2 files its log holds are missing")])
def test_what_rdl_cannot_apply_stops_naming_it(tmp_path, change, said):
    lake(tmp_path)
    (key, fields), = change.items()
    action = _add("part-0-d.zstd.parquet") if key == "add" else json.loads(json.dumps(META))
    action[key].update(fields)
    log = tmp_path / "orders" / "_delta_log"
    _commit(log, 4, action, *([_remove("part-0-d.zstd.parquet")] if key == "add" and
                              "path" in fields else []))
    fails(tmp_path, "orders (a Delta Lake table)", said, schema=SCHEMA)


def _avro(path, name: str, fields: list, records: list[dict]) -> None:
    import fastavro
    with open(path, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": name, "fields": fields}, records)


_DATA_FILE = {"type": "record", "name": "r2", "fields": [
    {"name": "content", "type": "int"}, {"name": "file_path", "type": "string"},
    {"name": "file_format", "type": "string"}, {"name": "record_count", "type": "long"}]}


def iceberg(folder, location: str = "s3://lake/db/orders") -> pd.DataFrame:
    """The shop's orders as an Iceberg table written at ``location`` and copied here, as
    pyiceberg writes one (metadata JSON, a manifest list, manifests in Avro: the fields
    rdl reads): two appends, then a delete that rewrote the first file; returns its rows."""
    now = lake(folder)   # (its parquet files; its Delta log goes)
    t = folder / "orders"
    for p in (t / "_delta_log").iterdir():
        p.unlink()
    (t / "_delta_log").rmdir()
    (t / "metadata").mkdir()
    entry = lambda status, name: {"status": status, "data_file": {  # noqa: E731
        "content": 0, "file_path": f"{location}/{name}", "file_format": "PARQUET",
        "record_count": 1}}
    fields = [{"name": "status", "type": "int"}, {"name": "data_file", "type": _DATA_FILE}]
    _avro(t / "metadata" / "m0.avro", "manifest_entry", fields,
          [entry(2, "part-0-a.snappy.parquet"), entry(1, "part-0-c.zstd.parquet")])
    _avro(t / "metadata" / "m1.avro", "manifest_entry", fields,
          [entry(0, "part-0-d.zstd.parquet")])
    _avro(t / "metadata" / "snap-2.avro", "manifest_file",
          [{"name": "manifest_path", "type": "string"}, {"name": "content", "type": "int"}],
          [{"manifest_path": f"{location}/metadata/m{i}.avro", "content": 0} for i in (0, 1)])
    meta = {"format-version": 2, "location": location, "current-snapshot-id": 2,
            "snapshots": [{"snapshot-id": 1, "manifest-list": f"{location}/metadata/old.avro"},
                          {"snapshot-id": 2,
                           "manifest-list": f"{location}/metadata/snap-2.avro"}]}
    (t / "metadata" / "00001-abc.metadata.json").write_text(json.dumps({**meta,
                                                                       "snapshots": []}))
    (t / "metadata" / "00002-def.metadata.json").write_text(json.dumps(meta))
    return now


def test_an_iceberg_table_reads_the_files_its_snapshot_holds(tmp_path):
    now = iceberg(tmp_path)
    db = load_folder(tmp_path, SCHEMA)
    assert sorted(db.keys["orders"]) == sorted(now["order_id"])


@pytest.mark.parametrize("change,said", [
    ("location", "names a file outside its location"),
    ("deletes", "deletes rows with delete files (part-0-d.zstd.parquet: merge-on-read)"),
    ("missing", "1 of the 2 files its log holds are missing (e.g. part-0-c.zstd.parquet)")])
def test_what_rdl_cannot_apply_of_an_iceberg_table_stops(tmp_path, change, said):
    iceberg(tmp_path)
    t = tmp_path / "orders"
    if change == "location":
        meta = json.loads((t / "metadata" / "00002-def.metadata.json").read_text())
        meta["location"] = "s3://lake/db/elsewhere"
        (t / "metadata" / "00002-def.metadata.json").write_text(json.dumps(meta))
    elif change == "deletes":
        _avro(t / "metadata" / "m1.avro", "manifest_entry",
              [{"name": "status", "type": "int"}, {"name": "data_file", "type": _DATA_FILE}],
              [{"status": 1, "data_file": {"content": 1, "file_path": "s3://lake/db/orders/"
                                           "part-0-d.zstd.parquet", "file_format": "PARQUET",
                                           "record_count": 1}}])
    else:
        (t / "part-0-c.zstd.parquet").unlink()
    fails(tmp_path, "orders (an Apache Iceberg table)", said, schema=SCHEMA)


def test_a_hudi_folder_stops_asking_for_a_snapshot(tmp_path):
    lake(tmp_path)
    t = tmp_path / "orders"
    for p in (t / "_delta_log").iterdir():
        p.unlink()
    (t / "_delta_log").rmdir()
    (t / ".hoodie").mkdir()
    fails(tmp_path, "an Apache Hudi table", "export a snapshot of it as parquet", schema=SCHEMA)


def test_parts_whose_writers_typed_text_differently_merge(tmp_path):
    """One part's text a ``string``, the next's a ``large_string`` or ``string_view`` (as
    delta-rs and Polars write them): before, the parts stopped as types that do not merge."""
    df = pd.DataFrame({"id": [1, 2], "city": ["Ely", "Rye"]})
    for i, text in enumerate((pa.string(), pa.large_string(), pa.string_view())):
        _part(tmp_path, f"towns_{i}.parquet", df.assign(id=df["id"] + 10 * i), text)
    db = load_folder(tmp_path, {"tables": {"towns": {"file": "towns_*.parquet", "pkey": "id"}}})
    assert sorted(db["towns"].df["city"]) == ["Ely", "Ely", "Ely", "Rye", "Rye", "Rye"]


def test_the_draft_says_why_it_could_not_read_a_lake_table(tmp_path):
    lake(tmp_path)
    (tmp_path / "orders" / "_delta_log" / f"{0:020d}.json").unlink()   # (no checkpoint)
    text = draft(tmp_path)
    assert "customers:" in text and "# not read: " in text and "its first commits are gone" in text
