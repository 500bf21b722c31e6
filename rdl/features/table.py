"""A leak-free feature table of ``(entity, seed time)`` rows: a small deep feature synthesis.

For each row ``(entity, s)`` of a task's split table, from the schema alone:

- **own columns** of the entity's row: numbers as they are, datetimes as seconds before
  ``s``, booleans and strings as pandas ``category`` (long free text, :func:`is_free_text`,
  and names distinct on every row, :func:`is_name`, are dropped), keys left out;
- **label history** (:func:`~rdl.baselines.history.visible_labels`): the last visible
  label, windows since it closed, the mean of the last 4 and of all visible labels, their
  count; for a window of calendar months, the seed's month and the label a year before
  (regression: its change from the window before, the season of a change from the last
  label, which the trees boost from);
- **child tables**: for every table ``C`` with a foreign key to the entity table and a
  time column, the count of the entity's ``C`` rows and the sum of each numeric non-key
  column of ``C`` over the last 1, 4 and 12 windows ``(s - n * window, s]`` and over all
  time, and the days since the entity's last and first ``C`` row (NaN if none); for a
  static ``C`` (no time: a user's badges), the count and sums over all its rows.

Nothing from after ``s`` is read: a child row at time ``t`` counts iff ``t <= s``
(``t < s`` with ``strict=True``, as the sampler's rule), a history label iff its window
closed by ``s`` (``available <= s``, in both modes). The windowed aggregates are one DuckDB
range join per child table over all seed times at once; the all-time ones a ``merge_asof``
of the seeds on per-entity running sums.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl import duck
from rdl.data.database import Database, DataError, Table
from rdl.features.labels import visible_labels
from rdl.features.names import hop, side_by_side
from rdl.tasks import Task
from rdl.tasks.window import months, seasonal_lag, shift
from rdl.visibility import includes_equal, sql_comparison

#: The child-table windows, in task windows before the seed time.
WINDOWS = (1, 4, 12)
#: A string column is free text (dropped) if its values average more characters than this
#: and are many distinct ones (:func:`is_free_text`).
TEXT_LENGTH = 30
_NS_PER_DAY = 86_400 * 10**9


def entity_features(task: Task, db: Database, df: pd.DataFrame, history: pd.DataFrame,
                    strict: bool = False, own: bool = True) -> pd.DataFrame:
    """The features of each row ``(task.entity_col, timestamp)`` of ``df``, in its order
    and with its index; ``history`` is :meth:`Task.history` of the split tables;
    ``own=False`` leaves out the entity row's own columns."""
    e = task.entity_col
    missing = {e, "timestamp"} - set(df.columns)
    if missing:
        raise ValueError(f"task {task.name!r}: the table to featurise lacks {sorted(missing)}")
    entity = db[task.entity_table]
    ids = df[e].to_numpy(dtype=np.int64)
    seeds = df["timestamp"].to_numpy().astype("datetime64[ns]")
    parts = [own_features(task.entity_table, entity, ids, seeds)] if own else []
    parts.append(history_features(task, df, history))
    # calendar months: the seed's month of the year (a season, as the label a year before in
    # history_features; a weekly task's week is left out: it would change its trees)
    if months(task.window):
        parts.append(pd.DataFrame({"seed.month": pd.DatetimeIndex(seeds).month.to_numpy(
            dtype=np.float64)}))
    parts += children_features(db, task.entity_table, ids, seeds, task.window, strict)
    out = side_by_side(parts)
    out.index = df.index
    return out


@duck.shared()   # a query per child table on one DuckDB database (rdl/duck.py)
def children_features(db: Database, parent: str, ids: np.ndarray, seeds: np.ndarray,
                      window, strict: bool) -> list[pd.DataFrame]:
    """The aggregates of every child table of ``parent`` (each table with a foreign key to
    it) for the rows ``ids`` at ``seeds``: :func:`child_features`, or
    :func:`static_child_features` for a child without time."""
    parts = []
    for name, table in db:
        for fkey in [f for f, ref in table.fkeys.items() if ref == parent]:
            prefix = hop(name, table.fkeys, fkey)
            if table.time_col is None:
                parts.append(static_child_features(prefix, table, fkey, ids))
            else:
                parts.append(child_features(prefix, table, fkey, ids, seeds, window, strict))
    return parts


def feature_columns(db: Database, parent: str) -> int:
    """How many columns :func:`entity_features` makes for entities of ``parent``, counted
    from the schema before any is computed (the entity's own columns and its label
    history's, about 10, left out): its child tables' counts and sums, each window's and
    all time's, and their days since the first and last row."""
    n = 0
    for _, table in db:
        if keys := sum(ref == parent for ref in table.fkeys.values()):
            width = 1 + len(numeric_columns(table))
            n += keys * (width if table.time_col is None else width * (len(WINDOWS) + 1) + 2)
    return n


def with_own(task: Task, db: Database, df: pd.DataFrame, rest: pd.DataFrame) -> pd.DataFrame:
    """``rest``, the features of ``df`` computed with ``own=False``, with the entity row's
    own columns before them: what :func:`entity_features` returns with ``own=True``."""
    own = own_features(task.entity_table, db[task.entity_table],
                       df[task.entity_col].to_numpy(dtype=np.int64),
                       df["timestamp"].to_numpy().astype("datetime64[ns]"))
    own.index = rest.index
    return side_by_side([own, rest])


def is_free_text(values: pd.Series) -> bool:
    """Strings with many distinct values (over 50, and over a fifth of the values) longer
    than :data:`TEXT_LENGTH` characters on average."""
    values = values.dropna().astype(str)
    if len(values) == 0:
        return False
    many = values.nunique() > max(50, len(values) // 5)
    return bool(many and values.str.len().mean() > TEXT_LENGTH)


def is_name(values: pd.Series) -> bool:
    """Strings distinct on nearly every row, 90 % of 1,000 or more: a movie's title (97.5 %
    of MovieLens' 9,061: remakes share some), a person's full name. As a category each
    value is one entity's, which the trees learn by heart and which says nothing of a new
    one: on MovieLens' movies, their titles were LightGBM's most-gain feature and cost it
    test AUROC (docs/results.md). The graph keeps them (its model gained with them)."""
    values = values.dropna()
    return len(values) >= 1000 and values.astype(str).nunique() >= 0.9 * len(values)


def left_out(values: pd.Series) -> bool:
    """Whether the trees leave a column of strings out: free text or names."""
    return is_free_text(values) or is_name(values)


def own_features(name: str, table: Table, ids: np.ndarray, seeds: np.ndarray) -> pd.DataFrame:
    """The entity row's own non-key columns, one row per seed."""
    if table.pkey is None:
        raise DataError(f"table {name!r} is a task's entity table but has no primary key")
    src = table.df.set_index(table.pkey)
    rows = src.index.get_indexer(ids)
    found = rows >= 0
    out = {}
    for col in table.feature_cols:
        values = src[col]
        if pd.api.types.is_datetime64_any_dtype(values):
            t = values.to_numpy().astype("datetime64[ns]")
            x = np.full(len(ids), np.nan)
            x[found] = (seeds[found] - t[rows[found]]) / np.timedelta64(1, "s")
        elif pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            if left_out(values):
                continue
            values = values.astype("string")
            cats = pd.Index(values.dropna().unique().astype(object)).sort_values()
            codes = pd.Categorical(values, categories=cats).codes  # -1: missing
            x = pd.Categorical.from_codes(np.where(found, codes[np.maximum(rows, 0)], -1),
                                          categories=cats)
        else:
            v = values.to_numpy(dtype=np.float64, na_value=np.nan)
            x = np.where(found, v[np.maximum(rows, 0)], np.nan)
        out[f"{name}.{col}"] = x
    return pd.DataFrame(out, index=pd.RangeIndex(len(ids)))


def history_features(task: Task, df: pd.DataFrame, history: pd.DataFrame) -> pd.DataFrame:
    """The entity's visible earlier labels (:func:`visible_labels`)."""
    season = months(task.window) and seasonal_lag(task.window)   # (weekly: left out)
    st = visible_labels(task, df, history, ks=(4,), year=bool(season))
    out = {"history.count": st["count"],
           "history.windows_since": st["since"] / task.delta.total_seconds()}
    c = task.kind.num_classes
    if c:   # classes: the last one as a category, the means per class
        none = np.isnan(st["last"]).any(axis=1)
        codes = np.where(none, -1, np.nan_to_num(st["last"]).argmax(axis=1))
        out["history.last"] = pd.Categorical.from_codes(codes, categories=range(c))
        if season:
            year = st["year_before"]
            codes = np.where(np.isnan(year).any(axis=1), -1, np.nan_to_num(year).argmax(axis=1))
            out["history.year_before"] = pd.Categorical.from_codes(codes, categories=range(c))
        for j in range(c):
            out[f"history.mean_4.class_{j}"] = st["mean_4"][:, j]
            out[f"history.mean_all.class_{j}"] = st["mean_all"][:, j]
    else:
        out.update({"history.last": st["last"][:, 0], "history.mean_4": st["mean_4"][:, 0],
                    "history.mean_all": st["mean_all"][:, 0]})
        if season and task.kind.starts_from_last_label:   # trees boosting from the last
            out["history.year_change"] = st["year_change"][:, 0]   # label: its season
        elif season:
            out["history.year_before"] = st["year_before"][:, 0]
    return pd.DataFrame(out, index=pd.RangeIndex(len(df)))


def numeric_columns(table: Table) -> list[str]:
    """A table's numeric (and boolean) columns that are neither keys nor its time."""
    keys = {table.pkey, table.time_col, *table.fkeys}
    return [c for c in table.df.columns
            if c not in keys and (pd.api.types.is_numeric_dtype(table.df[c])
                                  and not pd.api.types.is_datetime64_any_dtype(table.df[c])
                                  and not pd.api.types.is_timedelta64_dtype(table.df[c]))]


def static_child_features(prefix: str, table: Table, fkey: str, ids: np.ndarray) -> pd.DataFrame:
    """The count of the entities' rows of a static child table (a user's badges, an item's
    tags) and the sum of each numeric column: rows without time, visible at every seed
    time (as in the graph)."""
    nums = numeric_columns(table)
    df = table.df[[fkey, *nums]].dropna(subset=[fkey])
    group = df.groupby(df[fkey].to_numpy(dtype=np.int64))
    agg = pd.DataFrame({"count": group.size()})
    for col in nums:  # a missing value adds nothing, as in SQL's sum
        agg[col] = group[col].sum(min_count=0)
    agg = agg.reindex(ids).fillna(0.0)
    out = {f"{prefix}.count_all": agg["count"].to_numpy(dtype=np.float64)}
    for col in nums:
        out[f"{prefix}.{col}.sum_all"] = agg[col].to_numpy(dtype=np.float64)
    return pd.DataFrame(out, index=pd.RangeIndex(len(ids)))


def child_features(prefix: str, table: Table, fkey: str, ids: np.ndarray, seeds: np.ndarray,
                   window, strict: bool) -> pd.DataFrame:
    """Windowed and all-time counts and sums of the seeds' rows of one child table, and
    the days since their last and first row. ``window``: the task's (whole months back for
    a calendar window: the last month of a monthly series holds its one row)."""
    nums = numeric_columns(table)
    src = table.df
    child = pd.DataFrame({"e": src[fkey], "t": src[table.time_col]})
    for k, col in enumerate(nums):
        child[f"x{k}"] = src[col].to_numpy(dtype=np.float64, na_value=np.nan)
    child = child.dropna(subset=["e", "t"])
    child = child.assign(e=child["e"].to_numpy(dtype=np.int64),
                         t=child["t"].to_numpy().astype("datetime64[ns]").astype(np.int64))
    q = pd.DataFrame({"rid": np.arange(len(ids)), "e": ids, "s": seeds.astype(np.int64)})
    for n in WINDOWS:   # where each seed's last n windows begin (nanoseconds)
        q[f"lo{n}"] = shift(seeds.astype("datetime64[ns]"), window, -n).astype(np.int64)
    terms = []
    for n in WINDOWS:
        cond = f"c.t > q.lo{n}"
        terms.append(f"count(*) FILTER (WHERE {cond}) AS count_{n}")
        terms += [f"sum(c.x{k}) FILTER (WHERE {cond}) AS x{k}_{n}" for k in range(len(nums))]
    sql = (f"SELECT q.rid, {', '.join(terms)} FROM q JOIN child c ON c.e = q.e "
           f"AND c.t > q.lo{max(WINDOWS)} AND c.t {sql_comparison(strict)} q.s "
           "GROUP BY q.rid")
    with duck.cursor() as con:   # one thread: float sums in one order (rdl/duck.py)
        con.register("q", q)
        con.register("child", child)
        agg = con.execute(sql).df()
    agg = agg.set_index("rid").reindex(np.arange(len(ids))).fillna(0.0)
    out = {}
    for n in WINDOWS:
        out[f"{prefix}.count_{n}"] = agg[f"count_{n}"].to_numpy(dtype=np.float64)
        for k, col in enumerate(nums):
            out[f"{prefix}.{col}.sum_{n}"] = agg[f"x{k}_{n}"].to_numpy(dtype=np.float64)
    # All time: per-entity running sums, looked up at the seed's last visible row.
    child = child.sort_values(["e", "t"], kind="stable").reset_index(drop=True)
    group = child.groupby("e", sort=False)
    running = pd.DataFrame({"e": child["e"], "t": child["t"], "count": group.cumcount() + 1,
                            "first": group["t"].transform("min")})
    for k in range(len(nums)):  # a missing value adds nothing, as in SQL's sum
        running[f"x{k}"] = child[f"x{k}"].fillna(0.0).groupby(child["e"], sort=False).cumsum()
    hit = pd.merge_asof(q.sort_values("s", kind="stable"), running.sort_values("t", kind="stable"),
                        left_on="s", right_on="t", by="e", direction="backward",
                        allow_exact_matches=includes_equal(strict))
    hit = hit.set_index("rid").reindex(np.arange(len(ids)))
    out[f"{prefix}.count_all"] = hit["count"].fillna(0).to_numpy(dtype=np.float64)
    for k, col in enumerate(nums):
        out[f"{prefix}.{col}.sum_all"] = hit[f"x{k}"].fillna(0).to_numpy(dtype=np.float64)
    s = q["s"].to_numpy(dtype=np.float64)
    out[f"{prefix}.days_since_last"] = (s - hit["t"].to_numpy(dtype=np.float64)) / _NS_PER_DAY
    out[f"{prefix}.days_since_first"] = (s - hit["first"].to_numpy(dtype=np.float64)) / _NS_PER_DAY
    return pd.DataFrame(out, index=pd.RangeIndex(len(ids)))
