"""The H&M database (RelBench's rel-hm) from raw frames, Kaggle CSVs, RelBench files or the
synthetic generator.

* :func:`hm_database` turns the three Kaggle frames into a :class:`~rdl.data.Database` with
  tables ``customer`` (pkey ``customer_id``), ``article`` (pkey ``article_id``) and
  ``transactions`` (fkeys to both, time ``t_dat``), keeps transactions from ``start`` on
  (RelBench trims at 2019-09-07) and re-indexes the keys to ``0..N-1``.
* :func:`read_kaggle` / :func:`write_kaggle` read and write the competition's CSV files.
* :func:`read_relbench` reads RelBench's cached ``rel-hm`` ``db`` folder.
* :func:`synthetic_hm_db` generates (:mod:`rdl.data.synthetic_hm`) and caches a database.
* :func:`load_hm` dispatches on a source name (used by the Hydra configs).

``t_dat`` is ``datetime64[ns]`` in every frame and database made here.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

import rdl
from rdl import caching
from rdl.data import checks, synthetic_hm
from rdl.data.database import KEYS_SUFFIX, META_FILE, Database, DataError, Table

log = logging.getLogger(__name__)

START = "2019-09-07"
TIME_DTYPE = synthetic_hm.TIME_DTYPE

#: frame name -> (Kaggle file, table name, columns)
KAGGLE = {
    "customers": ("customers.csv", "customer", synthetic_hm.CUSTOMER_COLUMNS),
    "articles": ("articles.csv", "article", synthetic_hm.ARTICLE_COLUMNS),
    "transactions": ("transactions_train.csv", "transactions", synthetic_hm.TRANSACTION_COLUMNS),
}
_INT_COLUMNS = {"article_id", "product_code", "product_type_no", "graphical_appearance_no",
                "colour_group_code", "perceived_colour_value_id", "perceived_colour_master_id",
                "department_no", "index_group_no", "section_no", "garment_group_no",
                "sales_channel_id"}
_FLOAT_COLUMNS = {"FN", "Active", "age", "price"}
#: Kaggle file -> its primary key
_PKEYS = {"customers.csv": "customer_id", "articles.csv": "article_id"}
#: how many digits the Kaggle files zero-pad an id to
_ZERO_PAD = {"article_id": 10, "product_code": 7}
#: RelBench's rel-hm keys, used when a parquet file lacks RelBench's metadata
RELBENCH_KEYS = {
    "customer": {"pkey_col": "customer_id", "fkey_col_to_pkey_table": {}, "time_col": None},
    "article": {"pkey_col": "article_id", "fkey_col_to_pkey_table": {}, "time_col": None},
    "transactions": {"pkey_col": None, "time_col": "t_dat",
                     "fkey_col_to_pkey_table": {"customer_id": "customer", "article_id": "article"}},
}


# -- frames -> Database ---------------------------------------------------------------------
def hm_database(customers: pd.DataFrame, articles: pd.DataFrame, transactions: pd.DataFrame,
                start=START) -> Database:
    """The rel-hm :class:`Database` from the three Kaggle frames.

    Keeps transactions with ``t_dat >= start`` (``None``: all), re-indexes primary keys to
    ``0..N-1`` and maps foreign keys through them (``<NA>`` where dangling) with
    :meth:`Database.reindex`. The input frames are not modified.

    Raises:
        DataError: a frame lacks a contract column, a primary key is missing or repeated,
            ``t_dat`` does not parse as dates, or no transaction is left from ``start`` on.
    """
    frames = {"customers": customers, "articles": articles, "transactions": transactions}
    for key, df in frames.items():
        _check_columns(df, KAGGLE[key][2], f"table {KAGGLE[key][1]!r}")
    tx = transactions.copy(deep=False)
    tx["t_dat"] = _as_dates(tx["t_dat"], checks.where("transactions", "t_dat"))
    checks.check_not_empty(tx, "table 'transactions'")
    if start is not None:
        kept = tx["t_dat"] >= pd.Timestamp(start)
        if not kept.any():
            raise DataError(f"table 'transactions': no rows from {pd.Timestamp(start).date()} on "
                            f"(rel-hm starts there); its {len(tx)} rows span "
                            f"{tx['t_dat'].min().date()} to {tx['t_dat'].max().date()}")
        tx = tx[kept]
    cust, art = customers.reset_index(drop=True), articles.reset_index(drop=True)
    checks.check_key(cust["customer_id"], checks.where("customer", "customer_id"))
    checks.check_key(art["article_id"], checks.where("article", "article_id"))
    # Map the foreign keys to row positions first (arrow hashing: fast on 15M string ids);
    # Database.reindex then checks the keys and maps positions to themselves.
    tx = tx.reset_index(drop=True)
    tx = tx.assign(
        customer_id=_positions(tx["customer_id"], cust["customer_id"], "customer"),
        article_id=_positions(tx["article_id"], art["article_id"], "article"))
    for col, table in (("customer_id", "customer"), ("article_id", "article")):
        missing = int(tx[col].isna().sum())
        if missing:  # kept, as RelBench keeps them: the row just has no link to that table
            log.warning("table 'transactions': %d rows have a %s that matches no %s row "
                        "(kept without that link)", missing, col, table)
    db = Database({
        "customer": Table(cust.assign(customer_id=np.arange(len(cust))), pkey="customer_id"),
        "article": Table(art.assign(article_id=np.arange(len(art))), pkey="article_id"),
        "transactions": Table(tx, fkeys={"customer_id": "customer", "article_id": "article"},
                              time_col="t_dat"),
    }, keys={"customer": pd.Index(cust["customer_id"]), "article": pd.Index(art["article_id"])})
    return db.reindex()


def _positions(values: pd.Series, keys: pd.Series, table: str) -> pd.Series:
    """Row position in ``keys`` of every value: ``int64``, or ``float64`` with NaN where a
    value is absent (numpy dtypes keep ``Series.map`` in :meth:`Database.reindex` fast)."""
    try:
        vals = pa.array(values, from_pandas=True)
        pos = pc.index_in(vals, value_set=pa.array(keys, from_pandas=True).cast(vals.type))
        dtype = np.float64 if pos.null_count else np.int64
        return pd.Series(pos.to_numpy(zero_copy_only=False).astype(dtype), index=values.index)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise DataError(f"table {table!r}: its primary key and the transactions' foreign key "
                        f"have incompatible types ({keys.dtype} vs {values.dtype}): {e}") from None


def _check_columns(df, columns, where: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"{where}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{where}: missing column {missing[0]!r}"
                        + (f" (and {missing[1:]})" if len(missing) > 1 else ""))


def _as_dates(s: pd.Series, where: str) -> pd.Series:
    """``s`` as ``datetime64[ns]``; strings must be ``YYYY-MM-DD``."""
    if not pd.api.types.is_datetime64_any_dtype(s):
        s = checks.parse_dates(s, where)
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_localize(None)
    if s.isna().any():
        raise DataError(f"{where}: {int(s.isna().sum())} rows without a date "
                        f"(first: row {int(s.isna().to_numpy().argmax())})")
    return s.astype(TIME_DTYPE)


# -- Kaggle CSV files -----------------------------------------------------------------------
def _arrow_type(col: str) -> pa.DataType:
    if col == "t_dat":
        return pa.date32()
    if col in _INT_COLUMNS:
        return pa.int64()
    if col in _FLOAT_COLUMNS:
        return pa.float64()
    return pa.string()


def read_kaggle(folder) -> dict[str, pd.DataFrame]:
    """Read ``customers.csv``, ``articles.csv`` and ``transactions_train.csv`` from ``folder``.

    Ids are ``int64`` (``article_id`` 0108775015 -> 108775015), ``t_dat`` is ``datetime64[ns]``,
    text is pandas ``str``; only empty fields are missing values. Uses pyarrow's
    multi-threaded CSV reader with explicit types (the real 3.5 GB transactions file reads
    in about a minute).

    Raises:
        DataError: a file is missing, empty, lacks a column, has a value of the wrong type
            (named by file, column, count and a sample) or a missing or repeated id.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected the Kaggle H&M files "
                        f"{', '.join(f for f, _, _ in KAGGLE.values())})")
    frames = {}
    for key, (file, table, cols) in KAGGLE.items():
        frames[key] = df = _read_csv(folder / file, table, cols)
        if file in _PKEYS:
            checks.check_key(df[_PKEYS[file]], checks.where(table, _PKEYS[file], folder / file))
    return frames


def _read_csv(path: Path, table: str, columns: list[str]) -> pd.DataFrame:
    if not path.exists():
        raise DataError(f"{path}: missing (one of the Kaggle H&M files)")
    with open(path, encoding="utf-8", newline="") as f:
        header = f.readline().rstrip("\r\n")
    if not header:
        raise DataError(f"{path}: empty file (expected a header line: {','.join(columns)})")
    _check_columns(pd.DataFrame(columns=header.split(",")), columns, str(path))
    opts = pacsv.ConvertOptions(
        column_types={c: _arrow_type(c) for c in columns}, include_columns=columns,
        null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False)
    try:
        data = pacsv.read_csv(path, convert_options=opts)
    except pa.ArrowInvalid as e:
        _explain_bad_value(path, table, columns)
        raise DataError(f"{path}: {e}") from None  # not a value's type: the CSV's layout
    if data.num_rows == 0:
        raise DataError(f"{path}: no rows, only the header (table {table!r} is empty)")
    if "t_dat" in columns:
        i = data.schema.get_field_index("t_dat")
        data = data.set_column(i, "t_dat", data.column("t_dat").cast(pa.timestamp("ns")))
    return data.to_pandas()


def _explain_bad_value(path: Path, table: str, columns: list[str]) -> None:
    """After arrow failed to convert a value: read the file again as text and raise the
    :class:`DataError` of the first typed column with values that do not parse (arrow's
    own message names a column by its position only). Returns if every value parses."""
    opts = pacsv.ConvertOptions(
        column_types={c: pa.string() for c in columns}, include_columns=columns,
        null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False)
    try:
        raw = pacsv.read_csv(path, convert_options=opts).to_pandas()
    except pa.ArrowInvalid:
        return
    for col in columns:
        kind = _arrow_type(col)
        if kind == pa.date32():
            checks.parse_dates(raw[col], checks.where(table, col, path))
        elif kind != pa.string():
            checks.parse_numbers(raw[col], checks.where(table, col, path),
                                 integer=kind == pa.int64())


def write_kaggle(frames: dict[str, pd.DataFrame], folder) -> Path:
    """Write the frames as the Kaggle CSV files into ``folder`` (created if needed).

    Exactly the Kaggle format: contract columns in order, ``article_id`` zero-padded to 10
    digits and ``product_code`` to 7, ``t_dat`` as ``YYYY-MM-DD``, missing values empty.
    Each file is written to a temporary file and renamed into place.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for key, (file, table, cols) in KAGGLE.items():
        if key not in frames:
            raise DataError(f"write_kaggle: no {key!r} frame (needs {list(KAGGLE)})")
        df = frames[key]
        _check_columns(df, cols, f"table {table!r}")
        writer = _write_transactions if key == "transactions" else _write_small
        with caching.atomic_file(folder / file) as tmp, open(tmp, "wb") as f:
            writer(df[cols], f)
    return folder


def _write_small(df: pd.DataFrame, f) -> None:
    df = df.assign(**{c: _zero_pad(df[c], n) for c, n in _ZERO_PAD.items() if c in df})
    f.write(df.to_csv(index=False, lineterminator="\n").encode("utf-8"))


def _zero_pad(s: pd.Series, n: int) -> pd.Series:
    return s.astype(str).str.zfill(n)


def _write_transactions(df: pd.DataFrame, f) -> None:
    """Fast path for millions of rows: format with arrow, one joined line per row."""
    f.write((",".join(df.columns) + "\n").encode("utf-8"))
    step = 2_000_000
    for lo in range(0, len(df), step):
        part = df.iloc[lo:lo + step]
        t = pa.array(_as_dates(part["t_dat"], checks.where("transactions", "t_dat")))
        cols = [pc.strftime(t, format="%Y-%m-%d"),
                pa.array(part["customer_id"], pa.string()),
                pc.utf8_lpad(pc.cast(pa.array(part["article_id"], pa.int64()), pa.string()), 10, "0"),
                pc.cast(pa.array(part["price"], pa.float64()), pa.string()),
                pc.cast(pa.array(part["sales_channel_id"], pa.int64()), pa.string())]
        line = pc.binary_join_element_wise(*cols, ",")
        if line.null_count:
            raise DataError("table 'transactions': missing values cannot be written to "
                            "transactions_train.csv")
        pacsv.write_csv(pa.table({"line": line}), f, pacsv.WriteOptions(
            include_header=False, delimiter="\t", quoting_style="none"))


# -- RelBench files -------------------------------------------------------------------------
def read_relbench(folder) -> Database:
    """Read RelBench's cached rel-hm database (``customer``, ``article``, ``transactions``
    ``.parquet``; RelBench's ``~/.cache/relbench/rel-hm/db``; the folder holding ``db/`` works too).

    RelBench has already trimmed and re-indexed it. Keys come from the metadata RelBench's
    ``Table.save`` puts in each file's parquet schema (``pkey_col``,
    ``fkey_col_to_pkey_table``, ``time_col``, JSON), else from the known rel-hm keys.
    """
    folder = Path(folder)
    if not (folder / "transactions.parquet").exists() and (folder / "db").is_dir():
        folder = folder / "db"
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected RelBench's rel-hm db folder)")
    tables = {}
    for name in RELBENCH_KEYS:
        path = folder / f"{name}.parquet"
        if not path.exists():
            raise DataError(f"{path}: missing (RelBench's rel-hm db has customer.parquet, "
                            "article.parquet and transactions.parquet)")
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{path}: not a readable parquet file: {e}") from None
        meta = _relbench_meta(table.schema.metadata or {}, name, path)
        df = table.to_pandas()
        for col in [meta["pkey_col"], meta["time_col"], *meta["fkey_col_to_pkey_table"]]:
            if col is not None and col not in df.columns:
                raise DataError(f"{path}: missing column {col!r}")
        if meta["time_col"]:
            df[meta["time_col"]] = _as_dates(df[meta["time_col"]], f"{path}: column {meta['time_col']!r}")
        for col in meta["fkey_col_to_pkey_table"]:
            df[col] = df[col].astype("Int64")
        tables[name] = Table(df, meta["pkey_col"], dict(meta["fkey_col_to_pkey_table"]), meta["time_col"])
    db = Database(tables)
    for name, tab in db:
        if tab.pkey and not (tab.df[tab.pkey].to_numpy() == np.arange(len(tab))).all():
            raise DataError(f"{folder / (name + '.parquet')}: primary key {tab.pkey!r} is not "
                            "0..N-1 (not a re-indexed RelBench database?)")
    db.validate()
    return db


def _relbench_meta(raw: dict, name: str, path: Path) -> dict:
    keys = ("pkey_col", "fkey_col_to_pkey_table", "time_col")
    if not all(k.encode() in raw for k in keys):
        return RELBENCH_KEYS[name]
    try:
        return {k: json.loads(raw[k.encode()].decode()) for k in keys}
    except ValueError as e:
        raise DataError(f"{path}: bad RelBench metadata in the parquet schema: {e}") from None


# -- synthetic, cached ----------------------------------------------------------------------
def synthetic_cache_path(seed: int = 0, scale: float = 0.02, cache_dir=None) -> Path:
    """Cache folder of a synthetic database: encodes generator version, seed and scale."""
    root = Path(cache_dir) if cache_dir is not None else rdl.cache_dir()
    return root / f"synthetic-hm-v{synthetic_hm.GENERATOR_VERSION}-seed{int(seed)}-scale{float(scale):g}"


def synthetic_hm_db(seed: int = 0, scale: float = 0.02, cache_dir=None) -> Database:
    """A synthetic rel-hm database (:func:`rdl.data.synthetic_hm.generate` + :func:`hm_database`),
    saved under ``cache_dir`` on first use and loaded from there afterwards."""
    path = synthetic_cache_path(seed, scale, cache_dir)
    return cached_database(
        path, lambda: hm_database(**synthetic_hm.generate(seed=seed, scale=scale), start=START))


def cached_database(path: Path, make) -> Database:
    """The database saved in ``path`` if it is complete, readable and keeps the files' ids;
    else ``make()``'s, saved there (unless the cache cannot be written)."""
    if (path / META_FILE).exists():  # written last: the folder is complete
        try:
            db = Database.load(path)
            if db.keys:
                return db
            # written before databases kept their ids: predictions would report positions
            log.info("cached database %s has no original ids: making it again", path)
        except (DataError, OSError, ValueError) as e:  # damaged since: made again below
            log.warning("cached database %s is unreadable (%s): making it again", path, e)
    db = make()
    # Another process (DDP) may have saved it meanwhile; a read-only cache is skipped.
    if not _has_ids(path) and caching.writable(path.parent):
        try:
            db.save(path)
        except OSError as e:
            caching.warn_uncached(path.parent, e)
    return db


def _has_ids(path: Path) -> bool:
    """Whether the database folder ``path`` is complete and keeps the files' ids."""
    return (path / META_FILE).exists() and any(path.glob(f"*{KEYS_SUFFIX}"))


def load_hm(source: str = "synthetic", path=None, seed: int = 0, scale: float = 0.02,
            cache_dir=None) -> Database:
    """The rel-hm database from ``source``:

    * ``"synthetic"``: :func:`synthetic_hm_db` (``seed``, ``scale``, ``cache_dir``);
    * ``"kaggle"``: the Kaggle CSV files in ``path`` (:func:`read_kaggle` + :func:`hm_database`);
    * ``"relbench"``: RelBench's rel-hm db folder ``path`` (:func:`read_relbench`).
    """
    if source == "synthetic":
        return synthetic_hm_db(seed=seed, scale=scale, cache_dir=cache_dir)
    if source not in ("kaggle", "relbench"):
        raise DataError(f"unknown H&M source {source!r}; expected 'synthetic', 'kaggle' or 'relbench'")
    if path is None or str(path) in ("", "???"):
        raise DataError(f"H&M source {source!r} needs a path (data.db.path=/folder/with/the/files)")
    path = Path(path).expanduser()
    if not path.exists():
        raise DataError(f"{path}: no such folder (H&M source {source!r})")
    if source == "kaggle":
        return kaggle_hm_db(path, cache_dir)
    return read_relbench(path)


#: bump when the Kaggle reader's output changes: cached databases of older readers are not used
KAGGLE_READER_VERSION = 1


def kaggle_hm_db(folder, cache_dir=None) -> Database:
    """The rel-hm :class:`Database` of the Kaggle files in ``folder``, read and checked once:
    saved in ``cache_dir`` (``None``: rdl's cache; ``False``: none) under a key of the files'
    paths, sizes and modification times, and loaded from there while they are unchanged
    (parsing the real 3.5 GB transactions file takes about a minute, loading it seconds)."""
    folder = Path(folder)
    if cache_dir is False:
        return hm_database(**read_kaggle(folder), start=START)
    stamp = [KAGGLE_READER_VERSION, str(START)]
    for file, _, _ in KAGGLE.values():
        f = (folder / file).resolve()
        st = f.stat() if f.exists() else None
        stamp.append((str(f), st and st.st_size, st and st.st_mtime_ns))
    key = hashlib.sha1(repr(stamp).encode()).hexdigest()[:16]
    root = Path(cache_dir) if cache_dir is not None else rdl.cache_dir()
    path = root / f"kaggle-hm-{key}"
    return cached_database(path, lambda: hm_database(**read_kaggle(folder), start=START))
