"""A split's (seed, candidate) rows and their features: retrieval's pair features
(:mod:`~rdl.baselines.ranker.retrieval`), then the entity's and the item's own columns and
child-table aggregates at the seed's time (depth 1, :mod:`rdl.features.table`; depth 2,
:mod:`rdl.features.deep`).

Each row's features depend on its seed and item alone, not on the other rows built with
it: a split built a chunk of seeds at a time has the rows, bit for bit, of the split built
at once (tests/baselines/test_ranker_chunks.py), so memory can hold one chunk's."""
from __future__ import annotations

from collections.abc import Iterator
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
class Candidates:
    """One split's candidates: per row the seed (``rid``: its row in the split table), the
    ``item`` and its ``label`` (1: a true item); rows sorted by seed, then item. ``truth``:
    each seed's true items; ``found``: how many retrieval found."""

    rid: np.ndarray
    item: np.ndarray
    label: np.ndarray
    truth: list
    found: np.ndarray

    @property
    def seeds(self) -> int:
        return len(self.truth)

    @property
    def per_seed(self) -> float:
        return len(self.rid) / max(1, self.seeds)

    def candidate_recall(self) -> float:
        """The mean over seeds of the share of their true items among their candidates."""
        sizes = np.array([len(t) for t in self.truth], dtype=np.float64)
        ok = sizes > 0
        return float(np.mean(self.found[ok] / sizes[ok])) if ok.any() else float("nan")

    def groups(self) -> np.ndarray:
        """Rows per seed, in order (LightGBM's query groups; seeds without a candidate
        left out)."""
        return np.bincount(self.rid, minlength=self.seeds)[np.unique(self.rid)]


@dataclass
class SplitFeatures(Candidates):
    """:class:`Candidates` with their features ``X`` (a row per candidate, in their order)."""

    X: pd.DataFrame = None
    names: dict = field(default_factory=dict)   # LightGBM's feature name -> readable


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
    """Builds :class:`SplitFeatures` for any split table of ``task``: all at once
    (:meth:`split`), a chunk of seeds at a time (:meth:`chunks`), or the candidates alone
    (:meth:`candidates`). One DuckDB session over the task's events, set to one seed time
    at a time: one call at a time (a :meth:`chunks` iteration finished before another
    call); :meth:`close` it. ``deep``: the depth-2 synthesis's settings
    (:class:`~rdl.features.deep.DeepSettings`) for the entity's and the item's rows, or
    None (depth 1 only)."""

    def __init__(self, task: Task, db: Database, tables: dict[str, pd.DataFrame],
                 settings: RankerSettings, strict: bool, deep=None):
        self.task, self.settings, self.strict, self.deep = task, settings, strict, deep
        self.db = db if "now" in tables else db.upto(task.test_time)
        ev = events(task, self.db, tables, strict)
        self.sources = ev.sources
        # every item a seed can have as a candidate (retrieval's items are the events' and
        # the item table's): their row features are computed once per seed time
        target = self.db[task.target_table]
        self.items = np.unique(np.concatenate(
            [ev.frame["i"].to_numpy(), target.df[target.pkey].dropna().to_numpy(np.int64)]))
        self._item_rows: tuple = (None, None)   # (seed time, the items' row features)
        self.retrieval = Retrieval(
            ev, parent_columns(self.db, task.target_table, settings),
            segment_columns(self.db, task.entity_table, settings), task.delta.value, settings,
            born_times(self.db, task.target_table, strict))

    def close(self) -> None:
        self.retrieval.close()

    def candidates(self, df: pd.DataFrame) -> Candidates:
        """The candidates of every row of the split table ``df``, without their features
        (what retrieval finds: which seeds have a true item among theirs)."""
        parts = []
        for _, at in self._times(df, "ranker candidates"):
            parts += [self.retrieval.candidates(c) for c in self._chunks(at)]
        pairs = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            {"rid": np.zeros(0, np.int64), "i": np.zeros(0, np.int64)})
        rid, item = pairs["rid"].to_numpy(), pairs["i"].to_numpy()
        order = sort_order(rid, item)
        if order is not None:
            rid, item = rid[order], item[order]
        return Candidates(rid, item, *self._labels(df, rid, item))

    def split(self, df: pd.DataFrame, hits_only: bool = False) -> SplitFeatures:
        """The candidates and features of every row of the split table ``df``, all at once
        (the rows LightGBM learns from: at most ``train_seeds`` or ``val_seeds`` seeds);
        ``hits_only``: the rows of the seeds with a true item among their candidates alone
        (those LambdaRank learns from), the others dropped before their features are."""
        known = self._truth(df)
        X = pd.concat(list(self._frames(df, known=known if hits_only else None)),
                      ignore_index=True)
        order = sort_order(X["rid"].to_numpy(), X["i"].to_numpy())
        if order is not None:   # seed times interleaved in df (else sorted already: no copy)
            X = X.iloc[order].reset_index(drop=True)
        return self._featured(df, X, known)

    def chunks(self, df: pd.DataFrame) -> Iterator[SplitFeatures]:
        """The candidates and features of the rows of ``df``, ``chunk_seeds`` seeds of one
        seed time at a time (``rid``: the row in ``df``; ``truth`` and ``found``: all of
        ``df``'s, ``found`` counted in the chunk's rows): what a split to be scored
        goes through, so that its memory does not grow with the split."""
        known = self._truth(df)
        # map, not a loop: no variable holds a chunk's frame while the next one is built
        return map(lambda X: self._featured(df, X, known),
                   self._frames(df, self.settings.chunk_seeds))

    def _times(self, df: pd.DataFrame, what: str
               ) -> Iterator[tuple[np.datetime64, pd.DataFrame]]:
        """Each seed time of ``df`` and its seeds (``rid``: row in ``df``, ``e``: entity),
        retrieval set to the time (:meth:`Retrieval.at`) before they are given."""
        seeds = pd.DataFrame({"rid": np.arange(len(df), dtype=np.int64),
                              "e": df[self.task.entity_col].to_numpy(dtype=np.int64),
                              "s": df["timestamp"].to_numpy(dtype="datetime64[ns]")})
        for s, at in bar(seeds.groupby("s", sort=True), what, unit="seed time"):
            s = np.datetime64(s, "ns")
            self.retrieval.at(int(s.astype(np.int64)))
            yield s, at

    def _chunks(self, at: pd.DataFrame, size: int | None = None) -> list[pd.DataFrame]:
        """``at`` in slices of ``size`` seeds (default ``chunk_seeds``), in order."""
        size = size or self.settings.chunk_seeds
        return [at.iloc[k: k + size] for k in range(0, len(at), size)]

    def _frames(self, df: pd.DataFrame, size: int | None = None, known=None
                ) -> Iterator[pd.DataFrame]:
        """``df``'s (seed, candidate) rows with their features (columns ``rid``, ``i``, then
        the features), per seed time ``size`` seeds at a time (None: all of the time's),
        each frame sorted by ``rid``, then ``i``; ``known`` (:meth:`_truth` of ``df``):
        only the rows of seeds with a true item among their candidates. The entity's and
        the items' row features are computed once per seed time (each call reads whole
        child tables): the time's seeds', and every item's (:meth:`_items_at`)."""
        task = self.task
        for s, at in self._times(df, "ranker features"):
            ent = self._rows(task.entity_table, at["e"].to_numpy(), s, "entity")
            items = self._items_at(s)
            for seeds in self._chunks(at, size or len(at)):
                pairs = self._pairs(seeds)
                if known is not None:
                    rid = pairs["rid"].to_numpy()
                    found = self._labels(df, rid, pairs["i"].to_numpy(), known)[2]
                    pairs = pairs[found[rid] > 0].reset_index(drop=True)
                yield self._with_rows(pairs, at, ent, items)

    def _items_at(self, s: np.datetime64) -> pd.DataFrame:
        """The row features of every item (:attr:`items`) at ``s``, kept for the last seed
        time asked (a split scored after the one stopping the trees early, at one time)."""
        if self._item_rows[0] != s:
            self._item_rows = (None, None)   # the last time's go first
            self._item_rows = (s, self._rows(self.task.target_table, self.items, s, "item"))
        return self._item_rows[1]

    def _pairs(self, seeds: pd.DataFrame) -> pd.DataFrame:
        """Retrieval's candidates and pair features of ``seeds`` (one seed time),
        ``chunk_seeds`` seeds per query."""
        return pd.concat([self.retrieval.pairs(c) for c in self._chunks(seeds)],
                         ignore_index=True)

    def _truth(self, df: pd.DataFrame) -> tuple[list, pd.DataFrame]:
        """Each row's true items, as a list and as a frame ``(rid, i, y=1)``."""
        truth = [list(map(int, t)) for t in df[self.task.target_col]]
        true = pd.DataFrame({"rid": np.repeat(np.arange(len(df)), [len(t) for t in truth]),
                             "i": np.fromiter((i for t in truth for i in t), dtype=np.int64),
                             "y": 1})
        return truth, true

    def _labels(self, df: pd.DataFrame, rid: np.ndarray, item: np.ndarray, known=None
                ) -> tuple[np.ndarray, list, np.ndarray]:
        """Each candidate's label, each seed's true items, and how many of them are
        candidates (``known``: :meth:`_truth` of ``df``, if known)."""
        truth, true = known or self._truth(df)
        label = (pd.DataFrame({"rid": rid, "i": item}).merge(true, how="left", on=["rid", "i"])
                 ["y"].fillna(0).to_numpy(dtype=np.float64))
        return label, truth, np.bincount(rid, weights=label, minlength=len(df))

    def _featured(self, df: pd.DataFrame, X: pd.DataFrame, known=None) -> SplitFeatures:
        """:class:`SplitFeatures` of the rows ``X`` of :meth:`_frames` (sorted)."""
        rid, item = X.pop("rid").to_numpy(), X.pop("i").to_numpy()
        label, truth, found = self._labels(df, rid, item, known)
        safe = feature_names.lightgbm_names(X.columns)
        X.columns = list(safe)
        return SplitFeatures(rid, item, label, truth, found, X, safe)

    def _with_rows(self, pairs: pd.DataFrame, seeds: pd.DataFrame, ent: pd.DataFrame,
                   items: pd.DataFrame) -> pd.DataFrame:
        """``pairs`` with the entity's row features (``ent``: a row per seed of ``seeds``)
        and the item's (``items``: a row per item of :attr:`items`)."""
        parts = [pairs.astype({c: np.float32 for c in pairs.columns if c not in ("rid", "i")})]
        pos = pd.Index(seeds["rid"].to_numpy()).get_indexer(pairs["rid"].to_numpy())
        parts.append(ent.iloc[pos].reset_index(drop=True))
        parts.append(items.iloc[np.searchsorted(self.items, pairs["i"].to_numpy())]
                     .reset_index(drop=True))
        return side_by_side(parts)

    def _rows(self, table: str, ids: np.ndarray, s: np.datetime64, prefix: str) -> pd.DataFrame:
        """The own columns and child aggregates of ``table``'s rows ``ids`` at ``s``."""
        db = self.db
        seeds = np.full(len(ids), s, dtype="datetime64[ns]")
        parts = [own_features(table, db[table], ids, seeds),
                 *children_features(db, table, ids, seeds, self.task.window, self.strict)]
        if self.deep is not None:   # depth 2: the row's parents, its children's, ...
            from rdl.features.deep import deep_features
            task = self.task
            rows_of = SimpleNamespace(name=f"{task.name}: {table}", entity_table=table,
                                      entity_col="_row", window=task.window,
                                      val_time=task.val_time, target_col=None)
            df = pd.DataFrame({"_row": ids, "timestamp": seeds})
            parts.append(deep_features(rows_of, db, df, None, self.strict, self.deep))
        out = side_by_side(parts)
        out = out.astype({c: np.float32 for c in out.columns if out[c].dtype == np.float64})
        return out.add_prefix(f"{prefix}.")


def sort_order(rid: np.ndarray, item: np.ndarray) -> np.ndarray | None:
    """The order that sorts rows by ``rid``, then ``item``; None where they are sorted."""
    if len(rid) < 2 or ((rid[1:] > rid[:-1]) | ((rid[1:] == rid[:-1]) & (item[1:] > item[:-1]))).all():
        return None
    return np.lexsort((item, rid))
