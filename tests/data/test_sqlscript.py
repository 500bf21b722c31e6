"""Databases handed out as SQL scripts (rdl.data.sqlscript), one per dialect, written as
their tools write them (tests/data/scripts/): a mysqldump of MySQL's employees sample
(backticks, table options, KEY lines, ENUM, AUTO_INCREMENT, backslash escapes, a
procedure between DELIMITER lines), a pg_dump of Pagila (SET, a function's $$ body,
sequences, casts, COPY rows with escapes, keys added by ALTER TABLE, an index) and
Chinook's SQL Server script ([dbo]., IDENTITY, CLUSTERED, N'...', GO)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from rdl.data import dbfile
from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder
from rdl.data.sqlscript import run

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "cache"))


def rows(db: Path) -> dict:
    with sqlite3.connect(db) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = {n: con.execute(f'SELECT * FROM "{n}"').fetchall() for n in names}
    con.close()
    return out


def test_a_mysql_dump_runs_with_its_keys_and_escapes(tmp_path):
    got = rows(run(SCRIPTS / "mysql_employees.sql", tmp_path / "e.db"))
    assert got["departments"] == [("d001", "Marketing"), ("d002", "Finance; 'and' Co"),
                                  ("d003", "R\\D")]
    assert len(got["employees"]) == 2 and got["employees"][0][3] == "M"
    assert [r[1] for r in got["salaries"]] == [60117.5, -500.0]   # numbers kept whole
    given = dbfile.declared(SCRIPTS / "mysql_employees.sql")
    assert given.pkeys["dept_emp"] == ["emp_no", "dept_no"]
    assert given.fkeys["dept_emp"] == {"emp_no": "employees", "dept_no": "departments"}


def test_a_pg_dump_runs_its_copy_rows_and_the_keys_alter_table_adds(tmp_path):
    got = rows(run(SCRIPTS / "pg_dump_pagila.sql", tmp_path / "p.db"))
    assert got["actor"][1][1] == "NICK\tTAB" and got["actor"][2][1] is None
    assert got["film"][1][1] == "ACE; GOLDFINGER" and len(got["film_actor"]) == 3
    given = dbfile.declared(SCRIPTS / "pg_dump_pagila.sql")
    assert given.pkeys == {"actor": ["actor_id"], "film": ["film_id"],
                           "film_actor": ["actor_id", "film_id"]}
    assert given.fkeys == {"film_actor": {"actor_id": "actor", "film_id": "film"}}


def test_a_sql_server_script_runs(tmp_path):
    got = rows(run(SCRIPTS / "sqlserver_chinook.sql", tmp_path / "c.db"))
    assert got["Artist"] == [(1, "AC/DC"), (2, "Accept")] and len(got["Album"]) == 2
    assert dbfile.declared(SCRIPTS / "sqlserver_chinook.sql").fkeys == {
        "Album": {"ArtistId": "Artist"}}


def test_a_script_is_drafted_and_loaded_as_a_database_file(tmp_path):
    path = tmp_path / "employees.sql"
    path.write_text((SCRIPTS / "mysql_employees.sql").read_text())
    schema = yaml.safe_load(draft(path))["tables"]
    assert schema["dept_emp"]["missing"] == ["9999-01-01"]   # the open end of a stint
    assert schema["dept_emp"]["time"] == "from_date"
    dbfile.schema_beside(path).write_text(yaml.safe_dump({"tables": schema}))
    db = load_folder(path)
    assert len(db["dept_emp"]) == 3 and db["dept_emp"].time_col == "from_date"


def test_a_statement_sqlite_refuses_names_its_line(tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text("-- a dump\nCREATE TABLE t (a int);\n\nINSERT INTO t VALUES (1, 2, 3);\n")
    with pytest.raises(DataError, match=r"bad.sql, line 4: SQLite cannot run it"):
        run(bad, tmp_path / "b.db")
    (tmp_path / "none.sql").write_text("SELECT 1;\n")
    with pytest.raises(DataError, match="no CREATE TABLE in it"):
        run(tmp_path / "none.sql", tmp_path / "n.db")
