"""How an events table's rows name an entity: a foreign key to it, or a path of them
through other tables (an order line's pizza, and that pizza's type), for
:mod:`rdl.tasks.events` and ``python -m rdl.tasks.suggest``."""
from __future__ import annotations

import pandas as pd

from rdl.data.database import Database, DataError


def references(db: Database, table: str, target: str) -> list[str]:
    """The columns of ``table`` that are (single-column) foreign keys to ``target``."""
    return [c for c, t in db[table].fkeys.items() if t == target and c in db[table].df.columns]


def through_static(db: Database, entity: str) -> dict[str, tuple]:
    """``{timed table: (its key to a static table, that table's key to entity)}``: each
    timed table with one foreign key to a static table (no time) that has one to entity,
    where there is one such path."""
    found = {}
    for middle, m in db:
        refs = references(db, middle, entity) if not m.time_col and middle != entity else []
        for name, table in db if len(refs) == 1 else ():
            ups = references(db, name, middle) if table.time_col and name != entity else []
            if len(ups) == 1:
                found.setdefault(name, []).append((ups[0], refs[0]))
    return {name: paths[0] for name, paths in found.items() if len(paths) == 1}


def checked_path(where: str, db: Database, table: str, path: list[str], entity: str) -> tuple:
    """``path`` checked: each column a foreign key of the table the one before names,
    the last to ``entity``."""
    at = table
    for col in path:
        if col not in db[at].fkeys or col not in db[at].df.columns:
            raise DataError(f"{where}: path {path}: {col!r} is not a foreign key of table "
                            f"{at!r} (those: {sorted(db[at].fkeys) or 'none'})")
        at = db[at].fkeys[col]
        if at != entity and not isinstance(db[at].pkey, str):
            raise DataError(f"{where}: path {path}: table {at!r} on the way has no key of "
                            "one column to join by")
    if at != entity:
        raise DataError(f"{where}: path {path} ends at table {at!r}, not at {entity!r}")
    return tuple(path)


def entities_of(db: Database, table: str, col: str | tuple) -> pd.Series:
    """The entity's row each row of ``table`` names by ``col`` (a foreign key, or a
    path of them: :func:`event_columns`), missing where any step is."""
    path = (col,) if isinstance(col, str) else col
    keys, at = db[table].df[path[0]], db[table].fkeys[path[0]]
    for c in path[1:]:
        step = pd.Series(db[at].df[c].array, index=db[at].df[db[at].pkey])
        keys = pd.Series(step.reindex(keys.to_numpy()).array, index=keys.index)
        at = db[at].fkeys[c]
    return keys


def dotted(table: str, col: str | tuple) -> str:
    """``table.column`` (``table.key.key`` along a path)."""
    return ".".join((table, *((col,) if isinstance(col, str) else col)))


def events_setting(columns: dict) -> str:
    """The ``task.events=`` override that names ``columns``' events tables (a table's name,
    a list of them; ``{table: [key, key]}`` where one is reached through a path)."""
    if all(isinstance(c, str) for c in columns.values()):
        return "task.events=" + (next(iter(columns)) if len(columns) == 1 else
                                 f"[{','.join(columns)}]")
    return "task.events={" + ",".join(f"{t}:{c}" if isinstance(c, str) else
                                      f"{t}:[{','.join(c)}]" for t, c in columns.items()) + "}"


def schema_path(db, src: str, dst: str) -> list[str] | None:
    """The tables of a shortest foreign-key path from ``src`` to ``dst`` in ``db``'s schema
    (either way along each key, as the graph's edges and their reverses go), or None."""
    links: dict[str, set[str]] = {name: set() for name in db.tables}
    for name, tab in db.tables.items():
        for ref in tab.fkeys.values():
            if ref in links:
                links[name].add(ref)
                links[ref].add(name)
    if src not in links or dst not in links:
        return None
    before, frontier = {src: None}, [src]
    while frontier and dst not in before:
        frontier = [n for t in frontier for n in sorted(links[t])
                    if n not in before and before.setdefault(n, t) == t]
    if dst not in before:
        return None
    path = [dst]
    while path[-1] != src:
        path.append(before[path[-1]])
    return path[::-1]
