"""Database files for the tests, written by SQLite and DuckDB themselves.

:func:`write_chinook` writes a SQLite database in the shape of Chinook, the sample database
SQLite tutorials use (a music shop's invoices): its DDL as Chinook's SQLite script writes
it (bracketed names, ``NVARCHAR``, ``NUMERIC(10,2)``, dates as ``DATETIME`` text, keys as
named constraints, a self-reference ``Employee.ReportsTo``, a composite key
``PlaylistTrack``), its rows drawn at random. :func:`write_sqlite` and
:func:`write_duckdb` write any frames with the keys given, declared in the DDL.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

CHINOOK = """
CREATE TABLE [Artist] ([ArtistId] INTEGER NOT NULL, [Name] NVARCHAR(120),
    CONSTRAINT [PK_Artist] PRIMARY KEY ([ArtistId]));
CREATE TABLE [Album] ([AlbumId] INTEGER NOT NULL, [Title] NVARCHAR(160) NOT NULL,
    [ArtistId] INTEGER NOT NULL, CONSTRAINT [PK_Album] PRIMARY KEY ([AlbumId]),
    FOREIGN KEY ([ArtistId]) REFERENCES [Artist] ([ArtistId]) ON DELETE NO ACTION);
CREATE TABLE [Genre] ([GenreId] INTEGER NOT NULL, [Name] NVARCHAR(120),
    CONSTRAINT [PK_Genre] PRIMARY KEY ([GenreId]));
CREATE TABLE [MediaType] ([MediaTypeId] INTEGER NOT NULL, [Name] NVARCHAR(120),
    CONSTRAINT [PK_MediaType] PRIMARY KEY ([MediaTypeId]));
CREATE TABLE [Track] ([TrackId] INTEGER NOT NULL, [Name] NVARCHAR(200) NOT NULL,
    [AlbumId] INTEGER, [MediaTypeId] INTEGER NOT NULL, [GenreId] INTEGER,
    [Composer] NVARCHAR(220), [Milliseconds] INTEGER NOT NULL, [Bytes] INTEGER,
    [UnitPrice] NUMERIC(10,2) NOT NULL, CONSTRAINT [PK_Track] PRIMARY KEY ([TrackId]),
    FOREIGN KEY ([AlbumId]) REFERENCES [Album] ([AlbumId]),
    FOREIGN KEY ([GenreId]) REFERENCES [Genre] ([GenreId]),
    FOREIGN KEY ([MediaTypeId]) REFERENCES [MediaType] ([MediaTypeId]));
CREATE TABLE [Employee] ([EmployeeId] INTEGER NOT NULL, [LastName] NVARCHAR(20) NOT NULL,
    [FirstName] NVARCHAR(20) NOT NULL, [Title] NVARCHAR(30), [ReportsTo] INTEGER,
    [BirthDate] DATETIME, [HireDate] DATETIME, [City] NVARCHAR(40), [Country] NVARCHAR(40),
    [Photo] BLOB, CONSTRAINT [PK_Employee] PRIMARY KEY ([EmployeeId]),
    FOREIGN KEY ([ReportsTo]) REFERENCES [Employee] ([EmployeeId]));
CREATE TABLE [Customer] ([CustomerId] INTEGER NOT NULL, [FirstName] NVARCHAR(40) NOT NULL,
    [LastName] NVARCHAR(20) NOT NULL, [Company] NVARCHAR(80), [City] NVARCHAR(40),
    [Country] NVARCHAR(40), [SupportRepId] INTEGER,
    CONSTRAINT [PK_Customer] PRIMARY KEY ([CustomerId]),
    FOREIGN KEY ([SupportRepId]) REFERENCES [Employee] ([EmployeeId]));
CREATE TABLE [Invoice] ([InvoiceId] INTEGER NOT NULL, [CustomerId] INTEGER NOT NULL,
    [InvoiceDate] DATETIME NOT NULL, [BillingCity] NVARCHAR(40),
    [BillingCountry] NVARCHAR(40), [Total] NUMERIC(10,2) NOT NULL,
    CONSTRAINT [PK_Invoice] PRIMARY KEY ([InvoiceId]),
    FOREIGN KEY ([CustomerId]) REFERENCES [Customer] ([CustomerId]));
CREATE TABLE [InvoiceLine] ([InvoiceLineId] INTEGER NOT NULL, [InvoiceId] INTEGER NOT NULL,
    [TrackId] INTEGER NOT NULL, [UnitPrice] NUMERIC(10,2) NOT NULL,
    [Quantity] INTEGER NOT NULL, CONSTRAINT [PK_InvoiceLine] PRIMARY KEY ([InvoiceLineId]),
    FOREIGN KEY ([InvoiceId]) REFERENCES [Invoice] ([InvoiceId]),
    FOREIGN KEY ([TrackId]) REFERENCES [Track] ([TrackId]));
CREATE TABLE [Playlist] ([PlaylistId] INTEGER NOT NULL, [Name] NVARCHAR(120),
    CONSTRAINT [PK_Playlist] PRIMARY KEY ([PlaylistId]));
CREATE TABLE [PlaylistTrack] ([PlaylistId] INTEGER NOT NULL, [TrackId] INTEGER NOT NULL,
    CONSTRAINT [PK_PlaylistTrack] PRIMARY KEY ([PlaylistId], [TrackId]),
    FOREIGN KEY ([PlaylistId]) REFERENCES [Playlist] ([PlaylistId]),
    FOREIGN KEY ([TrackId]) REFERENCES [Track] ([TrackId]));
"""
COUNTRIES = ["USA", "Canada", "Brazil", "France", "Germany", "United Kingdom", "India"]


def chinook_rows(seed: int = 0, customers: int = 59, invoices: int = 412) -> dict[str, list]:
    """Chinook's tables' rows (tuples in its columns' order), drawn at random."""
    rng = np.random.default_rng(seed)
    day = lambda t: t.strftime("%Y-%m-%d %H:%M:%S")   # noqa: E731 (how Chinook writes them)
    rows = {"Artist": [(i, f"Artist {i}") for i in range(1, 21)],
            "Genre": [(i, g) for i, g in enumerate(["Rock", "Jazz", "Metal", "Latin", "Blues"], 1)],
            "MediaType": [(1, "MPEG audio file"), (2, "Protected AAC audio file"),
                          (3, "AAC audio file")],
            "Playlist": [(i, f"Playlist {i}") for i in range(1, 7)]}
    rows["Album"] = [(i, f"Album {i}", int(rng.integers(1, 21))) for i in range(1, 41)]
    rows["Track"] = [(i, f"Track {i}", int(rng.integers(1, 41)), int(rng.integers(1, 4)),
                      int(rng.integers(1, 6)), None if i % 3 else f"Composer {i % 17}",
                      int(rng.integers(60_000, 600_000)), int(rng.integers(1e6, 1e7)),
                      0.99 if i % 10 else 1.99) for i in range(1, 301)]
    rows["Employee"] = [(i, f"Last{i}", f"First{i}", "Sales Support Agent" if i > 2 else
                         "Manager", None if i == 1 else (1 if i <= 2 else 2),
                         day(pd.Timestamp("1960-01-01") + pd.Timedelta(days=int(rng.integers(0, 9000)))),
                         day(pd.Timestamp("2002-04-01") + pd.Timedelta(days=int(rng.integers(0, 900)))),
                         "Calgary", "Canada", bytes([i, 0, 255])) for i in range(1, 9)]
    rows["Customer"] = [(i, f"First{i}", f"Last{i}", None if i % 4 else f"Company {i}",
                         f"City {i % 23}", COUNTRIES[i % len(COUNTRIES)], int(rng.integers(3, 9)))
                        for i in range(1, customers + 1)]
    start = pd.Timestamp("2009-01-01")
    dates = sorted(start + pd.Timedelta(days=int(d)) for d in rng.integers(0, 1826, invoices))
    lines, line_id = [], 0
    rows["Invoice"] = []
    for i, d in enumerate(dates, 1):
        items = [(int(rng.integers(1, 301)), int(rng.integers(1, 3)))
                 for _ in range(int(rng.integers(1, 8)))]
        total = 0.0
        for track, qty in items:
            line_id += 1
            price = rows["Track"][track - 1][-1]
            lines.append((line_id, i, track, price, qty))
            total += price * qty
        customer = int(rng.integers(1, customers + 1))
        rows["Invoice"].append((i, customer, day(d), f"City {customer % 23}",
                                COUNTRIES[customer % len(COUNTRIES)], round(total, 2)))
    rows["InvoiceLine"] = lines
    pairs = {(int(rng.integers(1, 7)), int(rng.integers(1, 301))) for _ in range(500)}
    rows["PlaylistTrack"] = sorted(pairs)
    return rows


def write_chinook(path, seed: int = 0, **sizes) -> Path:
    """A Chinook-shaped SQLite database at ``path``."""
    path = Path(path)
    with sqlite3.connect(path) as con:
        con.executescript(CHINOOK)
        for table, rows in chinook_rows(seed, **sizes).items():
            con.executemany(f"INSERT INTO [{table}] VALUES ({', '.join('?' * len(rows[0]))})",
                            rows)
    con.close()
    return path


def _ddl(name: str, df: pd.DataFrame, pkey, fkeys: dict, types: dict) -> str:
    cols = [f'"{c}" {types(df[c])}' for c in df.columns]
    if pkey:
        cols.append(f"PRIMARY KEY ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in np.atleast_1d(pkey))})")
    for col, (ref, to) in fkeys.items():
        cols.append(f'FOREIGN KEY ("{col}") REFERENCES "{ref}" ("{to}")')
    return f'CREATE TABLE "{name}" ({", ".join(cols)})'


def _sqlite_type(s: pd.Series) -> str:
    return ("INTEGER" if pd.api.types.is_integer_dtype(s) else "REAL"
            if pd.api.types.is_float_dtype(s) else "DATETIME"
            if pd.api.types.is_datetime64_any_dtype(s) else "TEXT")


def write_sqlite(path, frames: dict[str, pd.DataFrame], pkeys: dict, fkeys: dict) -> Path:
    """``frames`` as a SQLite database at ``path``: ``pkeys`` table -> key column(s),
    ``fkeys`` table -> {column: (table, its column)}, declared in each table's DDL; times
    as SQLite keeps them (text), missing values NULL."""
    path = Path(path)
    with sqlite3.connect(path) as con:
        for name, df in frames.items():
            con.execute(_ddl(name, df, pkeys.get(name), fkeys.get(name, {}), _sqlite_type))
            values = df.astype(object).where(df.notna(), None)
            for c in df.columns:
                if pd.api.types.is_datetime64_any_dtype(df[c]):
                    values[c] = df[c].dt.strftime("%Y-%m-%d %H:%M:%S").astype(object).where(
                        df[c].notna(), None)
            con.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * df.shape[1])})',
                            values.itertuples(index=False, name=None))
    con.close()
    return path


def write_duckdb(path, frames: dict[str, pd.DataFrame], pkeys: dict, fkeys: dict) -> Path:
    """``frames`` as a DuckDB database at ``path``, typed as pandas types them, with the keys
    declared (the referenced tables first: DuckDB checks references as rows go in)."""
    import duckdb

    def types(s):
        return ("BIGINT" if pd.api.types.is_integer_dtype(s) else "DOUBLE"
                if pd.api.types.is_float_dtype(s) else "TIMESTAMP"
                if pd.api.types.is_datetime64_any_dtype(s) else "VARCHAR")
    con = duckdb.connect(str(path))
    for name, df in frames.items():
        con.execute(_ddl(name, df, pkeys.get(name), fkeys.get(name, {}), types))
        con.register("frame", df)
        con.execute(f'INSERT INTO "{name}" SELECT * FROM frame')
        con.unregister("frame")
    con.close()
    return Path(path)
