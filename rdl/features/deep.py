"""Deep feature synthesis to depth 2: what :mod:`rdl.features.table` (depth 1) leaves out.

The features that top RelBench's 2026 leaderboards on rel-hm are gradient-boosted trees on
multi-hop aggregates (Kapso, reldfs). Depth 1 is the entity, its label history and counts
and sums of its child rows. This module adds, from the schema alone, for each row
``(entity, s)`` of a split table (entity table ``E``):

- **parents**: the columns of the rows ``E`` references (an article's department row), and
  their children's activity before ``s`` (``E > P < C``: the author's posts in the last
  windows);
- **children, more deeply**: per child table ``C`` of ``E`` (rows with a time) over the last
  4 and 12 windows: mean, min, max and standard deviation of each number, distinct counts
  of each other foreign key, counts per top-k value of each categorical column, and the
  trend of the count (last window against the last 4, last 4 against the last 12);
- **parents of children** (``E < C > P``): the means of ``P``'s numbers and counts per top-k
  value of ``P``'s categories over the entity's ``C`` rows (the categories and prices of
  what a customer bought), and ``P``'s popularity at ``s``: its rows of each child table
  of ``P`` in the last 1 and 4 windows, averaged over the entity's ``C`` rows (how popular
  what a customer bought is: the other buyers, back down);
- **children of children** (``E < C < G``): the count and numeric means of ``G`` rows under
  the entity's ``C`` rows (the comments on a user's posts);
- **group label histories**: per categorical column of ``E`` (a product type), the mean
  label of the group's entities at the last closed window and over the last 4.

Column kinds come from the graph's own stype inference (numerical, categorical; the
schema's stypes win). Everything obeys the one visibility rule (:mod:`rdl.visibility`):
a row at ``t`` counts iff ``t <= s`` (``<`` with ``strict``), both ends of a join, and a
label iff its window closed by ``s``. The top-k values of a column are its most frequent
in rows up to the val time. All joins run in DuckDB on one thread (repeatable sums); the
popularity of a parent is computed once per distinct seed time. ``max_features`` caps the
count, dropping the last of the groups above first. The names spell each feature's path
through the schema, a foreign key's name where a table is reached by several keys or
refers to itself (:mod:`rdl.features.names`: distinct whatever the schema).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdl import duck
from rdl.data.database import Database
from rdl.sections import settings_of
from rdl.features.names import side_by_side
from rdl.features.synthesis import Synthesis
from rdl.progress import bar
from rdl.tasks import Task

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class DeepSettings:
    """``data.deep_features``: the bounds of the synthesis.

    Args:
        top_k: values per categorical column counted (the most frequent).
        max_features: at most this many features (the later groups are cut first).
        windows: the child aggregates' windows, in task windows before the seed time.
        max_group_values: a categorical column of the entity with more distinct values is
            no group for label histories (an id in disguise).
        inputs: the depth-2 features are also the node model's seed features (beside
            depth 1's), not only the trees'.
        select: numbers of depth-2 features to try keeping (those of the most gain in the
            trees fitted on all); the depth-2 trees keep the count best on val, all of
            them included (0: depth 1's features alone). Empty: all, no choice.
        select_weeks: 0: the count is chosen on val; n >= 1: on the train split's last
            n seed times, held out of trees fitted on its earlier ones, so that the one val
            week, which also chooses the tree prior and the model's correction, does not
            choose it too (val then only stops the chosen trees early).
    """
    top_k: int = 5
    max_features: int = 400
    windows: tuple = (4, 12)
    max_group_values: int = 1000
    inputs: bool = False
    select: tuple = ()
    select_weeks: int = 0

    def __post_init__(self):
        for name in ("top_k", "max_features", "max_group_values"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"data.deep_features.{name}={v}: must be an integer >= 1")
        w = tuple(self.windows)
        if not w or any(not isinstance(n, int) or n < 1 for n in w):
            raise ValueError(f"data.deep_features.windows={list(w)}: positive integers")
        object.__setattr__(self, "windows", tuple(sorted(set(w))))
        k = tuple(self.select)
        if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in k):
            raise ValueError(f"data.deep_features.select={list(k)}: integers >= 0")
        object.__setattr__(self, "select", tuple(sorted(set(k))))
        n = self.select_weeks
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"data.deep_features.select_weeks={n}: an integer >= 0")
        if not isinstance(self.inputs, bool):
            raise ValueError(f"data.deep_features.inputs={self.inputs}: true or false")

    @classmethod
    def of(cls, value) -> "DeepSettings | None":
        """From the config: a dict of settings, or null/false (off)."""
        if value is None or value is False or isinstance(value, cls):
            return value or None
        if value is True:
            return cls()
        value = dict(value)
        for name in ("windows", "select"):
            if name in value:
                value[name] = tuple(value[name])
        return settings_of(cls, value, "data.deep_features")


@duck.shared()   # its many small queries on one DuckDB database (rdl/duck.py)
def deep_features(task: Task, db: Database, df: pd.DataFrame, history: pd.DataFrame,
                  strict: bool = False, settings: DeepSettings | None = None,
                  chunk_rows: int = 250_000) -> pd.DataFrame:
    """The depth-2 features of each row ``(task.entity_col, timestamp)`` of ``df``, in its
    order and with its index (to be put beside :func:`~rdl.features.table.entity_features`).
    ``db``: the database as the graph holds it (no row after the test time). The rows go
    through in chunks of whole seed times of about ``chunk_rows`` rows, so that memory stays
    bounded on a full-size train split (millions of rows); what does not depend on the seeds
    is made once for all chunks, and each chunk reads only the rows of its seeds' windows
    (:mod:`rdl.features.synthesis`), so the time grows with the rows, not chunks x rows."""
    settings = settings or DeepSettings()
    times = df["timestamp"].to_numpy()
    order = np.argsort(times, kind="stable")
    shared: dict = {}  # what the chunks share (Synthesis.once): made once per call
    chunks, filled, made = [], _Filled(len(df), settings.max_features), None
    # the first chunk small: its width sizes the others (a wide schema's thousands of
    # features a row: TPC-DS's customers filled 24 GB in chunks of 250,000 rows)
    size, start = min(chunk_rows, FIRST_CHUNK), 0
    with bar(desc="depth-2 synthesis", total=len(df), unit="row") as progress:
        while start < len(df):
            rows = _chunk(times[order], start, size)
            sub = df.iloc[order[rows]]
            part = _features(Synthesis(task, db, sub, strict, settings, shared), history,
                             settings.max_features)
            # float32: a full-size train split has millions of rows (LightGBM bins them)
            part = part.astype({c: np.float32 for c in part.columns
                                if part[c].dtype == np.float64})
            part.index = order[rows]
            made = made or part.shape[1]
            if not (filled.active and filled.add(part)):   # (a parent's categories, ...)
                chunks += [*filled.frames(), part.iloc[:, :settings.max_features]]
            size = min(chunk_rows, max(1, CHUNK_CELLS // max(1, part.shape[1])))
            progress.update(rows.stop - start)
            start = rows.stop
    if filled.active and filled.rows:
        out = filled.frame()
    elif chunks:
        out = pd.concat(chunks).sort_index()
    else:
        out = _features(Synthesis(task, db, df, strict, settings, shared), history,
                        settings.max_features)
    if (made or out.shape[1]) > settings.max_features:
        log.info("deep features: the first %d kept (data.deep_features.max_features; %d "
                 "made)", settings.max_features, made or out.shape[1])
        out = out.iloc[:, :settings.max_features]
    out.index = df.index
    return out


#: the first chunk's rows (:func:`deep_features`), and the cells (rows x features) of each
#: chunk after it
FIRST_CHUNK, CHUNK_CELLS = 20_000, 100_000_000


class _Filled:
    """The chunks' features written in place into one float32 array of the split's rows,
    where each chunk has the first one's columns, all float32 (as they are: the chunks
    share what does not depend on the seeds): no concatenation and sort, each of which
    copied every feature again (at four times rel-hm's size, gigabytes). A chunk with
    other columns turns it back into frames, put together as before."""

    def __init__(self, n: int, keep: int):
        self.n, self.active, self.array, self.columns, self.rows = n, True, None, None, []
        self.keep, self.made = keep, None   # (the first ``keep`` columns: all that are kept)

    def add(self, part: pd.DataFrame) -> bool:
        """``part`` written in place; False (and no longer active) where it cannot be."""
        if not all(dtype == np.float32 for dtype in part.dtypes) or (
                self.made is not None and not part.columns.equals(self.made)):
            self.active = False
            return False
        if self.array is None:
            self.made, self.columns = part.columns, part.columns[:self.keep]
            self.array = np.empty((self.n, len(self.columns)), dtype=np.float32)
        self.array[part.index.to_numpy()] = part.iloc[:, :self.keep].to_numpy()
        self.rows.append(part.index.to_numpy())
        return True

    def frames(self) -> list[pd.DataFrame]:
        """What was written so far as one frame indexed by row (none: nothing was)."""
        if not self.rows:
            return []
        rows = np.concatenate(self.rows)
        self.active, self.rows = False, []
        return [pd.DataFrame(self.array[rows], index=rows, columns=self.columns)]

    def frame(self) -> pd.DataFrame:
        """Every row written: the features in the split's row order."""
        return pd.DataFrame(self.array, columns=self.columns)


def _chunk(times: np.ndarray, start: int, size: int) -> slice:
    """The slice of sorted ``times`` from ``start`` of whole seed times and about ``size``
    rows (at least one seed time's)."""
    after = np.flatnonzero(times[start + size:] != times[start + size - 1:-1])
    return slice(start, start + size + int(after[0]) if len(after) else len(times))


def _features(syn: "Synthesis", history: pd.DataFrame | None,
              keep: int | None = None) -> pd.DataFrame:
    """Every part of the synthesis for the seeds of ``syn``, side by side; ``keep``: the
    parts until they hold that many columns, the rest not made (the first ``keep``
    columns are the same: a later part renames none of them; a warehouse's customers
    made 7,314 features a row, 400 of them kept)."""
    task, db = syn.task, syn.db
    makes = [syn.parents, lambda: syn.group_histories(history)]
    for name, table in db:
        for fkey in [f for f, ref in table.fkeys.items() if ref == task.entity_table]:
            if table.time_col is not None:
                makes.append(lambda name=name, table=table, fkey=fkey:
                             syn.child(name, table, fkey))
    parts = []
    for make in makes:
        if keep is not None and sum(len(p.columns) for p in parts) >= keep:
            break
        part = make()
        if part is not None and len(part.columns):
            parts.append(part)
    return side_by_side(parts) if parts else pd.DataFrame(index=pd.RangeIndex(len(syn.ids)))
