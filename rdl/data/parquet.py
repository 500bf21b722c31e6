"""One table's parquet files (or JSON ones, :mod:`rdl.data.jsonl`; ORC, Arrow, Avro, SAS
or Stata ones, :mod:`rdl.data.typed`; XML, :mod:`rdl.data.xmlrows`) as a pandas frame,
with the types warehouses write in them.

Spark, BigQuery and Snowflake export nested and typed columns that a table of features
cannot hold as they are; each becomes what it means, here and in the header the schema is
checked against (:func:`header`), so that a schema names the columns rdl reads:

* a struct (``address {city, zip}``): a column per field, ``address_city``, ``address_zip``
  (nested structs too);
* a duration: seconds (``float64``); a decimal: ``float64``, or text when whole and long
  (ids); a date: a time at midnight;
* a map, or a list of structs or lists: no feature a model reads; one error names the
  column, unless the schema drops it (``stypes: {column: null}``: the model never sees
  it, a task's SQL may; a struct so dropped stays one column too).

Lists of values stay lists (multicategorical columns). A pandas index the file keeps is
read as pandas reads it: a named one (``set_index("user_id")``) a column, also where pandas
wrote ids 1, 2, 3, ... as a range in the file's metadata alone; an unnamed one
(``__index_level_0__``: row labels) left out.
"""
from __future__ import annotations

import re
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from rdl.data import jsonl, typed, xmlrows
from rdl.data.database import DataError
from rdl.data.jsonl import is_json
from rdl.data.files import Header, unique_names, warn_drift, warn_renamed

_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
#: pandas' name for an unnamed index it keeps in a file (row labels, not a plain range)
_INDEX = re.compile(r"__index_level_\d+__")


def _ranges(schema: pa.Schema) -> list[tuple[str, range]]:
    """The named indexes pandas kept as a range in ``schema``'s metadata alone, no column
    (``set_index("user_id")`` of ids 1, 2, 3, ...): their names and values."""
    try:
        meta = schema.pandas_metadata or {}
    except ValueError:   # (metadata that is not pandas' JSON)
        return []
    return [(i["name"], range(i["start"], i["stop"], i["step"]))
            for i in meta.get("index_columns", []) if isinstance(i, dict)
            and i.get("kind") == "range" and i.get("name") and i["name"] not in schema.names]


def _indexed(schema: pa.Schema) -> pa.Schema:
    """``schema`` as pandas reads it: its range indexes columns, no unnamed index."""
    fields = [f for f in schema if not _INDEX.fullmatch(f.name)]
    fields += [pa.field(n, pa.int64()) for n, _ in _ranges(schema)]
    return pa.schema(fields, metadata=schema.metadata)


def _indexed_table(table: pa.Table) -> pa.Table:
    """A file's rows as pandas reads them (:func:`_indexed`)."""
    table = table.drop_columns([n for n in table.column_names if _INDEX.fullmatch(n)])
    for name, values in _ranges(table.schema):
        table = table.append_column(name, pa.array(values, pa.int64()))
    return table


def header(found: list[Path], where: str, base: Path | None = None) -> Header:
    """The columns of a table's parquet files (its first part's), from their footers only,
    struct fields as columns of their own, with the columns of ``key=value`` sub-folders
    (hive partitions), named as :func:`~rdl.data.files.unique_names` says.

    Raises:
        DataError: a file is not readable as parquet, or names a column twice.
    """
    try:
        schema = (jsonl.schema(found, where, base) if is_json(found[0])
                  else typed.schema(found, where) if typed.is_typed(found[0])
                  else xmlrows.schema(found, where) if xmlrows.is_xml(found[0])
                  else _unified(found, where, index=base is None))
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{where}: not a readable parquet file: {e}") from None
    written = [n for f in schema for n in _flat_names(f.name, f.type)]
    written += _partitions(found[0], base)
    if len(set(written)) != len(written):
        raise DataError(f"{where}: column names repeated: "
                        f"{sorted({n for n in written if written.count(n) > 1})}; write the "
                        "file with one name per column")
    return Header(*unique_names(written, strip=False))


def _unified(found: list[Path], where: str, warn: bool = True, index: bool = True
             ) -> pa.Schema:
    """The columns of all of a table's parquet parts (a column added to a daily export
    from some day on: missing in the earlier parts' rows; ``warn``: a warning names them;
    ``index``: as pandas reads them, :func:`_indexed`).

    Raises:
        DataError: a column's types differ between parts beyond what promotes (a number in
            one, text in another).
    """
    schemas = [_plain(_indexed(pq.read_schema(p)) if index else pq.read_schema(p))
               for p in found]
    twice = [s for s in schemas if len(set(s.names)) < len(s.names)]   # (header says so)
    if len(schemas) == 1 or twice:
        return (twice or schemas)[0]
    if warn:
        warn_drift(where, found, [s.names for s in schemas])
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DataError(f"{where}: its parts' columns are of types that do not merge ({e}); "
                        "export every part with the same types") from None


def _plain(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its text and bytes of one type, whatever the writer chose for
    them (``string``, ``large_string``, ``string_view``: one part of a Delta table written
    by delta-rs holds one and the next another), so that parts merge."""
    def plain(t: pa.DataType) -> pa.DataType:
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return pa.large_string()
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            return pa.large_binary()
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(plain(f.type)) for f in t])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            kind = pa.list_ if pa.types.is_list(t) else pa.large_list
            return kind(t.value_field.with_type(plain(t.value_type)))
        return t
    return pa.schema([f.with_type(plain(f.type)) for f in schema], metadata=schema.metadata)


def _wrapped(type_: pa.DataType) -> bool:
    """Whether a struct wraps one value in MongoDB's Extended JSON, as ``mongoexport``
    writes it (``{"$oid": "65b..."}``, ``{"$date": "2024-..."}``, ``{"$numberLong": "4"}``):
    the column is its value, named as the struct."""
    return pa.types.is_struct(type_) and type_.num_fields == 1 and \
        type_.field(0).name.startswith("$")


def _binary(t: pa.DataType) -> bool:
    t = getattr(t, "storage_type", t)   # (pyarrow's arrow.uuid extension: 16 bytes)
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t))


def _as_text(col: pa.ChunkedArray) -> pa.Array:
    """Bytes as text: 16 of them a UUID's (``00000000-0000-...``: DuckDB writes PostgreSQL's
    UUIDs so, SQL Server's uniqueidentifier and MySQL's BINARY(16) ids are such), others in
    hex (a hash); missing ones missing."""
    t = getattr(col.type, "storage_type", col.type)
    if getattr(col.type, "storage_type", None) is not None:
        col = pa.chunked_array([c.storage for c in col.chunks], t)
    sixteen = pa.types.is_fixed_size_binary(t) and t.byte_width == 16
    return pa.array([None if b is None else str(uuid.UUID(bytes=b)) if sixteen else b.hex()
                     for b in col.to_pylist()], pa.large_string())


def _flat_names(name: str, type_: pa.DataType) -> list[str]:
    """A column's name and, for a struct, its fields' columns (the struct's own name stays
    in the header: a schema may drop the whole struct)."""
    if _wrapped(type_):
        return [name]
    if pa.types.is_struct(type_):
        return [name, *(n for f in type_ for n in _flat_names(f"{name}_{f.name}", f.type))]
    return [name]


def _partitions(part: Path, base: Path | None) -> list[str]:
    """The hive partition columns of ``part`` below folder ``base``
    (``date=2024-01-01/part-0.parquet``)."""
    if base is None:
        return []
    return [d.split("=", 1)[0] for d in part.relative_to(base).parts[:-1] if "=" in d]


def read(found: list[Path], where: str, base: Path | None = None,
         dropped: set[str] = frozenset(), required=()) -> pd.DataFrame:
    """A table's parquet files' rows (hive partitions as columns), their types as the
    module says, but the ``dropped`` columns' (kept as they are); times keep their unit
    (so years like 9999 are kept, and checked where used).

    Raises:
        DataError: a file is not readable as parquet, or has a column no feature can hold.
    """
    try:
        if is_json(found[0]):
            table = jsonl.table(found, where, base)
        elif typed.is_typed(found[0]):
            table = typed.table(found, where)
        elif xmlrows.is_xml(found[0]):
            table = xmlrows.table(found, where)
        elif base is None:
            tables = [_indexed_table(pq.read_table(p)) for p in found]
            table = pa.concat_tables([t.cast(_plain(t.schema)) for t in tables],
                                     promote_options="permissive")
        else:   # a folder: its key=value sub-folders are columns too
            parts = [str(p) for p in found]
            hive = _plain(ds.dataset(parts, format="parquet", partitioning="hive",
                                     partition_base_dir=str(base)).schema)   # (its first's)
            table = ds.dataset(parts, format="parquet", partitioning="hive",
                               partition_base_dir=str(base),
                               schema=pa.unify_schemas([_unified(found, where, False, False),
                                                        hive], promote_options="permissive")
                               ).to_table()
            table = _indexed_table(table.replace_schema_metadata())   # (no range: parts')
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as e:
        raise DataError(f"{where}: not a readable parquet file: {e}") from None
    cols, out = [], []
    for name, col in zip(table.column_names, table.columns):
        flat = _flat(name, col, where, dropped)
        if name in required and [n for n, _ in flat] != [name]:
            raise DataError(f"{where}, column {name!r}: an object of fields, read as the "
                            f"columns {[n for n, _ in flat][:5]}, not one value: the schema "
                            "names it as a key or time; name one of its fields, or write "
                            "the file with a value per row there")
        for n, c in flat:
            cols.append(n)
            out.append(c)
    names, _, renamed = unique_names(cols, strip=False)
    warn_renamed(where, renamed)
    return pa.table(out, names=names).to_pandas(coerce_temporal_nanoseconds=False)


def _flat(name: str, col: pa.ChunkedArray, where: str,
          dropped: set[str]) -> list[tuple[str, pa.ChunkedArray]]:
    """A column as the columns it becomes (the module's list); one ``dropped`` as it is."""
    t = col.type
    if name in dropped:
        return [(name, col)]
    if _wrapped(t):
        return _flat(name, col.flatten()[0], where, dropped)
    if pa.types.is_struct(t):
        return [out for f, c in zip(t, col.flatten())
                for out in _flat(f"{name}_{f.name}", c, where, dropped)]
    if pa.types.is_decimal(t):
        return [(name, col.cast(pa.string() if t.scale == 0 and t.precision > 15
                                else pa.float64()))]
    if pa.types.is_date(t):
        return [(name, col.cast(pa.timestamp("s")))]
    if _binary(t):   # ids as bytes (a UUID, a hash): as text, matched and shown as written
        return [(name, _as_text(col))]
    if pa.types.is_uint64(t) and (pc.max(col).as_py() or 0) >= 2 ** 63:
        return [(name, col.cast(pa.string()))]   # ids past int64's (ClickHouse's UInt64 hashes)
    if pa.types.is_float16(t):   # (half floats: numpy's float16, which nothing downstream holds)
        return [(name, col.cast(pa.float32()))]
    if pa.types.is_duration(t):
        return [(name, pc.multiply(col.cast(pa.int64()).cast(pa.float64()),
                                   _SECONDS[t.unit]))]
    nested = pa.types.is_map(t) or (
        (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_nested(t.value_type))
    if nested:
        raise DataError(f"{where}, column {name!r}: of type {t}, which no feature holds (a "
                        f"map, or a list of structs or lists); a list's elements are a table "
                        f"of their own (a table with unnest: {{<this table>: {name}}}), or "
                        f"drop it (stypes: {{{name}: null}})")
    return [(name, col)]
