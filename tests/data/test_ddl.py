"""A folder of data files with the DDL that makes their tables beside it (rdl.data.ddl): as
AdventureWorks for PostgreSQL ships (lorint/AdventureWorks-for-Postgres: install.sql,
whose CREATE SCHEMA holds the tables, comments after columns, a column added later, keys
added by ALTER TABLE, and \\copy lines loading headerless, tab-delimited CSV files)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder

INSTALL = """-- AdventureWorks for Postgres
\\pset tuples_only on
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE SCHEMA Person
  CREATE TABLE BusinessEntity(
    BusinessEntityID SERIAL, --  NOT FOR REPLICATION
    ModifiedDate TIMESTAMP NOT NULL CONSTRAINT "DF_BusinessEntity_ModifiedDate" DEFAULT (NOW())
  )
  CREATE TABLE Address(
    AddressID SERIAL NOT NULL, -- int
    City varchar(30) NOT NULL, -- If the address is a store's, or a person's, this is non-null.
    BusinessEntityID INT NOT NULL
  );
COMMENT ON SCHEMA Person IS 'Contains objects related to names and addresses.';
\\copy Person.BusinessEntity FROM './BusinessEntity.csv' DELIMITER E'\\t' CSV;
\\copy Person.Address FROM './Address.csv' DELIMITER E'\\t' CSV ENCODING 'latin1';
ALTER TABLE Person.Address ADD PostalCode VARCHAR DEFAULT '/';
UPDATE Person.Address SET PostalCode = City || '/';
ALTER TABLE Person.BusinessEntity ADD
    CONSTRAINT "PK_BusinessEntity_BusinessEntityID" PRIMARY KEY
    (BusinessEntityID);
CLUSTER Person.BusinessEntity USING "PK_BusinessEntity_BusinessEntityID";
ALTER TABLE Person.Address ADD
    CONSTRAINT "PK_Address_AddressID" PRIMARY KEY
    (AddressID);
ALTER TABLE Person.Address ADD
    CONSTRAINT "FK_Address_BusinessEntity_BusinessEntityID" FOREIGN KEY
    (BusinessEntityID) REFERENCES Person.BusinessEntity(BusinessEntityID);
"""


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "cache"))


def test_the_ddl_beside_headerless_files_names_them_and_declares_their_keys(tmp_path):
    (tmp_path / "install.sql").write_text(INSTALL)
    (tmp_path / "update_csvs.rb").write_text("# makes the CSV files Postgres's\n")
    at = pd.Timestamp("2014-01-01") + pd.to_timedelta(np.arange(30) * 7 % 23, unit="h")
    pd.DataFrame({"id": range(1, 31), "at": at}).to_csv(   # (one day's changes: no calendar)
        tmp_path / "BusinessEntity.csv", sep="\t", header=False, index=False)
    pd.DataFrame({"id": range(1, 41), "city": [f"Bothell {i}" for i in range(40)],
                  "owner": [1 + i % 30 for i in range(40)],
                  "postal": [f"98{i:03d}" for i in range(40)]}).to_csv(
        tmp_path / "Address.csv", sep="\t", header=False, index=False)
    (tmp_path / "install.sql").write_text(INSTALL + "\\copy Person.Password FROM "
                                         "'./Password.csv' DELIMITER E'\\t' CSV;\n")
    text = draft(tmp_path)   # (the files it loads are not read from it: one is not here)
    schema = yaml.safe_load(text)["tables"]
    assert schema["Address"]["columns"] == ["AddressID", "City", "BusinessEntityID",
                                            "PostalCode"]
    assert schema["BusinessEntity"]["columns"] == ["BusinessEntityID", "ModifiedDate"]
    assert schema["Address"]["pkey"] == "AddressID"
    assert "BusinessEntityID: BusinessEntity   # the database declares it" in text
    db = load_folder(tmp_path, {"tables": schema})
    assert db["Address"].df["City"].iloc[0] == "Bothell 0" and len(db["Address"]) == 40


def test_ddl_that_cannot_be_read_is_named_in_the_draft(tmp_path):
    (tmp_path / "schema.sql").write_text("CREATE TABLE orders (order_id int PRIMARY KEY,\n"
                                         "    total decimal(8, 2) GARBLED[ (1));\n")
    pd.DataFrame({"order_id": range(5), "total": 1.5}).to_csv(tmp_path / "orders.csv",
                                                              index=False)
    text = draft(tmp_path)
    assert "# the DDL beside the files: schema.sql left out: " in text
    assert "schema.sql, line 1: a CREATE TABLE SQLite cannot run" in text
    assert yaml.safe_load(text)["tables"]["orders"]["pkey"] == "order_id"   # (guessed)
