"""JSON files that hold a table in one object, not a row an object: rewritten as JSON Lines
for :mod:`rdl.data.jsonl`'s reader.

* records keyed by their ids (Firebase's export, ``{"-Nx1": {...}, "-Nx2": {...}}``):
  a row each, its key a column (``id``, or ``key`` where the records hold an ``id``);
* pandas' ``to_json()`` in its default orient, ``columns`` (``{"amount": {"0": 5, "1":
  6}}``), and ``index``, ``split`` (``{"columns": [...], "data": [[...]]}``) and ``list``
  orients (``{"amount": [5, 6]}``), its row labels 0, 1, 2, ... left out as pandas' own
  row numbers are (:mod:`rdl.data.row_numbers`);
* either inside an object named as the file or as an API names its rows (``{"orders":
  {...}}``, ``{"data": {...}}``).

DuckDB reads such an object as one row of a column per key (a record keyed by its id: a
struct column of its own, thousands of them); an array of objects and JSON Lines are read
as they are. Written by hand: neither DuckDB nor pyarrow reads these shapes as rows, and
pandas' ``read_json`` needs the orient told.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

#: files larger than this are left to DuckDB as they are (parsed whole here)
MAX_BYTES = 256 * 2 ** 20


def as_lines(path: Path, folder: Path, wrappers: set[str]) -> Path | None:
    """``path`` rewritten as JSON Lines in ``folder`` where it holds a table in one object
    of a shape above; else None (read as it is)."""
    if path.suffixes[-1:] == [".jsonl"] or path.stat().st_size > MAX_BYTES:
        return None
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig") as f:
            first = f.readline()
            if not first.lstrip().startswith("{"):
                return None   # an array, or no JSON
            if _whole(first) and any(line.strip() for line in f):
                return None   # JSON Lines: its first line an object, and more lines
            f.seek(0)
            doc = json.load(f)
    except (ValueError, OSError):   # JSON Lines, or not JSON: the reader says what it is
        return None
    rows = _rows(doc, wrappers | {path.name.split(".")[0].casefold()})
    if rows is None:
        return None
    out = folder / (path.name.split(".")[0] + ".jsonl")
    with open(out, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


def _rows(doc, names: set[str]) -> list[dict] | None:
    if not isinstance(doc, dict) or not doc:
        return None
    named = [k for k, v in doc.items() if k.casefold() in names and isinstance(v, dict)]
    if len(named) == 1 and not any(isinstance(v, list) for v in doc.values()):
        inner = _rows(doc[named[0]], set())   # {"orders": {...}, "meta": ...}
        if inner is not None:
            return inner
    if isinstance(doc.get("columns"), list) and isinstance(doc.get("data"), list) and all(
            isinstance(r, list) and len(r) == len(doc["columns"]) for r in doc["data"]):
        return [dict(zip(doc["columns"], r)) for r in doc["data"]]   # pandas' split
    values = list(doc.values())
    if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1 \
            and len(values[0]) and not any(isinstance(x, dict) for v in values for x in v):
        return [dict(zip(doc, r)) for r in zip(*values)]   # a list per column
    if len(doc) < 2 or not all(isinstance(v, dict) for v in values):
        return None
    inner = [list(v) for v in values]
    if _labels(list(doc)):   # pandas' index orient: rows labelled 0, 1, 2, ...
        return values
    same = all(k == inner[0] for k in inner)
    if same and not any(isinstance(x, dict) for v in values for x in v.values()):
        # a column each (pandas' columns orient) or a record each: a column's values are of
        # one kind, a record's of several; where that says nothing, rows outnumber columns
        by_outer = _mixed([list(v.values()) for v in values])
        by_inner = _mixed([[v[k] for v in values] for k in inner[0]])
        if _labels(inner[0]) or by_outer < by_inner or (
                by_outer == by_inner and len(inner[0]) > len(doc)):
            return [{c: doc[c][r] for c in doc} for r in inner[0]]   # pandas' columns orient
    fields = {k for v in values for k in v}
    key = next(k for k in ("id", "key", "_key", "__key__") if k not in fields)
    return [{key: k, **v} for k, v in doc.items()]   # records keyed by their ids


def _labels(keys: list[str]) -> bool:
    """Whether ``keys`` are pandas' row labels of a default index: "0", "1", "2", ..."""
    return keys == [str(i) for i in range(len(keys))]


def _mixed(groups: list[list]) -> int:
    """How many of ``groups`` hold values of more than one kind (numbers, text, ...)."""
    def kind(x):
        return "number" if isinstance(x, (int, float)) and not isinstance(x, bool) \
            else type(x).__name__
    return sum(len({kind(x) for x in g if x is not None}) > 1 for g in groups)


def _whole(line: str) -> bool:
    """Whether ``line`` is a JSON value of its own (JSON Lines' first line)."""
    try:
        json.loads(line)
        return True
    except ValueError:
        return False
