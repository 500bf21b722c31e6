"""A table's XML file as Arrow: the rows databases and sites export as XML, each value text
(read then as a CSV's columns are, :mod:`rdl.data.folder`: numbers where all are, times):

* a row's values as its attributes: the Stack Exchange data dump (``Posts.xml``: ``<posts>
  <row Id="1" PostTypeId="1" CreationDate="2011-10-11T19:42:20.713" .../>``, the source
  of RelBench's rel-stack), SQL Server's ``FOR XML RAW``;
* or as its child elements: SQL Server's ``FOR XML PATH``, Oracle's ``DBMS_XMLGEN``
  (``<ROWSET><ROW><ID>1</ID>...``), pandas' ``to_xml()``; MySQL's ``mysql --xml``
  (``<row><field name="id">1</field>``, ``xsi:nil="true"`` for NULL).

The rows are the first kind of element that holds values (attributes, or child elements
of text alone) seen twice at one depth, by name; their values' names are the columns, in
the order first seen, a value a row lacks missing. An attribute and a child of one name
are one column. Read as a stream (``iterparse``): a data dump's file of gigabytes is read
without its tree. A row holding elements of their own (nested records), or a workbook saved
as XML (Excel 2003's SpreadsheetML) stops the load naming it. Written by hand because
pandas' ``read_xml`` needs the rows' path and names ahead, and reads a file whole.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from rdl.data.database import DataError

SUFFIXES = (".xml",)
_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"


def is_xml(path: Path) -> bool:
    """``x.xml``, maybe compressed (``x.xml.gz``)."""
    s = [x.lower() for x in Path(path).suffixes]
    return bool(s) and (s[-1] in SUFFIXES or (len(s) > 1 and s[-2] in SUFFIXES
                                             and s[-1] in (".gz", ".bz2", ".zst")))


def table(found: list[Path], where: str) -> pa.Table:
    """The rows of a table's XML files, one Arrow table of text columns."""
    tables = [_read(p, p.stat().st_size, p.stat().st_mtime_ns, where) for p in found]
    _read.cache_clear()   # (the loader's now)
    return pa.concat_tables(tables, promote_options="default")


def schema(found: list[Path], where: str) -> pa.Schema:
    """The columns of a table's first XML file."""
    p = found[0]
    return _read(p, p.stat().st_size, p.stat().st_mtime_ns, where).schema


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]   # (a namespace's URI is no part of a name)


def _attributes(el: ET.Element) -> dict[str, str]:
    return {_local(k): v for k, v in el.attrib.items() if not k.startswith(
        "{http://www.w3.org/")}   # (xsi:nil, a schema's location: no values)


def _values(el: ET.Element, where: str) -> dict[str, str | None]:
    """A row's values: its attributes, then its children's text (a child ``<field
    name="id">`` as ``id``)."""
    out = _attributes(el)
    for child in el:
        if len(child):
            raise DataError(f"{where}: row <{_local(el.tag)}> holds <{_local(child.tag)}>, "
                            "itself of elements: nested records, no table's row; export "
                            "each kind of record as rows of its own")
        name = child.get("name") if _local(child.tag) == "field" and "name" in child.attrib \
            else _local(child.tag)
        out[name] = None if child.get(_NIL) == "true" else (child.text or "").strip()
    return {k: v if v else None for k, v in out.items()}   # (empty: missing, as in a CSV)


def _is_row(el: ET.Element, depth: int) -> bool:
    """Whether ``el`` (just read whole) holds a row's values; not a field (``<field
    name=...>1</field>``, a leaf of text)."""
    if depth == 0 or any(len(c) for c in el):
        return False
    named_field = _local(el.tag) == "field" and "name" in el.attrib and not len(el)
    return not named_field and (len(el) > 0 or bool(el.attrib))


@lru_cache(maxsize=2)
def _read(path: Path, size: int, mtime: int, where: str) -> pa.Table:
    columns: dict[str, list] = {}
    rows = 0

    def add(values: dict) -> None:
        nonlocal rows
        for k, v in values.items():
            columns.setdefault(k, [None] * rows).append(v)
        rows += 1
        for v in columns.values():
            if len(v) < rows:
                v.append(None)
    # the rows: the first kind of element of values (by name and depth) seen twice (a
    # file's one <meta generated=.../> before its rows is none), or the only one
    seen: dict[tuple, list[dict]] = {}
    row, stack = None, []
    try:
        with pa.input_stream(str(path), compression="detect") as f:   # (.xml.gz)
            for event, el in ET.iterparse(f, events=("start", "end")):
                if event == "start":
                    if not stack and "spreadsheet" in el.tag:
                        raise DataError(f"{where}: an Excel workbook saved as XML "
                                        "(SpreadsheetML): save it as .xlsx")
                    stack.append(el)
                    continue
                stack.pop()
                kind = (el.tag, len(stack))
                if stack and any(len(c) for c in el) and (_attributes(el) or any(
                        not len(c) for c in el)):
                    raise DataError(f"{where}: <{_local(el.tag)}> holds values and elements "
                                    "of values of its own: nested records, no table's rows; "
                                    "export each kind of record as rows of its own")
                if row is None and _is_row(el, len(stack)):
                    seen.setdefault(kind, []).append(_values(el, where))
                    if len(seen[kind]) == 2:
                        row = kind
                        for values in seen.pop(kind):
                            add(values)
                elif kind == row:
                    add(_values(el, where))
                    stack[-1].clear()   # (read as a stream: the rows read are let go)
    except ET.ParseError as e:
        raise DataError(f"{where}: not a readable XML file: {e}") from None
    except OSError as e:
        raise DataError(f"{where}: not readable: {e}") from None
    if row is None and seen:   # (a table of one row)
        add(next(iter(seen.values()))[0])
    elif row is None:
        raise DataError(f"{where}: no rows in this XML file (elements of values, each an "
                        "attribute or a child of text, under one element)")
    return pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})
