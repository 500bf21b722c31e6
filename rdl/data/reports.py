"""CSV files written as reports (an accounting package's "Sales by Customer Detail", a
bank's statement, an analytics export): lines above the header (the report's title, its
period, the account, ``#`` notes) and rows of totals below the data. Left out, as the
sheets of a workbook are read (:mod:`rdl.data.sheets`, whose rules these are):

* lines above the header are left out where each has fewer fields than most rows (a
  title, a blank line), none filled (``,,,``), starts with ``#``, or is a label and its
  value (``Account:,12345,,``, a bank statement's): the header is the first row of as many
  fields as most, more than half of them filled;
* trailing rows whose first value is ``Total``, ``Grand total``, ``Sum``, or begins with
  ``Total`` (``Total orders``), and a field empty, are totals, not rows;
* a value written ``="00123"`` (a formula, so that Excel keeps a code's leading zeros) is
  its text, ``00123``;
* what a database's console prints around a query's rows, as ``sqlcmd -s,``, ``psql -A``,
  SQL*Plus and ``mysql`` write them to a file: a rule of dashes under the header
  (``--------,-----``) and a count of rows after them (``(200 rows affected)``,
  ``(200 rows)``, ``200 rows selected.``, ``200 rows in set (0.01 sec)``);
* a report's footer: the file's last lines, after a blank line, each one field (a CRM's
  report export ends with its copyright, "Confidential Information - Do Not Distribute",
  who generated it and when, the company's name), at most :data:`FOOTER_LINES` of them.
"""
from __future__ import annotations

import csv
import io
import logging
import re
from collections import Counter

import pandas as pd

from rdl.data.sheets import is_total

log = logging.getLogger("rdl.data.files")

_HEAD = 20   # the rows the header is looked for in
#: a console's count of the rows above it: sqlcmd, psql, SQL*Plus, mysql
FOOTER = re.compile(r"(?i)\(\d[\d,]* rows?( affected)?\)|\(\d[\d,]* row\(s\) affected\)|"
                    r"(\d[\d,]*|no) rows? selected\.?|\d[\d,]* rows? in set( \(.*\))?|"
                    r"completion time: .*")


#: the most lines a report's footer holds
FOOTER_LINES = 10


def is_footer(path, encoding: str, rows: list[str]) -> bool:
    """Whether ``rows``, the text of a CSV file's rows of one field where its header has
    more, are a report's footer: its last lines, after a blank line (see above)."""
    if not rows or len(rows) > FOOTER_LINES:
        return False
    lines = _tail(path, encoding).splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) <= len(rows) or lines[-len(rows) - 1].strip():
        return False
    return [x.strip() for x in lines[-len(rows):]] == [r.strip() for r in rows]


def _tail(path, encoding: str, size: int = 1 << 16) -> str:
    """The last ``size`` bytes of a file's text (decompressed), decoded."""
    from rdl.data.sources import input_stream
    if str(path).lower().endswith((".csv", ".tsv", ".txt")):
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - size))
            data = f.read()
    else:
        with input_stream(path) as f:
            data = f.read()[-size:]
    return data.decode(encoding, errors="replace")


def preamble(text: str, delimiters=(",", ";", "\t", "|")) -> int:
    """The number of lines above the header of the CSV text ``text`` (its first lines):
    lines of fewer fields than most rows (a title, a blank line) or starting with ``#``,
    above the first row with more than half as many values as the widest of most rows."""
    best, rows = (), []
    for d in delimiters:
        reader = csv.reader(io.StringIO(text), delimiter=d)
        read = []
        try:
            for row in reader:
                filled = sum(1 for v in row if v.strip())
                read.append((len(row), filled, reader.line_num, bool(row) and (
                    row[0].lstrip().startswith("#")   # a note, or a label and its value
                    or (filled <= 2 and row[0].rstrip().endswith(":")))))
                if len(read) == _HEAD:
                    break
        except csv.Error:
            continue
        # the delimiter that splits most rows alike into two fields or more (a ;-file's
        # decimal commas split its rows by , too, unevenly: 1;1,5 and 2;3); then the one
        # of the most values
        common, alike = Counter(r[0] for r in read).most_common(1)[0] if read else (0, 0)
        score = (common >= 2, alike / max(len(read), 1), max((r[1] for r in read), default=0))
        if read and score > best:
            best, rows = score, read
    if not best or best[2] < 2:
        return 0
    mode = Counter(r[0] for r in rows if r[0] > 1).most_common(1)[0][0]
    best = max(filled for n, filled, _, _ in rows if n == mode)
    start = next((i for i, (n, filled, _, _) in enumerate(rows) if filled > best / 2), 0)
    if start == 0 or not all(n < mode or note or not filled
                             for n, filled, _, note in rows[:start]):
        return 0
    return rows[start - 1][2]   # the lines the rows above the header span


def steadier(text: str, written: list[str], delimiters=(";", "\t", "|", "\x01")) -> str | None:
    """Another delimiter than the comma for CSV text ``text`` (from its header on) whose
    first row, split by commas, is ``written``: one that row holds too and that splits
    every line of ``text`` into as many fields, where commas split them unevenly (a file
    without a header, TPC-H's dbgen's ``1|Customer#1|IVhz ot,c,E|15|...|``: an address
    with commas in the first row; TPC-DS's one store at a small scale, one line), or into
    more fields where commas split them evenly too (the same commas in each line's
    comment); else None."""
    def widths(d: str) -> set[int]:
        try:
            rows = list(csv.reader(io.StringIO(text), delimiter=d))[:_HEAD]
        except csv.Error:
            return set()
        whole = text.endswith("\n")   # (else the head's last line may be cut short)
        return {len(r) for r in (rows if whole else rows[:-1]) if r}
    found = [d for d in delimiters if any(d in w for w in written)]
    if not found:
        return None   # (nearly every CSV file: its head is not parsed again)
    commas = widths(",")
    least = max(commas) if len(commas) == 1 else 1   # (both even: the one of more fields)
    steady = {d: w.pop() for d in found if len(w := widths(d)) == 1 and max(w) > least}
    return max(steady, key=steady.get) if steady else None


def without_totals(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """``df`` (text) without its trailing rows of totals."""
    n = len(df)
    while n > 0:
        row = df.iloc[n - 1]
        if row.notna().all() or not is_total(list(row)):   # (a field empty, as totals')
            break
        n -= 1
    if n < len(df):
        log.info("%s: %d row(s) of totals after the data left out", where, len(df) - n)
    return df.iloc[:n]


def without_rule(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """``df`` (text) without a first row of dashes in every column (``--------,-----``): the
    rule a console (``sqlcmd``) draws under the header."""
    if len(df) and df.shape[1] and df.iloc[0].fillna("").str.fullmatch(r"\s*-{2,}\s*").all():
        log.info("%s: the rule of dashes under the header left out", where)
        return df.iloc[1:].reset_index(drop=True)
    return df


def excel_text(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """``df`` (text) with values written ``="00123"`` as their text: how exports meant for
    Excel keep a code's leading zeros (Excel would read ``00123`` as the number 123)."""
    for col in df.columns:
        s = df[col]
        at = s.first_valid_index()   # (not a pass over the column: most have no such value)
        if at is not None and isinstance(s[at], str) and s[at].startswith('="'):
            inner = s.str.extract(r'^="(.*)"$', expand=False)
            df[col] = inner.where(inner.notna(), s)
            log.info("%s, column %r: values written =\"...\" (text for Excel) read as the "
                     "text inside", where, col)
    return df
