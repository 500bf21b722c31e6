"""RelBench's cached rel-hm database files (``customer``, ``article``, ``transactions``
``.parquet``), read as a :class:`~rdl.data.Database`."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rdl.data.database import Database, DataError, Table
from rdl.data.hm import as_dates

#: RelBench's rel-hm keys, used when a parquet file lacks RelBench's metadata
RELBENCH_KEYS = {
    "customer": {"pkey_col": "customer_id", "fkey_col_to_pkey_table": {}, "time_col": None},
    "article": {"pkey_col": "article_id", "fkey_col_to_pkey_table": {}, "time_col": None},
    "transactions": {"pkey_col": None, "time_col": "t_dat",
                     "fkey_col_to_pkey_table": {"customer_id": "customer", "article_id": "article"}},
}


def read_relbench(folder) -> Database:
    """Read RelBench's cached rel-hm database (``customer``, ``article``, ``transactions``
    ``.parquet``; RelBench's ``~/.cache/relbench/rel-hm/db``; the folder holding ``db/`` works too).

    RelBench has already trimmed and re-indexed it. Keys come from the metadata RelBench's
    ``Table.save`` puts in each file's parquet schema (``pkey_col``,
    ``fkey_col_to_pkey_table``, ``time_col``, JSON), else from the known rel-hm keys.
    """
    folder = Path(folder)
    if not (folder / "transactions.parquet").exists() and (folder / "db").is_dir():
        folder = folder / "db"
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected RelBench's rel-hm db folder)")
    tables = {}
    for name in RELBENCH_KEYS:
        path = folder / f"{name}.parquet"
        if not path.exists():
            raise DataError(f"{path}: missing (RelBench's rel-hm db has customer.parquet, "
                            "article.parquet and transactions.parquet)")
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{path}: not a readable parquet file: {e}") from None
        meta = _relbench_meta(table.schema.metadata or {}, name, path)
        df = table.to_pandas()
        for col in [meta["pkey_col"], meta["time_col"], *meta["fkey_col_to_pkey_table"]]:
            if col is not None and col not in df.columns:
                raise DataError(f"{path}: missing column {col!r}")
        if meta["time_col"]:
            df[meta["time_col"]] = as_dates(df[meta["time_col"]], f"{path}: column {meta['time_col']!r}")
        for col in meta["fkey_col_to_pkey_table"]:
            df[col] = df[col].astype("Int64")
        tables[name] = Table(df, meta["pkey_col"], dict(meta["fkey_col_to_pkey_table"]), meta["time_col"])
    db = Database(tables)
    for name, tab in db:
        if tab.pkey and not (tab.df[tab.pkey].to_numpy() == np.arange(len(tab))).all():
            raise DataError(f"{folder / (name + '.parquet')}: primary key {tab.pkey!r} is not "
                            "0..N-1 (not a re-indexed RelBench database?)")
    db.validate()
    return db


def _relbench_meta(raw: dict, name: str, path: Path) -> dict:
    keys = ("pkey_col", "fkey_col_to_pkey_table", "time_col")
    if not all(k.encode() in raw for k in keys):
        return RELBENCH_KEYS[name]
    try:
        return {k: json.loads(raw[k.encode()].decode()) for k in keys}
    except ValueError as e:
        raise DataError(f"{path}: bad RelBench metadata in the parquet schema: {e}") from None
