"""Tasks of an entity's events, with no SQL: ``task=events`` and ``task=events-links``.

Most tasks on a relational database ask what an entity's *events* (the rows of timed
tables that reference it: a customer's orders, a plane's flights, a user's posts and
votes) do in the window after a seed time: whether there are any (``label: active``;
``churn``: none, RelBench's user-churn), how many (``count``), what a column of them sums
to (``sum`` of ``value``: RelBench's item-sales), or which rows of another table they
name (``events-links``: the articles a customer buys, RelBench's user-item-purchase).
Each is RelBench's SQL with the names filled in, so here the SQL is written from the
schema when the database is read (:meth:`label_sql`): the events' time columns and
foreign keys are the schema's, and the events tables, unless named, are every timed table
with one foreign key to the entity. The labels then follow every rule a task's SQL does
(:class:`~rdl.tasks.Task`): each split labelled on the database cut where its labels
end, a seed only an entity that exists at its time.

Seeds (``seeds``): ``active``, the entities with an event in the window before the seed
time (RelBench's user-churn: a prediction for whoever is active now), or ``all``, every
entity (item-sales: an article that sold nothing is a seed too). A link task's seeds are
the entities with an event in the window after (whom the ranking is scored for), as
RelBench's recommendation tasks'.

``python -m rdl.tasks.suggest FOLDER`` prints the commands that train these tasks on a
database, with split times and a window that fit its time range.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from rdl.data.database import Database, DataError
from rdl.tasks import Task
from rdl.tasks.paths import checked_path, dotted, references, through_static

log = logging.getLogger(__name__)

#: label -> the kind of node task it makes
LABELS = {"active": "binary_classification", "churn": "binary_classification",
          "count": "regression", "sum": "regression"}
SEEDS = ("active", "all")
SUGGEST = "python -m rdl.tasks.suggest DATA prints ones that fit the data"


def quoted(name) -> str:
    """A name as DuckDB's SQL quotes it (any table or column name an export gives)."""
    return '"' + str(name).replace('"', '""') + '"'


def event_columns(task: str, db: Database, entity: str, events) -> dict[str, str | tuple]:
    """``{events table: its column referencing entity}`` for ``events`` as a task names
    them: a table's name, a list of them, ``{table: column}``, or None (every timed table,
    but the entity's own, with one foreign key to the entity; where none has, every one
    with one foreign key to a static table with one to the entity: a pizza's sales are
    its type's). A column may be a path of foreign keys, a tuple (``{order_details:
    [pizza_id, pizza_type_id]}``: each row's pizza, and that pizza's type)."""
    if entity not in db.tables:
        raise DataError(f"task {task!r}: entity_table {entity!r} is not a table of the "
                        f"database; its tables: {sorted(db.tables)}")
    if events is None:
        found, several = {}, []
        for name, table in db:
            refs = references(db, name, entity) if table.time_col and name != entity else []
            if len(refs) == 1:
                found[name] = refs[0]
            elif refs:
                several.append(f"{name} ({', '.join(refs)})")
        if not found and not several:
            found = through_static(db, entity)
        if several:
            log.info("task %s: tables left out of the events, for they reference %s by "
                     "several columns (name one: events: {table: column}): %s", task, entity,
                     "; ".join(several))
        if not found:
            timed = sorted(n for n, t in db if t.time_col)
            raise DataError(f"task {task!r}: no table holds events of {entity!r} (a time and "
                            f"a foreign key to it); the timed tables: {timed}"
                            + (f", of which {several} reference it by several columns: name "
                               "one (task.events={table: column})" if several else ""))
        log.info("task %s: the events of %s: %s", task, entity,
                 ", ".join(dotted(t, c) for t, c in found.items()))
        return found
    named = {events: None} if isinstance(events, str) else \
        dict(events) if isinstance(events, dict) else {t: None for t in events}
    out = {}
    for name, col in named.items():
        where = f"task {task!r}: events table {name!r}"
        if name not in db.tables:
            raise DataError(f"{where} is not a table of the database; its tables: "
                            f"{sorted(db.tables)}")
        if not db[name].time_col:
            raise DataError(f"{where} has no time (a static table's rows are no events): "
                            "declare its time column in the schema (time: COLUMN)")
        if isinstance(col, (list, tuple)):
            out[name] = checked_path(where, db, name, [str(c) for c in col], entity)
            continue
        refs = references(db, name, entity)
        if col is None and len(refs) != 1:
            raise DataError(f"{where} has {len(refs)} foreign keys to {entity!r}"
                            + (f" ({', '.join(refs)}): name the one, task.events={{{name}: "
                               f"{refs[0]}}}" if refs else
                               f" (its foreign keys: {db[name].fkeys or 'none'})"))
        if col is not None and col not in refs:
            raise DataError(f"{where}: column {col!r} is not a foreign key to {entity!r} "
                            f"(those: {refs or 'none'})")
        out[name] = col or refs[0]
    return out


def _and(where: str | None) -> str:
    """A task's ``where`` as the end of a SQL ``WHERE``."""
    return f" AND ({where})" if where else ""


def _key(task: str, db: Database, table: str, setting: str) -> str:
    pkey = db[table].pkey   # (a composite key: the one column of ids the loader made)
    if not isinstance(pkey, str):
        raise DataError(f"task {task!r}: {setting} {table!r} has no primary key: an events "
                        "task predicts rows of a keyed table")
    return pkey


def _check_times(task) -> None:
    """What an events task cannot be made without, named (Hydra's own message for a
    missing value would name the task's name, made of them)."""
    if task.entity_table is None:
        raise ValueError(f"task {task.name.replace('None-', 'events-')!r}: entity_table is "
                         f"missing: give task.entity_table=TABLE, the table whose rows are "
                         f"predicted ({SUGGEST})")
    for attr in ("val_timestamp", "test_timestamp"):
        if getattr(task, attr) is None:
            raise ValueError(f"task {task.name!r}: {attr} is missing: give task.{attr}=DATE "
                             f"(the window's start; {SUGGEST})")


@dataclass
class _Events(Task):
    """What both events tasks share: the checks before any data, and the names found in
    the database's schema when it is read (:meth:`resolve`)."""

    labels_elsewhere: ClassVar[bool] = True   # (the SQL is written when the data is read)

    def __post_init__(self):
        _check_times(self)
        self.check()
        super().__post_init__()
        self.columns = None

    def check(self) -> None:
        """The task's own settings, checked before any data is read."""

    def database(self, db: Database) -> Database:
        self.resolve(db)
        return super().database(db)

    def resolve(self, db: Database) -> None:
        raise NotImplementedError


@dataclass
class NodeEvents(_Events):
    """What a node task labelled from an entity's events adds to a node task (see the
    module's docstring; :class:`rdl.families.node.EventsNodeTask`): ``sql`` none, and

    Args:
        events: the events tables: a name, a list, ``{table: column}`` (the column that
            references the entity, where it has several), or None (every timed table with
            one foreign key to the entity).
        label: ``active`` (1 if any event in the window), ``churn`` (1 if none), ``count``
            (how many), ``sum`` (of ``value``). ``kind`` follows from it where null.
        value: the column of every events table that ``sum`` adds up.
        seeds: ``active`` (entities with an event in the window before the seed time) or
            ``all`` (every entity that exists then).
        where: the rows that are events, a condition on the events tables' columns in
            DuckDB's SQL (``dep_time IS NOT NULL``: flights that left); None: every row.
    """

    events: str | list | dict | None = None
    label: str = "active"
    value: str | None = None
    seeds: str = "active"
    where: str | None = None

    def check(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"task {self.name!r}: label {self.label!r} is not one of "
                             f"{tuple(LABELS)}")
        if (self.label == "sum") != (self.value is not None):
            raise ValueError(f"task {self.name!r}: " + (
                "label 'sum' needs value, the column to add up (task.value=price)"
                if self.value is None else f"value {self.value!r} is for label 'sum' only "
                f"(label {self.label!r})"))
        if self.seeds not in SEEDS:
            raise ValueError(f"task {self.name!r}: seeds {self.seeds!r} is not one of {SEEDS}")
        if self.kind is None:
            self.kind = LABELS[self.label]
        elif str(self.kind) != LABELS[self.label]:
            raise ValueError(f"task {self.name!r}: label {self.label!r} makes a "
                             f"{LABELS[self.label]} task, not {self.kind}")

    def resolve(self, db: Database) -> None:
        """The events' columns, and the entity's key as the labels' column, from ``db``'s
        schema (checked: one clear error for a name that is not there)."""
        if self.columns is not None:
            return
        columns = event_columns(self.name, db, self.entity_table, self.events)
        pkey = _key(self.name, db, self.entity_table, "entity_table")
        for table in columns if self.value is not None else ():
            col = db[table].df.get(self.value)
            if col is None or not pd.api.types.is_numeric_dtype(col) or \
                    pd.api.types.is_bool_dtype(col):
                raise DataError(f"task {self.name!r}: value {self.value!r} is not a column of "
                                f"numbers of events table {table!r}")
        self.entity_col = self.entity_col or pkey
        if self.entity_col in (self.target_col, "timestamp"):
            raise DataError(f"task {self.name!r}: the entity's key {self.entity_col!r} has "
                            "the name of the label's column: set task.target_col=NAME")
        self.columns, self._pkey = columns, pkey

    def label_sql(self, db: Database) -> tuple[str, dict | None]:
        self.resolve(db)
        q = quoted
        events = "\n    UNION ALL\n    ".join(
            _events_sql(db, t, col, self.value, self.where) for t, col in self.columns.items())
        entity, key, out = q(self.entity_table), q(self._pkey), q(self.entity_col)
        if self.seeds == "active":   # the events of (t - window, t + window], per entity
            later = "FILTER (WHERE e.time > s.timestamp)"
            label = {"active": "CAST(bool_or(e.time > s.timestamp) AS INTEGER)",
                     "churn": "CAST(NOT bool_or(e.time > s.timestamp) AS INTEGER)",
                     "count": f"CAST(count(*) {later} AS DOUBLE)",
                     # events whose values are all NULL: unknown, not 0 (left out)
                     "sum": f"CAST(CASE WHEN count(*) {later} = 0 THEN 0 "
                            f"ELSE sum(e.value) {later} END AS DOUBLE)"}[self.label]
            body = (f"SELECT s.timestamp, e.entity AS {out}, {label} AS {q(self.target_col)}\n"
                    "FROM timestamps s\nJOIN events e ON e.time > s.timestamp - $window "
                    "AND e.time <= s.timestamp + $window\n"
                    f"WHERE e.entity IN (SELECT {key} FROM {entity})\n"
                    "GROUP BY s.timestamp, e.entity\nHAVING bool_or(e.time <= s.timestamp)")
        else:   # every entity, and its events of (t, t + window]
            label = {"active": "CAST(count(e.time) > 0 AS INTEGER)",
                     "churn": "CAST(count(e.time) = 0 AS INTEGER)",
                     "count": "CAST(count(e.time) AS DOUBLE)",
                     "sum": "CAST(CASE WHEN count(e.time) = 0 THEN 0 ELSE sum(e.value) END "
                            "AS DOUBLE)"}[self.label]
            body = (f"SELECT s.timestamp, a.{key} AS {out}, {label} AS {q(self.target_col)}\n"
                    f"FROM timestamps s\nCROSS JOIN {entity} a\nLEFT JOIN events e ON "
                    f"e.entity = a.{key} AND e.time > s.timestamp "
                    "AND e.time <= s.timestamp + $window\n"
                    f"GROUP BY s.timestamp, a.{key}")
        sql = f"WITH events AS (\n    {events}\n)\n{body}"
        return sql, self.window_parameter()


def _events_sql(db: Database, table: str, col: str | tuple, value: str | None,
                where: str | None) -> str:
    """The ``(entity, time[, value])`` rows of one events table: its column, or its path
    of foreign keys joined table by table (``where`` on the events table's own columns)."""
    q = quoted
    path = (col,) if isinstance(col, str) else col
    rows = f"{q(table)} WHERE {q(path[0])} IS NOT NULL{_and(where)}"
    if len(path) == 1:
        return (f"SELECT {q(col)} AS entity, {q(db[table].time_col)} AS time"
                + (f", {q(value)} AS value" if value else "") + f" FROM {rows}")
    joins, at, prev = [], db[table].fkeys[path[0]], f"e.{q(path[0])}"
    for i, c in enumerate(path[1:]):   # each step's row, joined by its key
        joins.append(f"JOIN {q(at)} h{i} ON h{i}.{q(db[at].pkey)} = {prev}")
        at, prev = db[at].fkeys[c], f"h{i}.{q(c)}"
    return (f"SELECT {prev} AS entity, e.{q(db[table].time_col)} AS time"
            + (f", e.{q(value)} AS value" if value else "") + f" FROM (SELECT * FROM {rows}) e "
            + " ".join(joins) + f" WHERE {prev} IS NOT NULL")


@dataclass
class LinkEvents(_Events):
    """What a link task labelled from an entity's events adds to a link task (see the
    module's docstring; :class:`rdl.families.link.EventsLinkTask`): each seed's label is
    the ``target_table`` rows its events name in the window after.

    Args:
        events: the events table: a name, or ``{table: column}`` (the column that
            references the entity, where it has several).
        target_table: the table the events link to (None: the one other keyed table the
            events table references).
        target_key: the events' column that references ``target_table`` (None: the one).
        where: the rows that are events, a condition on the events table's columns
            (DuckDB's SQL); None: every row.
    """

    events: str | dict | None = None
    target_key: str | None = None
    where: str | None = None

    def kind_settings(self) -> dict:   # (the target table may be found in the data only)
        return {"target_table": self.target_table or "(the events')"}

    def check(self) -> None:
        if self.kind is None:
            self.kind = "link_prediction"
        if isinstance(self.events, (list, tuple)) or (isinstance(self.events, dict)
                                                      and len(self.events) != 1):
            raise ValueError(f"task {self.name!r}: events {self.events!r}: a link task's "
                             "events are one table (task.events=TABLE)")
        if self.events is None:
            raise ValueError(f"task {self.name!r}: events is missing: give task.events=TABLE, "
                             f"the table whose rows link an entity to a target ({SUGGEST})")

    def resolve(self, db: Database) -> None:
        """The events' columns, the target table and the labels' columns from ``db``."""
        if self.columns is not None:
            return
        [(table, col)] = event_columns(self.name, db, self.entity_table, self.events).items()
        first = col if isinstance(col, str) else col[0]   # (a path: an invoice's customer)
        others = [(c, t) for c, t in db[table].fkeys.items() if c != first and c in db[table].df
                  and (self.target_table is None or t == self.target_table)
                  and (self.target_key is None or c == self.target_key)]
        where = f"task {self.name!r}: events table {table!r}"
        if len(others) != 1:
            raise DataError(f"{where} has {len(others)} foreign keys "
                            + (f"to {self.target_table!r}" if self.target_table else
                               "besides the entity's") + (
                f" ({', '.join(c for c, _ in others)}): name the one, task.target_key=COLUMN"
                if others else f"; its foreign keys: {db[table].fkeys or 'none'}"))
        (target_key, target), = others
        self.target_table = target
        pkey = _key(self.name, db, self.entity_table, "entity_table")
        tkey = _key(self.name, db, target, "target_table")
        self.entity_col = self.entity_col or pkey
        self.target_col = self.target_col or (tkey if tkey != self.entity_col else target_key)
        if self.target_col in (self.entity_col, "timestamp"):
            raise DataError(f"task {self.name!r}: the targets' column {self.target_col!r} has "
                            "the name of the entity's: set task.target_col=NAME")
        self.columns = {"table": table, "entity": col, "target": target_key}

    def label_sql(self, db: Database) -> tuple[str, dict | None]:
        self.resolve(db)
        q, c = quoted, self.columns
        rows = _events_sql(db, c["table"], c["entity"], c["target"], self.where)
        sql = (f"SELECT s.timestamp, e.entity AS {q(self.entity_col)}, "
               f"LIST(DISTINCT e.value ORDER BY e.value) AS {q(self.target_col)}\n"
               f"FROM timestamps s\nJOIN ({rows}) e ON e.time > s.timestamp "
               f"AND e.time <= s.timestamp + $window\n"
               f"WHERE e.value IS NOT NULL\nGROUP BY s.timestamp, e.entity")
        return sql, self.window_parameter()
