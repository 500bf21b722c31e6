"""The draft's tables that take their time from the rows they reference (:mod:`rdl.data.draft`,
``time: {via: order_id}``, :mod:`rdl.data.inherit`): tables of facts without a time of
their own whose keys all match timed rows (:func:`vias`), where their rows are parts of
those rows (:func:`_parts_of`: an order's items); and tables whose every time comes after
the time of the row they are parts of (:func:`after_parents`: TPC-H's lineitem, shipped,
committed to and received after its order was placed), told in a comment: known from that
row's time on, their own times later events, or rows that begin later (an episode).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.composite import ids
from rdl.data.draft_times import years
from rdl.data.keys import comparable
from rdl.data.names import name_words
from rdl.data.periods import looks_like


def vias(frames: dict, pkeys: dict, times: dict, fkeys: dict, rejected: dict,
         composite: dict | None = None) -> dict:
    """Tables of facts without a time of their own whose every row references a timed
    row: table -> (foreign key, why, the times it would take, declared). Declared (``time:
    {via: order_id}``, :mod:`rdl.data.inherit`) where the rows are parts of the rows they
    reference, the key alone or with a line number naming each (Olist's order items,
    ``[order_id, order_item_id]``); else a comment: rows that come later than what they
    reference (a player's seasons after his debut) would be seen too early. Never for a
    table whose numbers count periods (``yearID``: the comment that times it by them)."""
    timed = {n: frames[n][t[0]] for n, t in times.items()
             if t[0] is not None and n not in rejected}
    out: dict = {}
    for _ in range(len(frames)):   # a table may take its time from one that takes its own
        for name, df in frames.items():
            if name in timed or name in rejected or name in out or any(
                    looks_like(str(c), df[c]) or years(c, df[c]) for c in df.columns):
                continue
            taken = {}
            for col, (ref, _) in fkeys[name][0].items():
                if ref not in timed:
                    continue
                if ", " in col:   # a composite key: the ids the loader makes of its columns
                    values, keys = (ids(df, col.split(", ")).to_numpy(object),
                                    ids(frames[ref], (composite or {})[ref]).to_numpy(object))
                else:
                    values, keys = comparable(df[col], frames[ref][pkeys[ref]])
                pos = pd.Index(keys).get_indexer(values)
                if (pos >= 0).all():   # (a row without a match would have no time)
                    taken[col] = (ref, pd.Series(timed[ref].to_numpy()[pos], index=df.index))
            if not taken:
                continue
            col = max(taken, key=lambda c: taken[c][1].mean())
            ref, times_of_ref = taken[col]
            parts = _parts_of(df, col, pkeys.get(name, (composite or {}).get(name)),
                              times_of_ref, {c for k in fkeys[name][0] for c in k.split(", ")})
            if parts:
                timed[name] = times_of_ref
            out[name] = (col, (f"no time of its own, its rows parts of the {ref} rows they "
                               "reference: each at their time" if parts == "part" else
                               f"no time of its own, its key holds the {ref} rows' key: each "
                               f"row at the time of the {ref} row it references, the earliest "
                               "it can be; a row made later (a user's favourite, after the "
                               "user) is seen early: give the table its time, where the "
                               "export has it"
                               if parts else
                               f"no time of its own: if its rows begin with the {ref} row "
                               f"they reference, declare this (each row at its {ref}'s time); "
                               "rows that come later would be seen early") + (
                f" (the latest of {sorted(taken)})" if len(taken) > 1 else ""),
                times_of_ref, parts)
    return out


def _parts_of(df: pd.DataFrame, col: str, key=None, taken: pd.Series | None = None,
              refs: set = frozenset()) -> str:
    """``"part"`` where the rows are parts of the rows ``col`` references: it names each
    row, alone or with a line number (whole numbers below 1,000, no foreign key of
    ``refs``: a product's small id is no line number); or the rows' own serial
    numbers follow the times they would take (``taken``), as lines numbered on as their
    invoices are written (Chinook's ``InvoiceLineId``), which later rows about them
    (returns, reviews) would not. ``"key"`` where it is a column of the table's composite
    key: Northwind's ``Order Details`` (``[OrderID, ProductID]``: parts) is alike in this to
    a user's favourite products (``[user_id, product_id]``: later rows), which no name or
    value tells apart. Else ``""``."""
    cols = col.split(", ")   # (a composite key's columns)
    if not df[cols].duplicated().any():
        return "part"
    if any(c not in cols and c not in refs and pd.api.types.is_integer_dtype(df[c])
           and df[c].between(0, 999)
           .all() and not df[c].is_unique and not df[[*cols, c]].duplicated().any()
           for c in df.columns):
        return "part"
    if isinstance(key, list) and set(cols) <= set(key):
        return "key"
    if not isinstance(key, str) or taken is None or len(df) < 20 or \
            not pd.api.types.is_integer_dtype(df[key]):
        return ""
    t = taken.to_numpy()[np.argsort(df[key].to_numpy(), kind="stable")].astype("int64")
    return "part" if t[0] < t[-1] and (np.diff(t) >= 0).all() else ""


#: the words of a time's name that say its row began then, after what it references (a
#: review's ``review_creation_date``): its own time, not that of what it is part of
BEGINS = ("creat", "start", "begin", "from", "since", "open", "submit", "post", "regist",
          "sign", "join", "made", "insert")


def after_parents(frames: dict, pkeys: dict, times: dict, fkeys: dict) -> dict:
    """Timed tables whose every column of times is at or after the time of the row a
    foreign key names, in 99 % of rows, their own time after it in most (TPC-H's lineitem:
    shipped, committed to, received after its order): table -> the key."""
    out = {}
    for name, df in frames.items():
        mine = times[name][0]
        if mine is not None and any(w.startswith(BEGINS) for w in name_words(mine)):
            continue   # (a review's creation date: a row of its own, made after the order)
        own = [c for c in df.columns if pd.api.types.is_datetime64_any_dtype(df[c])]
        for col, (ref, _) in fkeys[name][0].items() if mine is not None else ():
            theirs = times[ref][0] if ref in times else None
            if ref == name or theirs is None or ", " in col:
                continue
            values, keys = comparable(df[col], frames[ref][pkeys[ref]])
            pos = pd.Index(keys).get_indexer(values)
            if not (pos >= 0).all():
                continue
            t = pd.Series(frames[ref][theirs].to_numpy()[pos], index=df.index)
            if not (pd.api.types.is_datetime64_any_dtype(t)
                    and pd.api.types.is_datetime64_any_dtype(df[mine])):
                continue   # (a calendar's period numbers, dated apart)
            if (df[mine] > t).mean() >= 0.5 and all(
                    (df[c].isna() | (df[c] >= t)).mean() >= 0.99 for c in own):
                out[name] = col
                break
    return out


def borrowed_times(timed: dict, frames: dict, pkeys: dict, times: dict, as_timed: dict,
                   dated: dict, fkeys: dict, rejected: dict, composite: dict
                   ) -> tuple[dict, dict]:
    """:func:`vias`, with the tables whose time is missing in some rows (the loader stops)
    taking the time of the rows they are parts of (``times`` updated: no time of their
    own); and notes on those whose times all come after their parents' (:func:`after_
    parents`), left to a person: no value tells an order's line, known when the order was
    placed, from an episode, known when it aired, each numbered within what it is part of
    and dated after it. Returns (taking, table -> note)."""
    gaps = {n: int(frames[n][t[0]].isna().sum()) for n, t in times.items()
            if n not in dated and t[0] is not None and frames[n][t[0]].isna().any()}
    after = {n: c for n, c in after_parents(timed, pkeys, as_timed, fkeys).items()
             if n not in dated and n not in gaps}
    taking = vias(timed, pkeys, {n: (None, "", t[2]) if n in gaps else t
                                 for n, t in as_timed.items()}, fkeys, rejected, composite)
    notes = {}
    for n in gaps:
        if n in taking and taking[n][3]:
            times[n] = (None, "", times[n][2])
            taking[n] = (taking[n][0], f"its {as_timed[n][0]} is missing in {gaps[n]} of "
                         f"{len(frames[n])} rows (the loader stops), "
                         + taking[n][1].removeprefix("no time of its own, "), *taking[n][2:])
        else:
            taking.pop(n, None)
    for n, col in after.items():   # (told: they may be parts known from then, or not)
        refs = {c for k in fkeys[n][0] for c in k.split(", ")}
        if _parts_of(frames[n], col, pkeys.get(n, composite.get(n)), None, refs) != "part":
            continue   # (a user's badges, after the user joined: rows of their own)
        ref, own = fkeys[n][0][col][0], times[n][0]
        notes[n] = (f"time: {{via: {col}}}? its times all come at or after its {ref} row's "
                    f"(its {own} after it in most rows): if each row is known when that is (an "
                    f"order's line, shipped later), take its time, its own times later events;"
                    " if a row begins later (an episode aired after its series began), keep "
                    f"{own}")
    return taking, notes
