"""A database as a SQL script (``.sql``): how sample databases are handed out (Chinook's,
Northwind's, Sakila's and MySQL's ``employees`` scripts; ``pg_dump``'s plain output), run
into a SQLite file that :mod:`rdl.data.dbfile` then reads with the keys it declares. A
folder of scripts and no data files is one database (:func:`scripts_in`: Sakila's and
Pagila's schema script beside their data script): every script's tables are made first,
then every script's rows.

Only what makes tables and rows is run: ``CREATE TABLE``, ``INSERT``, PostgreSQL's ``COPY
... FROM stdin`` with its rows, and the keys ``ALTER TABLE ... ADD ... PRIMARY KEY`` or
``FOREIGN KEY`` adds (folded into the table's ``CREATE``: SQLite adds no constraint
later). A table PostgreSQL keeps in partitions (``PARTITION OF``, ``ATTACH PARTITION``,
``INHERITS`` a parent with no column of its own) is one table: the partitions' rows are
their parent's. Everything else (``SET``, ``LOCK``, indexes, views, functions, triggers,
sequences, grants) is left out. The dialects' differences SQLite would stop on are
smoothed, each a rule below: MySQL's table options, ``AUTO_INCREMENT``, ``UNSIGNED``,
``KEY`` lines, ``ENUM``, backslash escapes in strings; PostgreSQL's ``public.`` and casts;
SQL Server's ``[dbo].``, ``N'...'`` and ``GO``. A statement SQLite still refuses stops the
run, naming its line.

Written by hand: neither DuckDB (whose PostgreSQL and MySQL readers need a running server
or a download) nor SQLite runs another dialect's script.
"""
from __future__ import annotations

import logging
import re
import sqlite3
from contextlib import closing
from pathlib import Path

from rdl.data.database import DataError
from rdl.data import sources

log = logging.getLogger(__name__)

SUFFIXES = (".sql",)
#: files beside a folder's scripts that hold no table (a README.txt is no CSV file)
_NOT_TABLES = re.compile(r"(?i)^(readme|licen[cs]e|changelog|notice|copying)\b")


def is_script(path) -> bool:
    """Whether ``path`` is a SQL script (``.sql``, maybe compressed: ``.sql.gz``)."""
    s = [x.lower() for x in Path(path).suffixes]
    return bool(s) and (s[-1] == ".sql" or (len(s) > 1 and s[-2] == ".sql"
                                            and s[-1] in (".gz", ".bz2", ".zst")))


def scripts_in(folder) -> list[Path]:
    """The SQL scripts of ``folder`` in name order, where they are its database: one or
    more, and no file of a table beside them (a folder of CSV files with a script of their
    DDL is a folder of files); else ``[]``."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    files = [p for p in sorted(folder.iterdir()) if p.is_file()
             and not p.name.startswith((".", "_")) and not _NOT_TABLES.match(p.name)]
    scripts = [p for p in files if is_script(p)]
    if any(not sources.unnamed(p) and (sources.is_csv(p) or sources.is_parquet(p))
           for p in files if p not in scripts):
        return []
    return scripts


def statements(text: str):
    """``(line, statement)`` of a script, split at ``;`` (or ``DELIMITER``'s, or SQL
    Server's ``GO``) outside strings, quoted names, comments and ``$$`` bodies; a
    ``COPY ... FROM stdin`` statement comes with its rows (``(line, statement, rows)``)."""
    i, n, line, start, delim, line_start = 0, len(text), 1, 0, ";", 0
    start_line, mysql = 1, "`" in text[:200_000] or "ENGINE=" in text[:200_000].upper()
    special = re.compile(r"[\n'\"`\[\-/$" + ("#" if mysql else "") + "]|" + re.escape(delim))
    while i < n:
        m = special.search(text, i)   # (plain text between, skipped at C's speed)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == "\n":   # (only this line is looked at: a statement may run 100,000 lines)
            line += 1
            this = text[line_start:i].strip() if i - line_start < 64 else ""
            if re.fullmatch(r"(?i)delimiter\s+\S+", this):
                delim, start, start_line = this.split()[1], i + 1, line
                special = re.compile(r"[\n'\"`\[\-/$" + ("#" if mysql else "") + "]|"
                                     + re.escape(delim))
            elif this.lower() == "go":
                stmt = text[start:line_start].strip()
                if stmt:
                    yield _first_line(text, start, start_line), stmt, None
                start, start_line = i + 1, line
            line_start = i + 1
        elif c in "'\"`[":
            if c == "'":   # ('' ends one string and starts the next: the same split)
                j = _LITERAL[mysql].match(text, i).end() - 1
            else:
                j = text.find({"[": "]"}.get(c, c), i + 1)
                j = n if j < 0 else j
            line += text.count("\n", i, j)
            i = j
        elif text.startswith("--", i) or (c == "#" and mysql):
            j = text.find("\n", i)
            i = n - 1 if j < 0 else j - 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j - 1
        elif c == "$" and (m := re.match(r"\$\w*\$", text[i:i + 64])):
            j = text.find(m.group(0), i + len(m.group(0)))
            j = n if j < 0 else j + len(m.group(0))
            line += text.count("\n", i, j)
            i = j - 1
        elif text.startswith(delim, i):
            stmt = text[start:i].strip()
            rows = None
            if re.match(r"(?is)^copy\s.+\sfrom\s+stdin", _strip_comments(stmt)):
                end = text.find("\n\\.", i)
                end = n if end < 0 else end
                rows = text[text.find("\n", i) + 1:end + 1]
                line += text.count("\n", i, end + 1)
                i = end + 2   # the \\. ending them
            if stmt:
                yield _first_line(text, start, start_line), stmt, rows
            start, start_line = i + len(delim), line
            i += len(delim) - 1
        i += 1
    tail = text[start:].strip()
    if tail and _strip_comments(tail):
        yield start_line, tail, None


def _first_line(text: str, start: int, line: int) -> int:
    """The line of the first word after ``start`` (line ``line``), comments aside."""
    rest = text[start:start + 100_000]
    body = re.match(r"(\s|--[^\n]*|/\*.*?\*/)*", rest, flags=re.S).end()
    return line + rest.count("\n", 0, body)


def _strip_comments(stmt: str) -> str:
    return re.sub(r"(?m)^\s*(--|#)[^\n]*$|/\*.*?\*/", "", stmt, flags=re.S).strip()


# -- each statement as SQLite runs it ---------------------------------------------------------
_NAME = r'(?:"[^"]+"|`[^`]+`|\[[^\]]+\]|[^\W\d][\w$]*)'   # (2.5 is no schema and name)
_QUALIFIED = re.compile(rf"(?:{_NAME}\s*\.\s*)+(?={_NAME})")


#: a string literal: '' is a quote inside it, and in MySQL's dialect \\ escapes a character
_LITERAL = {False: re.compile(r"'[^']*(?:''[^']*)*'?"),
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
    MySQL and SQL Server write them; MySQL's ``_binary '...'``) a blob."""
    literals = []   # each literal a mark (\x00), so that the rules run once on the rest

    def mark(m):
        hexed = m.group(0)[2:] if m.group(0)[:2].lower() == "0x" else None
        literals.append(_literal(m.group(0), mysql) if hexed is None else
                        f"X'{'0' * (len(hexed) % 2)}{hexed}'")
        return "\x00"
    text = _BLOB_OR_LITERAL[mysql].sub(mark, stmt.replace("\x00", ""))
    text = _QUALIFIED.sub("", text)
    text = re.sub(r"::\s*[\w ]+?(\[\])?(?=[\s,)\x00]|$)", "", text)
    text = re.sub(r"(?i)\bN(?=\x00)", "", text)   # N'...'
    if mysql:
        text = re.sub(r"(?i)\b_binary\s*\x00", "CAST(\x00 AS BLOB)", text)
        text = re.sub(r"(?i)\b_(utf8mb4|utf8|latin1)\s*(?=\x00)", "", text)
    it = iter(literals)
    return re.sub("\x00", lambda _: next(it), text)


#: a string literal, or hex digits (marked first: names are looked for in what is left)
_BLOB_OR_LITERAL = {k: re.compile(rf"\b0[xX][0-9a-fA-F]+\b|{v.pattern}", v.flags)
                    for k, v in _LITERAL.items()}


_DROP_ITEM = re.compile(r"(?is)^\s*((UNIQUE|FULLTEXT|SPATIAL)\s+)?(KEY|INDEX)\b|^\s*(CONSTRAINT\s+"
                        rf"{_NAME}\s+)?(CHECK|EXCLUDE|UNIQUE)\b")
_DROP_WORDS = [r"AUTO_INCREMENT", r"UNSIGNED", r"ZEROFILL", r"CHARACTER\s+SET\s+\w+",
               r"(?<=\)\s)BINARY\b(?!\s*\()",   # MySQL's VARCHAR(40) BINARY (not a BINARY(16))
               r"COLLATE\s+\S+", r"COMMENT\s+'(?:[^']|'')*'", r"NOT\s+FOR\s+REPLICATION",
               r"ON\s+UPDATE\s+CURRENT_TIMESTAMP(\(\d*\))?", r"(NON)?CLUSTERED",
               r"DEFAULT\s+[\w.]+\s*\((?:[^()]|\([^()]*\))*\)",   # a function's value: now()
               r"GENERATED\s+(ALWAYS|BY\s+DEFAULT)\s+AS\s+IDENTITY(\s*\([^)]*\))?",
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
                 rf"({_NAME})\s*\(", stmt)
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
        for word in _DROP_WORDS:
            item = re.sub(rf"(?i)\b{word}", "", item)
        items.append(item.strip())
    # the columns before the keys (YugabyteDB's dump writes a key first; SQLite refuses it)
    keys = [x for x in items if re.match(r"(?i)(CONSTRAINT|PRIMARY\s+KEY|FOREIGN\s+KEY)\b", x)]
    items = [x for x in items if x not in keys] + keys + added.get(name, [])
    return f'CREATE TABLE "{name}" ({", ".join(items)})'


def added_keys(stmt: str) -> tuple[str, list[str]] | None:
    """``ALTER TABLE t ADD [CONSTRAINT c] PRIMARY KEY (...)`` (or FOREIGN KEY ... REFERENCES
    ...; several ADDs too): the table and its key clauses; None for another statement."""
    m = re.match(rf"(?is)ALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?({_NAME})\s+(ADD\b.*)", stmt)
    if not m:
        return None
    clauses = []
    for part in re.split(r"(?i),\s*(?=ADD\b)", m.group(2)):
        k = re.match(rf"(?is)ADD\s+(?:CONSTRAINT\s+{_NAME}\s+)?((PRIMARY|FOREIGN)\s+KEY\b.*)",
                     part.strip())
        if k:
            clauses.append(re.sub(r"(?is)\s+(NOT\s+)?DEFERRABLE.*$|\s+NOT\s+VALID\s*$", "",
                                  k.group(1).strip()))
    return (m.group(1).strip('"`[]'), clauses) if clauses else None


def _copy_rows(rows: str) -> list[list]:
    """PostgreSQL's COPY text rows: tab-separated, ``\\N`` missing, backslash escapes."""
    out = []
    for line in rows.split("\n"):
        if not line:
            continue
        out.append([None if v == "\\N" else re.sub(r"\\(.)", lambda m: _ESCAPES.get(
            m.group(1), m.group(1)), v) for v in line.split("\t")])
    return out


def _parent(stmt: str) -> tuple[str, str, bool] | None:
    """``(table, its parent, whether the table lists columns of its own)`` where ``stmt``
    (as :func:`sqlite_text` writes it) makes a partition: ``CREATE TABLE t PARTITION OF
    p``, ``CREATE TABLE t (...) INHERITS (p)``, ``ALTER TABLE p ATTACH PARTITION t``."""
    m = re.match(rf"(?is)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?({_NAME})\s+PARTITION\s+OF"
                 rf"\s+({_NAME})", stmt) or re.match(
        rf"(?is)ALTER\s+TABLE\s+(?:ONLY\s+)?({_NAME})\s+ATTACH\s+PARTITION\s+({_NAME})", stmt)
    if m:
        pair = [x.strip('"`[]') for x in m.groups()]
        return (pair[0], pair[1], False) if stmt.upper().lstrip().startswith("CREATE") else \
            (pair[1], pair[0], False)
    m = re.search(rf"(?is)\)\s*INHERITS\s*\(\s*({_NAME})\s*\)\s*$", stmt)
    if not m:
        return None
    own = create_table(stmt, {}).split("(", 1)[1].rsplit(")", 1)[0]
    columns = [x for x in _split(own) if x.strip() and not re.match(
        r"(?i)\s*(CONSTRAINT|PRIMARY|FOREIGN)\b", x)]
    return _table_name(stmt), m.group(1).strip('"`[]'), bool(columns)


def _table_name(stmt: str) -> str | None:
    m = re.match(rf"(?is)(?:CREATE\s+(?:TEMPORARY\s+|UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                 rf"|INSERT\s+(?:IGNORE\s+)?INTO\s+|COPY\s+)({_NAME})", stmt)
    return m.group(1).strip('"`[]') if m else None


def _read(path: Path) -> tuple[str, bool]:
    """A script's text, and whether it is MySQL's dialect."""
    with sources.input_stream(path) as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    return text, "`" in text[:200_000] or re.search(r"(?i)ENGINE\s*=", text[:200_000]) is not None


def run(path, target) -> Path:
    """SQL script ``path``, or a folder's (:func:`scripts_in`), run into a new SQLite file
    ``target`` (see the module).

    Raises:
        DataError: the scripts make no table, or make one twice, or SQLite refuses a
            statement (its file and line).
    """
    path, target = Path(path), Path(target)
    creates, work, keys, parents = {}, [], {}, {}
    for script in scripts_in(path) if path.is_dir() else [path]:
        text, mysql = _read(script)
        for line, stmt, rows in statements(text):
            where = f"{script}, line {line}"
            s = _strip_comments(stmt)
            head = s[:60].upper()
            if re.match(r"CREATE\s+(TEMPORARY\s+|UNLOGGED\s+)?TABLE", head):
                s = sqlite_text(s, mysql)
                if (part := _parent(s)) and part[2]:
                    raise DataError(f"{where}: table {part[0]} INHERITS {part[1]} and adds columns "
                                    "of its own: rdl reads a child table only as a partition of "
                                    "its parent (its parent's columns)")
                if part:
                    parents[part[0]] = part[1]
                    continue
                name = _table_name(s)
                if name in creates:
                    raise DataError(f"{where}: table {name} is made again (first at "
                                    f"{creates[name][0]}): a folder's scripts are one database; "
                                    "keep one script that makes it")
                creates[name] = (where, s)
            elif head.startswith("INSERT"):
                work.append((where, sqlite_text(s, mysql), None))
            elif rows is not None:
                work.append((where, s, rows))
            elif head.startswith("ALTER TABLE") and (part := _parent(sqlite_text(s, mysql))):
                parents[part[0]] = part[1]
            elif head.startswith("ALTER TABLE") and (found := added_keys(sqlite_text(s, mysql))):
                keys.setdefault(found[0], []).extend(found[1])
    if not creates:
        raise DataError(f"{path}: no CREATE TABLE in it: not a script that makes a database "
                        "(a script of rows whose tables another script makes: give the folder "
                        "of both)")
    for child, parent in parents.items():   # (a partition of a partition: its root's)
        while parent in parents:
            parent = parents[parent]
        parents[child] = parent
        creates.pop(child, None)
        if parent not in creates:
            raise DataError(f"table {child}: a partition of {parent}, which no script makes")
    if parents:
        log.info("%s: partitions read as their parents' rows: %s", path,
                 ", ".join(f"{c} -> {p}" for c, p in sorted(parents.items())))
    with closing(sqlite3.connect(target)) as con:
        for name, (where, s) in creates.items():
            try:
                con.execute(create_table(s, keys))
            except (sqlite3.Error, ValueError) as e:
                raise DataError(f"{where}: a CREATE TABLE SQLite cannot run ({e}): "
                                f"{s[:120]!r}...") from None
        for where, s, rows in work:
            table = _table_name(s)
            try:
                if rows is None:
                    if table in parents:
                        s = re.sub(rf"(?is)^(INSERT\s+(?:IGNORE\s+)?INTO\s+){_NAME}",
                                   lambda m: f'{m.group(1)}"{parents[table]}"', s)
                    con.execute(s)
                    continue
                m = re.match(rf"(?is)COPY\s+({_NAME}(?:\s*\.\s*{_NAME})*)\s*(\((.*?)\))?\s+FROM",
                             s)
                table = re.split(r"\s*\.\s*", m.group(1))[-1].strip('"')
                cols = f"({m.group(3)})" if m.group(3) else ""
                data = _copy_rows(rows)
                if data:
                    con.executemany(f'INSERT INTO "{parents.get(table, table)}" {cols} VALUES '
                                    f"({', '.join('?' * len(data[0]))})", data)
            except sqlite3.Error as e:
                raise DataError(f"{where}: SQLite cannot run it ({e}): {s[:120]!r}...") from None
        con.commit()
    return target
