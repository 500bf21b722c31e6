"""Files of typed columns beyond parquet (rdl.data.typed): ORC, Arrow/Feather, Avro, SAS
and Stata, each written by its own library, read as the same table parquet gives."""
from __future__ import annotations

import datetime as dt

import fastavro
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.orc as orc
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder

N = 60


def frames(seed: int = 0) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    customers = pd.DataFrame({"customer_id": np.arange(1, 11),
                              "region": rng.choice(["north", "south"], 10)})
    ordered = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(N) * 7, unit="h")
    orders = pd.DataFrame({"order_id": np.arange(100, 100 + N),
                           "customer_id": rng.integers(1, 11, N),
                           "ordered": ordered.as_unit("us"),
                           "amount": np.round(rng.random(N) * 100, 2),
                           "channel": rng.choice(["web", "shop"], N)})
    orders.loc[3, "amount"] = np.nan
    return {"customers": customers, "orders": orders}


def write(folder, kind: str) -> None:
    """The orders in ``kind``, the customers as parquet."""
    f = frames()
    f["customers"].to_parquet(folder / "customers.parquet", index=False)
    orders = f["orders"]
    path = folder / f"orders.{kind}"
    if kind == "orc":
        orc.write_table(pa.Table.from_pandas(orders, preserve_index=False), path)
    elif kind == "feather":
        feather.write_feather(orders, path)
    elif kind == "avro":   # as BigQuery exports: times as timestamp-micros, nullable fields
        schema = {"type": "record", "name": "orders", "fields": [
            {"name": "order_id", "type": "long"}, {"name": "customer_id", "type": "long"},
            {"name": "ordered", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "amount", "type": ["null", "double"]},
            {"name": "channel", "type": ["null", "string"]}]}
        records = [{**r, "ordered": r["ordered"].to_pydatetime().replace(tzinfo=dt.timezone.utc),
                    "amount": None if pd.isna(r["amount"]) else r["amount"]}
                   for r in orders.to_dict("records")]
        with open(path, "wb") as out:
            fastavro.writer(out, fastavro.parse_schema(schema), records)
    elif kind == "dta":
        labelled = orders.assign(channel=orders["channel"].astype("category"),
                                 ordered=orders["ordered"].astype("datetime64[ns]"))
        labelled.to_stata(path, write_index=False, convert_dates={"ordered": "tc"})
    elif kind == "sav":   # SPSS: the channel as codes with value labels, a DATETIME
        import pyreadstat
        codes = {"web": 1.0, "shop": 2.0}
        pyreadstat.write_sav(orders.assign(channel=orders["channel"].map(codes),
                                           ordered=orders["ordered"].astype("datetime64[ns]")),
                             str(path), variable_value_labels={
                                 "channel": {v: k for k, v in codes.items()}})
    elif kind == "xpt":   # SAS transport, version 5 (the FDA's): names of 8 characters,
        import pyreadstat  # times as ISO 8601 text (as the FDA's SDTM writes its --DTC)
        sas = orders.assign(ordered=orders["ordered"].dt.strftime("%Y-%m-%dT%H:%M:%S"))
        pyreadstat.write_xport(sas.rename(columns=SHORT), str(path), table_name="ORDERS",
                               file_format_version=5)


#: the orders' columns as SAS transport files name them (8 characters at most)
SHORT = {"order_id": "order_id", "customer_id": "cust_id", "ordered": "ordered",
         "amount": "amount", "channel": "channel"}


SCHEMA = {"tables": {"customers": {"pkey": "customer_id"},
                     "orders": {"pkey": "order_id", "time": "ordered",
                                "fkeys": {"customer_id": "customers"}}}}


@pytest.mark.parametrize("kind", ["orc", "feather", "avro", "dta", "xpt", "sav"])
def test_a_typed_file_loads_as_its_parquet_does(tmp_path, kind):
    (tmp_path / "pq").mkdir()
    write(tmp_path, kind)
    frames()["customers"].to_parquet(tmp_path / "pq" / "customers.parquet", index=False)
    frames()["orders"].to_parquet(tmp_path / "pq" / "orders.parquet", index=False)
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    expected = load_folder(tmp_path / "pq", schema)
    if kind == "xpt":
        schema["tables"]["orders"]["fkeys"] = {"cust_id": "customers"}
    db = load_folder(tmp_path, schema)   # found by its name: orders.<kind>
    got, want = db["orders"].df, expected["orders"].df
    if kind == "xpt":
        want = want.rename(columns=SHORT)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert db["orders"].time_col == "ordered" and got["amount"].isna().sum() == 1
    # the draft takes the file as a table and times it
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    assert schema["orders"]["file"] == f"orders.{kind}" and schema["orders"]["time"] == "ordered"
    assert schema["orders"]["fkeys"] == {SHORT["customer_id"] if kind == "xpt" else
                                         "customer_id": "customers"}


def test_a_damaged_file_says_which_and_what(tmp_path):
    write(tmp_path, "avro")
    (tmp_path / "orders.avro").write_bytes(b"Obj\x01 not avro")
    from tests.data.test_folder import fails
    fails(tmp_path, "orders.avro (table 'orders'): not a readable AVRO file", schema=SCHEMA)
