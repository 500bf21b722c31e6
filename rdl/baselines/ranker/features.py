"""A split's (seed, candidate) rows and their features: retrieval's pair features
(:mod:`~rdl.baselines.ranker.retrieval`), then the entity's and the item's own columns and
child-table aggregates at the seed's time (depth 1, :mod:`rdl.features.table`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pandas as pd

from rdl.baselines.ranker.events import events
from rdl.baselines.ranker.retrieval import Retrieval
from rdl.baselines.ranker.settings import RankerSettings
from rdl.data.database import Database, DataError
from rdl.features import names as feature_names
from rdl.features.names import side_by_side
from rdl.features.table import children_features, own_features
from rdl.progress import bar
from rdl.tasks import Task
from rdl.visibility import includes_equal


@dataclass
class SplitFeatures:
    """One split's candidates: ``X`` (features), per row the seed (``rid``: its row in the
    split table), the ``item`` and its ``label`` (1: a true item); rows sorted by seed,
    then item. ``truth``: each seed's true items; ``found``: how many retrieval found."""

    X: pd.DataFrame
    rid: np.ndarray
    item: np.ndarray
    label: np.ndarray
    truth: list
    found: np.ndarray
    names: dict = field(default_factory=dict)   # LightGBM's feature name -> readable

    @property
    def seeds(self) -> int:
        return len(self.truth)

    @property
    def per_seed(self) -> float:
        return len(self.X) / max(1, self.seeds)

    @property
    def columns(self) -> list[str]:
        return list(self.X.columns)

    def candidate_recall(self) -> float:
        """The mean over seeds of the share of their true items among their candidates."""
        sizes = np.array([len(t) for t in self.truth], dtype=np.float64)
        ok = sizes > 0
        return float(np.mean(self.found[ok] / sizes[ok])) if ok.any() else float("nan")

    def groups(self) -> np.ndarray:
        """Rows per seed, in order (LightGBM's query groups; seeds without a candidate
        left out)."""
        return np.bincount(self.rid, minlength=self.seeds)[np.unique(self.rid)]


def segment_columns(db: Database, table: str, settings: RankerSettings) -> dict[str, pd.DataFrame]:
    """The entity table's segments: its categorical columns (not keys, times or floats)
    with 2 to ``max_segment_values`` values, the most values first, at most
    ``segment_columns``: ``{column: frame (e, g)}`` (``g``: the value's code)."""
    t = db[table]
    keys = {t.pkey, t.time_col, *t.fkeys}
    found = []
    for col in t.df.columns:
        values = t.df[col]
        if col in keys or pd.api.types.is_float_dtype(values) \
                or pd.api.types.is_datetime64_any_dtype(values):
            continue
        n = values.nunique(dropna=True)
        if 2 <= n <= settings.max_segment_values:
            found.append((-n, col))
    out = {}
    for _, col in sorted(found)[: settings.segment_columns]:
        codes = pd.factorize(t.df[col].astype("string"))[0]
        keep = codes >= 0
        out[col] = pd.DataFrame({"e": t.df[t.pkey].to_numpy(dtype=np.int64)[keep],
                                 "g": codes[keep].astype(np.int64)})
    return out


def parent_columns(db: Database, table: str, settings: RankerSettings) -> dict[str, pd.DataFrame]:
    """The item table's parents: each foreign key, and each of ``parent_columns``:
    ``{name: frame (i, p)}`` (``p``: the parent row, or the value's code)."""
    t = db[table]
    out = {}
    for col in [*t.fkeys, *settings.parent_columns]:
        if col not in t.df.columns:
            raise DataError(f"data.ranker.parent_columns: table {table!r} has no column "
                            f"{col!r} (its columns: {list(t.df.columns)})")
        if col in t.fkeys:
            p = t.df[col].to_numpy(dtype=np.float64, na_value=np.nan)
            keep = ~np.isnan(p)
            p = p[keep].astype(np.int64)
        else:
            codes = pd.factorize(t.df[col].astype("string"))[0]
            keep = codes >= 0
            p = codes[keep].astype(np.int64)
        out[col] = pd.DataFrame({"i": t.df[t.pkey].to_numpy(dtype=np.int64)[keep], "p": p})
    return out


def born_times(db: Database, table: str, strict: bool) -> pd.DataFrame | None:
    """``(i, v)``: each row of a timed item table and the time it is visible from
    (:mod:`~rdl.baselines.ranker.events`' rule); None for a static table."""
    t = db[table]
    if t.time_col is None:
        return None
    v = t.df[t.time_col].to_numpy(dtype="datetime64[ns]")
    keep = ~np.isnat(v)
    return pd.DataFrame({"i": t.df[t.pkey].to_numpy(dtype=np.int64)[keep],
                         "v": v[keep].astype(np.int64) + (0 if includes_equal(strict) else 1)})


class Featuriser:
    """Builds :class:`SplitFeatures` for any split table of ``task`` (one DuckDB session
    over the task's events; :meth:`close` it). ``deep``: the depth-2 synthesis's settings
    (:class:`~rdl.features.deep.DeepSettings`) for the entity's and the item's rows, or
    None (depth 1 only)."""

    def __init__(self, task: Task, db: Database, tables: dict[str, pd.DataFrame],
                 settings: RankerSettings, strict: bool, deep=None):
        self.task, self.settings, self.strict, self.deep = task, settings, strict, deep
        self.db = db if "now" in tables else db.upto(task.test_time)
        ev = events(task, self.db, tables, strict)
        self.sources = ev.sources
        self.retrieval = Retrieval(
            ev, parent_columns(self.db, task.target_table, settings),
            segment_columns(self.db, task.entity_table, settings), task.delta.value, settings,
            born_times(self.db, task.target_table, strict))

    def close(self) -> None:
        self.retrieval.close()

    def split(self, df: pd.DataFrame) -> SplitFeatures:
        """The candidates and features of every row of the split table ``df``."""
        task, cfg = self.task, self.settings
        seeds = pd.DataFrame({"rid": np.arange(len(df), dtype=np.int64),
                              "e": df[task.entity_col].to_numpy(dtype=np.int64),
                              "s": df["timestamp"].to_numpy(dtype="datetime64[ns]")})
        parts = []
        for s, at in bar(seeds.groupby("s", sort=True), "ranker features", unit="seed time"):
            self.retrieval.at(int(np.datetime64(s, "ns").astype(np.int64)))
            pairs = pd.concat([self.retrieval.pairs(at.iloc[k: k + cfg.chunk_seeds])
                               for k in range(0, len(at), cfg.chunk_seeds)], ignore_index=True)
            parts.append(self._with_rows(pairs, at, np.datetime64(s, "ns")))
        X = pd.concat(parts, ignore_index=True)
        order = np.lexsort((X["i"].to_numpy(), X["rid"].to_numpy()))
        X = X.iloc[order].reset_index(drop=True)
        rid, item = X.pop("rid").to_numpy(), X.pop("i").to_numpy()
        truth = [list(map(int, t)) for t in df[task.target_col]]
        true = pd.DataFrame({"rid": np.repeat(np.arange(len(df)), [len(t) for t in truth]),
                             "i": np.fromiter((i for t in truth for i in t), dtype=np.int64),
                             "y": 1})
        label = (pd.DataFrame({"rid": rid, "i": item}).merge(true, how="left", on=["rid", "i"])
                 ["y"].fillna(0).to_numpy(dtype=np.float64))
        found = np.bincount(rid, weights=label, minlength=len(df))
        safe = feature_names.lightgbm_names(X.columns)
        X.columns = list(safe)
        return SplitFeatures(X, rid, item, label, truth, found, safe)

    def _with_rows(self, pairs: pd.DataFrame, seeds: pd.DataFrame, s: np.datetime64
                   ) -> pd.DataFrame:
        """``pairs`` with the entity's and the item's row features at time ``s``."""
        task = self.task
        parts = [pairs.astype({c: np.float32 for c in pairs.columns if c not in ("rid", "i")})]
        ent = self._rows(task.entity_table, seeds["e"].to_numpy(), s, "entity")
        pos = pd.Index(seeds["rid"].to_numpy()).get_indexer(pairs["rid"].to_numpy())
        parts.append(ent.iloc[pos].reset_index(drop=True))
        items = np.unique(pairs["i"].to_numpy())
        feats = self._rows(task.target_table, items, s, "item")
        parts.append(feats.iloc[np.searchsorted(items, pairs["i"].to_numpy())]
                     .reset_index(drop=True))
        return side_by_side(parts)

    def _rows(self, table: str, ids: np.ndarray, s: np.datetime64, prefix: str) -> pd.DataFrame:
        """The own columns and child aggregates of ``table``'s rows ``ids`` at ``s``."""
        db = self.db
        seeds = np.full(len(ids), s, dtype="datetime64[ns]")
        parts = [own_features(table, db[table], ids, seeds),
                 *children_features(db, table, ids, seeds, self.task.delta, self.strict)]
        if self.deep is not None:   # depth 2: the row's parents, its children's, ...
            from rdl.features.deep import deep_features
            task = self.task
            rows_of = SimpleNamespace(name=f"{task.name}: {table}", entity_table=table,
                                      entity_col="_row", delta=task.delta,
                                      val_time=task.val_time, target_col=None)
            df = pd.DataFrame({"_row": ids, "timestamp": seeds})
            parts.append(deep_features(rows_of, db, df, None, self.strict, self.deep))
        out = side_by_side(parts)
        out = out.astype({c: np.float32 for c in out.columns if out[c].dtype == np.float64})
        return out.add_prefix(f"{prefix}.")
