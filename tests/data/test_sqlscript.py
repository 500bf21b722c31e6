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


# -- a folder of scripts (Sakila's and Pagila's shape), partitions, MySQL's binary strings ----
SCHEMA = """-- Sakila Sample Database Schema
SET NAMES utf8mb4;
CREATE TABLE `store` (
  store_id TINYINT UNSIGNED NOT NULL AUTO_INCREMENT,
  PRIMARY KEY  (store_id)
)ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE `staff` (
  staff_id TINYINT UNSIGNED NOT NULL AUTO_INCREMENT,
  first_name VARCHAR(45) NOT NULL,
  picture BLOB DEFAULT NULL,
  store_id TINYINT UNSIGNED NOT NULL,
  password VARCHAR(40) BINARY DEFAULT NULL,
  token BINARY(4) DEFAULT NULL,
  PRIMARY KEY  (staff_id),
  KEY idx_fk_store_id (store_id),
  CONSTRAINT fk_staff_store FOREIGN KEY (store_id) REFERENCES store (store_id)
)ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
"""
DATA = """SET FOREIGN_KEY_CHECKS=0;
INSERT INTO `store` VALUES (1),(2);
INSERT INTO `staff` VALUES (1,'Mike',0x89504E470D0A1A0A%s,1,
'8cb2237d0679ca88db6464eac60da96345513964',_binary 'ab\\'c'),
(2,'Jon',NULL,2,NULL,0x0A0B);
"""


def sakila_folder(tmp_path: Path) -> Path:
    """Sakila's files as MySQL hands them out (jOOQ's names: the data's sorts first), a
    script that drops the objects and a README beside them."""
    folder = tmp_path / "sakila"
    folder.mkdir()
    (folder / "sakila-schema.sql").write_text(SCHEMA)
    (folder / "sakila-insert-data.sql").write_text(DATA % ("AB" * 40_000))   # a picture's
    (folder / "sakila-drop-objects.sql").write_text("DROP TABLE staff;\nDROP TABLE store;\n")
    (folder / "README.md").write_text("# Sakila\n")
    return folder


def test_a_folder_of_scripts_is_one_database(tmp_path, caplog):
    """Every script's tables first, then every script's rows, whatever their names' order;
    MySQL's binary strings (a picture as 0x..., _binary '...') are blobs, left out of the
    export; VARCHAR(40) BINARY is text."""
    folder = sakila_folder(tmp_path)
    assert dbfile.kind(folder) == "sql" and dbfile.schema_beside(folder) == folder / "schema.yaml"
    got = rows(run(folder, tmp_path / "s.db"))
    assert got["store"] == [(1,), (2,)]
    assert [r[:2] + r[3:5] for r in got["staff"]] == [
        (1, "Mike", 1, "8cb2237d0679ca88db6464eac60da96345513964"), (2, "Jon", 2, None)]
    assert got["staff"][0][2][:4] == b"\x89PNG" and len(got["staff"][0][2]) == 40_008
    assert got["staff"][0][5] == b"ab'c" and got["staff"][1][5] == b"\n\x0b"
    schema = yaml.safe_load(draft(folder))["tables"]
    assert schema["staff"]["pkey"] == "staff_id" and schema["staff"]["fkeys"] == {
        "store_id": "store"}
    (folder / "schema.yaml").write_text(yaml.safe_dump({"tables": schema}))
    assert dbfile.kind(folder) == "sql"   # (its schema beside the scripts: still theirs)
    db = load_folder(folder)
    assert len(db["staff"]) == 2 and "picture" not in db["staff"].df.columns
    assert "picture" in caplog.text   # (the blob, named as it is left out)
    # binary of a key's size (BINARY(16), a UUID) is kept, as hex
    assert list(db["staff"].df["token"]) == ["61622763", "0a0b"]


def test_a_folder_of_scripts_says_what_does_not_make_one_database(tmp_path):
    folder = sakila_folder(tmp_path)
    with pytest.raises(DataError, match=r"sakila-insert-data.sql: no CREATE TABLE in it: .*"
                       "give the folder of both"):
        run(folder / "sakila-insert-data.sql", tmp_path / "d.db")
    (folder / "sakila-v2.sql").write_text(SCHEMA)   # two versions of the schema beside
    with pytest.raises(DataError, match=r"sakila-v2.sql, line 3: table store is made again "
                       r"\(first at .*sakila-schema.sql, line 3\): .* or give rdl the one script"):
        run(folder, tmp_path / "e.db")
    (folder / "store.csv").write_text("store_id\n1\n")   # files of tables: a folder of files
    assert dbfile.kind(folder) is None
    lone = tmp_path / "lone"
    lone.mkdir()
    with sqlite3.connect(lone / "Chinook.sqlite") as con:
        con.execute("CREATE TABLE t (a int)")
    con.close()
    with pytest.raises(DataError, match=r"no CSV, parquet or JSON file in it \(database files: "
                       r"Chinook.sqlite: draft one of them, python -m rdl.data.draft .*"
                       r"lone/Chinook.sqlite\)"):
        draft(lone)


PAYMENTS = """CREATE TABLE public.payment (%s
    payment_id integer NOT NULL,
    amount numeric(5,2) NOT NULL,
    payment_date timestamp without time zone NOT NULL%s
)%s;
"""


@pytest.mark.parametrize("style", ["inherits", "attach", "partition of"])
def test_a_table_kept_in_partitions_is_one_table(tmp_path, style):
    """PostgreSQL's partitions (Sakila's pg port: INHERITS, rows in the parent; pg_dump of
    a partitioned table, Pagila's: a table per partition, ATTACH PARTITION, rows in each;
    YugabyteDB's dump of Sakila: PARTITION OF, the key before the columns) are one table,
    their rows their parent's; its key, which must hold the partitions' time, is the
    rest where that is unique."""
    if style == "inherits":
        script = PAYMENTS % ("", "", "") + (
            "CREATE TABLE payment_p2007_01 (CONSTRAINT payment_p2007_01_payment_date_check CHECK"
            " (((payment_date >= '2007-01-01 00:00:00'::timestamp without time zone) AND "
            "(payment_date < '2007-02-01 00:00:00'::timestamp without time zone)))\n)\n"
            "INHERITS (payment);\nALTER TABLE public.payment_p2007_01 OWNER TO postgres;\n")
        into = ["payment", "payment_p2007_01"]
    else:
        key = "PRIMARY KEY (payment_date, payment_id)"
        first = style == "partition of"
        script = PAYMENTS % ("\n    CONSTRAINT payment_pkey " + key + "," if first else "",
                             "" if first else ",\n    " + key,
                             "\nPARTITION BY RANGE (payment_date)")
        for month in ("2022_01", "2022_02"):
            script += (f"CREATE TABLE public.payment_p{month} PARTITION OF public.payment FOR "
                       f"VALUES FROM ('{month.replace('_', '-')}-01') TO (MAXVALUE);\n"
                       if style == "partition of" else
                       (PAYMENTS % ("", "", "")).replace("payment (", f"payment_p{month} (")
                       + f"ALTER TABLE ONLY public.payment ATTACH PARTITION public.payment_p"
                       f"{month} FOR VALUES FROM ('{month.replace('_', '-')}-01') TO "
                       "('2023-01-01');\n")
        into = ["payment_p2022_01", "payment_p2022_02"]
    for i, table in enumerate(into):
        script += (f"COPY public.{table} (payment_id, amount, payment_date) FROM stdin;\n"
                   f"{i + 1}\t2.99\t2022-0{i + 1}-05 10:00:00\n\\.\n")
    script += ("ALTER TABLE ONLY public.payment_p2022_01 ADD CONSTRAINT payment_p2022_01_pkey "
               "PRIMARY KEY (payment_date, payment_id);\n")
    path = tmp_path / "pagila.sql"
    path.write_text(script)
    got = rows(run(path, tmp_path / "p.db"))
    assert list(got) == ["payment"]
    assert sorted(got["payment"]) == [(1, 2.99, "2022-01-05 10:00:00"),
                                      (2, 2.99, "2022-02-05 10:00:00")]
    assert yaml.safe_load(draft(path))["tables"]["payment"]["pkey"] == "payment_id"


def test_a_child_table_with_columns_of_its_own_is_named(tmp_path):
    path = tmp_path / "child.sql"
    path.write_text(PAYMENTS % ("", "", "")
                    + "CREATE TABLE refund (reason text) INHERITS (payment);\n")
    with pytest.raises(DataError, match=r"child.sql, line 6: table refund INHERITS payment and "
                       "adds columns of its own"):
        run(path, tmp_path / "c.db")


def test_psql_s_own_commands_are_no_statements(tmp_path):
    """pg_dump 17.6 (and 15.14 on) writes \\restrict KEY first, psql's command: it was read
    as the start of the CREATE TABLE after it, and that table was never made."""
    path = tmp_path / "plain.sql"
    path.write_text("\\restrict 7XBmcHahwuZ9JLF9z01lfQB\nCREATE TABLE public.t (a integer);\n"
                    "COPY public.t (a) FROM stdin;\n1\n\\N\n\\.\n"
                    "\\unrestrict 7XBmcHahwuZ9JLF9z01lfQB\n")
    assert rows(run(path, tmp_path / "p.db")) == {"t": [(1,), (None,)]}


def test_sql_server_s_batches_run_statement_by_statement(tmp_path):
    """Microsoft's instnwnd.sql: statements a line each with no ; between them up to GO
    (an INSERT with no INTO, a value holding a line that begins "Insert"), a picture as
    hex, WITH NOCHECK ADD CONSTRAINT ... NONCLUSTERED (...) ON [PRIMARY]; a procedure's
    INSERT is code, not a row."""
    path = SCRIPTS / "sqlserver_northwind.sql"
    got = rows(run(path, tmp_path / "n.db"))
    assert [r[:2] for r in got["Categories"]] == [(1, "Beverages"),
                                                 (2, "Condi'ments\nInsert, sauces")]
    assert got["Orders"] == [(10248, 1, "7/4/1996", 32.38), (10249, 2, "7/5/1996", 11.61)]
    assert len(got["Order Details"]) == 2
    given = dbfile.declared(path)
    assert given.pkeys["Order Details"] == ["OrderID"]
    assert given.fkeys == {"Order Details": {"OrderID": "Orders"}}


def test_a_script_runs_the_files_it_sources_where_it_says(tmp_path):
    """MySQL's employees sample (datacharmer/test_db): employees.sql makes the tables, then
    `source load_departments.dump ;` and so on, each file's rows where the line stands;
    psql's \\i too. Given the folder, a script another runs is not run twice."""
    folder = tmp_path / "test_db"
    folder.mkdir()
    (folder / "employees.sql").write_text(
        "CREATE TABLE departments (dept_no CHAR(4) NOT NULL, dept_name VARCHAR(40) NOT NULL,\n"
        "    PRIMARY KEY (dept_no), UNIQUE KEY (dept_name));\n"
        "flush /*!50503 binary */ logs;\n"
        "SELECT 'LOADING departments' as 'INFO';\n"
        "source load_departments.dump ;\n"
        "\\. more/load_more.dump\n"
        "source show_elapsed.sql ;\n")
    (folder / "load_departments.dump").write_text(
        "insert  into `departments` VALUES \n('d001','Marketing'),\n('d002','Finance');\n")
    (folder / "more").mkdir()
    (folder / "more" / "load_more.dump").write_text(
        "INSERT INTO `departments` VALUES ('d003','Human Resources');\n")
    (folder / "show_elapsed.sql").write_text("select timediff(1, 2) as data_load_time_diff;\n")
    want = {"departments": [("d001", "Marketing"), ("d002", "Finance"),
                            ("d003", "Human Resources")]}
    assert rows(run(folder / "employees.sql", tmp_path / "a.db")) == want
    assert rows(run(folder, tmp_path / "b.db")) == want
    (folder / "load_departments.dump").unlink()
    with pytest.raises(DataError, match=r"employees.sql, line 5: source load_departments.dump: "
                       "no such file beside it"):
        run(folder / "employees.sql", tmp_path / "c.db")
    psql = tmp_path / "main.sql"
    psql.write_text("CREATE TABLE t (a int);\n\\i rows.sql\nINSERT INTO t VALUES (2);\n")
    (tmp_path / "rows.sql").write_text("INSERT INTO t VALUES (1);\n")
    assert rows(run(psql, tmp_path / "d.db")) == {"t": [(1,), (2,)]}


def test_mysql_s_ways_of_writing_rows_over_others(tmp_path):
    """mysqldump --insert-ignore and --replace, phpMyAdmin's ON DUPLICATE KEY UPDATE: the
    rows are read (REPLACE INTO's were left out without a word; the others stopped)."""
    path = tmp_path / "dump.sql"
    path.write_text("CREATE TABLE `t` (`a` int NOT NULL, `b` varchar(9), PRIMARY KEY (`a`))"
                    " ENGINE=InnoDB;\nINSERT IGNORE INTO `t` VALUES (1,'x'),(1,'dup');\n"
                    "REPLACE INTO `t` VALUES (2,'y');\nINSERT INTO `t` (`a`,`b`) VALUES "
                    "(3,'z') ON DUPLICATE KEY UPDATE `b`=VALUES(`b`);\n"
                    "INSERT INTO `t` VALUES (3,'w') ON DUPLICATE KEY UPDATE `b`='w';\n")
    assert rows(run(path, tmp_path / "d.db")) == {"t": [(1, "x"), (2, "y"), (3, "w")]}


@pytest.mark.parametrize("dialect", ["psql", "postgres", "mysql", "mysql-tabs", "sqlserver"])
def test_a_script_loads_the_files_beside_it(tmp_path, dialect):
    """The rows a script loads from files beside it: psql's \\copy (AdventureWorks for
    PostgreSQL: headerless, tab-delimited), COPY ... FROM 'file' CSV HEADER, MySQL's LOAD
    DATA INFILE (a server's path, a header line, an @skip column), SQL Server's BULK INSERT
    (sqlcmd's $(folder) before the name)."""
    create = ("CREATE TABLE orders (order_id INT PRIMARY KEY, city VARCHAR(30), "
              "total DECIMAL(8,2));\n")
    load, body = {
        "psql": ("\\copy Sales.orders FROM './orders.csv' DELIMITER E'\\t' CSV ENCODING "
                 "'latin1'\n", "1\tBothell\t12.5\n2\tZürich\t\n"),
        "postgres": ("COPY orders (order_id, city, total) FROM '/data/orders.csv' WITH (FORMAT "
                     "csv, HEADER true);\n", 'order_id,city,total\n1,Bothell,12.5\n2,"Zürich",\n'),
        "mysql": ("LOAD DATA INFILE '/var/lib/mysql-files/orders.csv' INTO TABLE orders FIELDS "
                  "TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\n' IGNORE 1 LINES "
                  "(order_id, @skip, city, total);\n",
                  'id,x,city,total\n1,a,Bothell,12.5\n2,b,"Zürich",\\N\n'),
        "mysql-tabs": ("LOAD DATA LOCAL INFILE 'orders.csv' INTO TABLE orders LINES TERMINATED "
                       "BY '\\r\\n';\n", "1\tBothell\t12.5\r\n2\tZürich\t\\N\r\n"),
        "sqlserver": ("BULK INSERT [Sales].[orders] FROM '$(SqlSamplesSourceDataPath)orders.csv' "
                      "WITH (CODEPAGE='ACP', DATAFILETYPE = 'char', FIELDTERMINATOR= '\\t', "
                      "ROWTERMINATOR = '\\n', FIRSTROW = 1, KEEPIDENTITY, TABLOCK);\nGO\n",
                      "1\tBothell\t12.5\n2\tZürich\t\n")}[dialect]
    (tmp_path / "orders.csv").write_bytes(body.encode("latin-1" if dialect == "psql" else "utf-8"))
    script = tmp_path / "install.sql"
    script.write_text(create + load + "INSERT INTO orders VALUES (3, 'Paris', 1);\n")
    got = rows(run(script, tmp_path / "o.db"))["orders"]
    assert [(r[0], r[1]) for r in got] == [(1, "Bothell"), (2, "Zürich"), (3, "Paris")]
    assert float(got[0][2]) == 12.5 and got[1][2] is None
    (tmp_path / "orders.csv").unlink()
    with pytest.raises(DataError, match=r"install.sql, line 2: loads orders.csv into orders: "
                       "no such file beside the script"):
        run(script, tmp_path / "p.db")


def test_a_dump_named_dump_that_is_sql_text_is_a_script(tmp_path):
    """mysqldump's and pg_dump's plain output is often named backup.dump: a script where it
    is SQL text (a custom-format pg_dump archive is rdl.data.pgdump's)."""
    path = tmp_path / "backup.dump"
    path.write_text((SCRIPTS / "mysql_employees.sql").read_text())
    assert dbfile.kind(path) == "sql"
    assert len(rows(run(path, tmp_path / "b.db"))["departments"]) == 3
    (tmp_path / "photo.bak").write_bytes(b"\x00\x01\x02binary")
    assert dbfile.kind(tmp_path / "photo.bak") is None


def test_a_table_made_from_a_query_or_another_is_left_out(tmp_path):
    """CREATE TABLE ... AS SELECT (an analysis' summary beside the data) and MySQL's
    CREATE TABLE ... LIKE stopped the whole script ("no table name and column list"):
    they are derived, not data of their own, and left out."""
    path = tmp_path / "shop.sql"
    path.write_text("CREATE TABLE orders (order_id INT PRIMARY KEY, total REAL);\n"
                    "INSERT INTO orders VALUES (1, 2.5), (2, 4.0);\n"
                    "CREATE TABLE big_orders AS SELECT * FROM orders WHERE total > 3;\n"
                    "CREATE TABLE totals (n) AS SELECT count(*) FROM orders;\n"
                    "CREATE TABLE orders_2024 LIKE orders;\n"
                    "CREATE TABLE orders_copy (LIKE orders INCLUDING ALL);\n")
    assert rows(run(path, tmp_path / "s.db")) == {"orders": [(1, 2.5), (2, 4.0)]}
