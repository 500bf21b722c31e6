"""Tallies of attention a row receives after it began, written when the file was exported:
a user's ``Reputation``, ``Views``, ``UpVotes``; a post's ``Score``, ``ViewCount``,
``FavoriteCount`` (the Stack Exchange data dump's, RelBench's rel-stack's source, which
drops them); a video's ``likes``, an account's ``followers``. Nothing in the files says
when such a figure was written, and no rows of the votes or views behind it may be there
to check it against (:func:`rdl.data.leaks.computed_on_export` checks the totals that
are): by its name, at the export, it counts what comes after every seed.

Measured on a real dump (History Stack Exchange's meta site, 2,295 users, 2011-2018:
docs/results.md), "will a user earn a badge or comment in the next 91 days", test AUROC
over five windows: kept, the model 0.9143 and LightGBM (mean of depth 1, 2) 0.8922
(LightGBM's most gain: ``Users.Reputation``); dropped, 0.8204 and 0.8119. So on a table
whose rows have events (rows of timed tables reference them: an entity) the draft drops
such a column, saying why, and the loader warns of one not declared. A figure that was
known when the row began keeps a stype (``stypes: {col: numerical}``). Elsewhere names do
not tell a tally from a row's own outcome (a comment's ``Score`` from an election's votes,
an award's first-place votes): nothing is said.
"""
from __future__ import annotations

import logging

import pandas as pd

from rdl.data.names import name_words

log = logging.getLogger(__name__)

#: the words that name attention received, tallied over time
ENGAGEMENT = ("reputation", "karma", "views", "view", "votes", "upvotes", "downvotes", "likes",
              "favorites", "favourites", "favorite", "favourite", "followers", "watchers",
              "subscribers", "downloads", "clicks", "retweets", "shares", "score")


def named(df: pd.DataFrame, skip=()) -> list[str]:
    """The columns of numbers of ``df`` named as attention received (:data:`ENGAGEMENT`)."""
    return [c for c in df.columns if c not in skip and set(name_words(c)) & set(ENGAGEMENT)
            and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]


#: what the draft and the loader say of such a column
WHY = ("by its name, a tally of votes, views or a score (attention received or given), "
       "written when the file was exported: it counts what comes after every seed")


def entities(fkeys: dict[str, dict[str, str]], timed: set[str]) -> set[str]:
    """The tables whose rows rows of timed tables reference (``fkeys``: table -> column ->
    the table it references; ``timed``: the tables with a time)."""
    return {ref for name, keys in fkeys.items() if name in timed for ref in keys.values()}


def drafted(frames: dict, pkeys: dict, fkeys: dict, times: dict) -> dict:
    """(table, column) -> why, for the draft's drops: such columns of the tables whose
    rows have events (the draft's keys and times: :mod:`rdl.data.draft`)."""
    refs = {n: {c: r for c, (r, _) in fkeys[n][0].items()} for n in frames}
    ent = entities(refs, {n for n in frames if times[n][0] is not None})
    return {(n, c): WHY + "; numerical, if it was known when the row began"
            for n in sorted(ent & set(frames))
            for c in named(frames[n], {pkeys.get(n), times[n][0], *fkeys[n][0]})}


def warn(db, specs: dict) -> None:
    """Warn of such a column of a table whose rows have events that the schema does not
    declare (``specs``: the tables' schemas, their ``stypes``)."""
    timed = {name for name, t in db if t.time_col is not None}
    for name in sorted(entities({n: t.fkeys for n, t in db}, timed)):
        spec = specs.get(name)
        if spec is None:
            continue
        cols = named(db[name].df, {*spec.stypes, db[name].time_col, db[name].pkey,
                                   *db[name].fkeys})
        if cols:
            log.warning("%s: %s %s (on a Stack Exchange dump's users such columns raised a "
                        "task's test AUROC from 0.82 to 0.91: docs/data.md); stypes: {%s}, or "
                        "numerical where known when the row began", spec.where(),
                        "columns" if len(cols) > 1 else "column", ", ".join(map(repr, cols)) +
                        ": " + WHY, ", ".join(f"{c}: drop" for c in cols))
