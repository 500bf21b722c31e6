"""Databases in one file (SQLite, DuckDB): drafted from the keys they declare, read as the
folder loader reads files (rdl.data.dbfile)."""
from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
import yaml

from rdl.data import dbfile
from rdl.data.database import DataError
from rdl.data.draft import draft, main as draft_main
from rdl.data.folder import load_folder
from rdl.data.forum import SCHEMA, generate, write_forum
from tests.test_forum import SMALL
from tests.data.dbfiles import chinook_rows, write_chinook, write_duckdb, write_sqlite

FORUM_PKEYS = {"users": "user_id", "tags": "tag_id", "posts": "post_id"}
FORUM_FKEYS = {"posts": {"author_id": ("users", "user_id"), "parent_id": ("posts", "post_id"),
                         "tag_id": ("tags", "tag_id")},
               "votes": {"user_id": ("users", "user_id"), "post_id": ("posts", "post_id")}}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _schema_without_files() -> dict:
    """The forum's schema, each table found by its name (no ``file:``)."""
    schema = yaml.safe_load(SCHEMA)
    for spec in schema["tables"].values():
        spec.pop("file", None)
    return schema


def test_a_sqlite_database_is_drafted_from_the_keys_it_declares(tmp_path, capsys):
    path = write_chinook(tmp_path / "chinook.db")
    text = draft(path)
    schema = yaml.safe_load(text)["tables"]
    assert set(schema) == {"Album", "Artist", "Customer", "Employee", "Genre", "Invoice",
                           "InvoiceLine", "MediaType", "Playlist", "PlaylistTrack", "Track"}
    assert all("file" not in spec for spec in schema.values())   # found by their names
    assert {n: s.get("pkey") for n, s in schema.items()} == {
        **{n: f"{n}Id" for n in schema if n != "PlaylistTrack"},
        "PlaylistTrack": ["PlaylistId", "TrackId"]}
    assert schema["Employee"]["fkeys"] == {"ReportsTo": "Employee"}   # a self-reference
    assert schema["Customer"]["fkeys"] == {"SupportRepId": "Employee"}
    assert schema["Track"]["fkeys"] == {"AlbumId": "Album", "GenreId": "Genre",
                                        "MediaTypeId": "MediaType"}
    assert schema["Invoice"]["time"] == "InvoiceDate"
    # an invoice's lines, numbered on as invoices are written: at their invoice's time
    assert schema["InvoiceLine"]["time"] == {"via": "InvoiceId"}
    assert "time" not in schema["Customer"]   # (its support rep's hire date: a comment)
    draft_main([str(path), "--write"])
    assert "chinook.schema.yaml" in capsys.readouterr().out
    db = load_folder(path)   # the schema beside it, by default
    assert db["InvoiceLine"].time_col == "InvoiceDate" and db["Employee"].time_col == "HireDate"
    assert "Photo" not in db["Employee"].df   # a BLOB: left out
    rows = chinook_rows()
    assert len(db["Invoice"]) == len(rows["Invoice"]) and len(db["InvoiceLine"]) == len(
        rows["InvoiceLine"])
    # ids as the database writes them; each foreign key the row of the id it names
    lines = pd.DataFrame(rows["InvoiceLine"], columns=["id", "invoice", "track", "price", "q"])
    invoice_ids = db.keys["Invoice"].to_numpy()[db["InvoiceLine"].df["InvoiceId"].to_numpy()]
    line_ids = db.keys["InvoiceLine"].to_numpy()
    assert (invoice_ids.astype(int) == lines.set_index("id").loc[line_ids.astype(int),
                                                                 "invoice"].to_numpy()).all()


@pytest.mark.parametrize("write", [write_sqlite, write_duckdb], ids=["sqlite", "duckdb"])
def test_a_database_file_loads_as_the_same_tables_written_as_files(tmp_path, write):
    frames = generate(scale=0.001)
    folder = write_forum(tmp_path / "files", scale=0.001)
    # (DuckDB checks references as rows go in: only those that hold are declared, and no
    # self-reference, which it checks against the rows before the insert)
    holds = {t: {c: (r, k) for c, (r, k) in refs.items()
                 if frames[t][c].dropna().isin(frames[r][k]).all()
                 and (write is write_sqlite or r != t)}
             for t, refs in FORUM_FKEYS.items()}
    path = write(tmp_path / f"forum.{'db' if write is write_sqlite else 'duckdb'}",
                 {n: frames[n] for n in ("users", "tags", "posts", "votes")},
                 FORUM_PKEYS, holds)
    assert dbfile.kind(path) == ("sqlite" if write is write_sqlite else "duckdb")
    given = dbfile.declared(path)
    assert given.pkeys == {t: [k] for t, k in FORUM_PKEYS.items()}
    assert given.fkeys == {t: {c: r for c, (r, _) in refs.items()}
                           for t, refs in holds.items() if refs}
    from_files = load_folder(folder)
    from_db = load_folder(path, _schema_without_files())
    for name, table in from_files:
        other = from_db[name]
        assert (other.pkey, other.fkeys, other.time_col) == (table.pkey, table.fkeys,
                                                             table.time_col)
        pd.testing.assert_frame_equal(other.df, table.df, check_dtype=False, obj=name)
        if name in from_files.keys:   # (a table without a key has no ids)
            pd.testing.assert_index_equal(from_db.keys[name].astype(str),
                                          from_files.keys[name].astype(str))


def test_the_export_is_made_once_and_again_when_the_file_changes(tmp_path, cache):
    path = write_chinook(tmp_path / "shop.sqlite")
    first = dbfile.exported(path)
    (first / "Artist.csv").write_text("ArtistId,Name\n1,kept\n")   # a mark: not re-exported
    assert dbfile.exported(path) == first
    with sqlite3.connect(path) as con:
        con.execute("INSERT INTO Artist VALUES (21, 'New')")
    con.close()
    again = dbfile.exported(path)
    assert again != first and "New" in (again / "Artist.csv").read_text()
    assert first.name == again.name == "shop.sqlite"   # messages name shop.sqlite/Artist.csv
    assert sorted((cache / "dbfiles").iterdir()) == sorted([first.parent, again.parent])


def test_keys_the_file_declares_but_that_cannot_be_used_are_said(tmp_path):
    """SQLite lets NULL into a primary key of text (a legacy it keeps), and a reference
    may name another unique column than the key: the draft says so, and guesses."""
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as con:
        con.executescript("""
            CREATE TABLE shops (code TEXT PRIMARY KEY, shop_id INTEGER UNIQUE, city TEXT);
            CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, shop_id INTEGER REFERENCES
                shops (shop_id), amount REAL);""")
        con.executemany("INSERT INTO shops VALUES (?, ?, ?)",
                        [("A", 1, "x"), (None, 2, "y"), ("C", 3, "z")])
        con.executemany("INSERT INTO sales VALUES (?, ?, ?)",
                        [(i, i % 3 + 1, float(i)) for i in range(1, 31)])
    con.close()
    given = dbfile.declared(path)
    assert given.pkeys == {"shops": ["code"], "sales": ["sale_id"]}
    assert given.fkeys == {} and "not shops's primary key" in given.notes["sales"][0][1]
    text = draft(path)
    assert "declared primary key (code) is missing or repeated in 1 of 3 rows" in text
    schema = yaml.safe_load(text)["tables"]
    assert schema["shops"]["pkey"] == "shop_id"   # guessed: unique and filled in
    assert schema["sales"]["fkeys"] == {"shop_id": "shops"}


def test_a_database_file_without_its_schema_says_how_to_draft_one(tmp_path):
    path = write_chinook(tmp_path / "chinook.db")
    with pytest.raises(DataError, match=r"chinook.schema.yaml: schema file missing \(python -m "
                                        r"rdl.data.draft .*chinook.db --write"):
        load_folder(path)
    text = tmp_path / "notes.db"
    text.write_text("not a database")
    assert dbfile.kind(text) is None
    with pytest.raises(DataError, match="SQLite or DuckDB"):
        load_folder(text)


def test_a_task_trains_on_a_sqlite_database_with_its_drafted_schema(tmp_path, run_train):
    """What a user with an app's SQLite file does: draft the schema from the keys it
    declares, write it beside the file, train a task on it."""
    frames = generate(scale=0.001)
    path = write_sqlite(tmp_path / "forum.sqlite", frames, FORUM_PKEYS, FORUM_FKEYS)
    draft_main([str(path), "--write"])
    schema = yaml.safe_load(dbfile.schema_beside(path).read_text())["tables"]
    assert {n: s.get("time") for n, s in schema.items()} == {
        "users": "signup", "tags": None, "posts": "created", "votes": "created"}
    out = run_train(tmp_path / "run", "task=forum-user-active", "data=folder",
                    f"data.db.path={path}", *SMALL, tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert results["task"] == "forum-user-active" and "LightGBM" in results
    assert 0 <= results["model"]["test"]["auroc"] <= 1


def test_only_tables_of_rows_are_exported(tmp_path):
    """SQLite's own tables (AUTOINCREMENT's sqlite_sequence) and a full-text index (a
    virtual table and the shadow tables it keeps) are no tables of the database."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as con:
        con.executescript("""
            CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT, at TEXT);
            CREATE TABLE SqliteVersions (id INTEGER PRIMARY KEY, note_id INTEGER
                REFERENCES notes (id));
            CREATE VIRTUAL TABLE notes_fts USING fts5(body);""")
        con.executemany("INSERT INTO notes (body, at) VALUES (?, ?)",
                        [(f"note {i}", f"2024-01-{i + 1:02d}") for i in range(5)])
        con.execute("INSERT INTO notes_fts SELECT body FROM notes")
    con.close()
    assert sorted(p.name for p in dbfile.exported(path).iterdir()) == [
        "SqliteVersions.csv", "notes.csv"]
    assert dbfile.declared(path).fkeys == {"SqliteVersions": {"note_id": "notes"}}


def test_a_duckdb_table_name_in_two_schemas_is_two_tables(tmp_path):
    import duckdb

    path = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA archive")
    for table in ("orders", "archive.orders"):
        con.execute(f"CREATE TABLE {table} (id INTEGER, amount DOUBLE)")
        con.execute(f"INSERT INTO {table} VALUES (1, 2.5)")
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.close()
    assert sorted(p.name for p in dbfile.exported(path).iterdir()) == [
        "archive.orders.parquet", "customers.parquet", "main.orders.parquet"]



def test_a_keyless_timeless_table_keyed_by_what_it_references_is_not_called_parts(tmp_path):
    """A user's favourite products, keyed [user_id, product_id], no time: dated by the user
    row (the earliest a favourite can be), but not as parts of it, as an order's lines,
    keyed [order_id, line], are: the draft says a later favourite is seen early. A
    product's small id is no line number."""
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as c:
        c.executescript(
            "CREATE TABLE users(user_id INTEGER PRIMARY KEY, signup TEXT);"
            "CREATE TABLE products(product_id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders(order_id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES "
            "users(user_id), at TEXT);"
            "CREATE TABLE lines(order_id INTEGER REFERENCES orders(order_id), line INTEGER, "
            "product_id INTEGER REFERENCES products(product_id), PRIMARY KEY(order_id, line));"
            "CREATE TABLE favourites(user_id INTEGER REFERENCES users(user_id), product_id "
            "INTEGER REFERENCES products(product_id), PRIMARY KEY(user_id, product_id));")
        c.executemany("INSERT INTO users VALUES (?, ?)",
                      [(u, f"2024-0{u % 3 + 1}-{u * 7 % 28 + 1:02d}") for u in range(20)])
        c.executemany("INSERT INTO products VALUES (?, ?)", [(p, f"p{p}") for p in range(8)])
        c.executemany("INSERT INTO orders VALUES (?, ?, ?)",
                      [(o, o % 20, f"2024-05-{o % 28 + 1:02d}") for o in range(60)])
        c.executemany("INSERT INTO lines VALUES (?, ?, ?)",
                      [(o, n, (o + n) % 8) for o in range(60) for n in range(1, o % 3 + 2)])
        c.executemany("INSERT INTO favourites VALUES (?, ?)",
                      [(u, p) for u in range(20) for p in range(8) if (u + p) % 3 == 0])
    text = draft(path)
    tables = yaml.safe_load(text)["tables"]
    said = {name: text.split(f"  {name}:\n")[1].split("\n  ")[0:4] for name in tables}
    assert tables["favourites"]["time"] == {"via": "user_id"}
    assert "its key holds the users rows' key" in str(said["favourites"])
    assert "is seen early" in str(said["favourites"]) and "parts" not in str(said["favourites"])
    assert tables["lines"]["time"] == {"via": "order_id"}
    assert "its rows parts of the orders rows they reference" in str(said["lines"])
