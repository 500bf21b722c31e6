"""The draft's times (:mod:`rdl.data.draft`): which column is a table's time, what its
other columns of times are, and which tables take their time from the rows they
reference, decided as the loader's time checks (:mod:`rdl.data.leaks`) would judge them:

* a table's time: its column of times whose name says a row began then (``created``,
  ``timestamp``, ``date``; of several alike, the earliest), never a birth, an end, a
  deadline or a change (``last_update``);
* its other columns of times: a change time dropped (as a feature it tells of the
  future); one after the rows' time in 1 % of them or more a later event, a table of its
  own (``events: [return_date]``), or dropped where its name says it is a last or final
  one (``last_order``), or kept where its name says it was known ahead (``required_date``);
* a table whose time is after most rows that reference it (customers made when the data
  was migrated) is static, its time dropped;
* a table of facts without a time of its own whose keys all match timed rows takes their
  time (``time: {via: order_id}``, :mod:`rdl.data.inherit`): :mod:`rdl.data.draft_parts`;
* a table keyed by a year (``pkey: [yearID, teamID]``), or referencing such a key, is
  timed by it (:func:`seasons`); elsewhere a column of years is told the declaration;
* a column that is a total or average of later rows, computed on export, is dropped, as
  are tallies of attention on tables whose rows have events (:mod:`rdl.data.tallies`)
  and foreign keys named as the last row to touch theirs (:func:`on_export`).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rdl.data.keys import comparable
from rdl.data.calendars import day_column
from rdl.data import leaks, tallies
from rdl.data.database import Database, Table
from rdl.data.leaks import BIRTH, LATER_SHARE
from rdl.data.states import later_flags
from rdl.data.names import name_words

#: names of time columns, most likely the row's own time first
TIME_WORDS = ("creat", "timestamp", "time", "date", "ts", "at", "day", "start", "signup",
              "registered", "joined", "opened", "event")
#: words that start the names of times that are no row's own (a birth, an expiry, an end)
NOT_ROW_TIMES = (*BIRTH, "death", "died", "expir", "end", "due", "until",
                 "last", "latest", "final", "recent")
#: words that start the names of times known to be last only at the export (a last order,
#: a final game): no event a seed could have seen happen as such
SUMMARY_TIMES = ("last", "latest", "final", "recent")
#: words that start the names of times a row changed at (``last_update``, ``ModifiedDate``)
CHANGE_TIMES = ("updat", "modif", "chang", "edit", "load", "etl", "ingest", "refresh", "sync",
                "extract", "export")   # (when the file was written: extracted_at)
#: words that make a name a row's beginning whatever else it says (a version's valid_from)
BEGIN_WORDS = ("from", "start", "begin", "since")
#: words that start the names of times known before they come (a due date, an estimate)
AHEAD = ("due", "expir", "until", "valid", "plan", "schedul", "estimat", "expect", "requir",
         "deadline", "target", "promis", "limit")


def norm(name: str) -> str:
    """A name's letters and digits, lower case (``Order_ID``: ``orderid``)."""
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def times_of(df: pd.DataFrame) -> tuple[str | None, str, dict[str, tuple[str, str]]]:
    """A table's time and why, and the stypes its other columns of times need (the
    loader stops on a timed table's column after its rows' time: :mod:`rdl.data.leaks`)."""
    times = [c for c in df.columns if pd.api.types.is_datetime64_any_dtype(df[c])]
    words = {c: name_words(c) for c in times}
    stypes = {c: ("drop", "when the row last changed or was exported, not when it began: "
                          "as a feature it tells of the future") for c in times
              if any(w.startswith(CHANGE_TIMES) for w in words[c])}
    begins = [c for c in times if c not in stypes and "validto" not in norm(c) and (
        any(w in BEGIN_WORDS for w in words[c])
        or not any(w.startswith(NOT_ROW_TIMES + AHEAD) for w in words[c]))]
    if not begins:
        return None, "", {**stypes, **_static(times, stypes)}
    named = lambda c: min((i for i, w in enumerate(TIME_WORDS) if w in norm(c)),  # noqa: E731
                          default=len(TIME_WORDS))
    tied = [c for c in begins if named(c) == min(map(named, begins))]
    # then the earliest in most rows (a median of the rows holding one misleads: Northwind's
    # 21 orders not shipped yet are the last ones, so the shipped dates' median is earlier)
    first = df[tied].min(axis=1)
    col = max(tied, key=lambda c: float((df[c] <= first).mean()))
    why = "its only column of times" if len(times) == 1 else \
        f"of its columns of times {times}, by its name" + (
            f" and the earliest in most rows (of {tied})" if len(tied) > 1 else "")
    stypes.update(later(df, df[col], [c for c in times if c != col and c not in stypes]))
    ends = [c for c, (st, _) in stypes.items() if st in ("event", "drop")]
    stypes.update({f: ("drop", f"says whether {c} is known in {s:.0%} of rows: what comes "
                               "after the row's time") for f, (c, s) in
                   later_flags(df, df[col], ends, skip={col, *stypes}).items()})
    gone = int(df[col].isna().sum())
    return col, why + (f"; missing in {gone} rows: dropped (untimed: drop, above)" if gone
                       else ""), stypes


def later(df: pd.DataFrame, time: pd.Series, columns: list[str]) -> dict:
    """The stypes of columns of times after the rows' ``time`` in 1 % of rows or more
    (the loader stops on them): known ahead by their name (a due date), else events of
    their own (``events:``, :mod:`rdl.data.events`; ``event`` here)."""
    out = {}
    for c in columns:
        both = df[c].notna() & time.notna()   # (the loader's share: rows of both times)
        share = (df[c] > time).sum() / max(int(both.sum()), 1)
        if share < LATER_SHARE:
            continue
        words = name_words(c)
        # a version's end that is the next version's start (a dimension's valid_to, as
        # warehouses keep history): set when the next began, whatever its name says
        ends = df[c].dropna()
        ahead = any(w.startswith(AHEAD) for w in words)
        hits = (ends.isin(set(time.dropna())) & (ends != time[ends.index])).mean() \
            if len(ends) else 0.0   # (another row's time: not its own, where it equals)
        versions = len(ends) > 0 and (hits - _by_chance(time, ends) >= 0.5 or (
            (ahead or hits >= 0.5) and _next_versions(df, time, df[c])))
        out[c] = ("timestamp", f"after the row's time in {share:.0%} of rows, known when the "
                               "row began, by its name") if not versions and ahead else (
            "drop", f"after the row's time in {share:.0%} of rows: a last or final time, "
                    "known to be last only when the data was exported (a seed would learn "
                    "that nothing follows)") if any(
            w.startswith(SUMMARY_TIMES) for w in words) else (
            "event", f"after the row's time in {share:.0%} of rows: " + (
                "the start of another row, its next version (history kept as versions): "
                "set when that began" if versions else "a later event") + ", a table of its "
                "own that seeds see once it happened (known when the row began, a due date: "
                "stypes timestamp)")
    return out


def _by_chance(time: pd.Series, ends: pd.Series) -> float:
    """The share of ``ends`` among the rows' times by chance: for dates (midnights), the
    share of the days in their span that are some row's time (TPC-H's 60,000 lines over
    2,400 days: each day some line's, so a ship date is one by chance); else 0."""
    t = time.dropna()
    if not len(t) or (t != t.dt.normalize()).any() or (ends != ends.dt.normalize()).any():
        return 0.0
    lo, hi = ends.min(), ends.max()
    return t[t.between(lo, hi)].nunique() / ((hi - lo).days + 1)


#: the last words of the names of the columns that name what a version is of (a
#: customer's natural key, beside the version's own surrogate key)
_ID_WORDS = ("id", "key", "code", "no", "nr", "number", "sku")


def _next_versions(df: pd.DataFrame, time: pd.Series, ends: pd.Series) -> bool:
    """Whether ``ends`` end each row where the next row of the same thing begins (a column
    of repeated ids names the thing, a customer_id): in 90 % of the rows that have a next,
    at its start or up to a day before (Kimball's ``valid_to``, the next ``valid_from``
    less a day or a second), so set when the next version began."""
    for c in df.columns:
        s = df[c]
        words = name_words(c)
        if not words or words[-1] not in _ID_WORDS or s.dtype.kind in "fMmb" or \
                not 1 < s.nunique() < s.notna().sum():
            continue
        f = pd.DataFrame({"k": s, "t": time, "e": ends}).dropna(subset=["k", "t"])
        f = f.sort_values(["k", "t"], kind="stable")
        gap = (f.groupby("k", sort=False)["t"].shift(-1) - f["e"]).dropna()
        if len(gap) >= 2 and gap.between(pd.Timedelta(0), pd.Timedelta(days=1)).mean() >= 0.9:
            return True
    return False


def _static(times: list[str], stypes: dict) -> dict:
    """The stypes of a static table's columns of times, which every seed sees (the loader
    stops on those in the data's span): features where known from the start (a birth, a
    deadline), else dropped (an end, a last order: what comes after a seed)."""
    return {c: ("timestamp", "known from the start, by its name") if any(
                w.startswith(BIRTH + AHEAD) for w in name_words(c)) else (
                "drop", "a static table's: an end or a summary of later events (a last "
                        "order), which every seed would see") for c in times if c not in stypes}


def years(col: str, values: pd.Series) -> str | None:
    """The declaration that times rows by a column of years (``yearID``, ``season``), which
    the loader's period rule leaves alone (a model year is a feature): a row about a year
    is known at its end."""
    v = values.dropna()
    if not ({"year", "yr", "season"} & set(name_words(col))) or not len(v) or \
            not pd.api.types.is_numeric_dtype(v) or not (v % 1 == 0).all() or \
            not v.between(1800, 2200).all():
        return None
    return (f"time: {{column: {col}, unit: year, origin: {int(v.min())}-01-01, "
            f"first: {int(v.min())}}}")


def details_of(df: pd.DataFrame, events, skip) -> dict[str, str]:
    """Columns named as details of a later event, their name's first word its own
    (``deathCity`` beside ``death_date``, in the Lahman databank's people): filled only
    once it happened, they tell each seed of it before (a player's death, so his last
    season): column -> why it is dropped (but ``skip``: keys, times, declared)."""
    out, firsts = {}, [name_words(str(c))[:1] for c in df.columns]
    for e in events:
        words = [w for w in name_words(e) if w not in ("date", "at", "time", "on", "ts", "dt")]
        if len(words) != 1 or 2 * firsts.count(words) > len(firsts):
            continue   # (review_answer_timestamp: the table's prefix, review_, names them all)
        for c in df.columns:
            if c != e and c not in skip and name_words(str(c))[:1] == words:
                out[c] = (f"a detail of the later event {e}: filled once it happened, it tells "
                          "each seed of it before")
    return out


def year_ends(years: pd.Series) -> pd.Series:
    """Each year's end, the next one's first day, as ``unit: year`` times a row."""
    return pd.to_datetime((years + 1).astype("Int64").astype(str) + "-01-01", errors="coerce")


def _after(df: pd.DataFrame, key: str, year: str, parent: pd.DataFrame, pkey: str,
           time: str) -> bool:
    """Whether most of ``df``'s rows' years end after the time of the ``parent`` row their
    ``key`` names (an award after a debut; not college years, before it)."""
    values, keys = comparable(df[key], parent[pkey])
    at = pd.Index(keys).get_indexer(values)
    begun = pd.Series(parent[time].to_numpy()[np.maximum(at, 0)]).where(at >= 0)
    ends = year_ends(df[year]).reset_index(drop=True)
    known = begun.notna() & ends.notna()
    return bool(known.any()) and float((ends[known] > begun[known]).mean()) > 0.5


def seasons(frames: dict, composite: dict, fkeys: dict, times: dict,
            pkeys: dict) -> dict[str, tuple]:
    """Tables without a time keyed by a year (Lahman's team seasons, ``pkey: [yearID,
    teamID]``; a country's year in a panel), those referencing such a key (a player's
    season with a team), and those naming a timed row with one column named only as a
    year (``yearID``, ``season``; not ``model_year``), most of them after that row began
    (a player's award after his debut; not his college years): rows about a year, each
    known at the year's end, as ``unit:
    year`` times them. Each such table's year column becomes those times in ``frames`` and
    its time in ``times`` (for the draft's later rules); table -> (its declaration, why)."""
    def year(n, c):
        return times[n][0] is None and c in frames[n] and years(c, frames[n][c]) is not None
    keyed = {n: c for n, cols in composite.items()
             if (c := next((c for c in cols if year(n, c)), None))}
    found = {n: (c, f"{c} is a year in its key") for n, c in keyed.items()}
    for n, (keys_of, _) in fkeys.items():
        for key, (t, _) in keys_of.items():
            cols = key.split(", ")
            if n not in found and t in keyed and len(cols) == len(composite[t]) and \
                    year(n, c := cols[composite[t].index(keyed[t])]):
                found[n] = (c, f"{c} is a year in its key to {t}")
    for n, (keys_of, _) in fkeys.items():   # (a player's award of a year)
        named = [c for c in frames[n].columns if year(n, c) and
                 set(name_words(str(c))) - {"id"} in ({"year"}, {"yr"}, {"season"})]
        for key, (t, _) in keys_of.items():
            if n not in found and len(named) == 1 and ", " not in key and pkeys.get(t) \
                    and times[t][0] is not None and _after(frames[n], key, named[0],
                                                           frames[t], pkeys[t], times[t][0]):
                found[n] = (named[0], f"{named[0]}: a year after its {t} row began, in "
                            "most rows")
    out = {}
    for n, (c, why) in found.items():
        out[n] = (years(c, frames[n][c]).removeprefix("time: "), f"{why}: a row about a "
                  "year, known once it is over (each at its end)")
        frames[n] = frames[n].assign(**{c: year_ends(frames[n][c])})
        times[n] = (c, "", times[n][2])
    return out


def older_than_parents(frames: dict, pkeys: dict, times: dict, fkeys: dict,
                       calendars=()) -> dict:
    """Tables whose drafted time is after most rows that reference them (an account made
    when the data was migrated, after its history): no time their rows began, so they
    are static (:func:`rdl.data.leaks.future_references`); table -> why, their time's
    column then a feature's stype (dropped: a time from the rows' future)."""
    rejected = {}
    for name, df in frames.items():
        mine = times[name][0]
        for col, (ref, _) in fkeys[name][0].items():
            theirs = times[ref][0] if ref in times else None
            if mine is None or theirs is None or ref == name or ", " in col or \
                    ref in calendars:   # (a calendar that dates other tables: by its days)
                continue
            values, keys = comparable(df[col], frames[ref][pkeys[ref]])
            pos = pd.Index(keys).get_indexer(values)
            linked = pos >= 0
            older = (frames[ref][theirs].to_numpy()[pos[linked]] > df[mine].to_numpy()[linked])
            if linked.any() and older.mean() >= 0.5 and ref not in rejected:
                rejected[ref] = (f"{older.mean():.0%} of {name}.{col}'s rows are older than "
                                 f"the {ref} row they reference: no time a {ref} began, a "
                                 "static table")
                times[ref][2][theirs] = ("drop", "after most of the rows that reference it "
                                                 "(above): a time from their future")
    return rejected


def calendars_of(frames: dict, pkeys: dict, times: dict, fkeys: dict) -> dict:
    """Tables without a time of their own whose foreign keys reference a calendar (a date
    dimension, :func:`rdl.data.days.calendar_days`): table -> (the key, the calendar, its
    key, its column of days, each row's time). Their rows are dated by the key whose days
    come first, each at its period's end, the next period's start (the loader stops on
    such a table left static:
    :func:`rdl.data.calendars.calendar_references`). Their other keys into it (a ship
    date) stay foreign keys: the draft times a calendar by its days, and a seed sees a
    day's row once the day has come (:func:`rdl.data.calendars.later_days`)."""
    out = {}
    for name, df in frames.items():
        if times[name][0] is not None or any(
                pd.api.types.is_datetime64_any_dtype(d) for d in df.dtypes):
            continue   # (times of its own)
        named = {}   # key -> (calendar, its key, its column of days, the mean day named)
        for col, (ref, _) in fkeys[name][0].items():
            day = None if ", " in col else day_column(frames[ref], pkeys.get(ref))
            if day is not None:
                values, keys = comparable(df[col], frames[ref][pkeys[ref]])
                at = pd.Index(keys).get_indexer(values)
                days = pd.Series(frames[ref][day].to_numpy()[at], index=df.index).where(
                    at >= 0)
                named[col] = (ref, pkeys[ref], day, days)
        if named:
            col = min(named, key=lambda c: named[c][3].mean())
            ref, key, day, days = named[col]
            starts = np.sort(frames[ref][day].dropna().unique())
            nxt = np.searchsorted(starts, days.to_numpy(), "right")
            ends = pd.Series(starts[np.minimum(nxt, len(starts) - 1)], index=df.index).where(
                (nxt < len(starts)) & days.notna().to_numpy())
            out[name] = (col, ref, key, day, ends)
    return out


def seen_ins(frames: dict, pkeys: dict, times: dict, fkeys: dict, taking: dict) -> dict:
    """Static tables whose every row one row of a timed table references, and no other
    row of it (Olist's customers, a row per order): each row from the time of the row
    that references it (``time: {seen_in: orders}``, :mod:`rdl.data.inherit`); table ->
    (the timed table, why, the times it takes)."""
    timed = {n: frames[n][t[0]] for n, t in times.items() if t[0] is not None}
    timed.update({n: v[2] for n, v in taking.items() if v[3]})
    out = {}
    for name, df in frames.items():
        if name in timed or name not in pkeys:
            continue
        for other, (keys_of, _) in fkeys.items():
            cols = [c for c, (ref, _) in keys_of.items() if ref == name and ", " not in c]
            if other not in timed or other == name or len(cols) != 1:
                continue
            values, keys = comparable(frames[other][cols[0]], df[pkeys[name]])
            pos = pd.Index(keys).get_indexer(values)
            if (pos < 0).any() or len(set(pos)) != len(pos) or len(pos) != len(df):
                continue   # not one reference a row, every row
            first = pd.Series(pd.NaT, index=df.index, dtype="datetime64[ns]")
            first.iloc[pos] = timed[other].to_numpy()
            out[name] = (other, f"no time of its own, each row referenced by one {other} row "
                                f"({cols[0]}), and no other: a row per {other} row, from its "
                                "time", first)
            break
    return out


def on_export(frames: dict, pkeys: dict, fkeys: dict, times: dict) -> dict:
    """(table, column) -> why, for the columns the loader would stop on as totals or
    averages of later rows computed on export (:func:`rdl.data.leaks.computed_on_export`),
    found on the drafted keys and times, those named as tallies of attention on tables
    whose rows have events (:func:`rdl.data.tallies.drafted`), and foreign keys named as
    the last row to touch a row (``LastEditorUserId``: the draft drops them as keys)."""
    tables = {}
    for name, df in frames.items():
        df, refs = df.copy(deep=False), {}
        for col, (ref, _) in fkeys[name][0].items():
            if ref in pkeys and col in df.columns:   # (a composite key's pair: left out)
                values, keys = comparable(df[col], frames[ref][pkeys[ref]])
                at = pd.Index(keys).get_indexer(values)
                df[col], refs[col] = pd.array(np.where(at >= 0, at, None), dtype="Int64"), ref
        tables[name] = Table(df, pkeys.get(name), refs, times[name][0])
    last = {(name, col): f"by its name the last {ref} row to touch this one (a post's last "
                         "editor, a customer's last order): written when the file was "
                         "exported, it links a seed to who comes after it; dropped"
            for name in frames for col, (ref, _) in fkeys[name][0].items()
            if leaks.named_last(col)}
    return {**last, **tallies.drafted(frames, pkeys, fkeys, times), **{
            (name, col): f"equals {what} in {same} of {held} rows, later ones included: "
                         f"computed on export, it would show every seed what is still to come "
                         "(numerical, if it was known then)"
            for name, col, _, what, same, held in leaks.computed_on_export(
                Database(tables), {n: t[2] for n, t in times.items()})}}
