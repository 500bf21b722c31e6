"""A database as a SQL script (``.sql``): how sample databases are handed out (Chinook's,
Northwind's, Sakila's and MySQL's ``employees`` scripts; ``pg_dump``'s plain output), run
into a SQLite file that :mod:`rdl.data.dbfile` then reads with the keys it declares. A
folder of scripts and no data files is one database (:func:`scripts_in`: Sakila's and
Pagila's schema script beside their data script): every script's tables are made first,
then every script's rows.

Only what makes tables and rows is run: ``CREATE TABLE``, ``INSERT`` (``REPLACE``),
PostgreSQL's ``COPY ... FROM stdin`` with its rows, the rows a statement loads from a file
beside the script (:mod:`rdl.data.loads`), the files it sources (MySQL's ``source``,
psql's ``\\i``) where it sources them, and the keys and columns ``ALTER TABLE ... ADD``
adds (folded into the table's ``CREATE``: SQLite adds no constraint later). A table
PostgreSQL keeps in partitions (``PARTITION OF``, ``ATTACH PARTITION``, ``INHERITS`` a
parent with no column of its own) is one table: the partitions' rows are their parent's.
Everything else (``SET``, ``LOCK``, indexes, views, functions, triggers, sequences,
grants) is left out. The dialects' differences SQLite would stop on are
smoothed, each a rule of :mod:`rdl.data.dialects`: MySQL's table options,
``AUTO_INCREMENT``, ``UNSIGNED``, ``KEY`` lines, ``ENUM``, backslash escapes in strings;
PostgreSQL's ``public.`` and casts; SQL Server's ``[dbo].``, ``N'...'`` and ``GO``;
Oracle's SQL*Plus commands, blocks, masks of times and variables (:mod:`rdl.data.sqlplus`).
A statement SQLite still refuses stops the run, naming its line.

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
from rdl.data import dialects, loads, sources, sqlplus
from rdl.data.dialects import LITERAL, NAME

log = logging.getLogger(__name__)

SUFFIXES = (".sql",)
#: names of dumps that may be SQL text (mysqldump's and pg_dump's plain output is often
#: named so), read as a script where their first lines are SQL's
DUMPS = (".dump", ".backup", ".bak")


def is_script(path) -> bool:
    """Whether ``path`` is a SQL script (``.sql``, maybe compressed: ``.sql.gz``; or a
    ``.dump`` or ``.backup`` file of SQL text)."""
    s = [x.lower() for x in Path(path).suffixes]
    if s and s[-1] in DUMPS and Path(path).is_file():   # (pg_dump -Fc's: rdl.data.pgdump)
        with open(path, "rb") as f:
            head = f.read(4096)
        return b"\0" not in head and re.search(rb"(?im)^\s*(--|/\*|create\s|insert\s|set\s|"
                                               rb"drop\s)", head) is not None
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
             and not p.name.startswith((".", "_")) and not sources.is_notes(p)]
    scripts = [p for p in files if is_script(p)]
    if not scripts or any(not sources.unnamed(p) and (sources.is_csv(p) or sources.is_parquet(p))
                          for p in files if not is_script(p)):   # (checked once per load)
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
            elif this.lower() == "go":   # (SQL Server's batch: statements need no ;)
                for at, stmt in _batch(text[start:line_start]):
                    yield _first_line(text, start + at, start_line + text.count(
                        "\n", start, start + at)), stmt, None
                start, start_line = i + 1, line
            line_start = i + 1
        elif c in "'\"`[":
            if c == "'":   # ('' ends one string and starts the next: the same split)
                j = LITERAL[mysql].match(text, i).end() - 1
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


#: words that begin a statement of SQL Server's at the start of a line (not SET of an UPDATE)
_BEGINS = re.compile(r"(?im)^[ \t]*(INSERT|CREATE|ALTER|DROP|DELETE|TRUNCATE|GRANT|USE|PRINT|"
                     r"EXEC|EXECUTE|IF|DBCC|SET[ \t]+(IDENTITY_INSERT|QUOTED_IDENTIFIER|NOCOUNT|"
                     r"ANSI_\w+|DATEFORMAT))\b")
_HIDDEN = re.compile(r"'[^']*(?:''[^']*)*'|\[[^\]]*\]|\"[^\"]*\"|--[^\n]*|/\*.*?\*/", re.S)


def _batch(body: str):
    """``(where it begins, statement)`` of a SQL Server batch (up to its ``GO``), whose
    statements need no ``;``: one begins at each line that begins with a statement's word
    (:data:`_BEGINS`), outside strings, names, comments and parentheses; a procedure,
    function, trigger or view is its batch whole (its INSERTs are code, not rows)."""
    if re.match(r"(?is)(CREATE|ALTER)\s+(OR\s+ALTER\s+)?(PROC|PROCEDURE|FUNCTION|TRIGGER|VIEW)\b",
                _strip_comments(body)):
        yield 0, body.strip()
        return
    masked = _HIDDEN.sub(lambda m: re.sub(r"[^\n]", "x", m.group(0)), body)
    cuts, depth, last = [0], 0, 0
    for m in _BEGINS.finditer(masked):
        depth += masked.count("(", last, m.start()) - masked.count(")", last, m.start())
        last = m.start()
        if depth == 0 and m.start() > 0:
            cuts.append(m.start())
    for a, b in zip(cuts, [*cuts[1:], len(body)]):
        if _strip_comments(body[a:b]):
            yield a, body[a:b].strip()


def _first_line(text: str, start: int, line: int) -> int:
    """The line of the first word after ``start`` (line ``line``), comments aside."""
    rest = text[start:start + 100_000]
    body = re.match(r"(\s|--[^\n]*|/\*.*?\*/)*", rest, flags=re.S).end()
    return line + rest.count("\n", 0, body)


def _strip_comments(stmt: str) -> str:
    return re.sub(r"(?m)^\s*(--|#)[^\n]*$|/\*.*?\*/", "", stmt, flags=re.S).strip()


def _read(path: Path) -> tuple[str, bool]:
    """A script's text (SQL*Plus' made plain SQL: :mod:`rdl.data.sqlplus`), and whether it
    is MySQL's dialect."""
    with sources.input_stream(path) as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    if sqlplus.is_oracle(text):
        return sqlplus.plain(text), False
    # psql's own commands, a line each (pg_dump 17.6 and 15.14 on write \restrict KEY first)
    text = re.sub(r"(?m)^\\(restrict|unrestrict|connect|c|set|echo|encoding|pset)\b[^\n]*$",
                  "", text)
    return text, "`" in text[:200_000] or re.search(r"(?i)ENGINE\s*=", text[:200_000]) is not None


#: a client's command that runs another file where it stands: MySQL's ``source`` (``\\.``),
#: psql's ``\\i`` and ``\\ir`` (MySQL's employees.sql: ``source load_employees.dump ;``)
_RUNS = r"(?:source|\\\.|\\ir?)[ \t]+['\"]?([^'\";\n]+?)['\"]?[ \t]*;?[ \t]*"
_INCLUDE = re.compile(rf"(?i)^{_RUNS}(?:\n|$)")   # (a statement's first line)


def _includes(script: Path) -> list[Path]:
    """The files a script runs where it says so (:data:`_INCLUDE`), by its lines."""
    text, _ = _read(script)
    return [script.parent / m.group(1).strip()
            for m in re.finditer(rf"(?im)^[ \t]*{_RUNS}\r?$", text)]


def _statements_of(script: Path, seen: tuple = ()):
    """``(where, statement, COPY rows, MySQL's dialect)`` of a script, comments left out,
    the files it includes (:data:`_INCLUDE`) in their place, each statement where its own
    file says."""
    text, mysql = _read(script)
    for line, stmt, rows in statements(text):
        s = _strip_comments(stmt)
        if (m := _INCLUDE.match(s)) is not None:
            other = script.parent / m.group(1).strip()
            if not other.is_file() or other.resolve() in seen:
                why = "no such file beside it" if not other.is_file() else "it runs itself"
                raise DataError(f"{script}, line {line}: {s.splitlines()[0]}: {why}")
            yield from _statements_of(other, (*seen, script.resolve()))
            s = s[m.end():].strip()   # (a command a line: the rest is a statement of its own)
            if not s:
                continue
        if s.startswith("\\") and "\n" in s:   # (psql's \copy: its line; then a statement)
            first, s = s.split("\n", 1)
            yield f"{script}, line {line}", first, loads.parse(first, script), mysql
            line, s = line + 1, s.strip()
        if (load := loads.parse(s, script)) is not None:   # (rows from a file beside it)
            yield f"{script}, line {line}", s, load, mysql
            continue
        if re.match(r"(?is)CREATE\s+SCHEMA\b", s):   # (PostgreSQL's, its tables inside it)
            for at, part in list(_batch(s))[1:]:
                yield f"{script}, line {line + s.count(chr(10), 0, at)}", part, None, mysql
            continue
        yield f"{script}, line {line}", s, rows, mysql


def _load(con, load: loads.Load, table: str, where: str) -> None:
    """A file's rows (:mod:`rdl.data.loads`) into ``table`` (MySQL's ``@skip`` columns
    left out)."""
    width = len(con.execute(f'PRAGMA table_info("{table}")').fetchall())
    cols, data = loads.rows(load, width, where)
    keep = [i for i, c in enumerate(cols or []) if not c.startswith("@")]
    if cols and len(keep) < len(cols):
        cols, data = [cols[i] for i in keep], [[r[i] for i in keep] for r in data]
    if data:
        names = "(" + ", ".join(f'"{c}"' for c in cols) + ")" if cols else ""
        con.executemany(f'INSERT INTO "{table}" {names} VALUES ({", ".join("?" * len(data[0]))})',
                        data)


def run(path, target, scripts: list | None = None, with_rows: bool = True) -> Path:
    """SQL script ``path``, or a folder's (:func:`scripts_in`; or ``scripts``), run into a
    new SQLite file ``target`` (see the module); with ``with_rows`` false, its tables and keys
    only (the DDL beside a folder's files: :mod:`rdl.data.ddl`).

    Raises:
        DataError: the scripts make no table, or make one twice, or SQLite refuses a
            statement (its file and line).
    """
    path, target = Path(path), Path(target)
    creates, work, keys, parents, names = {}, [], {}, {}, set()
    scripts = scripts or (scripts_in(path) if path.is_dir() else [path])
    included = {p.resolve() for script in scripts for p in _includes(script)} \
        if len(scripts) > 1 else set()   # (a folder's: one another runs is not run twice)
    for script in [s for s in scripts if s.resolve() not in included]:
        for where, s, rows, mysql in _statements_of(script):
            head = s[:60].upper()
            if (variable := sqlplus.assignment(s)) is not None:   # (PL/SQL's, in a block)
                names.add(variable[0])
                work.append((where, dialects.sqlite_text(variable[1], mysql), variable[0]))
                continue
            if re.match(r"CREATE\s+(TEMPORARY\s+|UNLOGGED\s+)?TABLE", head):
                s = dialects.sqlite_text(s, mysql)
                if (part := dialects.parent(s)) and part[2]:
                    raise DataError(f"{where}: table {part[0]} INHERITS {part[1]} and adds columns "
                                    "of its own: rdl reads a child table only as a partition of "
                                    "its parent (its parent's columns)")
                if part:
                    parents[part[0]] = part[1]
                    continue
                name = dialects.table_name(s)
                if re.match(rf"(?is)CREATE\s+(?:\w+\s+)*?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{NAME}"
                            r"\s*(?:\([^()]*\)\s*)?(AS\b|LIKE\b|\(\s*LIKE\b)", s):
                    log.info("%s: table %s is made from a query or another table's columns "
                             "(CREATE TABLE ... AS, LIKE): left out", where, name)
                    continue
                if name in creates:
                    raise DataError(f"{where}: table {name} is made again (first at "
                                    f"{creates[name][0]}): a folder's scripts are one database; "
                                    "keep one script that makes it, or give rdl the one script "
                                    "that makes the database (it runs the files it sources)")
                creates[name] = (where, s)
            elif head.startswith(("INSERT", "REPLACE")):   # (mysqldump --replace: REPLACE INTO)
                work.append((where, sqlplus.bound(dialects.sqlite_text(s, mysql), names,
                                                  LITERAL[mysql]), None))
            elif rows is not None:
                work.append((where, s, rows))
            elif head.startswith("ALTER TABLE"):
                s = dialects.sqlite_text(s, mysql)
                if part := dialects.parent(s):
                    parents[part[0]] = part[1]
                elif found := dialects.added_keys(s):
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
        sqlplus.functions(con)
        values = {}   # (PL/SQL variables' values, as the script assigns them)
        for name, (where, s) in creates.items():
            try:
                con.execute(dialects.create_table(s, keys))
            except (sqlite3.Error, ValueError) as e:
                raise DataError(f"{where}: a CREATE TABLE SQLite cannot run ({e}): "
                                f"{s[:120]!r}...") from None
        for where, s, rows in work if with_rows else []:
            table = dialects.table_name(s)
            try:
                if rows in names:
                    values[rows] = con.execute(f"SELECT {s}", values).fetchone()[0]
                    continue
                if isinstance(rows, loads.Load):
                    _load(con, rows, parents.get(rows.table, rows.table), where)
                    continue
                if rows is None:
                    if table in parents:
                        s = re.sub(rf"(?is)^((?:INSERT|REPLACE)\s+(?:(?:OR\s+)?\w+\s+)?INTO\s+)"
                                   rf"{NAME}",
                                   lambda m: f'{m.group(1)}"{parents[table]}"', s)
                    con.execute(s, values)
                    continue
                m = re.match(rf"(?is)COPY\s+({NAME}(?:\s*\.\s*{NAME})*)\s*(\((.*?)\))?\s+FROM",
                             s)
                table = re.split(r"\s*\.\s*", m.group(1))[-1].strip('"')
                cols = f"({m.group(3)})" if m.group(3) else ""
                data = dialects.copy_rows(rows)
                if data:
                    con.executemany(f'INSERT INTO "{parents.get(table, table)}" {cols} VALUES '
                                    f"({', '.join('?' * len(data[0]))})", data)
            except sqlite3.Error as e:
                raise DataError(f"{where}: SQLite cannot run it ({e}): {s[:120]!r}...") from None
        con.commit()
    return target
