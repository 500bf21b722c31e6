"""The Kaggle H&M competition's CSV files: read (checked, cached as a database) and written.

* :func:`read_kaggle` / :func:`write_kaggle` read and write ``customers.csv``,
  ``articles.csv`` and ``transactions_train.csv`` (:data:`~rdl.data.hm.KAGGLE`);
  :func:`write_rows` writes a part of one (the format lives here only).
* :func:`kaggle_hm_db` is their rel-hm :class:`~rdl.data.Database`
  (:func:`~rdl.data.hm.hm_database`), read and checked once and then cached.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from rdl import paths
from rdl import caching
from rdl.data import checks, messages
from rdl.data.database import Database, DataError
from rdl.data.stored import cached_database
from rdl.data.hm_schema import KAGGLE, START, as_dates, check_columns, hm_database

_INT_COLUMNS = {"article_id", "product_code", "product_type_no", "graphical_appearance_no",
                "colour_group_code", "perceived_colour_value_id", "perceived_colour_master_id",
                "department_no", "index_group_no", "section_no", "garment_group_no",
                "sales_channel_id"}
_FLOAT_COLUMNS = {"FN", "Active", "age", "price"}
#: Kaggle file -> its primary key
_PKEYS = {"customers.csv": "customer_id", "articles.csv": "article_id"}
#: how many digits the Kaggle files zero-pad an id to
_ZERO_PAD = {"article_id": 10, "product_code": 7}


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
            checks.check_key(df[_PKEYS[file]], messages.where(table, _PKEYS[file], folder / file))
    return frames


def _read_csv(path: Path, table: str, columns: list[str]) -> pd.DataFrame:
    if not path.exists():
        raise DataError(f"{path}: missing (one of the Kaggle H&M files)")
    with open(path, encoding="utf-8", newline="") as f:
        header = f.readline().rstrip("\r\n")
    if not header:
        raise DataError(f"{path}: empty file (expected a header line: {','.join(columns)})")
    check_columns(pd.DataFrame(columns=header.split(",")), columns, str(path))
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
            checks.parse_dates(raw[col], messages.where(table, col, path))
        elif kind != pa.string():
            checks.parse_numbers(raw[col], messages.where(table, col, path),
                                 integer=kind == pa.int64())


def write_kaggle(frames: dict[str, pd.DataFrame], folder) -> Path:
    """Write the frames as the Kaggle CSV files into ``folder`` (created if needed).

    Exactly the Kaggle format: contract columns in order, ``article_id`` zero-padded to 10
    digits and ``product_code`` to 7, ``t_dat`` as ``YYYY-MM-DD``, missing values empty.
    Each file is written to a temporary file and renamed into place.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for key, (file, _, _) in KAGGLE.items():
        if key not in frames:
            raise DataError(f"write_kaggle: no {key!r} frame (needs {list(KAGGLE)})")
        with caching.atomic_file(folder / file) as tmp, open(tmp, "wb") as f:
            write_rows(key, frames[key], f)
    return folder


def write_rows(key: str, df: pd.DataFrame, f, header: bool = True) -> None:
    """``df``'s rows as Kaggle file ``key`` (``customers``, ``articles``, ``transactions``)
    writes them, into the open binary file ``f``, after the header line if ``header``: a
    file written in parts (:mod:`rdl.data.synthetic_hm.files`) is the bytes of one
    :func:`write_kaggle` writes whole."""
    _, table, cols = KAGGLE[key]
    check_columns(df, cols, f"table {table!r}")
    if header:
        f.write((",".join(cols) + "\n").encode("utf-8"))
    (_write_transactions if key == "transactions" else _write_small)(df[cols], f)


def _write_small(df: pd.DataFrame, f) -> None:
    df = df.assign(**{c: _zero_pad(df[c], n) for c, n in _ZERO_PAD.items() if c in df})
    f.write(df.to_csv(index=False, header=False, lineterminator="\n").encode("utf-8"))


def _zero_pad(s: pd.Series, n: int) -> pd.Series:
    return s.astype(str).str.zfill(n)


def _write_transactions(df: pd.DataFrame, f) -> None:
    """Fast path for millions of rows: format with arrow, one joined line per row."""
    step = 2_000_000
    for lo in range(0, len(df), step):
        part = df.iloc[lo:lo + step]
        t = pa.array(as_dates(part["t_dat"], messages.where("transactions", "t_dat")))
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
    root = Path(cache_dir) if cache_dir is not None else paths.cache_dir()
    path = root / f"kaggle-hm-{key}"
    return cached_database(path, lambda: hm_database(**read_kaggle(folder), start=START))
