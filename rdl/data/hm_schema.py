"""The H&M database's schema (RelBench's rel-hm), shared by every source of it (the
synthetic generator, the Kaggle CSV files): :func:`hm_database` turns the three Kaggle frames
into a :class:`~rdl.data.Database` with tables ``customer`` (pkey ``customer_id``),
``article`` (pkey ``article_id``) and ``transactions`` (fkeys to both, time ``t_dat``), keeps
transactions from ``start`` on (RelBench trims at 2019-09-07) and re-indexes the keys to
``0..N-1``. ``t_dat`` is ``datetime64[ns]`` in every frame and database made here.

Its own module, below both :mod:`rdl.data.hm` (the loader the configs name) and
:mod:`rdl.data.kaggle` (a reader of the files), so that neither imports the other back.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rdl.data import checks, messages, synthetic_hm
from rdl.data.database import Database, DataError, Table

log = logging.getLogger(__name__)

START = "2019-09-07"
TIME_DTYPE = synthetic_hm.TIME_DTYPE

#: frame name -> (Kaggle file, table name, columns)
KAGGLE = {
    "customers": ("customers.csv", "customer", synthetic_hm.CUSTOMER_COLUMNS),
    "articles": ("articles.csv", "article", synthetic_hm.ARTICLE_COLUMNS),
    "transactions": ("transactions_train.csv", "transactions", synthetic_hm.TRANSACTION_COLUMNS),
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
        check_columns(df, KAGGLE[key][2], f"table {KAGGLE[key][1]!r}")
    tx = transactions.copy(deep=False)
    tx["t_dat"] = as_dates(tx["t_dat"], messages.where("transactions", "t_dat"))
    checks.check_not_empty(tx, "table 'transactions'")
    if start is not None:
        kept = tx["t_dat"] >= pd.Timestamp(start)
        if not kept.any():
            raise DataError(f"table 'transactions': no rows from {pd.Timestamp(start).date()} on "
                            f"(rel-hm starts there); its {len(tx)} rows span "
                            f"{tx['t_dat'].min().date()} to {tx['t_dat'].max().date()}")
        tx = tx[kept]
    cust, art = customers.reset_index(drop=True), articles.reset_index(drop=True)
    checks.check_key(cust["customer_id"], messages.where("customer", "customer_id"))
    checks.check_key(art["article_id"], messages.where("article", "article_id"))
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


def check_columns(df, columns, where: str) -> None:
    """Raises :class:`DataError` unless ``df`` is a frame with all of ``columns``."""
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"{where}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{where}: missing column {missing[0]!r}"
                        + (f" (and {missing[1:]})" if len(missing) > 1 else ""))


def as_dates(s: pd.Series, where: str) -> pd.Series:
    """``s`` as ``datetime64[ns]``; strings must be ``YYYY-MM-DD``."""
    if not pd.api.types.is_datetime64_any_dtype(s):
        s = checks.parse_dates(s, where)
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_localize(None)
    if s.isna().any():
        raise DataError(f"{where}: {int(s.isna().sum())} rows without a date "
                        f"(first: row {int(s.isna().to_numpy().argmax())})")
    return s.astype(TIME_DTYPE)


