"""Tasks to train on a database: ``python -m rdl.tasks.suggest DIR [OVERRIDE ...]``.

Reads the database as ``python -m rdl.train data=folder data.db.path=DIR`` does (or, with
no DIR, as the overrides say: ``data=nycflights13``) and prints, for each keyed table
whose rows have events (:mod:`rdl.tasks.events`: rows of timed tables that reference it),
the commands that train ``task=events`` (active, count, a sum) and ``task=events-links``
on it, with a window and split times that fit the data's times: test the last whole
window before the data's end, val the one before, train every window before that.
"""
from __future__ import annotations

import argparse
import logging
import re
import shlex
import sys

import numpy as np
import pandas as pd

from rdl.data.calendars import day_column
from rdl.data.database import Database, DataError
from rdl.data.days import times_of_day
from rdl.tasks.kinds import FEW
from rdl.tasks.suggest_windows import (BACKTESTS, COUNTS, before_gap, split_dates, thin_tail,
                                      window_for)
from rdl.tasks.window import calendar_day, parse_window, shift
from rdl.tasks.events import event_columns
from rdl.tasks.paths import dotted, entities_of, events_setting, references, schema_path

#: the entity tables whose tasks are printed: a warehouse's 24 tables made 800 commands
TABLES = 5
#: the share of entities whose events fall in two windows or more, for the events to count
RECURRING = 0.2
#: a numeric column of events named so is summed (``label=sum``); suggested in this
#: order, at most two with different words: a row's total before its units, before a
#: unit's price or cost (a warehouse's sale: ``ss_net_paid``, not ``ss_wholesale_cost``)
AMOUNTS = ("spend", "paid", "payment", "revenue", "amount", "total", "sales", "value", "fare",
           "profit", "quantity", "qty", "units", "price", "cost")
AMOUNT = re.compile("|".join(AMOUNTS), re.I)


def events_of(db: Database, columns: dict) -> pd.DataFrame:
    """``(entity, time)`` of the rows of each ``table: column`` (or path) of ``columns``."""
    return pd.concat([pd.DataFrame({"entity": entities_of(db, t, c), "time": db[t].df[
        db[t].time_col]}).dropna() for t, c in columns.items()], ignore_index=True)


def recurring(db: Database, table: str, col, window: str) -> bool:
    """Whether the events of ``table`` recur: at least :data:`RECURRING` of the entities
    with events have them in two windows or more (an order's items, all at its time, do
    not: nothing to predict of an order from them)."""
    df = events_of(db, {table: col})
    if df.empty:
        return False
    bins = (df["time"] - df["time"].min()) // parse_window(window)
    return float((bins.groupby(df["entity"].to_numpy()).nunique() > 1).mean()) >= RECURRING


def _of_time(table) -> bool:
    """Whether a table's rows are days (a date dimension) or times of a day
    (:func:`rdl.data.days.times_of_day`): no entities, nor targets to rank."""
    return len(table) >= 365 and day_column(table.df, table.pkey) is not None or \
        times_of_day(table.df)


def named_once(db: Database, table: str, col: str) -> bool:
    """Whether most of the rows that ``table``'s column ``col`` names are named by one
    of its rows alone (a return's sale; a demographic profile of millions): no catalogue
    whose rows an entity's events name again, nothing to rank (an item sold many times)."""
    counts = db[table].df[col].value_counts()
    return bool(len(counts)) and float(counts.median()) <= 1


def born_with(db: Database, table: str, col: str, ref: str) -> bool:
    """Whether the ``ref`` rows ``table``'s column ``col`` names mostly begin at the time
    of the event that names them (an order's items name the order): such a target is new
    at its event, so nothing ranks it before."""
    t, target = db[table], db[ref]
    if not target.time_col:
        return False
    df = t.df[[col, t.time_col]].dropna()
    born = target.df[target.time_col].to_numpy()[df[col].to_numpy(dtype="int64")]
    return bool(np.mean(born >= df[t.time_col].to_numpy()) >= 0.5) if len(df) else False


def same_count(events: pd.DataFrame, window: str, test) -> bool:
    """Whether every entity with events in the window after the printed command's val and
    test times has as many as every other (a series' rows, one a month): ``label=count``
    is then one value, and the events' own values are what there is to predict."""
    times = events["time"]
    for t in (pd.Timestamp(test), shift(pd.Timestamp(test), window, -1)):
        n = events["entity"][(times > t) & (times <= shift(t, window))].value_counts()
        if n.nunique() > 1:
            return False
    return True


def _sums(table, named: bool = True) -> list[str]:
    """The numeric columns of ``table`` that a sum adds up: named as amounts
    (:data:`AMOUNT`), or, where not ``named``, any but its keys, time, row numbers (R's
    ``rownames``: 1, 2, 3, ...) and its time's parts (a year, a month, a day column beside
    the date), a series' values."""
    df, keys = table.df, {table.time_col, *table.fkeys, *np.atleast_1d(table.pkey or [])}
    return [c for c in df.columns if c not in keys and (AMOUNT.search(str(c)) or not named
                                                        and not _row_number(df[c])
                                                        and not _time_part(df[c], table))
            and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]


def _first_sums(table, named: bool = True) -> list[str]:
    """The two of :func:`_sums` a suggestion sums: in the file's order where not ``named``
    (a series' values), else by :data:`AMOUNTS`' order of the first word each names, the
    second of another word (``ss_net_paid_inc_tax`` repeats ``ss_net_paid``)."""
    found = _sums(table, named)
    if not named:
        return found[:2]
    word = {c: min(AMOUNTS.index(w.lower()) for w in AMOUNT.findall(str(c))) for c in found}
    ranked = sorted(found, key=word.get)   # (stable: the file's order among equals)
    return ranked[:1] + [c for c in ranked if word[c] != word[ranked[0]]][:1]


def _time_part(values: pd.Series, table) -> bool:
    """Whether whole numbers are the year, month, day, hour or weekday of the rows' time
    in 95 % of the rows, or more (a few may have been mended: a day 31 in November)."""
    if not table.time_col or not pd.api.types.is_integer_dtype(values):
        return False
    t = table.df[table.time_col].dt
    return any((values.to_numpy() == part.to_numpy()).mean() >= 0.95
               for part in (t.year, t.month, t.day, t.hour, t.day_of_week, t.day_of_week + 1))


#: rdl's default fan-outs (DataSettings.num_neighbors, a floor above the tasks: tests/
#: test_imports.py); a link command through a path extends them
FAN_OUTS = (128, 64)


def _eval_k() -> int:
    from omegaconf import OmegaConf

    from rdl.paths import CONF_DIR
    return int(OmegaConf.load(CONF_DIR / "task" / "events-links.yaml").eval_k)


#: the targets a link task ranks (``task.eval_k``, as its config says): a target table of
#: no more rows is no link task, its top is every row
EVAL_K = _eval_k()


def _reach(db: Database, entity: str, target: str) -> list[str]:
    """The settings a link model needs to reach ``target`` from ``entity`` where it lies
    further than its two layers (a chained schema: customers, invoices, lines, stocks):
    a layer a hop, rdl's default fan-outs and half the last for each hop beyond them. On
    H&M's purchases so chained, the model alone found half as much with two layers, as
    much as unchained with three (docs/results.md, "Chained entities")."""
    path = schema_path(db, entity, target)
    fans = list(FAN_OUTS)
    if path is None or len(path) - 1 <= len(fans):
        return []
    while len(fans) < len(path) - 1:
        fans.append(max(1, fans[-1] // 2))
    return [f"model.num_layers={len(fans)}", f"data.num_neighbors=[{','.join(map(str, fans))}]"]


def _naming(db: Database, table: str, entity: str) -> list[tuple[str, str]]:
    """``(timed table, its key to table)`` for each table whose rows name an event of
    ``table`` by one foreign key and none ``entity`` (an invoice's lines, an order's
    items): their amounts add up to the entity's through the event (a customer's spend)."""
    return [(u, refs[0]) for u, tab in db if u not in (table, entity) and tab.time_col
            and len(refs := references(db, u, table)) == 1 and not references(db, u, entity)]


def _row_number(values: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(values) and bool((np.diff(values.to_numpy()) == 1).all())


def suggestions(db: Database, base: list[str], tables: int = 0) -> list[str]:
    """The lines :func:`main` prints: per entity table with recurring events, a comment
    and the commands that train its tasks; the tables whose splits rest on the most rows
    first (a warehouse's customers before its one call centre; those on too few after), the
    first ``tables`` of them where that is not 0, and a line naming the rest."""
    blocks = [(name, *_block(db, name, table, base)) for name, table in db
              if isinstance(table.pkey, str) and not _of_time(table)]
    if not any(line.startswith("python") for _, _, lines in blocks for line in lines):
        raise DataError("no table holds recurring events of a keyed table (rows of a timed "
                        "table with a foreign key to it, in two windows or more for a fifth "
                        "of its rows): a task needs its own SQL (the README's 'Your own "
                        "configs and tasks')" + _unheld(db))
    # (those on few rows after, in the schema's order: their counts rank nothing)
    ranked = sorted((b for b in blocks if b[1] is not None), key=lambda b: -b[1] * (b[1] >= FEW))
    shown = ranked[:tables] if tables else ranked
    lines = [line for _, _, block in shown for line in block]
    rest = [name for name, _, _ in ranked[len(shown):]]
    if rest:
        lines += ["", f"# {len(rest)} more tables with events, fewer rows in their splits: "
                  f"{', '.join(rest)} (--tables 0 prints every one)"]
    lines += [line for _, score, block in blocks if score is None for line in block]
    return lines[1:]


def _block(db: Database, name: str, table, base: list[str]) -> tuple[int | None, list[str]]:
    """``(score, lines)`` of the entity table ``name``: the rows its splits rest on (the
    evidence of :func:`rdl.tasks.suggest_windows.evidence` of what its label counts; None
    where it has no task) and the lines that say so, each task's command."""
    try:
        found = event_columns(name, db, name, None)   # (quietly: its log is INFO)
    except DataError:
        found = {}
    # tables of events that reference it by several columns: a person says which
    twice = {t: refs for t, tab in db if tab.time_col and t != name
             and len(refs := references(db, t, name)) > 1}
    notes = [f"# {t} references {name} by {', '.join(refs)}: task.events={{{t}: {refs[0]}}} "
             f"takes its rows by {refs[0]} as events of {name}" for t, refs in twice.items()]
    empty = (None, ["", f"# {name} ({len(table):,} rows):", *notes] if notes else [])
    if not found:
        return empty
    # (once: every table's recurrence by it)
    first = window_for(events_of(db, found)["time"].to_numpy())
    columns = {t: c for t, c in found.items() if recurring(db, t, c, first)}
    if not columns:
        return None, []
    # the window and split times of the events it takes
    events, thin = thin_tail(events_of(db, columns), first)
    born = table.df[table.time_col] if table.time_col else \
        pd.Series(pd.NaT, index=table.df.index, dtype="datetime64[ns]")
    events, fit, one_class, cut = before_gap(events, born)
    cut = thin + cut
    if fit is None:
        return None, []
    window, seeds, rests = fit
    times = events["time"]
    dates = split_dates(times.min(), times.max(), window, calendar_day(times))
    run = ["python", "-m", "rdl.train", *base]
    settings = [f"task.entity_table={name}", f"task.window={window}",
                f"task.val_timestamp={dates[0]}", f"task.test_timestamp={dates[1]}"]
    cmd = lambda *a: shlex.join([*run, *a[:1], *settings, *a[1:]])   # noqa: E731
    # every entity a seed where those with events in the window before are too few
    every = [] if seeds == "active" else ["task.seeds=all"]
    # the events a task's default would take, less those that do not recur
    only = [] if len(columns) == len(found) else [events_setting(columns)]
    lines = ["", f"# {name} ({len(table):,} rows): events in "
             + ", ".join(f"{dotted(t, c)} ({len(db[t]):,})" for t, c in columns.items())
             + f"; times {times.min()} to {times.max()}", *cut]
    series = one_class and same_count(events, window, dates[1]) and any(
        _sums(db[t], named=False) for t in columns)
    if one_class:
        lines.append(f"# label=active is one class in the val or test split at every "
                     f"window (every seed of {name} has events in the window after, or "
                     "none has): " + ("label=count one value too (as many events in each "
                                      "window): their values' sums" if series else
                                      "its counts only"))
    score = rests[COUNTS["count" if one_class else "active"]]
    if score < FEW:   # as rdl.train's report
        whom = "with events in the window before a split time" if seeds == "active" \
            else "by a split time"
        lines.append(f"# few rows at every window: at {window}, the median of "
                     f"{BACKTESTS} backtests' thinner split has {rests[0]:,} {name} "
                     f"{whom}, {rests[1]:,} of them with events in the window after; "
                     "judge over many windows: python -m rdl.train -m ... "
                     "backtest=0,1,2,3,4, then python -m rdl.backtest")
    if rests[3]:   # (rdl.tasks.kinds.one_value: such a val chooses nothing)
        lines.append(f"# every label one value at {len(rests[3])} of the split times of "
                     f"backtest=0,...,{BACKTESTS - 1} ({', '.join(rests[3])}: no "
                     f"{name} with events in the window after, or all): a run whose val "
                     "it is chooses nothing on it, one whose test it is scores what "
                     "predicts that value")
    lines += [cmd("task=events", *only, *every)] if not one_class else []
    lines += [cmd("task=events", *only, *every, "task.label=count")] if not series else []
    few = set()
    for t, col in columns.items():
        one = [] if len(found) == 1 else [events_setting({t: col})]
        lines += [cmd("task=events", *one, *every, "task.label=sum", f"task.value={v}")
                  for v in _first_sums(db[t], named=not series)]
        events_of_t = [(t, col, f"task.events={t}")] if isinstance(col, str) else []
        for u, up in _naming(db, t, name) if isinstance(col, str) else ():
            lines += [cmd("task=events", events_setting({u: [up, col]}), *every,
                          "task.label=sum", f"task.value={v}") for v in _first_sums(db[u])]
            events_of_t.append((u, up, events_setting({u: [up, col]})))
        for u, by, events in events_of_t:   # (by: the events' key to the entity, or its path's)
            targets = [(c, ref) for c, ref in db[u].fkeys.items() if c != by and
                       isinstance(db[ref].pkey, str) and not _of_time(db[ref])
                       and not born_with(db, u, c, ref) and not named_once(db, u, c)]
            for c, ref in targets:
                if len(db[ref]) <= EVAL_K:
                    few.add(ref)
                    continue
                several = sum(r == ref for _, r in targets) > 1
                lines.append(cmd("task=events-links", events, f"task.target_table={ref}",
                                 *([f"task.target_key={c}"] if several else []),
                                 *_reach(db, name, ref)))
    if few:
        lines.append(f"# links to {', '.join(sorted(few))}: {EVAL_K} rows or fewer each, a "
                     f"top {EVAL_K} (task.eval_k) is every one of them: left out")
    return score, lines + notes


def _unheld(db: Database) -> str:
    """What the error says of timed tables' columns named as keys that repeat and that no
    table holds (a flat export's customer ids): each an entity that an ``implied: true``
    table would make, with events."""
    from rdl.data.draft_implied import implied_name, implied_spec, unnamed_entities
    from rdl.data.draft_times import norm
    cols = [(t, c) for t, tab in db if tab.time_col for c in tab.df.columns
            if c != tab.pkey and c not in tab.fkeys and norm(c).endswith(("id", "key"))
            and tab.df[c].nunique() < tab.df[c].notna().sum()]
    if not cols:   # (text named as no key, with columns of its own: a pizza's name)
        notes = [f"; {t}.{note}" for t, tab in db if tab.time_col for note in unnamed_entities(
            tab.df, {tab.pkey, tab.time_col, *tab.fkeys}, ())]
        return notes[0] + " (the draft's comments say so)" if notes else ""
    t, c = cols[0]
    tab = db.tables[t]
    spec = implied_spec(tab.df, c, {tab.pkey, tab.time_col, *tab.fkeys})
    return (f"; {', '.join(f'{t}.{c}' for t, c in cols)}: keys of no table, repeated; if "
            f"they are entities, a table of them has their rows as events: {spec} in the "
            f"schema's tables, and fkeys: {{{c}: {implied_name(c)}}} on {t} "
            "(the draft's comments say so of each)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.tasks.suggest", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", help="a folder with its schema.yaml, or a SQLite or "
                   "DuckDB file (data=folder data.db.path=PATH)")
    p.add_argument("overrides", nargs="*", help="rdl.train's overrides that read the database "
                   "(data=nycflights13, data.db.*=...)")
    p.add_argument("--tables", type=int, default=TABLES, metavar="N", help="the tasks of "
                   f"the N tables whose splits rest on the most rows (default {TABLES}; 0: "
                   "every table's)")
    args = p.parse_args(argv)
    if args.path and "=" in args.path:   # no path: the overrides say which data
        args.overrides, args.path = [args.path, *args.overrides], None
    base = (["data=folder", f"data.db.path={args.path}"] if args.path else []) + args.overrides
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from hydra.errors import HydraException, InstantiationException
    try:
        print("\n".join(suggestions(database(base), base, args.tables)))
    except InstantiationException as e:   # what the data's loader raised, as rdl.train says it
        if not isinstance(e.__cause__, (DataError, FileNotFoundError, ValueError)):
            raise
        sys.exit(f"error: {e.__cause__}")
    except (DataError, HydraException) as e:   # (HydraException: an override that fails)
        sys.exit(f"error: {e}")


def database(overrides: list[str]) -> Database:
    """The database ``python -m rdl.train`` reads with ``overrides`` (``rdl.load_database``'s
    steps: rdl's config composed, its ``data.db`` made)."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from rdl.paths import CONF_DIR
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides)
    return instantiate(cfg.data.db, _convert_="all")


if __name__ == "__main__":
    main()
