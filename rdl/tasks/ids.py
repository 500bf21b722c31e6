"""A task's SQL sees the ids of the user's files, not rdl's row positions.

rdl keys each table by row position (``0..N-1``) and keeps the files' own ids in
``Database.keys``. A task's SQL is written against the files (``WHERE p.code = 'ABC'``),
so :func:`register` shows it each keyed table with its primary key and the foreign keys
that point at a keyed table as those ids (DuckDB views joining the id of each row;
nothing is copied), and :func:`to_rows` maps the ids the query returns back to rows.
Tables whose keys are positions already (RelBench's) are registered as they are.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.database import Database, DataError


def register(con, db: Database) -> None:
    """Each table of ``db`` in DuckDB connection ``con`` under its name, keyed by ids."""
    keys = getattr(db, "keys", None) or {}
    shown = set()
    for name, table in db:
        cols = ([(table.pkey, name)] if table.pkey else []) + list(table.fkeys.items())
        mapped = [(col, ref) for col, ref in cols if ref in keys and col in table.df.columns]
        if not mapped:
            con.register(name, table.df)
            continue
        con.register(f"__rows_{name}", table.df)
        joins, repl = [], []
        for i, (col, ref) in enumerate(mapped):
            if ref not in shown:
                con.register(f"__ids_{ref}", pd.DataFrame(
                    {"pos": np.arange(len(keys[ref]), dtype="int64"), "id": keys[ref]}))
                shown.add(ref)
            joins.append(f'LEFT JOIN "__ids_{ref}" k{i} ON r."{col}" = k{i}.pos')
            repl.append(f'k{i}.id AS "{col}"')
        con.execute(f'CREATE VIEW "{name}" AS SELECT r.* REPLACE ({", ".join(repl)}) '
                    f'FROM "__rows_{name}" r {" ".join(joins)}')


def to_rows(values: pd.Series, db: Database, table: str, where: str) -> pd.Series:
    """Ids of ``table`` (as :func:`register` shows them) as its row positions; values
    already positions where the table keeps no ids.

    Raises:
        DataError: ids that are no row of ``table`` (how many, one of them).
    """
    keys = (getattr(db, "keys", None) or {}).get(table)
    if keys is None:
        return values
    pos = keys.get_indexer(values.to_numpy())
    bad = (pos < 0) & values.notna().to_numpy()
    if bad.any():
        raise DataError(f"{where}: {int(bad.sum())} of {len(values)} values are no id of table "
                        f"{table!r}, e.g. {values[bad].iloc[0]!r}")
    return pd.Series(pos, index=values.index).where(values.notna())


def lists_to_rows(lists: pd.Series, db: Database, table: str, where: str) -> pd.Series:
    """Lists of ids of ``table`` (a link task's targets) as sorted arrays of row positions
    (missing ids left out)."""
    keys = (getattr(db, "keys", None) or {}).get(table)
    if keys is None or lists.empty:
        return lists
    flat = lists.explode()
    flat = flat[flat.notna()]
    pos = to_rows(flat, db, table, where).to_numpy(dtype="int64")
    counts = flat.groupby(level=0).size().reindex(lists.index, fill_value=0).to_numpy()
    parts = np.split(pos, np.cumsum(counts)[:-1])
    return pd.Series([np.sort(p) for p in parts], index=lists.index, dtype=object)
