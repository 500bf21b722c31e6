"""Foreign keys of a folder's tables as row positions (:func:`map_foreign_keys`), and the
one error for a foreign key that matches nothing at all (types that differ)."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from rdl.data import composite, salesforce
from rdl.data.messages import show
from rdl.data.database import DataError
from rdl.data.schema import TableSchema

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

def check_references(tables: dict, subject) -> None:
    """Each foreign key of ``tables`` (name -> an object with ``fkeys`` and ``pkey``)
    references a table of them that has a primary key; ``subject(table, column)`` starts
    the message (where the key is declared)."""
    for t in tables.values():
        for col, ref in t.fkeys.items():
            if ref not in tables:
                raise DataError(f"{subject(t, col)} references unknown table {ref!r} "
                                f"(tables: {sorted(tables)})")
            if tables[ref].pkey is None:
                raise DataError(f"{subject(t, col)} references table {ref!r}, which has no "
                                "primary key")
            composite.check_arity(col, getattr(t, "composite", {}), tables[ref].pkey,
                                  getattr(tables[ref], "composite", {}), subject(t, col), ref)


def shared_key(t: TableSchema, df: pd.DataFrame) -> pd.DataFrame:
    """A table whose primary key also references another table's (a row that extends
    that row, one to one: a profile of its user, Django's ``place_ptr_id``): the foreign
    key becomes a copy of the key, named ``"<key> (<table>)"``, since rdl holds a primary
    key as its rows' positions and a foreign key as the positions of the rows it matches
    (two columns, as RelBench's tables hold them)."""
    if t.pkey is None or t.pkey not in t.fkeys:
        return df
    ref = t.fkeys[t.pkey]
    alias = f"{t.pkey} ({ref})"
    if alias in df.columns:
        raise DataError(f"{t.where(t.pkey)}: its primary key references table {ref!r}, and "
                        f"the column {alias!r} its copy would take is in the table: rename it")
    t.fkeys = {alias if c == t.pkey else c: r for c, r in t.fkeys.items()}
    return df.assign(**{alias: df[t.pkey]})


def comparable(*columns: pd.Series) -> list[np.ndarray]:
    """Key values of columns in one form: numbers as integers where they all are, and
    text where any side is text (a CSV's ``"0042"`` is not the number 42); Salesforce's
    18-character ids as their 15 characters where the sides mix both
    (:mod:`rdl.data.salesforce`)."""
    def norm(s):
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            v = s.dropna()
            return s.astype("Int64") if (v % 1 == 0).all() else s.astype("float64")
        return s
    normed = [norm(c) for c in columns]
    if len({pd.api.types.is_numeric_dtype(c) for c in normed}) > 1:
        normed = [c.astype("string") for c in normed]
    out = [c.to_numpy(dtype=object, na_value=None) for c in normed]
    return out if pd.api.types.is_numeric_dtype(normed[0]) else salesforce.as_15(out)


def _kind(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s):
        return "booleans"
    if pd.api.types.is_numeric_dtype(s):
        v = s.dropna()
        return "whole numbers" if len(v) and (v % 1 == 0).all() else "numbers"
    if pd.api.types.is_datetime64_any_dtype(s):
        return "times"
    return "text"


def matches_nothing(t: TableSchema, col: str, values: pd.Series, ref: TableSchema,
                     keys: pd.DataFrame) -> None:
    """A foreign key none of whose values is a key of the table it references: a wrong
    table or column, or keys written differently on each side (``42`` and ``"C-42"``)."""
    mine, theirs = values.dropna(), keys[ref.pkey]
    kinds = (_kind(mine), _kind(theirs))
    why = (f"the types differ: {kinds[0]} here, {kinds[1]} there" if kinds[0] != kinds[1]
           else f"both are {kinds[0]}, written differently?")
    sample = lambda v: ", ".join(show(x) for x in v.drop_duplicates().iloc[:3])  # noqa: E731
    raise DataError(f"{t.where(col)}: none of its {len(mine)} values matches a key of table "
                    f"{ref.name!r} ({ref.where(ref.pkey)}); {why}. This column holds e.g. "
                    f"{sample(mine)}; {ref.name}.{ref.pkey} holds e.g. {sample(theirs)}. Check "
                    "that the schema's fkeys name the right table, and write both sides' keys "
                    "alike (same type, no prefix or padding)")


def map_foreign_keys(tables: dict[str, TableSchema], frames: dict[str, pd.DataFrame],
                      policy: str) -> tuple[dict[str, pd.DataFrame], dict[str, np.ndarray]]:
    """Frames with primary keys as positions ``0..N-1`` and foreign keys as the positions
    they match (``Int64``, dangling ones handled by ``policy``), and each table's original
    primary-key values."""
    while True:
        positions, dropped = {}, False
        for name, t in tables.items():
            df = frames[name]
            for col, ref in t.fkeys.items():
                values, keys = comparable(df[col], frames[ref][tables[ref].pkey])
                pos = pd.Index(keys).get_indexer(values)
                dangling = df[col].notna().to_numpy() & (pos < 0)
                positions[name, col] = pos
                n = int(dangling.sum())
                if n == 0:
                    continue
                if n == int(df[col].notna().sum()):
                    matches_nothing(t, col, df[col], tables[ref], frames[ref])
                what = (f"{t.where(col)}: {n} of {len(df)} rows ({100 * n / len(df):.3g}%) "
                        f"have a foreign key matching no {ref!r} row, e.g. "
                        f"{values[dangling][0]!r}")
                if policy == "fail":
                    raise DataError(what + " (dangling: fail)")
                if policy != "drop":
                    log.warning("%s: set to missing, so those rows lose their link (dangling: "
                                "%s). If its keys are entities of their own, keep them: "
                                "'implied: true' on table %r adds a row for each key it "
                                "lacks (or 'dangling: add' at the top of the schema, for every "
                                "table)", what, policy, ref)
                    continue
                log.warning("%s: dropped (dangling: drop)", what)
                df = frames[name] = df[~dangling].reset_index(drop=True)
                dropped = True
                if len(df) == 0:
                    raise DataError(f"{t.where()}: no row left after dropping those with "
                                    "dangling foreign keys")
        if not dropped:  # a dropped row may be what another row pointed at: map again
            break
    out, ids = {}, {}
    for name, t in tables.items():
        df = frames[name].copy()
        for col in t.fkeys:
            pos = positions[name, col]
            df[col] = pd.array(np.where(pos < 0, 0, pos), dtype="Int64")
            df.loc[pos < 0, col] = pd.NA
        if t.pkey is not None:
            ids[name] = df[t.pkey].to_numpy()
            df[t.pkey] = np.arange(len(df))
        out[name] = df
    return out, ids
