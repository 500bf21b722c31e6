"""Entities a folder's foreign keys imply: a row for every key value the facts hold.

Exports often have keys without their table: households appear only as
``transactions.household_key``, or the one table keyed by household covers a third of them.
Left as they are, those keys match no row and become missing (``dangling: null``), and a
task on households never sees the others. A schema says the keys are the entities:

    tables:
      households: {pkey: household_key, implied: true}   # no file: a row per key
      hh_demographic: {pkey: household_key, implied: true}   # its file's rows, and a row
                                                              # per key it lacks
    dangling: add      # the same for every table a foreign key references

The keys are the distinct values of every foreign key that references the table. An added
row holds only its key (its other columns are missing) and, in a timed table, the time of
its key's **first appearance**: the earliest time of a row holding it (a row of a static
table counts as the database's first time). A table with no file is timed (its time column
``first_seen``) when a timed table references it, so a seed sees an entity only once it has
appeared; a partial table keeps its own kind (a static one stays static).

A flat export repeats each entity's own columns in every row that names it (a customer's
country in each of their invoice lines, a movie's title and genres in each rating). A table
without a file takes them (``attributes:``), so the entity's node holds them once and the
rows keep only their own::

      movies: {pkey: movieId, implied: true, attributes: [title, genres]}

Each must hold one value per key (a missing value counts as one): the row's time is its
key's first appearance, and a value that changes later would be seen early there. One
given as ``{column: first}`` (``customers: {..., attributes: [{Country: first}]}``) takes
each key's value on its first row, what was known then, and its rows keep their own: a
customer who moved, a description retyped for a few products.

An attribute that is the key of a coarser entity (an invoice's customer, on each of its
lines) is a foreign key of the table taking it, so the entities chain as in the database
the file was exported from (lines, invoices, customers)::

      invoices: {pkey: InvoiceNo, implied: true, attributes: [CustomerID],
                 fkeys: {CustomerID: customers}}
      customers: {pkey: CustomerID, implied: true, attributes: [Country]}

The coarser table's keys, times and attributes come from the same rows (the lines).
"""
from __future__ import annotations

import difflib
import logging
from collections.abc import Hashable

import numpy as np
import pandas as pd

from rdl.data.days import spanning
from rdl.data.database import DataError
from rdl.data.keys import comparable, matches_nothing
from rdl.data.schema import TableSchema

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

#: the time column of a table without a file: its keys' first appearance
FIRST_SEEN = "first_seen"
#: an attribute given as ``{column: first}``: each key's value on its first row
FIRST = "first"


def parse(spec: dict, at: str) -> bool:
    """A table's ``implied:`` (true: a row for every key its foreign keys hold)."""
    value = spec.get("implied", False)
    if not isinstance(value, bool):
        raise DataError(f"{at}: implied {value!r}: true (a row for every key the foreign keys "
                        "referencing it hold) or false")
    if value and spec.get("pkey") is None:
        raise DataError(f"{at}: implied: true needs its pkey: the column its keys go in")
    return value


def parse_attributes(spec: dict, at: str, key_only: bool) -> tuple[list[str], list[str]]:
    """A table's ``attributes:``: the columns of the rows referencing it that are its own
    (only for an implied table without a file); and those given as ``{column: first}``."""
    value = spec.get("attributes")
    if value is None:
        return [], []
    if isinstance(value, str):
        value = [c.strip() for c in value.split(",")]
    first = [str(next(iter(c))) for c in value if isinstance(c, dict) and len(c) == 1
             and list(c.values()) == [FIRST]] if isinstance(value, list) else []
    if not isinstance(value, list) or not all(isinstance(c, (str, int)) for c in value
                                              if not isinstance(c, dict)) \
            or len(first) != sum(isinstance(c, dict) for c in value):
        raise DataError(f"{at}: attributes: {value!r}: a list of the columns of the rows that "
                        "reference it that are its own (attributes: [title, genres]); "
                        "{column: first} takes each key's first value where later rows may "
                        "hold another (attributes: [title, {country: first}])")
    if not key_only:
        raise DataError(f"{at}: attributes: only for a table implied: true without a file "
                        "(its columns then come from the rows that reference it); a table "
                        "with a file has its own columns")
    return [str(next(iter(c))) if isinstance(c, dict) else str(c) for c in value], first


def check_key_only(t: TableSchema, spec: dict, at: str) -> None:
    """A table without a file has no time, stypes or missing words to read, and foreign
    keys only among its attributes (the key of a coarser entity its rows name: an invoice's
    customer); no attribute that is a foreign key takes its first value."""
    if t.key_only and {"time", "stypes", "missing"} & set(spec):
        raise DataError(f"{at}: implied, with no file ({t.file.name} or .csv): its rows are "
                        f"the keys its foreign keys hold, so its "
                        f"{sorted({'time', 'stypes', 'missing'} & set(spec))} "
                        "have no file to come from; add its file or drop them")
    if set(t.fkeys) & set(t.first):
        raise DataError(f"{at}: attributes: {sorted(set(t.fkeys) & set(t.first))}: a foreign "
                        "key's first value only would link the table to a row its later rows "
                        "do not name: a foreign key among the attributes holds one value per "
                        "key (drop its ': first')")
    if t.key_only and set(t.fkeys) - set(t.attributes):
        cols = sorted(set(t.fkeys) - set(t.attributes))
        raise DataError(f"{at}: implied, with no file: its foreign keys {cols} are among none "
                        f"of its attributes ({t.attributes or 'none'}); a table without a "
                        "file has foreign keys only among the columns it takes from the rows "
                        f"referencing it (attributes: {cols})")


def key_sources(tables: dict[str, TableSchema], name: str, has) -> list:
    """``(table, column)`` for each column of a table with a file whose values are table
    ``name``'s keys: each foreign key referencing it, and where that key is an attribute of
    a table without a file (an invoice's CustomerID), the columns it is taken from, in the
    rows of that table's keys (the lines); ``has(table, column)``: whether it holds it."""
    def walk(name, seen):
        out = []
        for s in tables.values():
            for col, ref in s.fkeys.items():
                if ref != name:
                    continue
                if not s.key_only:
                    out.append((s, col))
                elif s.name not in seen:   # (a chain that comes back: no rows of its own)
                    rows = {h.name: h for h, _ in walk(s.name, (*seen, s.name))}
                    out += [(h, col) for h in rows.values() if has(h, col)]
        return out
    return walk(name, (name,))


def check_attributes(tables: dict[str, TableSchema], names: dict[str, list[str]]) -> dict:
    """Before any file is read in full: each attribute is a plain column of a table whose
    rows hold its table's keys (:func:`key_sources`; ``names``: each table's columns, from
    its header). Returns ``(table, attribute) -> the first table holding it``."""
    found = {}
    for t in tables.values():
        refs = list({s.name: s for s, _ in key_sources(
            tables, t.name, lambda s, c: c in names.get(s.name, ()))}.values())
        for col in t.attributes:
            holders = [s for s in refs if col in names.get(s.name, ())]
            if not holders:
                near = difflib.get_close_matches(col, [c for s in refs for c in names.get(
                    s.name, ())], n=1, cutoff=0.6)
                raise DataError(f"table {t.name!r}: attributes: {col!r} is a column of none of "
                                f"the tables referencing it ({_named_tables(refs)})"
                                + (f" (did you mean {near[0]!r}?)" if near else ""))
            for s in holders:
                if col in _own_roles(s):
                    raise DataError(f"{s.where(col)}: a key or time of its own, so no attribute "
                                    f"of table {t.name!r}: leave it out of attributes")
            found[t.name, col] = holders[0].name
    return found


def hashable(values: pd.Series) -> pd.Series:
    """``values`` as pandas can compare them: lists (a parquet column of lists, a row's
    tags) as tuples, other cells that are no values (a mapping) as their text."""
    if values.dtype != object or values.map(lambda v: isinstance(v, Hashable)).all():
        return values
    return values.map(lambda v: tuple(v) if isinstance(v, (list, np.ndarray)) else
                      v if isinstance(v, Hashable) else repr(v))


def _own_roles(s: TableSchema) -> set:
    """The columns a table's rows need as they are: keys, time and the columns times are
    made of."""
    return {s.pkey, s.time, *s.fkeys, *s.key_columns(), *s.assemble, *s.events, *s.clocks,
            *s.clocks.values(), *(c for parts in s.assemble.values() for c in parts)}


def complete(tables: dict[str, TableSchema], frames: dict[str, pd.DataFrame],
             everywhere: bool) -> dict[str, pd.DataFrame]:
    """``frames`` with the rows the foreign keys imply added to each implied table (every
    referenced table with ``everywhere``: ``dangling: add``), and a frame for each table
    without a file; such a table's :attr:`~TableSchema.time` is set where it is timed.

    Raises:
        DataError: a foreign key none of whose values matches a row of the table's own
            file (keys written differently on each side: adding them all would hide it).
    """
    timed = spanning([(frames[n], t.pkey, t.time) for n, t in tables.items()
                      if t.time and n in frames])
    start = min(s.min() for s in timed) if timed else None   # a static row's "appearance"
    frames, taken = dict(frames), []
    for name, t in tables.items():
        refs = key_sources(tables, name, lambda s, c: s.name in frames and c in frames[
            s.name].columns)
        if not refs or not (t.implied or t.key_only or everywhere):
            continue
        own = frames.get(name)
        sides = [frames[s.name][col] for s, col in refs]
        normed = comparable(*sides, *([own[t.pkey]] if own is not None else []))
        have = pd.Index(normed[-1] if own is not None else [])
        seen = []
        for (s, col), values in zip(refs, normed):
            present = pd.notna(values)
            if own is not None and present.any() and not have.isin(values[present]).any():
                matches_nothing(s, col, frames[s.name][col], t, own)
            when = (frames[s.name][s.time].to_numpy() if s.time else
                    np.full(len(values), np.datetime64("NaT" if start is None else start, "ns")))
            seen.append((values[present], when[present]))
        first = first_appearance(seen)
        # in time, ties by key: an order that rows after a time cannot change
        first = first[~first.index.isin(have)].sort_index().sort_values(kind="stable")
        keys = pd.Series(first.index.to_list(), dtype=object).infer_objects()
        if t.key_only:
            if not len(keys):
                raise DataError(f"table {name!r} is implied: true, with no file, but "
                                f"{_named(refs)} hold no key: it would be empty")
            frames[name] = _key_only(t, keys, first, start is not None)
            what = f"{len(keys)} rows, one per key of {_named(refs)} (implied: true)"
            if t.attributes:
                frames[name], moved = _attributes(t, refs, normed[:len(refs)], frames)
                taken += moved
                what += f", with their attributes {t.attributes}"
        else:
            frames[name] = _added(t, own, keys, first)
            what = (f"{len(keys)} rows added, with only their key, for the keys of "
                    f"{_named(refs)} that match none of its {len(own)} rows ("
                    + ("implied: true)" if t.implied else "dangling: add)"))
        if t.time and len(keys):
            what += f", each from its first appearance ({first.min()} to {first.max()})"
        log.info("%s: %s", f"table {t.name!r}" if t.key_only else t.where(), what)
    for name, col in dict.fromkeys((s.name, col) for s, col in taken):
        frames[name] = frames[name].drop(columns=col)   # (once every table took its own)
    return frames


def first_appearance(seen: list[tuple[np.ndarray, np.ndarray]]) -> pd.Series:
    """Each key's earliest time among the rows holding it (key -> time), from ``(keys,
    their rows' times)`` per foreign key; missing keys left out, a key seen only without a
    time missing (also :mod:`rdl.data.inherit`'s ``seen_in``)."""
    rows = pd.concat([pd.DataFrame({"key": k, "time": w}) for k, w in seen], ignore_index=True)
    return rows[rows["key"].notna()].groupby("key", sort=False)["time"].min()


def _attributes(t: TableSchema, refs, normed: list[np.ndarray],
                frames: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, list]:
    """``t``'s rows with each of ``t.attributes`` taken from the rows holding its keys
    (``refs``, their keys ``normed`` as ``t``'s are): each key's one value; and ``(table,
    column)`` for each column taken, for the caller to drop once all tables took theirs.

    Raises:
        DataError: a key whose rows hold two values of an attribute (missing counts as one).
    """
    df, taken = frames[t.name].copy(), []
    for col in t.attributes:
        held = [(s, keys) for (s, _), keys in zip(refs, normed) if col in frames[s.name].columns]
        pairs = pd.concat([pd.DataFrame({
            "key": pd.Series(keys, dtype=object),
            "value": frames[s.name][col].reset_index(drop=True),
            "time": frames[s.name][s.time].to_numpy() if s.time else pd.NaT})
            for s, keys in held], ignore_index=True)
        pairs = pairs[pairs["key"].notna()]
        if col in t.first:   # (a static row counts as the first time)
            pairs = pairs.sort_values("time", kind="stable", na_position="first")
        pairs = pairs[~pairs[["key", "value"]].assign(value=hashable(pairs["value"]))
                      .duplicated()]
        bad = pairs["key"][pairs["key"].duplicated()].unique()
        two = pairs.loc[pairs["key"] == bad[0], "value"].head(2).tolist() if len(bad) else []
        if len(bad) and col in t.first:
            log.info("%s: each key's first %r: %d of %d keys hold another later (e.g. %s %r: "
                     "%r, then %r); the rows keep theirs", t.where(col), col, len(bad),
                     pairs["key"].nunique(), t.pkey, bad[0], *two)
        elif len(bad):
            raise DataError(
                f"{held[0][0].where(col)}: attributes of table {t.name!r}: {len(bad)} of "
                f"{pairs['key'].nunique()} keys hold more than one {col!r} (e.g. {t.pkey} "
                f"{bad[0]!r}: {two[0]!r} and {two[1]!r}; a missing value counts as one). An "
                f"attribute holds one value per key: the table's row is its key's first "
                f"appearance, where a later value would be seen early. Leave {col!r} out of "
                f"attributes (it stays a column of {', '.join(s.name for s, _ in held)}), "
                f"or take each key's first value ({{{col}: first}}; its rows keep theirs)")
        df[col] = pairs.drop_duplicates("key").set_index("key")["value"].reindex(
            df[t.pkey].to_numpy()).set_axis(df.index)
        for s, _ in held:
            if col in s.stypes:   # a declared stype moves with its column (first: copied)
                t.stypes.setdefault(col, s.stypes[col] if col in t.first else s.stypes.pop(col))
            if col not in t.first:   # (the rows keep theirs)
                taken.append((s, col))
    return df, taken


def _named_tables(tables) -> str:
    return ", ".join(s.name for s in tables) or "none"


def _named(refs) -> str:
    return ", ".join(f"{s.name}.{col}" for s, col in refs)


def _key_only(t: TableSchema, keys: pd.Series, first: pd.Series, timed: bool) -> pd.DataFrame:
    """A table without a file: its keys and, where timed, their first appearance."""
    df = pd.DataFrame({t.pkey: keys})
    if timed:
        t.time = FIRST_SEEN if t.pkey != FIRST_SEEN else f"{FIRST_SEEN}_at"
        df[t.time] = first.to_numpy()
    return df


def _added(t: TableSchema, own: pd.DataFrame, keys: pd.Series,
           first: pd.Series) -> pd.DataFrame:
    """``own`` and a row per key of ``keys``: its key and, where timed, its first
    appearance; its other columns missing."""
    if not len(keys):
        return own
    added = pd.DataFrame({t.pkey: keys})
    if t.time:
        added[t.time] = first.to_numpy()
    df = pd.concat([own, added], ignore_index=True)
    for col in own.columns:   # booleans with missing values: 0/1 and NaN, as files' are
        if pd.api.types.is_bool_dtype(own[col]):
            df[col] = df[col].astype("float64")
    return df
