"""Excel workbooks (``.xlsx``, ``.xlsm``; Excel 97-2003's ``.xls`` by xlrd) as CSV files
the folder loader reads.

A workbook of several sheets (customers, orders, products: how small businesses keep a
database) is read as a database file, a table per sheet (:mod:`rdl.data.dbfile`:
``data.db.path=shop.xlsx``); a workbook in a folder is the table of its name, from its one
sheet. Each sheet is written once as CSV (``openpyxl`` reads it, the values Excel stored,
a formula's last computed one), then read as any export's CSV is, so that text that
holds times, numbers as spreadsheets format them, keys with leading zeros and every check
behave alike. As spreadsheets are written:

* a title above the header (``Sales report Q1``, a blank row) is left out: the header is
  the first row holding more than half as many values as the widest of the first rows;
* empty rows and columns after the data (formatting extends a sheet's range) are left out,
  as are rows of totals below it (a first value ``Total``, ``Grand total``, ``Sum``, or
  one that begins with ``Total`` in a row with a field empty: ``Total orders``);
* a date cell is its time (``2024-01-31 00:00:00``); a whole number its digits;
* Excel's error values (``#DIV/0!``, ``#VALUE!``, ``#REF!``: a formula that failed) are
  missing, said in the log.
"""
from __future__ import annotations

import csv
import datetime as dt
import logging
import re
import zipfile
from pathlib import Path

from rdl.data import sources
from rdl.data.database import DataError

log = logging.getLogger(__name__)

SUFFIXES = (".xlsx", ".xlsm", ".xls")
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"   # Excel 97-2003's compound file
#: the values of cells whose formula failed
ERRORS = {"#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#NULL!", "#N/A", "#GETTING_DATA",
          "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!", "#UNKNOWN!", "#ERROR!"}
#: the rows read to find the header
_HEAD = 20
#: the first value of a row of totals below a sheet's data
TOTAL = re.compile(r"(?i)(grand |sub-?)?totals?:?|sum|gesamt(summe)?|summe|total général")
#: a first value that begins as totals do (Total orders, Total for 2015): totals where a
#: field of the row is empty (a last row "Total Wine & More" with every field filled is data)
TOTAL_LEAD = re.compile(r"(?i)(grand |sub-?)?totals?\b.*|gesamt\b.*")


def is_total(values: list) -> bool:
    """Whether a row's values (text; missing as None or empty) are a row of totals: its
    first filled value :data:`TOTAL`, or :data:`TOTAL_LEAD` with a field empty."""
    filled = [str(v).strip() for v in values if isinstance(v, str) and v.strip()]
    return bool(filled) and (TOTAL.fullmatch(filled[0]) is not None or (
        len(filled) < len(values) and TOTAL_LEAD.fullmatch(filled[0]) is not None))


def is_workbook(path) -> bool:
    """Whether ``path`` is an Excel workbook: a zip holding ``xl/workbook.xml``, or Excel
    97-2003's ``.xls`` (a compound file, by its first bytes)."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES or not path.is_file():
        return False
    if path.suffix.lower() == ".xls":
        with open(path, "rb") as f:
            return f.read(8) == _OLE
    try:
        with zipfile.ZipFile(path) as z:
            return "xl/workbook.xml" in z.namelist()
    except zipfile.BadZipFile:
        return False


def read_as_workbook(path) -> bool:
    """Whether a table's file is read as a workbook: ``.xlsx``, ``.xlsm`` (a damaged one
    too: the error says so), or an ``.xls`` that is not text (ERP systems' "Excel" exports
    are often tab-separated text named ``.xls``: read as CSV)."""
    suffix = Path(path).suffix.lower()
    return suffix in (".xlsx", ".xlsm") or (suffix == ".xls"
                                            and not sources.is_csv(Path(path)))


def _rows(path: Path, sheet: str) -> list[list]:
    """A sheet's rows of values (dates as datetimes, error cells as their text). Not
    ``pandas.read_excel``: it reads an error cell as missing without a word, which the
    warning of :func:`write_sheet` counts."""
    if path.suffix.lower() != ".xls":
        wb = _open(path)
        try:
            return [list(r) for r in wb[sheet].iter_rows(values_only=True)]
        finally:
            wb.close()
    import xlrd
    book = _open(path)
    try:
        sh, out = book.sheet_by_name(sheet), []
        for r in range(sh.nrows):
            row = []
            for c in sh.row(r):
                if c.ctype == xlrd.XL_CELL_DATE:
                    row.append(xlrd.xldate_as_datetime(c.value, book.datemode))
                elif c.ctype == xlrd.XL_CELL_ERROR:
                    row.append(xlrd.error_text_from_code.get(c.value, "#N/A"))
                elif c.ctype == xlrd.XL_CELL_BOOLEAN:
                    row.append(bool(c.value))
                else:
                    row.append(c.value if c.ctype not in (xlrd.XL_CELL_EMPTY,
                                                          xlrd.XL_CELL_BLANK) else None)
            out.append(row)
        return out
    finally:
        book.release_resources()


def _open(path: Path):
    try:
        import openpyxl
    except ImportError:   # pragma: no cover (a dependency of rdl)
        raise DataError(f"{path}: reading Excel workbooks needs openpyxl: pip install openpyxl"
                        ) from None
    try:
        if path.suffix.lower() == ".xls":
            import xlrd
            return xlrd.open_workbook(path, on_demand=True)
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:   # openpyxl and xlrd raise many kinds on damaged files
        raise DataError(f"{path}: not a readable Excel workbook: {e}") from None


def sheet_names(path) -> list[str]:
    """The workbook's worksheets (chart sheets aside)."""
    path = Path(path)
    if not is_workbook(path):
        with open(path, "rb") as f:
            html = f.read(512).lstrip().lower().startswith((b"<", b"\xef\xbb\xbf<"))
        raise DataError(f"{path}: not a readable Excel workbook" + (
            ": an HTML table named as one (what ERP systems export as Excel): open it in a "
            "spreadsheet and save it as .xlsx or CSV" if html else " (no workbook in it)"))
    wb = _open(path)
    try:
        return list(wb.sheet_names() if path.suffix.lower() == ".xls" else wb.sheetnames)
    finally:
        wb.release_resources() if path.suffix.lower() == ".xls" else wb.close()


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return str(v)


def write_sheet(path, sheet: str, target, where: str | None = None) -> Path:
    """Sheet ``sheet`` of workbook ``path`` as the CSV file ``target`` (see the module)."""
    path, target = Path(path), Path(target)
    where = where or f"{path} (sheet {sheet!r})"
    rows = [[_text(v) for v in row] for row in _rows(path, sheet)]
    width = lambda r: sum(1 for v in r if v.strip())   # noqa: E731
    widest = max((width(r) for r in rows[:_HEAD]), default=0)
    if widest == 0:
        raise DataError(f"{where}: the sheet is empty")
    start = next(i for i, r in enumerate(rows) if width(r) > widest / 2)
    if start:
        log.info("%s: %d row(s) above the header left out (a title?)", where, start)
    header = rows[start]
    cols = [j for j in range(len(header)) if header[j].strip() or any(
        j < len(r) and r[j].strip() for r in rows[start + 1:])]
    body = [r for r in rows[start + 1:] if width(r)]
    totals = 0
    while body and is_total(body[-1]):
        body, totals = body[:-1], totals + 1
    if totals:
        log.info("%s: %d row(s) of totals after the data left out", where, totals)
    errors = {}
    with open(target, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([header[j] for j in cols])
        for r in body:
            out = []
            for j in cols:
                v = r[j] if j < len(r) else ""
                if v in ERRORS:
                    errors[header[j]] = errors.get(header[j], 0) + 1
                    v = ""
                out.append(v)
            w.writerow(out)
    for col, n in errors.items():
        log.warning("%s, column %r: %d of %d values are Excel's error values (#DIV/0!, "
                    "#VALUE!, ...: a formula that failed), read as missing", where, col, n,
                    len(body))
    return target


def export(path, folder) -> Path:
    """Each worksheet of workbook ``path`` as ``<folder>/<sheet>.csv``."""
    path, folder = Path(path), Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for sheet in sheet_names(path):
        if "/" in sheet or "\\" in sheet or sheet.startswith((".", "_")):
            raise DataError(f"{path}: sheet {sheet!r}: a name rdl cannot export as a file "
                            "(rename the sheet)")
        write_sheet(path, sheet, folder / f"{sheet}.csv")
    return folder


def one_sheet(path: Path, where: str) -> str:
    """The one sheet of a workbook that is one table in a folder.

    Raises:
        DataError: it holds several (a workbook of several tables is a database file).
    """
    names = sheet_names(path)
    if len(names) != 1:
        raise DataError(f"{where}: a workbook of {len(names)} sheets ({names[:6]}); in a "
                        "folder a workbook is one table, from one sheet. A workbook of a "
                        "table per sheet is a database: data.db.path=" + str(path))
    return names[0]
