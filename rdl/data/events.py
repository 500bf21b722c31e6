"""Columns of later events as tables of their own (``events:`` in a folder's schema).

A row may hold the time of something that happened after it: a rental's ``return_date``, an
order's ``delivered_at``, a subscription's ``cancelled_at``. As a feature of its row, a seed
between the two times would see what happens later (the loader stops on such a column:
:func:`rdl.data.leaks.later_times`); dropped, seeds after it lose what it says. Declared an
event, the column becomes a table of its own, a row for each row that has the event, at the
event's time, referencing its row::

    tables:
      rental:
        pkey: rental_id
        time: rental_date
        events: [return_date]            # table rental_return_date: rental_id, return_date
        # events: {return_date: returns}   # the same, named returns

A seed at ``t`` then sees the return once it has happened (its time ``<= t``), as a node
linked to its rental, and the trees' features count such rows as of each seed like any
table's. The column leaves its row's features (as ``stypes: {return_date: drop}`` would);
the task's SQL still reads it.
"""
from __future__ import annotations

import logging

import pandas as pd

from rdl.data.database import DataError
from rdl.data.schema import TableSchema

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place


def parse(spec: dict, t: TableSchema, at: str) -> dict[str, str]:
    """A table's ``events:`` as {column: event table}, its columns dropped from its
    features (``t.stypes``); checked before any file is read.

    Raises:
        DataError: not a list or mapping, a table without a primary key, a column
            that is a key or the table's time, or one declared a feature.
    """
    events = spec.get("events")
    if events is None:
        return {}
    if isinstance(events, str):
        events = [events]
    if isinstance(events, list):
        events = {str(c): f"{t.name}_{c}" for c in events}
    if not isinstance(events, dict):
        raise DataError(f"{at}: events {events!r}: a list of columns of later events' times "
                        "(events: [return_date]), or a mapping to their tables' names "
                        "(events: {return_date: returns})")
    if t.pkey is None:
        raise DataError(f"{at}: events need the table's primary key (pkey:): each event's row "
                        "references the row it happened to")
    out = {}
    for col, table in events.items():
        col, table, here = str(col), str(table), f"{at}: events: {col!r}"
        if col in (t.pkey, t.time, *t.fkeys) or col in t.key_columns():
            raise DataError(f"{here}: the column is a key or the table's time; an event is a "
                            "column of times after the row's own")
        if t.stypes.get(col, None) is not None:
            raise DataError(f"{here}: declared {t.stypes[col]} in stypes; an event leaves "
                            "the row's features (it becomes a table): keep one")
        t.stypes[col] = None   # not a feature of its row: the event's table says it
        out[col] = table
    return out


def check_names(tables: dict[str, TableSchema], where: str) -> None:
    """Event tables' names: none a table of the schema's, none twice."""
    seen = set(tables)
    for t in tables.values():
        for col, name in t.events.items():
            if name in seen:
                raise DataError(f"{where}: table {t.name!r}: events: {col!r} would be table "
                                f"{name!r}, a name already taken: name it (events: {{{col}: "
                                "<name>}})")
            seen.add(name)


def split(tables: dict[str, TableSchema], frames: dict[str, pd.DataFrame]) -> None:
    """Adds each event's table (schema and rows) to ``tables`` and ``frames``: a row for
    each row of its table with the event's time, holding that row's key and the time (a
    composite key as the one column of ids :mod:`rdl.data.composite` made of it)."""
    for t in list(tables.values()):
        for col, name in t.events.items():
            df = frames[t.name]
            rows = df.loc[df[col].notna(), [t.pkey, col]].reset_index(drop=True)
            if rows.empty:
                raise DataError(f"{t.where(col)}: declared an event (events:), but no row has "
                                "a time in it: nothing to make a table of; drop the column")
            tables[name] = TableSchema(name, t.file, None, {t.pkey: t.name}, col, {})
            frames[name] = rows
            log.info("%s: %d of %d rows have the event: table %r (%s, %s)", t.where(col),
                     len(rows), len(df), name, t.pkey, col)
