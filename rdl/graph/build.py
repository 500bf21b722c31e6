"""Database -> PyG ``HeteroData``: a node type per table, a node per row.

Each node type holds ``tf`` (a PyTorch Frame ``TensorFrame`` of the table's non-key
columns, one stype per column), ``time`` (int64 seconds, timed tables only) and
``num_nodes``. Each foreign key ``col`` of table ``T`` referencing ``P`` adds the edge types
``(T, "f2p_<col>", P)`` and its reverse ``(P, "rev_f2p_<col>", T)``. A built graph is
cached on disk under a fingerprint of the data, the stypes and the text embedder, and read
from there mapped, frames, times and edges (:mod:`rdl.graph.store`).
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch_frame
from torch_frame.config import TextEmbedderConfig
from torch_frame.data import Dataset, TensorFrame
from torch_frame.utils import infer_series_stype
from torch_geometric.data import HeteroData

from rdl import caching
from rdl.data import checks, times
from rdl.data.database import Database, DataError, Table
from rdl.data.digest import column_digest
from rdl.graph.columns import multi_hot, with_lists
from rdl.graph.store import (GRAPH_VERSION, bare_index, indexed, read_entry, readable, record,
                             save_structure, table_file)
from rdl.progress import bar, stage

log = logging.getLogger(__name__)
#: rows of a table materialized at once (:func:`_in_chunks` past them)
CHUNK_ROWS = 2_000_000


def to_seconds(ser: pd.Series) -> torch.Tensor:
    """Datetimes as int64 seconds since the epoch, whatever unit pandas stores."""
    # A copy: under copy-on-write (pandas 3) the array a Series hands out is read-only, and
    # a tensor of it would be one that nothing may write to (torch warns).
    return torch.from_numpy(ser.astype("datetime64[s]").astype("int64").to_numpy(copy=True))


def infer_stypes(table: Table, overrides: dict[str, str] | None = None,
                 sample: int = 100_000, seed: int = 0,
                 name: str = "") -> dict[str, torch_frame.stype]:
    """PyTorch Frame's stype inference on (a sample of) the feature columns, then overrides.

    ``overrides`` maps a column to a stype name (``numerical``, ``categorical``,
    ``text_embedded``, ``timestamp``, ...) or to ``null``/``"drop"`` to leave it out.
    ``name``: the table's, for the warning of a column that looks like an identifier (once a
    process: :func:`_warn_identifier`).
    """
    df = table.df[table.feature_cols]
    if len(df) > sample:
        df = df.sample(sample, random_state=seed)
    df = with_lists(df)  # list cells: multicategorical
    stypes = {}
    for col in df.columns:
        st = infer_series_stype(df[col])
        if st is not None:
            stypes[col] = st
            if col not in (overrides or {}):
                _warn_identifier(name, col, df[col], st)
    for col, name in (overrides or {}).items():
        if name in (None, "drop"):   # (dropped: gone already from the graph's database)
            stypes.pop(col, None)
            continue
        if col not in table.df.columns:
            raise DataError(f"stype override for column {col!r}: the table has no such column "
                            f"(columns: {list(table.df.columns)})")
        try:
            stypes[col] = torch_frame.stype(name)
        except ValueError:
            raise DataError(f"stype override for column {col!r}: unknown stype {name!r}; one of "
                            f"{[s.value for s in torch_frame.stype]}") from None
    return stypes


#: (table, column) already warned of as an identifier in this process
_IDENTIFIERS: set = set()


def _warn_identifier(table: str, col: str, values: pd.Series, st) -> None:
    """Warns of a text column whose every value is distinct and one word (a UUID, an
    email, a SKU): an identifier, hashed (or embedded) as a different vector on every row,
    which a model can learn by heart and which says nothing of an unseen row."""
    if st not in (torch_frame.text_embedded, torch_frame.categorical) or \
            not checks.is_identifier(values):
        return
    v = values.dropna()
    if (table, col) not in _IDENTIFIERS:
        _IDENTIFIERS.add((table, col))
        log.warning("table %r, column %r: every value distinct and one word (e.g. %r): an "
                    "identifier? As a %s feature each row gets a vector of its own, which a "
                    "model can learn by heart; drop it (+data.stypes.%s.%s=null, or stypes: "
                    "{%s: null} in a folder's schema) unless it means something", table, col,
                    v.iloc[0], st.value, table, col, col)


def _materialize(name: str, df: pd.DataFrame, cols: dict, text_embedder, given):
    """The table's TensorFrame and column stats (``given``: stats to encode with)."""
    text_cfg = None
    if any(s == torch_frame.text_embedded for s in cols.values()):
        if text_embedder is None:
            raise DataError(f"table {name!r} has text_embedded columns but no text embedder "
                            "is configured (data.text_embedder)")
        text_cfg = TextEmbedderConfig(text_embedder=text_embedder, batch_size=None)
    df = with_lists(df[list(cols)])
    multi = [c for c, s in cols.items() if s == torch_frame.multicategorical]
    if multi:  # as multi-hot embeddings (rdl.graph.columns.multi_hot: they compile)
        df = df.assign(**{c: multi_hot(df[c]) for c in multi})
        cols = {c: torch_frame.embedding if c in multi else s for c, s in cols.items()}
    with warnings.catch_warnings():
        # Two warnings of PyTorch Frame (0.3) under pandas 3, about its own code: its
        # categorical mapper makes a tensor of the read-only array of a merge it has just
        # made (nothing else holds that array: the -1 it writes for a missing category
        # changes nothing else), and its timestamp mapper reads Series.dt.dayofweek, which
        # pandas 3 deprecates (the same numbers as day_of_week).
        warnings.filterwarnings("ignore", "The given NumPy array is not writable",
                                UserWarning, r"torch_frame\.")
        warnings.filterwarnings("ignore", r".*\bdayofweek is deprecated", Warning,
                                r"torch_frame\.")
        if given is None:
            given = column_stats(df, cols)
        if len(df) <= CHUNK_ROWS:
            dataset = Dataset(df, col_to_stype=cols, col_to_text_embedder_cfg=text_cfg)
            return dataset.materialize(col_stats=given).tensor_frame, dataset.col_stats
        return _in_chunks(df, cols, text_cfg, given)


def column_stats(df: pd.DataFrame, cols: dict) -> dict:
    """PyTorch Frame's statistics of each column (``compute_col_stats``, as
    ``Dataset.materialize`` computes them), those of a numerical column of a NumPy dtype
    computed here with the same NumPy calls: PyTorch Frame's own flattens the column
    value by value (``np.hstack`` of a 1-D array: one array per row), 36 s and +1.3 GiB
    for 3.7M prices against a fraction of a second; those of a timestamp column of a
    datetime dtype without a sort (:func:`_time_stats`); the same numbers (tested)."""
    from torch_frame.data.stats import StatType, compute_col_stats
    out = {}
    for col, stype in cols.items():
        ser = df[col]
        if stype == torch_frame.timestamp and ser.dtype.kind == "M" and ser.notna().any():
            out[col] = _time_stats(ser)
            continue
        if not (stype == torch_frame.numerical and isinstance(ser.dtype, np.dtype)
                and ser.dtype.kind in "fiu"):
            out[col] = compute_col_stats(ser, stype)
            continue
        ser = ser.mask(ser.isin([np.inf, -np.inf]), np.nan)
        values = ser.dropna().to_numpy()
        finite = values[np.isfinite(values)]
        if not len(finite):   # (all missing: PyTorch Frame's defaults)
            out[col] = compute_col_stats(ser, stype)
            continue
        out[col] = {StatType.MEAN: np.mean(finite).item(), StatType.STD: np.std(finite).item(),
                    StatType.QUANTILES: np.quantile(finite, q=[0, 0.25, 0.5, 0.75, 1]).tolist()}
    return out


def _time_stats(ser: pd.Series) -> dict:
    """PyTorch Frame's statistics of a timestamp column of a datetime dtype (tz-naive or
    not), to the last bit, without its sort of the whole column (``compute_col_stats``
    sorts it to take the oldest, newest and middle values: 20 s of the graph build for
    60M transactions). The same values, found by position: the extremes, and the middle
    one (index ``n // 2`` of the sorted non-missing values) by a partial sort."""
    from torch_frame.data.mapper import TimestampTensorMapper
    from torch_frame.data.stats import StatType
    known = ser.dropna()
    ints = known.to_numpy().view("i8") if isinstance(known.dtype, np.dtype) else \
        known.array.asi8
    middle = len(known) // 2
    at = {"oldest": int(ints.argmin()), "newest": int(ints.argmax()),
          "middle": int(np.argpartition(ints, middle)[middle])}
    value = {k: known.iloc[i] for k, i in at.items()}
    years = pd.Series([value["oldest"], value["newest"]]).dt.year.values

    def tensor(t):
        return TimestampTensorMapper.to_tensor(pd.Series(t)).squeeze(0)
    return {StatType.YEAR_RANGE: [min(years), max(years)],
            StatType.NEWEST_TIME: tensor(value["newest"]),
            StatType.OLDEST_TIME: tensor(value["oldest"]),
            StatType.MEDIAN_TIME: tensor(value["middle"])}


def _in_chunks(df: pd.DataFrame, cols: dict, text_cfg, given) -> tuple:
    """:func:`_materialize` of a large table, :data:`CHUNK_ROWS` rows at a time: PyTorch
    Frame materializes a whole frame at once, with several copies of each column on the
    way (a timestamp's seven parts: 1.2 GiB above the table for 3.7M transactions, past
    22 GiB at 60M). Its statistics are those of the whole columns (``given``:
    :func:`column_stats` or a model's); every chunk is
    then encoded with them, row by row as the whole would be, into tensors of the whole
    table's size (the same frame, tested bit for bit)."""
    stats = {c: dict(v) for c, v in given.items()}   # the first chunk adds embedding sizes
    out, nested = None, []   # plain tensors filled in place; nested ones joined after
    for start in range(0, len(df), CHUNK_ROWS):
        part = df.iloc[start:start + CHUNK_ROWS]
        tf = Dataset(part, col_to_stype=cols, col_to_text_embedder_cfg=text_cfg
                     ).materialize(col_stats=stats).tensor_frame
        if nested or not all(isinstance(x, torch.Tensor) for x in tf.feat_dict.values()):
            nested.append(tf)   # (multi-hot, text) features: joined by PyTorch Frame
            continue
        if out is None:
            out = TensorFrame({k: x.new_empty((len(df), *x.shape[1:]))
                               for k, x in tf.feat_dict.items()}, tf.col_names_dict)
        for k, x in tf.feat_dict.items():
            out.feat_dict[k][start:start + len(part)] = x
    return (torch_frame.cat(nested, dim=0) if nested else out), stats


def check_stypes(db: Database, stypes: dict | None, gone: bool = False) -> None:
    """Every stype override (``data.stypes``) names a table and column of ``db`` and a
    stype: a typo would otherwise be reported only when the graph is built, after the task
    tables and the tree prior, or (a misspelt table) never. ``gone``: ``db`` is the
    graph's, without the dropped columns (:func:`rdl.preparation.without_dropped`), whose
    names were checked on the whole database before.

    Raises:
        DataError: naming the override and what the database has instead.
    """
    unknown = sorted(set(stypes or {}) - set(db.tables))
    if unknown:
        raise DataError(f"data.stypes names table(s) {unknown} that the database does not have; "
                        f"its tables: {sorted(db.tables)}")
    for name, overrides in (stypes or {}).items():
        columns = db[name].layout()[0]
        for col, stype in (overrides or {}).items():
            if col not in columns and stype in (None, "drop") and gone:
                continue   # dropped, and so gone from the graph's database
            if col not in columns:
                raise DataError(f"data.stypes.{name}.{col}: table {name!r} has no column {col!r} "
                                f"(its columns: {columns})")
            if stype not in (None, "drop") and stype not in {s.value for s in torch_frame.stype}:
                raise DataError(f"data.stypes.{name}.{col}: unknown stype {stype!r}; one of "
                                f"{[s.value for s in torch_frame.stype]}")
            # values the stype cannot read: now, not when the graph is built (after LightGBM)
            values, where = db[name].column(col), f"data.stypes.{name}.{col}: table {name!r}"
            if stype == "timestamp" and not pd.api.types.is_datetime64_any_dtype(values):
                times.parse_times(values, f"{where}, column {col!r}", required=False)
            elif stype == "numerical":
                if not pd.api.types.is_numeric_dtype(values):
                    values = checks.parse_numbers(values, f"{where}, column {col!r}")
                checks.check_finite(values, f"{where}, column {col!r}")


def fingerprint(db: Database, *parts: Any, columns: dict[str, list[str]] | None = None) -> str:
    """A hash of every row of every table, plus ``parts`` (stypes, embedder, ...).

    ``columns``: per table, the feature columns the graph uses; the hash then covers
    exactly those, the keys and the time column (a column the graph drops changes nothing
    in it). Cells of any type hash, lists and arrays too (:func:`~rdl.graph.columns.hashable`).
    """
    h = hashlib.sha1(repr((GRAPH_VERSION, parts)).encode())
    for name, tab in sorted(db.tables.items()):
        keep = list(tab.df.columns)
        if columns is not None:
            used = {tab.pkey, tab.time_col, *tab.fkeys, *columns.get(name, ())}
            keep = [c for c in keep if c in used]
        df = tab.df[keep]
        h.update(repr((name, tab.meta(), keep, list(map(str, df.dtypes)))).encode())
        for c in keep:
            h.update(column_digest(df[c]))
    return h.hexdigest()[:16]


def make_graph(db: Database, stypes: dict[str, dict[str, str]] | None = None,
               text_embedder=None, cache_dir: str | os.PathLike | None = None,
               given_stats: dict[str, dict] | None = None, key: str | None = None,
               ) -> tuple[HeteroData, dict[str, dict]]:
    """Build the graph of ``db``; returns ``(data, col_stats)`` with per-table column stats.

    Args:
        db: the database (keys re-indexed to row positions, see :meth:`Database.reindex`).
        stypes: per-table stype overrides (see :func:`infer_stypes`).
        text_embedder: callable for ``text_embedded`` columns (see :mod:`rdl.graph.text`).
        cache_dir: where materialised TensorFrames are cached; ``None`` disables caching.
        given_stats: per table, the column statistics to encode with (those of another
            graph: a model's category indices and scales), instead of this data's own.
        key: a digest the caller has already made of everything ``db``'s rows come from
            (:func:`rdl.preparation.build_graph`: the prepared data's, which hashed every
            row). The cache's index (``keys/``) maps it to the graph's entry, so a restart
            finds the entry without hashing every row again; where the index has no such
            key, the rows are hashed as without one and the key added. The key is also
            recorded alone (:func:`rdl.graph.store.bare_index`), for
            :func:`~rdl.graph.store.cached_graph`, which needs no database.
    """
    stypes = stypes or {}
    check_stypes(db, stypes, gone=True)
    col_to_stype = {name: infer_stypes(tab, stypes.get(name), name=name) for name, tab in db}
    # A cache entry is read only when complete (its marker, written last, lists every
    # file); else the graph is built and written into a temporary folder that is renamed
    # into place at the end (rdl.caching): a killed build never leaves a half entry.
    tmp = None
    if cache_dir is not None:
        parts = [sorted((n, sorted((c, s.value) for c, s in d.items()))
                        for n, d in col_to_stype.items()), repr(text_embedder)]
        if given_stats is not None:  # (only then: the keys of existing caches stay valid)
            parts.append(repr(sorted(given_stats.items())))
        root = Path(cache_dir)
        # the key, with what costs nothing to read (each table's columns, dtypes, rows)
        shape = [(n, t.meta(), list(t.df.columns), list(map(str, t.df.dtypes)), len(t.df))
                 for n, t in sorted(db.tables.items())]
        index = None if key is None else root / "keys" / hashlib.sha1(
            repr((GRAPH_VERSION, key, parts, shape)).encode()).hexdigest()[:16]
        found = indexed(index)   # complete, or None
        entry = found or root / f"graph-{fingerprint(db, *parts, columns=col_to_stype)}"
        bare = None if key is None else bare_index(root, key, stypes, text_embedder,
                                                   given_stats is not None)
        if readable(entry):
            try:
                with stage("graph read from the cache", log):
                    out = read_entry(entry)
                record(index, entry)
                record(bare, entry)
                return out
            except OSError as e:   # unreadable since it was written: built, uncached
                caching.warn_uncached(root, e)
                return make_graph(db, stypes, text_embedder, None, given_stats)
        if caching.writable(root):
            caching.remove_stale(root)
            tmp = caching.temp_dir(root, entry.name)

    built = stage("graph build", log)
    data, col_stats = HeteroData(), {}
    try:
        for name, tab in bar(db, built.name, total=len(db.tables), unit="table"):
            df, cols = tab.df, col_to_stype[name]
            if tab.pkey is not None and not np.array_equal(df[tab.pkey].to_numpy(), np.arange(len(df))):
                raise DataError(f"table {name!r}: primary key {tab.pkey!r} is not 0..N-1; "
                                "call Database.reindex() first")
            if not cols:  # a table of keys only: one constant feature keeps the encoder simple
                df, cols = pd.DataFrame({"__const__": np.ones(len(df))}), {"__const__": torch_frame.numerical}
            tf, stats = _materialize(name, df, cols, text_embedder,
                                     None if given_stats is None else given_stats[name])
            if tmp is not None:
                with caching.without_checksums():
                    torch_frame.save(tf, stats, str(tmp / table_file(name)))
            data[name].tf = tf
            data[name].num_nodes = len(tab)
            col_stats[name] = stats
            if tab.time_col is not None:
                data[name].time = to_seconds(tab.df[tab.time_col])
        _add_edges(db, data)
        if tmp is not None:
            save_structure(tmp, data)
            caching.finish(tmp)
            caching.publish(tmp, entry)
            record(index, entry)
            record(bare, entry)
    except OSError as e:  # a full disk, say: the graph is fine, only its cache fails
        if tmp is None:
            raise
        caching.warn_uncached(root, e)
        return make_graph(db, stypes, text_embedder, None, given_stats)
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    built.end(f"{len(data.node_types)} node types, {len(data.edge_types)} edge types")
    if tmp is not None and readable(entry):
        # the entry's mapped pages instead of the tensors just built: the run that built
        # the graph holds it as every later run does, shared with its loader workers
        del data
        return read_entry(entry)
    return data, col_stats


def _add_edges(db: Database, data: HeteroData) -> None:
    """Each foreign key's edges (child row -> parent row) and their reverse."""
    for name, tab in db:
        for col, ref in tab.fkeys.items():
            fk = tab.df[col]
            valid = fk.notna().to_numpy()
            # written in place into the edge index (its rows, not copies stacked: at 60M
            # rows each copy of a key is 0.5 GB)
            edges = torch.empty((2, int(valid.sum())), dtype=torch.int64)
            edges[0] = torch.from_numpy(np.flatnonzero(valid))
            edges[1] = torch.from_numpy(fk.to_numpy(dtype="int64", na_value=0)[valid])
            if edges.size(1) and int(edges[1].max()) >= len(db[ref]):
                raise DataError(f"table {name!r}: foreign key {col!r} points past the end of "
                                f"table {ref!r}")
            data[name, f"f2p_{col}", ref].edge_index = edges
            data[ref, f"rev_f2p_{col}", name].edge_index = edges.flip(0)
