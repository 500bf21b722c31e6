"""pyarrow's handler of a CSV file's rows with another number of fields than its header
(:class:`BadRows`), and the hook that tells a row it could not decode (:func:`undecodable`),
for :func:`rdl.data.files.read_csv`'s messages."""
from __future__ import annotations

import sys
from contextlib import contextmanager

from rdl.data import reports


class BadRows:
    """pyarrow's handler of rows with the wrong number of fields: skips them, counts them,
    keeps the first few and whether each just ends with an extra delimiter."""

    def __init__(self, delimiter: str):
        self.delimiter, self.count, self.first, self.trailing = delimiter, 0, [], True
        self.undecodable = False   # a row pyarrow could not give it: not UTF-8 (undecodable)
        self.footers = 0
        self.texts, self.single = [], True   # (a report's footer: lines of one field each)

    def __call__(self, row) -> str:
        if not row.text.replace("\x1a", "").strip():
            return "skip"   # a line of blanks (or DOS's end-of-file mark, ^Z): no row
        if reports.FOOTER.fullmatch(row.text.strip()):
            self.footers += 1   # a console's count of the rows: no row (reports)
            return "skip"
        self.count += 1
        if len(self.first) < 3:
            self.first.append(row)
        if len(self.texts) <= reports.FOOTER_LINES:
            self.texts.append(row.text)
        self.single &= row.actual_columns == 1
        self.trailing &= (row.actual_columns == row.expected_columns + 1
                          and row.text.endswith(self.delimiter))
        return "skip"


@contextmanager
def undecodable(bad: BadRows):
    """Sets ``bad.undecodable`` where a row with the wrong number of fields holds bytes that
    are not UTF-8: pyarrow decodes such a row as UTF-8 before its handler sees it, and the
    error, raised inside pyarrow, would be printed as "Exception ignored" and the read fail
    as a parse error, when the file is of another encoding (read_csv reads it again in it)."""
    def hook(u, old=sys.unraisablehook):
        if u.object is bad and isinstance(u.exc_value, UnicodeDecodeError):
            bad.undecodable = True
        else:
            old(u)
    old, sys.unraisablehook = sys.unraisablehook, hook
    try:
        yield
    finally:
        sys.unraisablehook = old
