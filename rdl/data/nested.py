"""Tables nested in a column of another's rows (``unnest:`` in a folder's schema): an
order's ``line_items`` as Shopify's, Stripe's or ``mongoexport``'s JSON holds them, a
BigQuery ``REPEATED RECORD`` in parquet; a list per row, of objects (or of values).

Such a list is a table: a row for each element, referencing the row that holds it. The
schema names it as a table of its own, with the keys and stypes of its elements' fields::

    tables:
      orders: {pkey: id, time: created_at, fkeys: {customer_id: customers}}
      order_items:
        unnest: {orders: line_items}     # a row per element of each order's line_items
        pkey: id                         # the elements' own fields, as any table's
        fkeys: {product_id: products}

Each row holds its order's key, in a column named as the order's key (``orders_id``,
``<table>_<key>``, where an element has a field of that name), a foreign key to
``orders``; it is timed as its order (``time: {via: ...}``), unless it has a time of its
own. An object's fields are columns (nested objects as ``discount_code``); a list of values
is one column, named as the list. The list column leaves its table's features.

The elements are written once, by DuckDB, as a parquet file in rdl's cache (as a database
file's tables are, :func:`rdl.data.dbfile.exported`), and read from there as any table's
file, with every check.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rdl import duck
from rdl.data import jsonl, sources
from rdl.data.database import DataError
from rdl.data.dbfile import exported
from rdl.data.schema import TableSchema


def parse(spec: dict, at: str) -> tuple[str, str] | None:
    """A table's ``unnest: {table: column}``, or None."""
    value = spec.get("unnest")
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) != 1 or not isinstance(
            next(iter(value.values())), str):
        raise DataError(f"{at}: unnest {value!r}: the table and its column of lists whose "
                        "elements are this table's rows (unnest: {orders: line_items})")
    if spec.get("file"):
        raise DataError(f"{at}: unnest: and file: both; its rows come from the lists, not a file")
    parent, column = next(iter(value.items()))
    return str(parent), column


def resolve(tables: dict[str, TableSchema], where: str) -> None:
    """Each ``unnest:`` table's key to the table that holds it (and its time, through it);
    the list column out of that table's features. Reads the holding table's schema."""
    for t in tables.values():
        if t.unnest is None:
            continue
        parent, column = t.unnest
        at = f"{where}: table {t.name!r}: unnest: {{{parent}: {column}}}"
        p = tables.get(parent)
        if p is None or p.pkey is None or p.pkey in p.composite:
            raise DataError(f"{at}: " + (f"no table {parent!r} (tables: {sorted(tables)})" if
                                         p is None else f"{parent!r} needs a primary key of one "
                                         "column: each row references the row holding it"))
        item = _element(p, column, at)
        t.unnest_objects = pa.types.is_struct(item)   # (export's: a column per field)
        t.unnest_key = f"{parent}_{p.pkey}" if t.unnest_objects and \
            p.pkey in [f.name for f in item] else p.pkey
        if t.unnest_key in t.fkeys:
            raise DataError(f"{at}: {t.unnest_key!r} is the key to {parent!r} it is given; "
                            "leave it out of fkeys")
        t.fkeys[t.unnest_key] = parent
        p.stypes[column] = None
        if t.time is None and t.via is None and t.seen_in is None and (
                p.time is not None or p.via is not None or p.seen_in):
            t.via = t.unnest_key   # timed as the row holding it


def export(tables: dict[str, TableSchema]) -> None:
    """Each ``unnest:`` table's rows, the elements of its lists, written once into rdl's
    cache (a parquet file, its ``file`` then)."""
    for t in tables.values():
        if t.unnest is None:
            continue
        p = tables[t.unnest[0]]
        found = sources.parts(p.file)
        stamp = "|".join(f"{f}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in found)
        tag = hashlib.sha1(f"{stamp}|{t.name}|{t.unnest}|{t.unnest_key}".encode()).hexdigest()[:12]
        folder = exported(p.file if p.file.exists() else found[0],   # (a wildcard's files)
                          lambda _, out, p=p, t=t, found=found: _write(p, t, found, Path(out)),
                          tag=f"unnest{tag}")
        t.file = folder / f"{t.name}.parquet"


def _write(p: TableSchema, t: TableSchema, found: list[Path], out: Path) -> None:
    column, files = t.unnest[1], ", ".join(jsonl._quote(str(f)) for f in found)
    src = (jsonl._query(found, None) if jsonl.is_json(found[0]) else
           f"SELECT * FROM read_parquet([{files}], union_by_name=true)")
    fields = "item.*" if t.unnest_objects else f"item AS {_q(column)}"
    query = (f"SELECT k AS {_q(t.unnest_key)}, {fields} FROM (SELECT {_q(p.pkey)} AS k, "
             f"unnest({_q(column)}) AS item FROM ({src}))")
    with duck.connect(threads=None) as con:   # rows in the lists' order
        con.sql(f"COPY ({query}) TO {jsonl._quote(str(out / f'{t.name}.parquet'))} "
                "(FORMAT parquet)")


def lists_in(found: list[Path]) -> list[str]:
    """The columns of a table's JSON or parquet files that hold lists of objects (the
    draft's ``unnest:`` tables); none for other files."""
    try:
        schema = _schema(found, str(found[0]) if found else "")
    except (DataError, pa.ArrowInvalid, OSError):
        return []   # (no such file; the loader says why)
    return [f.name for f in schema or [] if (pa.types.is_list(f.type) or pa.types.is_large_list(
        f.type)) and pa.types.is_struct(f.type.value_type)]


def _element(p: TableSchema, column: str, at: str) -> pa.DataType:
    """The type of the elements of ``p``'s list column ``column``."""
    found = sources.parts(p.file)
    if not found:
        raise DataError(f"{at}: {p.file}: missing (the data file of table {p.name!r})")
    schema = _schema(found, p.where())
    if schema is None:
        raise DataError(f"{at}: {p.file.name} holds no lists (a JSON or parquet file does)")
    if column not in schema.names:
        raise DataError(f"{at}: {p.file.name} has no column {column!r}; it has {schema.names}")
    kind = schema.field(column).type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        raise DataError(f"{at}: {column!r} is of type {kind}, not a list")
    return kind.value_type


def _schema(found: list[Path], where: str) -> pa.Schema | None:
    """The columns of a table's JSON or parquet files; None for other files."""
    if found and jsonl.is_json(found[0]):
        return jsonl.schema(found, where)
    return pq.read_schema(found[0]) if found and sources.is_parquet(found[0]) else None


def _q(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'
