"""PostgreSQL's pg_dump archives (rdl.data.pgdump): a shop's database written by pg_dump 15
in its custom (-Fc), tar (-Ft) and directory (-Fd) formats (tests/data/scripts/), read
through pg_restore as the plain script it writes, with the keys the database declares and
a partition's rows its parent's."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from rdl.data import dbfile
from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder

SCRIPTS = Path(__file__).parent / "scripts"
FORMATS = ["pg_dump_shop.dump", "pg_dump_shop.tar", "pg_dump_shop_dir"]
needs = pytest.mark.skipif(shutil.which("pg_restore") is None, reason="needs pg_restore")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "cache"))


def copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    (shutil.copytree if (SCRIPTS / name).is_dir() else shutil.copy)(SCRIPTS / name, target)
    return target


@needs
@pytest.mark.parametrize("name", FORMATS)
def test_a_pg_dump_archive_is_drafted_and_loaded(tmp_path, name):
    path = copy(tmp_path, name)
    assert dbfile.kind(path) == "pgdump"
    schema = yaml.safe_load(draft(path))["tables"]
    assert schema["orders"]["pkey"] == "order_id" and schema["orders"]["time"] == "placed"
    assert schema["orders"]["fkeys"] == {"customer_id": "customers"}
    assert "orders_2024" not in schema   # (a partition: INHERITS (orders), its rows orders')
    dbfile.schema_beside(path).write_text(yaml.safe_dump({"tables": schema}))
    db = load_folder(path)
    assert list(db["customers"].df["name"].fillna("-")) == ["Ann", "Bo\tTab", "-"]
    assert sorted(db.keys["orders"]) == [10, 11, 12, 13]
    assert db["orders"].df["total"].isna().sum() == 1


def test_without_pg_restore_the_error_says_what_to_run(tmp_path, monkeypatch):
    path = copy(tmp_path, "pg_dump_shop.dump")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(DataError, match=r"pg_dump_shop.dump: a pg_dump archive; rdl reads it "
                       r"through PostgreSQL's pg_restore, which is not on the PATH: .*"
                       r"pg_restore --no-owner --no-privileges -f pg_dump_shop.sql "):
        draft(path)


@needs
def test_a_damaged_archive_names_pg_restore_s_reason(tmp_path):
    path = tmp_path / "cut.dump"
    path.write_bytes((SCRIPTS / "pg_dump_shop.dump").read_bytes()[:200])
    with pytest.raises(DataError, match=r"cut.dump: pg_restore \(.*\) cannot read this pg_dump "
                       r"archive: .*"):
        draft(path)


def test_a_folder_holding_archives_names_them(tmp_path):
    folder = tmp_path / "dumps"
    folder.mkdir()
    shutil.copy(SCRIPTS / "pg_dump_shop.tar", folder)
    shutil.copytree(SCRIPTS / "pg_dump_shop_dir", folder / "shop_dir")
    with pytest.raises(DataError, match=r"no CSV, parquet or JSON file in it \(database files: "
                       r"pg_dump_shop.tar, shop_dir: draft one of them"):
        draft(folder)   # (not "extract" the tar; the directory no table of parts)
