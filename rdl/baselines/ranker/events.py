"""The interactions a link task's ranker learns from: ``(entity, item, visible_from)``.

A link task links rows of its entity table to rows of its target table (the *items*). Its
evidence in the database is every table with a foreign key to each (a *bridge*: H&M's
transactions, a forum's votes; a table with two keys to one table links it to itself), each
row an event at its time. Where no table bridges them, the task's own earlier labels are
the events, each at the time its window closed. Everything downstream reads events through
one column, ``v``: an event is visible to a seed at ``s`` iff ``v <= s``, which is
:func:`rdl.visibility.visible` in integer nanoseconds (a row at ``t`` is visible from ``t``,
or from ``t + 1 ns`` under the strict rule; a label from the close of its window).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdl.data.database import Database
from rdl.tasks import Task
from rdl.visibility import includes_equal


@dataclass
class Events:
    """``frame``: columns ``e``, ``i``, ``v`` (int64: entity row, item row, visible from,
    ns) and ``src`` (int8: index into ``sources``, the bridges' names)."""

    frame: pd.DataFrame
    sources: list[str]


def bridges(task: Task, db: Database) -> list[tuple[str, str, str]]:
    """``(table, entity key, item key)`` of every timed table with a foreign key to the
    entity table and another to the target table."""
    out = []
    for name, table in db:
        if table.time_col is None:
            continue
        for a, ref_a in table.fkeys.items():
            for b, ref_b in table.fkeys.items():
                if a != b and ref_a == task.entity_table and ref_b == task.target_table:
                    out.append((name, a, b))
    return out


def _ns(times: pd.Series) -> np.ndarray:
    """Times as int64 nanoseconds (NaT: the smallest int64, dropped by :func:`_frame`)."""
    return times.to_numpy(dtype="datetime64[ns]").astype(np.int64)


def _frame(e: pd.Series, i: pd.Series, v: np.ndarray, src: int) -> pd.DataFrame:
    """The events of one source, rows with a missing key or time left out."""
    keep = (e.notna() & i.notna()).to_numpy() & (v != np.iinfo(np.int64).min)
    return pd.DataFrame({"e": e[keep].to_numpy(dtype=np.int64),
                         "i": i[keep].to_numpy(dtype=np.int64),
                         "v": v[keep],
                         "src": np.full(int(keep.sum()), src, dtype=np.int8)})


def events(task: Task, db: Database, tables: dict[str, pd.DataFrame], strict: bool) -> Events:
    """The task's events (:class:`Events`): its bridges' rows, or else its train and val
    labels (a test label's window closes after every seed time)."""
    found = bridges(task, db)
    parts, names = [], []
    shift = 0 if includes_equal(strict) else 1
    for k, (name, a, b) in enumerate(found):
        df = db[name].df
        v = _ns(df[db[name].time_col])
        parts.append(_frame(df[a], df[b], np.where(v == np.iinfo(np.int64).min, v, v + shift), k))
        names.append(f"{name}.{a}->{b}")
    if not parts:
        labels = pd.concat([tables[s] for s in ("train", "val")])
        labels = labels[["timestamp", task.entity_col, task.target_col]].explode(task.target_col)
        labels = labels.reset_index(drop=True)
        parts.append(_frame(labels[task.entity_col], labels[task.target_col],
                            _ns(task.closes(labels["timestamp"])), 0))
        names.append(f"{task.name} labels")
    return Events(pd.concat(parts, ignore_index=True), names)
