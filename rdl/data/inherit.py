"""Times a table takes from the rows it references: ``time: {via: order_id}``.

Exports often time only the head of a fact: an order has its purchase time, its items,
payments and shipments none (Olist's ``order_items``, ``order_payments``); a warehouse's
fact table holds a key to its date dimension (``sold_date_sk`` -> ``date_dim``). Such a
row exists from the time of the row it references. Declared static, it would be seen by
every seed, an order's items long before the order (counted, aggregated: a leak); this
gives it that time, as a column named as the referenced table's time (or ``column:``)::

    order_items:
      time: {via: order_id}              # each item at its order's time
      fkeys: {order_id: orders, product_id: products}
    store_sales:
      time: {via: sold_date_sk, column: sold_date}
      fkeys: {sold_date_sk: date_dim}

The referenced table must be timed (its own time, or one it takes in turn); a row whose
reference is missing or matches no row has no time and stops the load, naming the rows,
unless ``dangling: drop`` drops such rows.
"""
from __future__ import annotations

import logging

import pandas as pd

from rdl.data.database import DataError
from rdl.data.keys import comparable
from rdl.data.messages import rows
from rdl.data.schema import TableSchema

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

KEYS = {"via", "column"}


def parse(spec: dict, at: str) -> tuple[str, str | None]:
    """A ``time: {via: fkey, column: name}`` mapping: the foreign key and the new time
    column's name (``None``: the referenced table's time column's)."""
    unknown = sorted(map(str, set(spec) - KEYS))
    if unknown or not isinstance(spec.get("via"), str) or not isinstance(
            spec.get("column", ""), str):
        raise DataError(f"{at}: time {spec!r}: {{via: <foreign key>}} takes each row's time "
                        "from the row it references (optionally column: <its name>)")
    return spec["via"], spec.get("column")


def resolve(tables: dict[str, TableSchema], where: str) -> None:
    """Name each inheriting table's time column, and check what it takes it from: one of
    its own foreign keys, of one column, to a table with a file and a time."""
    def source(t: TableSchema, seen: tuple) -> str:
        at = f"{where}: table {t.name!r}: time {{via: {t.via}}}"
        ref = t.fkeys.get(t.via)
        if ref is None or t.via in t.composite:
            raise DataError(f"{at}: {t.via!r} is none of its foreign keys of one column "
                            f"({sorted(k for k in t.fkeys if k not in t.composite)})")
        r = tables[ref]
        if r.name in seen:
            raise DataError(f"{at}: the tables take their times from each other "
                            f"({' -> '.join((*seen, r.name))}): one must have a time of its own")
        if r.via is not None:
            source(r, (*seen, r.name))
        if r.time is None or r.key_only:
            raise DataError(f"{at}: table {ref!r} has no time to take ("
                            + ("its rows are keys only" if r.key_only else "a static table")
                            + "): time it, or give this table a time of its own")
        return r.time

    for t in tables.values():
        if t.via is not None and t.time is None:
            t.time = source(t, (t.name,))
        elif t.via is not None:
            source(t, (t.name,))


def take(tables: dict[str, TableSchema], frames: dict[str, pd.DataFrame],
         policy: str) -> None:
    """Give each inheriting table's frame its time column, from the rows it references
    (a table taking from a taker after it), in place."""
    order: list[str] = []

    def visit(name: str) -> None:
        t = tables[name]
        if t.via is not None and name not in order:
            visit(t.fkeys[t.via])   # (resolve() has ruled cycles out)
            order.append(name)

    for name in tables:
        visit(name)
    for name in order:
        t = tables[name]
        df, ref = frames[name], t.fkeys[t.via]
        r = tables[ref]
        if t.time in df.columns:
            raise DataError(f"{t.where(t.time)}: the file has a column {t.time!r}, the name of "
                            f"the time it takes from {ref!r}: name that time (time: {{via: "
                            f"{t.via}, column: <a new name>}})")
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
        frames[name] = df.assign(**{t.time: frames[ref][r.time].to_numpy()[pos]})
