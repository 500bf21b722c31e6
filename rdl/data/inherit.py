"""Times a table takes from other tables' rows: the row it references (``time: {via:
order_id}``), or the first row that references it (``time: {seen_in: orders}``).

Exports often time only the head of a fact: an order has its purchase time, its items,
payments and shipments none (Olist's ``order_items``, ``order_payments``); a warehouse's
fact table holds a key to its date dimension (``sold_date_sk`` -> ``date_dim``). Such a
row exists from the time of the row it references. And some tables hold a row per event
with no time of its own, referenced by the event (Olist's customers: one row per order,
``orders.customer_id``): such a row exists from the first time an event references it.
Declared static, either would be seen by every seed, an order's items or its customer
row long before the order (counted, aggregated: a leak); this gives each row its time,
as a column named as the referenced table's time (``via``), ``first_seen`` (``seen_in``),
or as ``column:`` says::

    order_items:
      time: {via: order_id}              # each item at its order's time
      fkeys: {order_id: orders, product_id: products}
    customers:
      pkey: customer_id
      time: {seen_in: orders}            # each at its first order's time (or [t1, t2])
    store_sales:
      time: {via: sold_date_sk, column: sold_date}
      fkeys: {sold_date_sk: date_dim}

The tables a time is taken from must be timed (their own time, or one they take in
turn). ``via``: a row whose reference is missing or matches no row has no time and stops
the load, naming the rows, unless ``dangling: drop`` drops such rows. ``seen_in``: a row
no row references has no time and is dropped, with a warning that counts them.
"""
from __future__ import annotations

import logging

import pandas as pd

from rdl.data.database import DataError
from rdl.data.implied import first_appearance
from rdl.data.keys import comparable
from rdl.data.messages import rows
from rdl.data.schema import TableSchema

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

KEYS = {"via", "seen_in", "column"}
#: the default name of a time taken from the first row that references it
FIRST_SEEN = "first_seen"


def parse(spec: dict, at: str) -> tuple[str | None, list[str] | None, str | None]:
    """A ``time: {via: fkey}`` or ``{seen_in: table(s)}`` mapping (with ``column:``, the
    new time column's name): its foreign key, its tables, the name (``None``: the
    default)."""
    unknown = sorted(map(str, set(spec) - KEYS))
    seen = spec.get("seen_in")
    seen = [seen] if isinstance(seen, str) else seen
    if unknown or ("via" in spec) == (seen is not None) or not isinstance(
            spec.get("via", ""), str) or not isinstance(spec.get("column", ""), str) or (
            seen is not None and (not seen or not all(isinstance(x, str) for x in seen))):
        raise DataError(f"{at}: time {spec!r}: {{via: <foreign key>}} takes each row's time "
                        "from the row it references, {seen_in: <table>} (or a list) from the "
                        "first row there that references it; optionally column: <its name>")
    return spec.get("via"), seen, spec.get("column")


def sources(t: TableSchema) -> list[str]:
    """The tables whose rows a table takes its time from (none: its own, or static)."""
    return [t.fkeys.get(t.via, t.via)] if t.via is not None else list(t.seen_in or [])


def resolve(tables: dict[str, TableSchema], where: str) -> None:
    """Name each taking table's time column, and check what it takes it from: one of its
    own foreign keys (``via``; a composite one too), or tables holding a foreign key to it
    (``seen_in``), each with a file and a time."""
    def check(t: TableSchema, chain: tuple) -> None:
        kind = f"via: {t.via}" if t.via is not None else f"seen_in: {t.seen_in}"
        at = f"{where}: table {t.name!r}: time {{{kind}}}"
        if t.via is not None and t.via not in t.fkeys and "," in t.via:   # "a,b": "a, b"
            t.via = ", ".join(c.strip() for c in t.via.split(","))
        if t.via is not None and t.fkeys.get(t.via) is None:
            raise DataError(f"{at}: {t.via!r} is none of its foreign keys "
                            f"({sorted(t.fkeys)})")
        for ref in sources(t):
            if ref not in tables:
                raise DataError(f"{at}: no table {ref!r} (tables: {sorted(tables)})")
            r = tables[ref]
            if t.seen_in and (t.pkey is None or t.pkey in t.composite
                              or not _referencing(r, t)):
                raise DataError(f"{at}: " + (f"table {ref!r} holds no foreign key of one "
                                             f"column to {t.name!r}" if t.pkey is not None
                                             and t.pkey not in t.composite else
                                             "it needs a primary key of one column"))
            if r.name in chain:
                raise DataError(f"{at}: the tables take their times from each other "
                                f"({' -> '.join((*chain, r.name))}): one must have a time of "
                                "its own")
            if sources(r):
                check(r, (*chain, r.name))
            if r.time is None or r.key_only:
                raise DataError(f"{at}: table {ref!r} has no time to take ("
                                + ("its rows are keys only" if r.key_only else "a static "
                                   "table") + "): time it, or give this table a time of its own")
        t.time = t.time or (tables[sources(t)[0]].time if t.via is not None else FIRST_SEEN)

    for t in tables.values():
        if sources(t):
            check(t, (t.name,))


def _referencing(s: TableSchema, t: TableSchema) -> list[str]:
    """The foreign keys of one column of ``s`` to ``t``."""
    return [c for c, ref in s.fkeys.items() if ref == t.name and c not in s.composite]


def take(tables: dict[str, TableSchema], frames: dict[str, pd.DataFrame],
         policy: str) -> None:
    """Give each taking table's frame its time column, in place (a table taking from a
    taker after it)."""
    order: list[str] = []

    def visit(name: str) -> None:
        if sources(tables[name]) and name not in order:
            for ref in sources(tables[name]):   # (resolve() has ruled circles out)
                visit(ref)
            order.append(name)

    for name in tables:
        visit(name)
    for name in order:
        t = tables[name]
        if t.time in frames[name].columns:
            clash(t)
        frames[name] = (_via if t.via is not None else _seen)(t, tables, frames, policy)


def clash(t: TableSchema) -> None:
    """Stop: the table's file has a column named as the time it takes."""
    raise DataError(f"{t.where(t.time)}: the file has a column {t.time!r}, the name of the "
                    "time it takes: name that time (time: {"
                    + (f"via: {t.via}" if t.via else f"seen_in: {t.seen_in}")
                    + ", column: <a new name>})")


def _via(t: TableSchema, tables: dict, frames: dict, policy: str) -> pd.DataFrame:
    """Each row at the time of the row it references."""
    df, ref = frames[t.name], t.fkeys[t.via]
    r = tables[ref]
    values, keys = comparable(df[t.via], frames[ref][r.pkey])
    pos = pd.Index(keys).get_indexer(values)
    timeless = pos < 0
    if timeless.any() and policy == "drop":
        log.warning("%s: %d of %d rows match no %r row: dropped, having no time "
                    "(dangling: drop)", t.where(t.via), int(timeless.sum()), len(df), ref)
        df, pos = df[~timeless].reset_index(drop=True), pos[~timeless]
    elif timeless.any():
        missing = df[t.via].isna().to_numpy()
        raise DataError(
            f"{t.where(t.via)}: {int(timeless.sum())} of {len(df)} rows take their time "
            f"from a {ref!r} row, but their key is missing ({int(missing.sum())}) or "
            f"matches no row ({int((timeless & ~missing).sum())}; {rows(timeless)}): "
            "they have no time. Fill in their keys, or drop such rows (dangling: drop "
            "at the top of the schema)")
    return df.assign(**{t.time: frames[ref][r.time].to_numpy()[pos]})


def _seen(t: TableSchema, tables: dict, frames: dict, policy: str) -> pd.DataFrame:
    """Each row at the time of the first row of ``t.seen_in`` that references it; rows
    none references dropped, with a warning."""
    df = frames[t.name]
    refs = [(s, col) for s in map(tables.get, t.seen_in) for col in _referencing(s, t)]
    normed = comparable(df[t.pkey], *(frames[s.name][col] for s, col in refs))
    first = first_appearance([(v, frames[s.name][s.time].to_numpy())
                              for (s, _), v in zip(refs, normed[1:])])
    times = pd.Series(normed[0]).map(first).to_numpy(dtype="datetime64[ns]")
    unseen = pd.isna(times)
    if unseen.any():
        log.warning("%s: %d of %d rows are referenced by no row of %s: dropped, having no "
                    "time (time: {seen_in: ...})", t.where(), int(unseen.sum()), len(df),
                    " or ".join(t.seen_in))
    return df.assign(**{t.time: times})[~unseen].reset_index(drop=True)
