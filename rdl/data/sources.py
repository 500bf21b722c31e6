"""A table's files: which they are (:func:`parts`: a file, a folder of parts, a wildcard's;
CSV or parquet by their names, or by what they hold where a name says nothing), and what
pyarrow reads for each: its name (pyarrow decompresses ``.gz``, ``.bz2``, ``.zst`` and
``.lz4`` by the suffix), or, for a zip archive (``.zip``, as R and spreadsheets export a
table), the bytes of its one file."""
from __future__ import annotations

import difflib
import re
import zipfile
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from rdl.data import lakes, pgdump
from rdl.data.database import DataError
from rdl.data.jsonl import is_json
from rdl.data.typed import is_typed
from rdl.data.xmlrows import is_xml

COMPRESSED = (".gz", ".bz2", ".zst", ".lz4", ".zip")
TEXT = (".csv", ".tsv", ".txt", ".psv", ".tbl")   # .tbl: TPC-H's dbgen, fields ending in |
#: names that say data but not which: read by what they hold (TPC-DS' dsdgen writes ``.dat``)
SNIFFED = (".dat",)


def member(path: Path, where: str) -> str:
    """The one file of zip archive ``path`` (folders and macOS' ``__MACOSX/`` aside).

    Raises:
        DataError: not a zip archive, or it holds no file or several.
    """
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if not n.endswith("/")
                     and not n.startswith("__MACOSX/") and not Path(n).name.startswith(".")]
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"{where}: not a readable zip archive: {e}") from None
    if len(names) != 1:
        raise DataError(f"{where}: holds {len(names)} files ({', '.join(map(repr, names[:5]))})"
                        "; a table's zip archive must hold one CSV file (zip each table on "
                        "its own, or unzip it and name the CSV file)")
    return names[0]


@lru_cache(maxsize=1)
def _unzipped(path: Path, mtime: float) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(member(path, str(path)))


def source(path: Path):
    """What pyarrow reads for ``path``: its name (it decompresses by the suffix), or the
    bytes of a zip archive's one file."""
    if path.suffix.lower() != ".zip":
        return str(path)
    return pa.BufferReader(_unzipped(path, path.stat().st_mtime))


def input_stream(path: Path):
    """``path``'s bytes as a stream (decompressed)."""
    src = source(path)
    return pa.input_stream(src, compression="detect" if isinstance(src, str) else None)


def is_csv(path: Path) -> bool:
    """``x.csv`` (``.tsv``, ``.txt``, ``.psv``, ``.tbl``, any case), or compressed:
    ``x.csv.gz`` (pyarrow reads it by its name); a file without a data suffix, or named
    ``.dat``, that holds text (:func:`sniff`)."""
    s = [x.lower() for x in path.suffixes]
    if s and s[-1] in COMPRESSED and s[-1] != ".zip":
        dat = len(s) > 1 and s[-2] in SNIFFED
    else:
        dat = bool(s) and s[-1] in SNIFFED
    if unnamed(path) or dat or (s and s[-1] == ".xls"):   # (text named .xls: an ERP's "Excel")
        return sniff(path) == "csv"
    return bool(s) and (s[-1] in TEXT or s[-1] == ".zip"
                        or (len(s) > 1 and s[-2] in TEXT and s[-1] in COMPRESSED))


#: names of files beside a folder's tables that hold none (a README.txt is no CSV file;
#: nor is the Lahman databank's readme2014.txt)
NOTES = re.compile(r"(?i)^(readme|licen[cs]e|changelog|notice|copying)(?![a-z])")


def is_notes(path: Path) -> bool:
    """Whether ``path`` is named as notes beside the data (a readme, a license; as text,
    not ``notice.csv``)."""
    return bool(NOTES.match(path.name)) and path.suffix.lower() in (
        "", ".txt", ".md", ".rst", ".html", ".pdf")


def unnamed(path: Path) -> bool:
    """A part named without a data suffix (Redshift's ``orders_0000_part_00``, maybe
    ``.gz``; Hive's ``000000_0``): what it holds says what it is."""
    s = [x.lower() for x in path.suffixes]
    return all(x in COMPRESSED and x != ".zip" or not re.fullmatch(r"\.[a-z]\w*", x)
               for x in s)


def sniff(path: Path) -> str | None:
    """What a file without a data suffix holds: ``"parquet"`` (its magic bytes), ``"csv"``
    (text with a line break, not JSON), else None."""
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as f:
            if f.read(4) == b"PAR1":
                return "parquet"
        with input_stream(path) as f:
            head = f.read(1 << 16)
    except (OSError, pa.ArrowInvalid):
        return None
    if b"\0" in head or b"\n" not in head or head.lstrip()[:1] in (b"{", b"[", b"<"):
        return None
    return "csv"



def is_parquet(path: Path) -> bool:
    """A parquet file, or a JSON one (:mod:`rdl.data.jsonl`), or another that
    :mod:`rdl.data.parquet` reads (:mod:`rdl.data.typed`, XML: :mod:`rdl.data.xmlrows`)."""
    if unnamed(path):
        return sniff(path) == "parquet"
    return path.suffix.lower() in (".parquet", ".pq") or is_json(path) or is_typed(path) \
        or is_xml(path)


def parts(path: Path) -> list[Path]:
    """The data files of a table: ``path`` itself, or, for a folder (Spark, Snowflake,
    BigQuery and Redshift export a table as parts: ``part-00000.parquet``, ...,
    ``date=2024-01-01/`` sub-folders too) or a name with a wildcard (``orders_*.csv.gz``),
    its CSV, parquet and JSON files in name order, hidden files and markers (``_SUCCESS``,
    ``.part-00000.crc``) left out; a Delta Lake table's, those its log holds now
    (:mod:`rdl.data.lakes`). Empty if there is none."""
    if any(c in path.name for c in "*?["):
        found = sorted(path.parent.glob(path.name))
    elif path.is_dir() and lakes.kind(path):   # (its log says which files hold it now)
        return lakes.files(path)
    elif path.is_dir():
        found = sorted(p for p in path.rglob("*") if not any(
            s.startswith((".", "_")) for s in p.relative_to(path).parts))
    else:
        return [path] if path.is_file() else []
    return [p for p in found if p.is_file() and (is_csv(p) or is_parquet(p)
                                                  or p.suffix.lower() in (".xlsx", ".xlsm", ".xls"))]


def archives(folder: Path) -> str:
    """What to say of a folder's archives of several files (a Stack Exchange site's dump is
    one ``.7z``), which rdl does not open: ``""`` where it holds none."""
    found = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(
        (".7z", ".tar", ".tar.gz", ".tgz", ".rar", ".tar.bz2"))   # (a .zip is read as a table)
        and not pgdump.is_archive(p))   # (pg_dump's tar: a database file)
    return f" (archives: {', '.join(found[:5])}: extract them into it)" if found else ""


def csv_parts(found: list[Path], where: str) -> bool:
    """Whether a table's parts are CSV files (else parquet ones).

    Raises:
        DataError: some are CSV and some parquet.
    """
    csv = [is_csv(p) for p in found]
    other = [p for p in found if not (is_csv(p) or is_parquet(p))]
    if other:
        sheet = other[0].suffix.lower() in (".xlsx", ".xls", ".xlsm", ".ods")
        raise DataError(f"{where}: {other[0].name} is neither a CSV, a parquet nor a JSON file "
                        "(by its name: .csv, .tsv, .txt, .psv, .tbl, maybe compressed, .parquet, "
                        "or .jsonl, .json, .xml); " + (
                            "a spreadsheet: save it as .xlsx, or each sheet as CSV" if sheet
                            else "export the table as one of those"))
    kinds = {}
    for c, p in zip(csv, found):
        kinds.setdefault("CSV" if c else "JSON" if is_json(p) else "parquet", p.name)
    if len(kinds) > 1:
        raise DataError(f"{where}: holds {' and '.join(sorted(kinds))} files "
                        f"({', '.join(kinds[k] for k in sorted(kinds))}); keep one kind per table")
    return all(csv)


def near(file: Path) -> str:
    """`` (did you mean 'x.csv'?)``: a data file beside ``file`` named nearly like it, for
    the message that says ``file`` is missing; else ``""``."""
    if not file.parent.is_dir():
        return ""
    stems = {p.name.split(".")[0]: p.name for p in file.parent.iterdir()
             if p != file and (is_csv(p) or is_parquet(p) or p.is_dir())}
    found = difflib.get_close_matches(file.name.split(".")[0], stems, n=1, cutoff=0.75)
    return f" (did you mean {stems[found[0]]!r}?)" if found else ""
