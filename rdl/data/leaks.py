"""The loader's checks that a table's times let no seed see its future (a seed at time t
never sees a row, or a value, from after t), each a rule of what a file's times mean:

* :func:`rdl.data.epochs.epoch_numbers`: whole numbers named as times and sized as times
  since 1970, read as numbers, would escape every check below: it stops until the schema
  says times or numbers;
* :func:`undeclared_time`: a table of facts with times but no declared time would be
  static, every row seen by every seed: it stops;
* :func:`static_times`: a static table's column of times in the data's span (a signup, a
  last order) would show every seed what comes after it: it stops;
* :func:`later_times`: a column of times after its row's own time (a return date in a
  rental) would show a seed between the two what happens later: it stops, until the
  schema says what the column is; :func:`rdl.data.states.flags_of_later`: so does a
  column whose values say whether such a time is known (``returned``, ``is_current``,
  an order's ``status``);
* :func:`future_references`: rows older than the rows they reference lose the link until
  then; many such rows say the referenced table's time is no time its rows began: a
  warning;
* :func:`rows_per_event`: a static table holding a row per row of a timed table (a
  customer row per order) shows every seed the later ones: a warning;
* :func:`totals`: a column that totals or averages the rows referencing its row, later
  ones included (a shop's ``total_orders``, ``avg_order_value``), shows every seed what
  is still to come: it stops.
"""
from __future__ import annotations

import functools
import logging

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.messages import rows
from rdl.data.days import calendar_days, is_calendar
from rdl.data.names import name_words
from rdl.data.schema import TableSchema

log = logging.getLogger("rdl.data.folder")   # the loader's messages, in one place

#: the share of rows from which later times stop the load (and the draft drops them)
LATER_SHARE = 0.01
#: words that start the names of times before a row's events: a birth
BIRTH = ("birth", "dob", "born")


def undeclared_time(t: TableSchema, df: pd.DataFrame) -> None:
    """A table of facts (it has foreign keys) without a declared time but with a column of
    times is most likely timed: used as static, every seed would see its future rows. It
    stops, unless the schema says the column is a plain feature (its stype ``timestamp``)."""
    if t.time is not None or not t.fkeys:
        return
    cols = [c for c in df.columns if c not in t.stypes and c not in (t.pkey, *t.fkeys)
            and pd.api.types.is_datetime64_any_dtype(df[c])]
    if cols:
        raise DataError(
            f"{t.where(cols[0])}: column(s) {cols} hold times in {int(df[cols[0]].notna().sum())} "
            f"of {len(df)} rows, but the schema declares no time for the table, so it would be "
            "used as static: every seed would see all its rows, its future ones included (a "
            "leak of the future into training). Declare the rows' time in the schema (table "
            f"{t.name!r}: time: {cols[0]}); if the table really is static, declare the "
            f"column's stype (stypes: {{{cols[0]}: timestamp}}), or drop it ({{{cols[0]}: "
            "drop}}) if it is when the row last changed: as a feature that tells of the future")


def later_times(t: TableSchema, df: pd.DataFrame, share: float = LATER_SHARE) -> None:
    """A column of times (not the table's time, no stype declared) after its row's own
    time in ``share`` of the rows or more stops: a rental's ``return_date``, an order's
    ``delivered_at``, a subscription's ``cancelled_at`` (a churn label itself), seen as a
    feature by a seed between the two times, tell it what happens later. The schema says
    what it is: dropped, or a feature known when the row began (a due date, an estimate),
    or the row's own time where it is the more precise one (a date's timestamp)."""
    if t.time is None or t.time not in df:
        return
    mine = df[t.time].values
    for col in df.columns:
        if col in t.stypes or col == t.time or not pd.api.types.is_datetime64_any_dtype(df[col]):
            continue
        theirs = df[col].values
        later = theirs > mine   # a missing time (NaT) is never later
        n, m = int(later.sum()), int((~np.isnat(theirs) & ~np.isnat(mine)).sum())
        if n == 0:
            continue
        i = int(np.flatnonzero(later)[0])
        what = (f"{t.where(col)}: {n} of {m} rows ({100 * n / m:.3g}%) hold a time after the "
                f"row's own ({t.time}; {rows(later)}; e.g. {_day(theirs[i])} in a row of "
                f"{_day(mine[i])})")
        if n < share * m:
            log.info("%s: seen early by a seed between the two", what)
            continue
        raise DataError(
            f"{what}: as a feature, a seed between the two times would see it before it "
            f"happens (a leak of the future). Say what it is in the schema (table "
            f"{t.name!r}): when something happened later (a return, a delivery, a "
            f"cancellation), make it a table of its own that seeds see once it happened "
            f"(events: [{col}]), or drop it (stypes: {{{col}: drop}}; drop the row's last "
            f"change, and a last or final time, which only the export knows to be last); "
            f"known when the row began (a due "
            f"date, an estimate), a feature (stypes: {{{col}: timestamp}}); the row's more "
            f"precise time (its date's timestamp), its time (time: {col})")


def _day(v) -> str:
    """A time as messages show it: a date alone at midnight."""
    return str(pd.Timestamp(v)).removesuffix(" 00:00:00")


def future_references(db, where=lambda name, col: f"table {name!r}, column {col!r}",
                      share: float = LATER_SHARE) -> None:
    """Warn where a timed table's rows reference rows of a timed table that begin after them.

    Until a referenced row's time, a seed sees the row that references it but not the
    reference (:meth:`~rdl.data.Database.upto`). A few such rows are what real data holds
    (a salary paid before a player's debut); many say the referenced table's time is no
    time its rows began: a change or load time (``last_update``), or an account created
    when the data was migrated, after the rows that reference it. Then every link is
    hidden until that time, and the model trains without them: a warning from ``share``
    of the linked rows on, naming both times, an example and what to declare. Then the
    keys named as the last row to touch theirs (:func:`last_references`).
    ``where(table, column)`` names the column as the loader's messages do."""
    for name, t in db:
        for col, ref in t.fkeys.items():
            r = db[ref]
            if t.time_col is None or r.time_col is None:
                continue
            linked = t.df[col].notna().to_numpy()
            pos = t.df[col].to_numpy(dtype="int64", na_value=0)
            mine, theirs = t.df[t.time_col].values, r.df[r.time_col].values[pos]
            later = linked & (theirs > mine)   # a missing time (NaT) is never later
            n, m = int(later.sum()), int(linked.sum())
            if n == 0:
                continue
            i = int(np.flatnonzero(later)[0])
            what = (f"{where(name, col)}: {n} of {m} rows ({100 * n / m:.3g}%) are older than "
                    f"the {ref!r} row they reference ({name}.{t.time_col} before "
                    f"{ref}.{r.time_col}; e.g. a row of {_day(mine[i])} references one of "
                    f"{_day(theirs[i])}): until then a seed sees such a row but not the row "
                    "it references")
            if n < share * m or is_calendar(r.df, r.pkey, r.time_col):
                log.info("%s", what)   # (a calendar's later day, a ship date: seen as it comes)
                continue
            if ref == name:   # (a question's accepted answer: a later row of its own kind)
                log.warning("%s: a row that names a later row of its own table (an accepted "
                            "answer, a successor) shows the link from that row's time on; "
                            "if the link was made later still (an answer accepted days "
                            "after), drop it (stypes: {%s: drop})", what, col)
                continue
            log.warning("%s. If %s.%s is not when a %s row began (a time the row was changed "
                        "or loaded, or an account made after its history), the table is "
                        "static: declare it with no time, and its column dropped (stypes: "
                        "{%s: drop}; a change time as a feature tells of the future) or a "
                        "plain feature ({%s: timestamp})", what, ref, r.time_col, ref,
                        r.time_col, r.time_col)
    last_references(db, where)


def named_last(col: str) -> bool:
    """Whether a foreign key (of one column) is named as the last row to touch its row
    (``LastEditorUserId``, ``last_order_id``, ``latest_review_id``, ``final_...``)."""
    words = name_words(col)
    return ", " not in col and bool(words) and words[0].startswith(
        ("last", "latest", "final", "recent"))


def last_references(db, where=lambda name, col: f"table {name!r}, column {col!r}") -> None:
    """Warn of a foreign key named as the last row to touch its row (a post's
    ``LastEditorUserId``, a customer's ``last_order_id``): written when the file was
    exported, it links every seed to a row that may come after it (who will edit the post).
    The draft drops such keys (:func:`rdl.data.draft_times.on_export`)."""
    for name, t in db:
        for col, ref in t.fkeys.items():
            if named_last(col):
                log.warning("%s: a foreign key named as the last %s row to touch this one: "
                            "written when the file was exported, it links a seed to a row "
                            "that may come after it; unless it was set when the row began, "
                            "leave it out of fkeys and drop it (stypes: {%s: drop})",
                            where(name, col), ref, col)


def rows_per_event(db, where=lambda name: f"table {name!r}") -> None:
    """Warn of a static table holding a row per row of a timed table: each of its rows
    referenced by one row of that table, and no other (Olist's customers, a row per
    order). A seed sees them all, those of later events too: through a key they share
    (``customer_unique_id``), how many orders a person will place. On an Olist-shaped
    folder with no signal, a repeat-purchase task scored test AUROC 0.98 with such a
    table static, 0.51 timed (docs/data.md)."""
    for name, t in db:
        if t.time_col is not None or t.pkey is None or len(t.df) == 0:
            continue
        for other, s in db:
            if s.time_col is None or other == name:
                continue
            for col in (c for c, ref in s.fkeys.items() if ref == name):
                keys = s.df[col].dropna()
                if keys.is_unique and len(keys) >= 0.5 * len(t.df):
                    log.warning(
                        "%s: no time, but %d of its %d rows are each referenced by one "
                        "%r row (%s.%s) and no other: a row per %s row, which every seed "
                        "sees, those of %s rows after it too (counted through any key "
                        "they share: a leak). If each begins with its %s row, declare "
                        "time: {seen_in: %s}", where(name), len(keys), len(t.df), other,
                        other, col, other, other, other, other)


def static_times(tables: dict, frames: dict, calendars=(),
                 share: float = LATER_SHARE) -> None:
    """A static table's column of times (no stype declared) that falls in the timed rows'
    span, from their first time on, in ``share`` of its rows or more stops: every seed
    sees it, those before it too. It is either when the rows began (a signup: the
    table's time) or a summary of later events (a last order, a last login: for a seed
    before it, what is to come). Known ahead, and so passed: a calendar's periods (the
    ``calendars`` tables, or a column of distinct days: a date dimension), a birth."""
    timed = [frames[n][t.time] for n, t in tables.items() if t.time and n in frames
             and frames[n][t.time].notna().any()]
    if not timed:
        return
    start = min(s.min() for s in timed)
    for name, t in tables.items():
        if t.time is not None or name not in frames:
            continue
        df = frames[name]
        for col in df.columns:
            if col in t.stypes or name in calendars or not pd.api.types.is_datetime64_any_dtype(
                    df[col]) or _known_ahead(col, df[col]):
                continue
            after = (df[col] >= start).to_numpy()
            n, m = int(after.sum()), int(df[col].notna().sum())
            if n == 0 or n < share * m:
                continue
            raise DataError(
                f"{t.where(col)}: {n} of {m} rows ({100 * n / m:.3g}%) hold a time from the "
                f"data's span (its timed rows start {_day(start)}; {rows(after)}), but the "
                f"table is static: every seed would see it, those before it too. Say what it "
                f"is (table {t.name!r}): when its rows began (a signup), their time (time: "
                f"{col}); a summary of later events (a last order, a last login), dropped "
                f"(stypes: {{{col}: drop}}): for a seed before it, it tells what is to come; "
                f"known from the start, a feature (stypes: {{{col}: timestamp}})")


def _known_ahead(col: str, s: pd.Series) -> bool:
    """A birth (by its name), or a calendar's days (:func:`calendar_days`)."""
    return any(w.startswith(BIRTH) for w in name_words(col)) or calendar_days(s)


def totals(db, where, declared: dict, share: float = 0.9, stypes_at=None) -> None:
    """Stops on the first column :func:`computed_on_export` finds (``where(table,
    column)``: how the message names it; ``stypes_at(table, column)``: the table whose
    ``stypes:`` declare it, where not its own: an implied table's attribute's)."""
    for name, x, other, what, same, held in computed_on_export(db, declared, share):
        at = stypes_at(name, x) if stypes_at else None
        drop = (f"Drop it (stypes: {{{x}: drop}})" if at is None else
                f"Drop it (leave it out of attributes; stypes: {{{x}: drop}} in table {at!r})")
        raise DataError(
            f"{where(name, x)}: in {same} of the {held} rows that {other} rows reference, it "
            f"equals {what}, later ones included: computed when the data was exported. Every "
            "seed would see the final figure, what is still to come (a leak of the future). "
            f"{drop}: rdl computes such figures as of each seed from the {other} rows; if it "
            f"truly was known then, keep it (stypes: {{{x}: numerical}}"
            + ("" if at is None else f" in table {at!r}") + ")")


def computed_on_export(db, declared: dict, share: float = 0.9):
    """A column of numbers that is a total or an average over the rows referencing its row,
    those after it included, the loader stops on: a customer's ``total_orders``, ``total_spent``,
    ``avg_order_value`` or ``return_rate`` as a shop's export writes them, computed when
    the data was exported. Every seed would see the final figure: how many orders are
    still to come (a churn label). Found where, in ``share`` of the referenced rows or
    more, the column equals the count of the rows that reference it, or the sum or the
    mean of one of their numeric columns (a rate of a 0/1 column: its mean, or the mean in
    percent), and some of those rows come after it (every one, for a static table). A mean
    counts only where it is no copy of the first referencing row's value (a price that
    never changed) in a tenth of the rows referenced more than once. ``declared``: table
    -> the columns whose stype the schema declares (kept as they are). Yields (table,
    column, referencing table, what it equals, in how many rows, of how many referenced),
    the first match of each column."""
    for name, t in db:
        if t.pkey is None or len(t.df) == 0:
            continue
        numbers = [c for c in t.df.columns if c not in (t.pkey, t.time_col, *t.fkeys)
                   and c not in declared.get(name, {}) and _numbers(t.df[c])]
        for other, c in db:
            for col in (k for k, ref in c.fkeys.items() if ref == name):
                pos = c.df[col].dropna().to_numpy(dtype="int64")
                if not numbers or len(pos) == 0 or not _some_later(t, c, col):
                    continue
                count = np.bincount(pos, minlength=len(t.df)).astype("float64")
                held = count > 0
                if held.sum() < 10 or (count[held] > 1).mean() < 0.1:
                    continue   # (one reference a row: its values copies, not totals)
                figures = _figures(c, col, other, count)
                probe = np.flatnonzero(held)[:1000]   # a first look, cheap on wide tables
                for x in list(numbers):
                    v = t.df[x].to_numpy(dtype="float64")
                    for what, (figure, first) in figures.items():
                        if _close(v[probe], figure[probe]).mean() < share / 2:
                            continue
                        same = _close(v, figure) & held
                        if same.sum() < share * held.sum() or np.unique(
                                figure[held]).size < 2:
                            continue
                        many = held & (count > 1)
                        if first is not None and (~_close(v, first()) & many).sum() < \
                                0.1 * many.sum():
                            continue   # each row's first value, not an average of all
                        yield name, x, other, what, int(same.sum()), int(held.sum())
                        numbers.remove(x)
                        break


def _figures(c, col: str, other: str, count: np.ndarray) -> dict:
    """What a referenced row's column may have been computed as from the rows of ``c``
    referencing it through ``col``: description -> (the figure per referenced row, for a
    mean a function giving the first referencing row's value (a sort of ``c`` by time,
    made only where a mean matches), else None)."""
    linked = c.df[col].notna().to_numpy()
    pos = c.df[col].to_numpy(dtype="int64", na_value=0)[linked]
    out = {f"the number of {other} rows that reference it ({other}.{col})": (count, None)}
    for y in c.df.columns:
        if y in (c.pkey, c.time_col, *c.fkeys) or not (
                _numbers(c.df[y]) or pd.api.types.is_bool_dtype(c.df[y])):
            continue
        w = c.df[y].to_numpy(dtype="float64", na_value=np.nan)[linked]
        total = np.bincount(pos, weights=w, minlength=len(count))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / count
        first = functools.partial(_first, c, linked, pos, w, len(count))
        if _numbers(c.df[y]):
            out[f"the sum of {other}.{y} over them"] = (total, None)
        out[f"the mean of {other}.{y} over them"] = (mean, first)
        if np.isin(w[~np.isnan(w)], (0, 1)).all():   # a flag: its rate in percent too
            out[f"the share of them with {other}.{y} in percent"] = (
                100 * mean, lambda first=first: 100 * first())
    return out


def _first(c, linked: np.ndarray, pos: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """Each referenced row's first (earliest) referencing row's value of ``w``."""
    order = np.argsort(c.df[c.time_col].to_numpy()[linked], kind="stable")
    ids, at = np.unique(pos[order], return_index=True)
    out = np.full(n, np.nan)
    out[ids] = w[order][at]
    return out


def _close(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Equal as a total written to a file is (rounded to cents, or to 0.1 %)."""
    return np.isclose(values, totals, rtol=1e-3, atol=0.01)


def _numbers(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) \
        and s.notna().any()


def _some_later(t, c, col: str) -> bool:
    """Whether rows of ``c`` come after the ``t`` row they reference (all do, where ``t``
    is static and ``c`` timed; none where ``c`` is static)."""
    if c.time_col is None:
        return False
    if t.time_col is None:
        return True
    linked = c.df[col].notna().to_numpy()
    pos = c.df[col].to_numpy(dtype="int64", na_value=0)
    return bool((linked & (c.df[c.time_col].values > t.df[t.time_col].values[pos])).any())
