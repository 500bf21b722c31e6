"""One table of a folder's schema (:class:`TableSchema`): the object the folder loader
(:mod:`rdl.data.folder`) reads a ``schema.yaml`` into and the foreign-key checks
(:mod:`rdl.data.keys`) read, in a module of its own below both."""
from __future__ import annotations

from pathlib import Path


class TableSchema:
    """One table of a schema: where its rows are and what its columns mean."""

    def __init__(self, name: str, file: Path, pkey: str | None, fkeys: dict[str, str],
                 time: str | None, stypes: dict[str, str | None]):
        self.name, self.file, self.pkey, self.fkeys = name, file, pkey, fkeys
        self.time, self.stypes = time, stypes
        self.parts: list[Path] = []   # its data files (sources.parts)
        self.missing: list[str] = []  # words the schema says mean missing
        self.period = None            # time written as period numbers (periods.PeriodTime)
        self.implied = False          # a row for every key its foreign keys hold (implied)
        self.key_only = False         # implied, without a file: its rows are its keys
        self.attributes: list[str] = []   # key only: columns of the rows naming it (implied)
        self.first: list[str] = []        # those of them that take each key's first value
        self.composite: dict[str, list[str]] = {}   # a key of several columns: its columns
        self.dayfirst: bool | None = None   # the schema's order of dates that read both ways
        self.untimed = "fail"   # the schema's rows without a time: fail, or drop (checks)
        self.via: str | None = None   # the foreign key whose row's time it takes (inherit)
        self.seen_in: list[str] | None = None   # the tables whose first reference times it
        self.formats: dict[str, str] = {}   # column: the strftime form its times are in
        self.events: dict[str, str] = {}    # column of later events' times: its table (events)
        self.columns: list[str] | None = None   # a CSV file's names where it has no header
        self.clocks: dict[str, str] = {}    # column of dates: its column of times of day
        self.read_clocks: list[str] = []    # columns read as times of day (clocks)
        self.assemble: dict[str, list[str]] = {}   # column made of its parts' (assembled)
        self.unnest: tuple[str, str] | None = None   # (table, column): its rows' lists (nested)
        self.unnest_key: str | None = None   # its column of their rows' keys (nested)
        self.unnest_objects = False          # its lists' elements are objects (nested)

    @property
    def base(self) -> Path | None:
        """The folder of a table written as parts (hive partitions below it), else None."""
        return self.file if self.file.is_dir() else None

    def where(self, col: str | None = None) -> str:
        """``file (table 't', column 'c')``: how errors name a place (a table without a
        file: ``table 't' (implied: true, no file)``)."""
        if self.key_only:
            return f"table {self.name!r} (implied: true, no file" + (
                f"; its attribute {col!r})" if col else ")")
        return f"{self.file} (table {self.name!r}" + (f", column {col!r})" if col else ")")

    def required(self) -> list[str]:
        """The columns the schema names (keys, time, declared stypes) its file must have."""
        taken = self.via is not None or self.seen_in is not None   # (inherit)
        cols = [self.pkey, *self.fkeys, None if taken else self.time, *self.stypes,
                *self.formats, *self.clocks, *self.clocks.values(),
                *(p for parts in self.assemble.values() for p in parts)]
        cols = [p for c in cols if c is not None and c not in self.assemble
                for p in self.composite.get(c, [c])]
        return list(dict.fromkeys(cols))

    def key_columns(self) -> set[str]:
        """The columns of its composite keys (:mod:`rdl.data.composite`)."""
        return {c for cols in self.composite.values() for c in cols}
