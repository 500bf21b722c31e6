"""A first ``schema.yaml`` for a folder of exported tables, drafted from their files:
``python -m rdl.data.draft FOLDER [--write]`` (or a SQLite, DuckDB or Excel file, whose
declared keys it takes: :mod:`rdl.data.dbfile`; the key guesses are
:mod:`rdl.data.draft_keys`, the times' :mod:`rdl.data.draft_times`).

Writing a schema for an export of twenty tables is most of the work of a first run; this
drafts one from the files' names and values, each guess with its evidence in a comment,
for a person to check. Each file or folder of parts is a table, read as the folder loader
reads it (:mod:`rdl.data.folder`). Then, per table:

* **primary key**: a column of whole numbers or text, filled in and unique in every row,
  named as keys are (``id``, ``<table>_id``, ``...ID``, ``..._key``, ``..._code``), or the
  first column; else, where another table holds two of its columns by name, a pair unique
  in every row (a composite key: ``[origin, time_hour]``); else none (a table of facts);
* **foreign keys**: a column named as another table's key (``customer_id``, also
  ``<table>_id``) with at least half its values among that key's; text whose values all
  are keys of one table (``origin``: airports' ``faa``); whole numbers named as a key
  (``author_id``) whose values all are keys of exactly one table, those of several left
  for a person to say; the pair of a composite key, by its names; a column named as a
  key that no table holds, repeated (``household_key``), the key of a table drafted
  ``implied: true`` with its ``attributes`` (a flat export's entities; a key of one value
  per another's told as a chain: :mod:`rdl.data.draft_implied`);
* **lists of objects** in a JSON or parquet column (an order's ``line_items``): a table of
  their own (``orders_line_items: {unnest: {orders: line_items}}``, :mod:`rdl.data.nested`);
* **time**: its column of times (of several, by name: ``created``, ``timestamp``, ``date``
  ...; never a birth, a deadline or a change time), or the time of the rows it references
  (``time: {via: order_id}``); none: a static table; its other columns of times declared
  as the loader's checks need (:mod:`rdl.data.draft_times`).

Tables' names are matched without the words exports wrap them in (``olist_..._dataset``,
``dim_``). What no file says is left to the person, in comments: times written as
numbers (a week number, a season's ``yearID``: the declaration that would make them the
rows' time), ids that are keys of several tables, a panel's series named by no key, text
whose values have columns of their own (a pizza's type beside its name); and stypes.
"""
from __future__ import annotations

import argparse
import logging
import re
import shlex
import sys
from pathlib import Path

import pandas as pd

from rdl.data import dbfile, ddl, sources
from rdl.data.draft_files import read_table, tables_of, unnested
from rdl.data.draft_implied import (Unheld, implied_lines, implied_names, implied_tables,
                                    unnamed_entities)
from rdl.data.draft_keys import (bare_names, composites, foreign_keys, key_name_score, matching,
                                 pair_share, primary_key, referencing, series_keys)
from rdl.data.database import DataError, EmptyTable
from rdl.data.checks import identifiers, numbered
from rdl.data.states import named_states
from rdl.data.draft_parts import borrowed_times
from rdl.data.draft_times import (calendars_of, details_of, later, older_than_parents, on_export,
                                  seasons, seen_ins, times_of, years)
from rdl.data.periods import looks_like

log = logging.getLogger(__name__)

def draft(folder) -> str:
    """The draft ``schema.yaml`` of ``folder``'s tables (see the module's docstring)."""
    source = folder = Path(folder).expanduser()
    given = dbfile.Declared()
    if dbfile.kind(folder):   # a SQLite or DuckDB file: its declared keys, its tables exported
        given, folder = dbfile.declared(folder), dbfile.exported(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder")
    tables = tables_of(folder)
    if not tables:
        raise DataError(f"{folder}: no CSV, parquet or JSON file in it" + sources.archives(folder)
                        + dbfile.within(folder))
    frames, failed, read_as, empty = {}, {}, {}, []
    beside, named, unread = ddl.beside(folder, tables)   # (DDL beside the files: keys, names)
    for name, file in tables.items():
        try:
            frames[name] = read_table(folder, name, file, read_as, named.get(name))
        except EmptyTable:   # (nothing to learn from, nothing to load: left out, said so)
            empty.append(name)
        except DataError as e:
            failed[name] = str(e)
    tables = {n: f for n, f in tables.items() if n not in empty}
    given = ddl.as_in(beside, frames) if beside.pkeys or beside.fkeys else given
    bare = bare_names(frames)
    def owned(n):   # a column another table's name claims as its key (order_id: orders')
        return lambda col: any(m != n and col in df.columns and df[col].is_unique and
                               key_name_score(col, bare[m]) == 4 for m, df in frames.items())
    single, composite, broken = given.keys_in(frames)
    named_by = referencing(frames, bare)
    keys = {n: single.get(n) or ((None, "") if n in composite else primary_key(
        bare[n], df, owned(n), lambda c, n=n: named_by(n, c))) for n, df in frames.items()}
    pkeys = {n: k for n, (k, _) in keys.items() if k is not None}
    for n, col, child, df in unnested(folder, tables, read_as, pkeys):   # their keys too
        tables[child], frames[child], read_as[child] = None, df, {"unnest": (n, col)}
        bare = bare_names(frames)
        keys[child] = primary_key(bare[child], df, owned(child))
        if keys[child][0] is not None:
            pkeys[child] = keys[child][0]
    composite = {**composites(frames, pkeys), **composite}
    times = {n: times_of(df) for n, df in frames.items()}
    fkeys = {n: foreign_keys(n, df, pkeys, frames, bare, {times[n][0]})
             for n, df in frames.items()}
    for n, (guessed, notes) in fkeys.items():   # what the database declares first
        keys_of = {c: (t, "the database declares it") for c, t in given.fkeys.get(n, {}).items()
                   if t in pkeys or t in composite}
        fkeys[n] = ({**keys_of, **{c: v for c, v in guessed.items() if c not in keys_of}},
                    [note for note in notes if note[0] not in keys_of]
                    + ([broken[n]] if n in broken else []) + given.notes.get(n, []))
    for name, df in frames.items():
        for t, key in composite.items():
            if t != name and (cols := matching(key, frames[t], df)) is not None:
                share = pair_share(df[cols], frames[t][key])
                if share >= 0.5:
                    fkeys[name][0][", ".join(cols)] = (
                        t, f"the composite key of {t}; {share:.0%} of its pairs are keys of it")
    one_link(frames, pkeys, composite, fkeys, times)
    yearly = seasons(frames, composite, fkeys, times, pkeys)   # (their years, times as loaded)
    for (name, col), why in on_export(frames, pkeys, fkeys, times).items():
        times[name][2][col] = ("drop", why)
        fkeys[name][0].pop(col, None)   # (a last editor's key: no link)
    dated = calendars_of(frames, pkeys, times, fkeys)
    calendars = {d[1] for d in dated.values()}   # (date dimensions other tables are dated by)
    rejected = older_than_parents(frames, pkeys, times, fkeys, calendars)
    # the tables dated through a calendar, as if timed by their rows' times (their parts
    # take them: time: {via: ...})
    timed = {n: df.assign(**{dated[n][0]: dated[n][4]}) if n in dated else df
             for n, df in frames.items()}
    as_timed = {n: (dated[n][0], "", t[2]) if n in dated else t for n, t in times.items()}
    taking, parted = borrowed_times(timed, frames, pkeys, times, as_timed, dated, fkeys,
                                    rejected, composite)
    seen = seen_ins(timed, pkeys, as_timed, fkeys, taking)
    untimed = {n: (int(frames[n][c].isna().sum()), len(frames[n])) for n, c in [
        *((n, t[0]) for n, t in times.items() if t[0] is not None and n not in rejected),
        *((n, d[0]) for n, d in dated.items())] if frames[n][c].isna().any()}
    lines = [f"# drafted by python -m rdl.data.draft from {source}: every guess says why;",
             "# check each; then python -m rdl.tasks.suggest "
             f"{shlex.quote(str(source))} prints tasks that train on it",
             *([f"# the DDL beside the files: {unread}"] if unread else []),
             *(["untimed: drop   # rows without a time, which no seed can place, dropped: "
                + ", ".join(f"{n} {k} of {m}" for n, (k, m) in untimed.items())]
               if untimed else []), "tables:"]
    if empty:
        lines.append(f"  # left out, each empty (0 rows): {', '.join(empty)}")
    implying = {}   # tables implied: true, drafted last: name -> the columns of their keys
    implying_as = implied_names({n[0] for _, k in fkeys.values() for n in k
                                 if isinstance(n, Unheld)})
    for name, file in tables.items():
        lines.append(f"  {_yaml(name)}:")
        if read_as.get(name, {}).get("unnest"):
            parent, col = read_as[name]["unnest"]
            lines.append(f"    unnest: {{{_yaml(parent)}: {_yaml(col)}}}   # a row per element "
                         f"of each {parent} row's {col}, keyed and timed by that row")
        elif source == folder:   # (a database file's tables are found by their names)
            lines.append(f"    file: {_yaml(file)}")
        if read_as.get(name, {}).get("columns"):
            lines.append(f"    columns: [{', '.join(read_as[name]['columns'])}]   # the file "
                         "has no header row (its first is data): name its fields, in order")
        if name in failed:
            lines.append("    # not read: " + failed[name].replace("\n", " "))
            continue
        df = frames[name]
        pkey, why = keys[name]
        if pkey is not None:
            lines.append(f"    pkey: {_yaml(pkey)}   # {why}")
        elif name in composite:
            lines.append(f"    pkey: [{', '.join(map(_yaml, composite[name]))}]   # unique and "
                         f"filled in as a pair, all {len(df)} rows (a composite key)")
        time, why, stypes = times[name]
        if read_as.get(name, {}).get("missing"):
            n, words = read_as[name].get("infinite", 0), read_as[name]["missing"]
            lines.append(f"    missing: [{', '.join(map(_yaml, words))}]   # " + (
                f"{n} infinite numbers, which no model takes: read as missing (or drop the column)"
                if n else "placeholders for 'never' or 'unknown' (beyond rdl's years)"))
        if read_as.get(name, {}).get("formats"):
            forms = ", ".join(f"{_yaml(c)}: {f}" for c, f in read_as[name]["formats"].items())
            lines.append(f"    formats: {{{forms}}}   # numbers named as times, sized as times "
                         "since 1970 in that unit (excel: a spreadsheet's serial days)")
        if read_as.get(name, {}).get("clocks"):
            pairs = ", ".join(f"{_yaml(d)}: {_yaml(c)}" for d, c in read_as[name]["clocks"].items())
            lines.append(f"    clocks: {{{pairs}}}   # days, and their times of day by name: "
                         "each date at its time")
        if read_as.get(name, {}).get("assemble"):
            made = ", ".join(f"{_yaml(n)}: [{', '.join(map(_yaml, c))}]"
                             for n, c in read_as[name]["assemble"].items())
            lines.append(f"    assemble: {{{made}}}   # a date's parts by their names, a column "
                         "each: one column of times")
        if name in rejected:
            lines.append(f"    # time: {_yaml(time)}   # not declared: {rejected[name]}")
        elif name in yearly:
            lines.append(f"    time: {yearly[name][0]}   # {yearly[name][1]}")
        elif time is not None:
            lines += [f"    time: {_yaml(time)}   # {why}"] + (
                [f"    # {parted[name]}"] if name in parted else [])
        elif name in dated:
            col, ref, period, start, _ = dated[name]
            lines.append(f"    time: {{column: {_yaml(col)}, calendar: {{table: {_yaml(ref)}, "
                         f"period: {_yaml(period)}, start: {_yaml(start)}}}}}   # dated by "
                         f"the calendar {ref} (one row a day, week or month): each row at "
                         "the end of its period")
        elif name in taking and taking[name][3]:
            col, why, taken, _ = taking[name]
            lines.append(f"    time: {{via: {_yaml(col)}}}   # {why}")
            stypes = {c: v for c, v in stypes.items() if v[0] == "drop"}
            stypes.update(later(df, taken, [c for c in df.columns if c not in stypes and
                                             pd.api.types.is_datetime64_any_dtype(df[c])]))
        elif name in taking:
            lines.append(f"    # time: {{via: {_yaml(taking[name][0])}}}   # {taking[name][1]}")
        elif name in seen:
            other, why, taken = seen[name]
            lines.append(f"    time: {{seen_in: {_yaml(other)}}}   # {why}")
            stypes = {c: v for c, v in stypes.items() if v[0] == "drop"}
            stypes.update(later(df, taken, [c for c in df.columns if c not in stypes and
                                             pd.api.types.is_datetime64_any_dtype(df[c])]))
        else:   # numbers that count periods (a year, a week): the rows' time, once declared
            periods = [(c, d) for c in df.columns if (d := looks_like(str(c), df[c])
                                                      or years(c, df[c]))]
            lines += [f"    # {c}: period numbers? if they are the rows' time: {d}"
                      for c, d in periods[:1]]
        keys_of, notes = fkeys[name]
        if name in dated:   # the calendar's period: the time above, no foreign key
            keys_of = {c: v for c, v in keys_of.items() if c != dated[name][0]}
        parts = {c for key in keys_of for c in key.split(", ")}   # a composite key's columns
        unheld = {c: (implying_as[c], n[1]) for n in notes
                  if isinstance(n, Unheld) and (c := n[0]) not in parts
                  and c not in composite.get(name, []) and c != time and not years(c, df[c])
                  }   # keys of tables implied: true, below
        chained, attributes, totals = implied_tables(name, df, list(unheld), {
            pkey, time, *parts, *stypes}, time)   # (chained: b -> a, one b per a: told)
        if keys_of or unheld:
            lines.append("    fkeys:")
            lines += [f"      {_yaml(c)}: {_yaml(t)}   # {why}"
                      for c, (t, why) in {**keys_of, **unheld}.items()]
        stypes.update({c: ("drop", why) for c, why in totals.items() if c not in stypes})
        if name in calendars:   # a calendar's own dates: its day's
            stypes.update({c: ("timestamp", "the calendar's: its day's week, quarter or year "
                                            "(known that day)") for c, (st, _) in stypes.items()
                           if st in ("event", "drop") and c in df and
                           pd.api.types.is_datetime64_any_dtype(df[c])})
        later_events = {c: why for c, (st, why) in stypes.items() if st == "event"}
        stypes.update({c: ("drop", why) for c, why in details_of(df, later_events, {
            pkey, time, *composite.get(name, []), *parts, *unheld, *stypes}).items()})
        stypes.update({c: ("drop", why) for c, why in identifiers(df, {
            pkey, time, *composite.get(name, []), *(p for k in keys_of for p in k.split(", ")),
            *unheld, *stypes}).items()})
        stypes.update({c: ("drop", "a number of the composite key that names, no quantity "
                                   "(summed or scaled it means nothing)")
                       for c in composite.get(name, []) if c not in parts and c != time
                       and c not in stypes and c in df and numbered(c, df[c])})
        keyed = pkey is not None or name in composite   # (an event's row references its row)
        stypes = {c: (st, why) if st != "event" else ("drop", why + "; dropped: the table has "
                                                      "no key for its events")
                  for c, (st, why) in stypes.items() if st != "event" or not keyed}
        if later_events and keyed:
            lines.append(f"    events: [{', '.join(map(_yaml, later_events))}]   # "
                         + "; ".join(f"{c}: {why}" for c, why in later_events.items()))
        if stypes:
            lines.append("    stypes:")
            lines += [f"      {_yaml(c)}: {st}   # {why}" for c, (st, why) in stypes.items()]
        lines += [f"    # {note[1]}" for note in notes if note[0] not in parts
                  and not isinstance(note, Unheld)
                  and not (note[0] in df.columns and years(note[0], df[note[0]]))]
        lines += [f"    # {n}" for n in series_keys(df, time, {*parts, *(c for c, _ in notes)},
                                                    [*frames, *bare.values()])]
        lines += [f"    # {n}" for c, n in named_states(df, {pkey, time, *keys_of, *stypes,
                                                               *later_events, *unheld})]
        lines += [f"    # {n}" for n in unnamed_entities(df, {pkey, time, *parts, *stypes, *(
            read_as.get(name, {}).get("clocks") or {}).values()}, {*unheld, *sum(
                attributes.values(), [])})]
        for c, (t, _) in unheld.items():
            implying.setdefault(t, []).append((name, c, attributes[c], {
                b: unheld[b][0] for b, a in chained.items() if a == c}))
    return "\n".join(lines + implied_lines(implying, _yaml)) + "\n"


def one_link(frames: dict, pkeys: dict, composite: dict, fkeys: dict, times: dict) -> None:
    """Two tables keyed alike, each key a foreign key to the other's (a row and its
    extension, one to one): one link is enough, kept in place by the table that has no
    time of its own (it takes the other's), else by the one of fewer rows (the extension),
    else by the later name."""
    key = {n: pkeys.get(n) or ", ".join(composite.get(n, [])) for n in frames}
    for a in sorted(frames):
        for b in sorted(frames):
            if not a < b or not key[a] or fkeys[a][0].get(key[a], (None,))[0] != b \
                    or fkeys[b][0].get(key[b], (None,))[0] != a:
                continue
            rank = lambda n: (times[n][0] is None, -len(frames[n]), n)   # noqa: E731
            keeps = max((a, b), key=rank)
            drops = a if keeps == b else b
            del fkeys[drops][0][key[drops]]
            fkeys[drops][1].append((key[drops], f"{_yaml(key[drops])}: {keeps}: one to one "
                                    f"with {keeps}, whose key references this table's (one "
                                    "link between them is enough)"))


def _yaml(name: str) -> str:
    """A name as YAML writes it plainly, or quoted where it must be."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_ .()-]*", name) and name.strip() == name \
            and name.lower() not in ("null", "true", "false", "yes", "no", "on", "off", "y", "n"):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.data.draft", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", help="a folder of files, or a SQLite or DuckDB database file")
    p.add_argument("--write", action="store_true", help="write FOLDER/schema.yaml (a "
                   "database file's: <stem>.schema.yaml beside it), not over one already there")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    try:
        text = draft(args.folder)
    except DataError as e:
        sys.exit(f"error: {e}")
    if not args.write:
        print(text, end="")
        return
    source = Path(args.folder).expanduser()
    target = dbfile.schema_beside(source) if dbfile.kind(source) else source / "schema.yaml"
    if target.exists():
        sys.exit(f"error: {target} exists; the draft is printed without --write")
    tmp = target.with_name(f".{target.name}.draft")
    tmp.write_text(text)
    tmp.replace(target)
    print(f"draft written to {target}: check every line, then python -m rdl.tasks.suggest "
          f"{shlex.quote(str(source))} prints tasks that train on it")


if __name__ == "__main__":
    main()
