"""Each dialect's statement as SQLite runs it, for :mod:`rdl.data.sqlscript`: names
without their schema, casts and prefixes left out, MySQL's escapes and binary strings
read (:func:`sqlite_text`); a ``CREATE TABLE`` without what SQLite does not know
(:func:`create_table`) and with the keys an ``ALTER TABLE`` adds (:func:`added_keys`);
PostgreSQL's ``COPY`` rows; which table a partition's rows are (:func:`parent`).

Written by hand: sqlglot (PyPI) transpiles dialects by parsing each statement into a tree,
1.7 s for the 1 MB ``INSERT`` of Sakila's payments that these rules read in milliseconds;
it kept MySQL's ``VARCHAR(40) BINARY``, which SQLite refuses, and stopped at SQL*Plus'
``rem`` (sqlglot 30.31.0, 2026-12-07).
"""
from __future__ import annotations

import re

NAME = r'(?:"[^"]+"|`[^`]+`|\[[^\]]+\]|[^\W\d][\w$]*)'   # (2.5 is no schema and name)
_QUALIFIED = re.compile(rf"(?:{NAME}\s*\.\s*)+(?={NAME})")


#: a string literal: '' is a quote inside it, and in MySQL's dialect \\ escapes a character
LITERAL = {False: re.compile(r"'[^']*(?:''[^']*)*'?"),
            True: re.compile(r"'[^'\\]*(?:(?:\\.|'')[^'\\]*)*'?", re.S)}


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "Z": "\x1a", "b": "\b"}


def _literal(lit: str, mysql: bool) -> str:
    """A string literal as SQLite writes it ('' for a quote), MySQL's escapes read."""
    if not mysql or "\\" not in lit:
        return lit
    body, out, i = lit[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "'" + "".join(out).replace("'", "''") + "'"


def sqlite_text(stmt: str, mysql: bool) -> str:
    """A statement as SQLite reads it: names without their schema (``public.actor``,
    ``[dbo].[Album]``), no casts (``'G'::mpaa_rating``), SQL Server's ``N'...'`` plain,
    MySQL's escapes read; a binary string as hex (a picture's: ``0x89504E47...``, as
    MySQL and SQL Server write them; MySQL's ``_binary '...'``) a blob; comments left out
    (AdventureWorks' ``StoreID INT NULL, -- ... is non-null.`` then ``TerritoryID``: read
    as the name ``null.TerritoryID``, and its commas split columns)."""
    literals = []   # each literal a mark (\x00), so that the rules run once on the rest

    def mark(m):
        if m.group(0).startswith(("--", "/*")):
            return " "
        hexed = m.group(0)[2:] if m.group(0)[:2].lower() == "0x" else None
        literals.append(_literal(m.group(0), mysql) if hexed is None else
                        f"X'{'0' * (len(hexed) % 2)}{hexed}'")
        return "\x00"
    text = _BLOB_OR_LITERAL[mysql].sub(mark, stmt.replace("\x00", ""))
    text = _QUALIFIED.sub("", text)
    text = re.sub(r"::\s*[\w ]+?(\[\])?(?=[\s,)\x00]|$)", "", text)
    text = re.sub(r"(?i)\bN(?=\x00)", "", text)   # N'...'
    # T-SQL's INSERT with no INTO
    text = re.sub(r"(?i)^(\s*INSERT)\b(?!\s+(?:INTO|IGNORE|OR)\b)\s+", r"\1 INTO ", text)
    if mysql:   # (mysqldump --insert-ignore; phpMyAdmin's ON DUPLICATE KEY UPDATE: the last)
        text = re.sub(r"(?i)^(\s*INSERT)\s+IGNORE\b", r"\1 OR IGNORE", text)
        if re.search(r"(?i)\bON\s+DUPLICATE\s+KEY\s+UPDATE\b", text):
            text = re.sub(r"(?is)\s+ON\s+DUPLICATE\s+KEY\s+UPDATE\b.*$", "",
                          re.sub(r"(?i)^(\s*INSERT)\b", r"\1 OR REPLACE", text))
        text = re.sub(r"(?i)\b_binary\s*\x00", "CAST(\x00 AS BLOB)", text)
        text = re.sub(r"(?i)\b_(utf8mb4|utf8|latin1)\s*(?=\x00)", "", text)
    it = iter(literals)
    return re.sub("\x00", lambda _: next(it), text)


#: a string literal, hex digits or a comment (marked first: names are looked for in the rest)
_BLOB_OR_LITERAL = {k: re.compile(rf"\b0[xX][0-9a-fA-F]+\b|{v.pattern}|--[^\n]*|/\*.*?\*/",
                                  v.flags | re.S) for k, v in LITERAL.items()}


_DROP_ITEM = re.compile(r"(?is)^\s*((UNIQUE|FULLTEXT|SPATIAL)\s+)?(KEY|INDEX)\b|^\s*(CONSTRAINT\s+"
                        rf"{NAME}\s+)?(CHECK|EXCLUDE|UNIQUE)\b")
_DROP_WORDS = [r"AUTO_INCREMENT", r"UNSIGNED", r"ZEROFILL", r"CHARACTER\s+SET\s+\w+",
               r"(?<=\)\s)BINARY\b(?!\s*\()",   # MySQL's VARCHAR(40) BINARY (not a BINARY(16))
               r"COLLATE\s+\S+", r"COMMENT\s+'(?:[^']|'')*'", r"NOT\s+FOR\s+REPLICATION",
               r"ON\s+UPDATE\s+CURRENT_TIMESTAMP(\(\d*\))?", r"(NON)?CLUSTERED",
               r"DEFAULT\s+[\w.]+\s*\((?:[^()]|\([^()]*\))*\)",   # a function's value: now()
               r"GENERATED\s+(ALWAYS|BY\s+DEFAULT(\s+ON\s+NULL)?)\s+AS\s+IDENTITY(\s*\([^)]*\))?",
               r"IDENTITY\s*\(\s*\d+\s*,\s*\d+\s*\)", r"CHECK\s*\((?:[^()]|\([^()]*\))*\)"]


def _split(body: str) -> list[str]:
    """A list's items at its top-level commas (not inside parentheses or strings)."""
    items, depth, start, quote = [], 0, 0, None
    for i, c in enumerate(body):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    return [*items, body[start:]]


def create_table(stmt: str, added: dict[str, list[str]]) -> str:
    """A ``CREATE TABLE`` as SQLite runs it: its columns and keys (and ``added[table]``,
    the keys an ``ALTER TABLE`` adds), without indexes, checks, table options and the
    column options SQLite does not know; ``ENUM`` and ``SET`` as text."""
    m = re.match(rf"(?is)CREATE\s+(?:TEMPORARY\s+|UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                 rf"({NAME})\s*\(", stmt)
    if not m:
        raise ValueError("no table name and column list")
    name = m.group(1).strip('"`[]')
    depth, end = 0, None
    for i in range(m.end() - 1, len(stmt)):
        depth += {"(": 1, ")": -1}.get(stmt[i], 0)
        if depth == 0:
            end = i
            break
    items = []
    for item in _split(stmt[m.end():end]):
        if not item.strip() or _DROP_ITEM.match(item):
            continue
        item = re.sub(r"(?i)\b(enum|set)\s*\((?:[^()']|'(?:[^']|'')*')*\)", "TEXT", item)
        item = re.sub(r"\[\]", "", item) if not re.match(r"\s*\[", item) else item
        item = re.sub(r"(?i)\((\d+)\s+(CHAR|BYTE)\)", r"(\1)", item)   # Oracle's VARCHAR2(9 CHAR)
        for word in _DROP_WORDS:
            item = re.sub(rf"(?i)\b{word}", "", item)
        items.append(item.strip())
    # the columns before the keys (YugabyteDB's dump writes a key first; SQLite refuses it)
    keys = [x for x in items if re.match(r"(?i)(CONSTRAINT|PRIMARY\s+KEY|FOREIGN\s+KEY)\b", x)]
    items = [x for x in items if x not in keys] + keys + added.get(name, [])
    return f'CREATE TABLE "{name}" ({", ".join(items)})'


def added_keys(stmt: str) -> tuple[str, list[str]] | None:
    """``ALTER TABLE t ADD [CONSTRAINT c] PRIMARY KEY (...)`` (or FOREIGN KEY ... REFERENCES
    ...; several ADDs too; or ``ADD [COLUMN] c type``, a column the table has from then
    on): the table and its clauses; None for another statement."""
    m = re.match(rf"(?is)ALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?({NAME})\s+"
                 r"(?:WITH\s+(?:NO)?CHECK\s+)?(ADD\b.*)", stmt)   # (SQL Server's WITH NOCHECK)
    if not m:
        return None
    clauses, adds = [], m.group(2)
    if (inner := re.match(r"(?is)ADD\s*\((.*)\)\s*$", adds)):   # Oracle's ADD (a, b)
        adds = ", ".join("ADD " + x.strip() for x in _split(inner.group(1)))
    for part in re.split(r"(?i),\s*(?=ADD\b)", adds):
        k = re.match(rf"(?is)ADD\s+(?:CONSTRAINT\s+{NAME}\s+)?((PRIMARY|FOREIGN)\s+KEY\b.*)",
                     part.strip())
        column = re.match(r"(?is)ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?(?!(?:CONSTRAINT|"
                          r"PRIMARY|FOREIGN|UNIQUE|CHECK|INDEX|KEY|PARTITION)\b)(\S.*)",
                          part.strip())
        if k is None and column is not None:
            clauses.append(column.group(1).strip())
        elif k:   # (less what SQLite does not know: SQL Server's NONCLUSTERED, ON [PRIMARY])
            clause = re.sub(r"(?is)\s+(NOT\s+)?DEFERRABLE.*$|\s+NOT\s+VALID\s*$", "",
                            k.group(1).strip())
            clause = re.sub(r"(?i)\s+(NON)?CLUSTERED\b", "", clause)
            clause = re.sub(r"(?i)^(FOREIGN\s+KEY)\s+\w+\s*\(", r"\1 (", clause)   # DB2's name
            clauses.append(re.sub(r"(?is)\)\s*(ON\s+\S+|WITH\s*\(.*\))\s*$", ")", clause))
    return (m.group(1).strip('"`[]'), clauses) if clauses else None


def copy_rows(rows: str) -> list[list]:
    """PostgreSQL's COPY text rows: tab-separated, ``\\N`` missing, backslash escapes."""
    out = []
    for line in rows.split("\n"):
        if not line:
            continue
        out.append([None if v == "\\N" else re.sub(r"\\(.)", lambda m: _ESCAPES.get(
            m.group(1), m.group(1)), v) for v in line.split("\t")])
    return out


def parent(stmt: str) -> tuple[str, str, bool] | None:
    """``(table, its parent, whether the table lists columns of its own)`` where ``stmt``
    (as :func:`sqlite_text` writes it) makes a partition: ``CREATE TABLE t PARTITION OF
    p``, ``CREATE TABLE t (...) INHERITS (p)``, ``ALTER TABLE p ATTACH PARTITION t``."""
    m = re.match(rf"(?is)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?({NAME})\s+PARTITION\s+OF"
                 rf"\s+({NAME})", stmt) or re.match(
        rf"(?is)ALTER\s+TABLE\s+(?:ONLY\s+)?({NAME})\s+ATTACH\s+PARTITION\s+({NAME})", stmt)
    if m:
        pair = [x.strip('"`[]') for x in m.groups()]
        return (pair[0], pair[1], False) if stmt.upper().lstrip().startswith("CREATE") else \
            (pair[1], pair[0], False)
    m = re.search(rf"(?is)\)\s*INHERITS\s*\(\s*({NAME})\s*\)\s*$", stmt)
    if not m:
        return None
    own = create_table(stmt, {}).split("(", 1)[1].rsplit(")", 1)[0]
    columns = [x for x in _split(own) if x.strip() and not re.match(
        r"(?i)\s*(CONSTRAINT|PRIMARY|FOREIGN)\b", x)]
    return table_name(stmt), m.group(1).strip('"`[]'), bool(columns)


def table_name(stmt: str) -> str | None:
    m = re.match(rf"(?is)(?:CREATE\s+(?:TEMPORARY\s+|UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                 rf"|(?:INSERT|REPLACE)\s+(?:(?:OR\s+)?\w+\s+)?INTO\s+|COPY\s+)({NAME})", stmt)
    return m.group(1).strip('"`[]') if m else None
