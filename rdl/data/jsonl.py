"""A table's JSON files as Arrow, read by DuckDB's JSON reader: JSON Lines (one object a
line, as BigQuery, Snowflake, ``mongoexport`` and event logs export) or one JSON array of
objects, compressed or not (``events.jsonl.gz``), a folder of parts with ``key=value``
sub-folders too; an API's response saved as a file, its rows in a list it names ``data``,
``results``, ``items``, ``value`` (OData) or so; a table in one object (records keyed by
their ids, pandas' ``to_json()``: :mod:`rdl.data.json_shapes`).

DuckDB infers each column's type from every row (``sample_size=-1``: a key first seen on
the last line is a column, and a number written as text in one row makes its column text,
not an error half-way), objects as structs, arrays as lists and ISO 8601 strings as
times; :mod:`rdl.data.parquet` then makes those what they mean for a model, as for a
parquet file. Written by hand because neither pyarrow's JSON reader (types from the first
block only, no arrays of objects) nor pandas' (no structs) reads exports whole.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa

from rdl import duck
from rdl.data import json_shapes
from rdl.data.database import DataError

SUFFIXES = (".json", ".jsonl", ".ndjson")


def is_json(path: Path) -> bool:
    """``x.jsonl`` (``.json``, ``.ndjson``, any case), or compressed (``x.jsonl.gz``)."""
    s = [x.lower() for x in path.suffixes]
    return bool(s) and (s[-1] in SUFFIXES or (len(s) > 1 and s[-2] in SUFFIXES
                                             and s[-1] in (".gz", ".zst")))


#: the column types :func:`schema` inferred, by the files' paths, sizes and change times:
#: :func:`table` reads those files once more, not twice (DuckDB infers types from every
#: line, a pass of its own)
_TYPES: dict[tuple, dict[str, str]] = {}


#: the files :mod:`~rdl.data.json_shapes` rewrote as JSON Lines for :func:`schema`, kept
#: (with their folder, removed once unused) for :func:`table`, as :data:`_TYPES` are: each
#: such file parsed once, not twice
_LINES: dict[tuple, tuple[tempfile.TemporaryDirectory | None, list[Path]]] = {}


def _rewritten(found: list[Path]) -> tuple[tempfile.TemporaryDirectory | None, list[Path]]:
    """``found`` with each file that holds a table in one object rewritten as JSON Lines,
    and the folder holding those (None where no file is)."""
    spool = tempfile.TemporaryDirectory()
    out = [json_shapes.as_lines(p, Path(spool.name), WRAPPERS) or p for p in found]
    if out == found:
        spool.cleanup()
        return None, found
    return spool, out


def _key(found: list[Path]) -> tuple:
    return tuple((str(p), st.st_size, st.st_mtime_ns) for p in found for st in [p.stat()])


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _query(found: list[Path], base: Path | None, limit: str = "",
           types: dict[str, str] | None = None) -> str:
    files = ", ".join(_quote(str(p)) for p in found)
    read = ("read_json_auto", "sample_size=-1") if types is None else (
        "read_json", "columns={" + ", ".join(f"{_quote(c)}: {_quote(t)}"
                                             for c, t in types.items()) + "}, format='auto'")
    return (f"SELECT * FROM {read[0]}([{files}], {read[1]}, union_by_name=true, "
            f"hive_partitioning={str(base is not None).lower()}) {limit}")


def _run(found: list[Path], where: str, base: Path | None, limit: str = "",
         rewrite: bool = True) -> pa.Table:
    key = _key(found)
    # a table in one object (records keyed by id, pandas' orients): read as JSON Lines,
    # but in a folder of partitions, whose paths are columns
    spool, found = (_LINES.pop(key, None) or _rewritten(found)) if rewrite else (None, found)
    if limit and spool is not None:
        _LINES[key] = (spool, found)
    with duck.connect(threads=None) as con:   # rows keep their order (DuckDB keeps it)
        try:
            types = _TYPES.pop(key, None) if not limit else None
            query = _query(found, base, limit, types)
            rel = con.sql(query)
            if limit:
                _TYPES[key] = {c: str(t) for c, t in zip(rel.columns, rel.types)}
            # a key whose values differ in type ({"amount": 1}, {"amount": "n/a"}) is of
            # type JSON: its values as text, as a CSV writes them ("n/a", not '"n/a"')
            mixed = [f'json_extract_string({q}, \'$\') AS {q}' for q, t in
                     (('"' + c.replace('"', '""') + '"', t) for c, t in zip(rel.columns, rel.types))
                     if str(t) == "JSON"]
            if mixed:
                rel = con.sql(f"SELECT * REPLACE ({', '.join(mixed)}) FROM ({query})")
            return (getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table)()
        except duckdb.Error as e:
            _LINES.pop(key, None)
            raise DataError(f"{where}: not readable as JSON Lines or a JSON array of objects: "
                            f"{str(e).splitlines()[0]}") from None
        finally:
            if spool is not None and not limit:
                spool.cleanup()   # (the rows are in memory)


def schema(found: list[Path], where: str, base: Path | None = None) -> pa.Schema:
    """The columns of a table's JSON files, the partitions of folder ``base`` left out (as
    a parquet footer)."""
    return _unwrapped(_run(found, where, None, "LIMIT 2", rewrite=base is None), found).schema


def table(found: list[Path], where: str, base: Path | None = None) -> pa.Table:
    """A table's rows from its JSON files, the partitions of folder ``base`` as columns."""
    return _unwrapped(_run(found, where, base, rewrite=base is None), found)


#: the names an API gives the list of objects its response holds ({"data": [...], ...})
WRAPPERS = {"data", "results", "result", "items", "records", "rows", "value", "values",
            "entries", "objects", "elements", "docs", "documents", "hits", "list"}


def _unwrapped(table: pa.Table, found: list[Path]) -> pa.Table:
    """An API's response saved as a file (``{"data": [{...}, ...], "meta": {...}, "next":
    ...}``, OData's ``{"value": [...]}``, ``orders.json`` holding ``{"orders": [...]}``):
    the objects of its one list named as such a list is, or as the file, as the rows; else
    ``table`` as it is."""
    names = WRAPPERS | {p.name.split(".")[0].casefold() for p in found}
    lists = [i for i, f in enumerate(table.schema) if f.name.casefold() in names and (
        pa.types.is_list(f.type) or pa.types.is_large_list(f.type))
        and pa.types.is_struct(f.type.value_type)]
    if table.num_rows != 1 or len(lists) != 1:
        return table
    return pa.Table.from_struct_array(table.column(lists[0]).combine_chunks().flatten())
