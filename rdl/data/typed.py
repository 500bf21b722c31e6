"""Files of typed columns beyond parquet and JSON, read into Arrow as parquet is
(:mod:`rdl.data.parquet` then gives them its types' meanings):

* **ORC** (``.orc``: Hive's and Spark's tables), **Arrow IPC / Feather** (``.arrow``,
  ``.feather``, ``.ipc``), by pyarrow;
* **Avro** (``.avro``: BigQuery's and Kafka's exports), by fastavro: its logical types
  (``timestamp-micros``, ``date``, ``decimal``) as times, dates and decimals, its records
  as structs (a column per field), its unions with null as missing values;
* **SAS** (``.sas7bdat``, transport ``.xpt``) and **Stata** (``.dta``), by pandas, and
  **SPSS** (``.sav``, ``.zsav``, portable ``.por``; by pyreadstat, where installed), as
  statisticians', survey firms' and health insurers' warehouses export them:
  date-formatted numbers as times, value labels as their text.

A table's file is read once: the loader asks for its columns, then its rows, and the file
is let go after them.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd
import pyarrow as pa

from rdl.data.database import DataError

SUFFIXES = (".orc", ".arrow", ".feather", ".ipc", ".avro", ".sas7bdat", ".xpt", ".dta", ".sav",
            ".zsav", ".por")


def is_typed(path: Path) -> bool:
    """Whether ``path`` is one of these files, by its suffix."""
    return Path(path).suffix.lower() in SUFFIXES


def table(found: list[Path], where: str) -> pa.Table:
    """The rows of a table's files, one Arrow table; the files are let go (the loader asks
    for their columns first, :func:`schema`, then for this, last)."""
    tables = [_read(p, p.stat().st_size, p.stat().st_mtime_ns, where) for p in found]
    _read.cache_clear()   # not kept for the run: its rows are the loader's now
    try:
        return pa.concat_tables(tables, promote_options="default")
    except pa.ArrowInvalid as e:
        raise DataError(f"{where}: its parts' columns differ: {e}") from None


def schema(found: list[Path], where: str) -> pa.Schema:
    """The columns of a table's first file."""
    p = found[0]
    return _read(p, p.stat().st_size, p.stat().st_mtime_ns, where).schema


@lru_cache(maxsize=2)
def _read(path: Path, size: int, mtime: int, where: str) -> pa.Table:
    kind = path.suffix.lower()
    try:
        if kind == ".orc":
            import pyarrow.orc as orc
            return orc.read_table(path)
        if kind in (".arrow", ".feather", ".ipc"):
            import pyarrow.feather as feather
            return feather.read_table(path)
        if kind == ".avro":
            return _avro(path)
        if kind == ".dta":
            df = pd.read_stata(path, convert_categoricals=True)
        elif kind in (".sav", ".zsav", ".por"):
            df = _spss(path, where)
        else:
            df = pd.read_sas(path, format="xport" if kind == ".xpt" else "sas7bdat",
                             encoding="infer")
        return pa.Table.from_pandas(_plain(df), preserve_index=False)
    except DataError:
        raise
    except Exception as e:   # each reader raises its own kinds on a damaged file
        raise DataError(f"{where}: not a readable {kind[1:].upper()} file: {e}") from None


def _spss(path: Path, where: str) -> pd.DataFrame:
    try:
        import pyreadstat
    except ImportError:
        raise DataError(f"{where}: reading SPSS files needs pyreadstat: pip install "
                        "pyreadstat (or save the file as CSV)") from None
    read = pyreadstat.read_por if path.suffix.lower() == ".por" else pyreadstat.read_sav
    df, _ = read(str(path), apply_value_formats=True, dates_as_pandas_datetime=True)
    return df


def _avro(path: Path) -> pa.Table:
    try:
        import fastavro
    except ImportError:   # pragma: no cover (a dependency of rdl)
        raise DataError(f"{path}: reading Avro needs fastavro: pip install fastavro") from None
    with open(path, "rb") as f:
        records = list(fastavro.reader(f))
    if not records:
        return pa.table({})
    return pa.Table.from_pylist(records)


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Stata's labelled categories as their text (the loader infers stypes from values)."""
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df
