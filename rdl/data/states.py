"""A row's state as of the export, which tells a seed what happens after the row's time.

A column whose values say whether a later time of its row is known is that time again: a
rental's ``returned`` (Y/N) beside its ``return_date``, a subscription's ``is_cancelled``,
a version's ``is_current`` beside its ``valid_to``, an order's ``status`` (``delivered``,
``cancelled``, ``shipped``) beside its ``delivered_at`` and ``cancelled_at``. Exports write
each row's state when the file was written; a seed between the row's time and the later
one would learn from it what comes after. The loader stops on such a column (a rule of
:mod:`rdl.data.leaks`' kind, :func:`flags_of_later`) until the schema drops it or says it
was known when the row began; the draft drops it, saying why (:func:`later_flags`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.database import DataError
from rdl.data.leaks import LATER_SHARE
from rdl.data.names import name_words
from rdl.data.schema import TableSchema

#: the words of a column of yes/no values, as exports write them
_YES, _NO = {"1", "1.0", "true", "t", "yes", "y"}, {"0", "0.0", "false", "f", "no", "n"}
#: words that name a row's state (``status``, ``is_active``, ``churned``), not ``state`` (a
#: US state)
STATE_WORDS = ("status", "active", "inactive", "churn", "churned", "deleted", "closed",
               "cancelled", "canceled", "lifecycle", "stage")
#: how many values a column of states may hold (an order's status), and how many rows it
#: needs for its values to say anything
STATES, ROWS = 20, 100


def _yes_no(s: pd.Series) -> np.ndarray | None:
    """A filled-in column of yes/no values (booleans, 0/1, ``true``/``false``, ``Y``/``N``)
    as booleans; else None."""
    if not len(s) or s.iloc[:1000].nunique(dropna=False) > 2 or s.isna().any():
        return None   # (the first values rule out nearly every column cheaply)
    if pd.api.types.is_bool_dtype(s):
        return s.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(s):
        yes = (s == 1).to_numpy()
        return yes if (yes | (s == 0).to_numpy()).all() and 0 < yes.mean() < 1 else None
    if s.nunique() > 2:
        return None
    words = s.astype(str).str.strip().str.lower()
    yes = words.isin(_YES).to_numpy()
    return yes if (yes | words.isin(_NO).to_numpy()).all() and 0 < yes.mean() < 1 else None


def _states(s: pd.Series) -> np.ndarray | None:
    """A column of yes/no values as 0/1, or of a few words (an order's status; missing is
    one more) as their codes; else None (numbers, ids, free text)."""
    flag = _yes_no(s)
    if flag is not None:
        return flag.astype(np.int64)
    if len(s) < ROWS or not (pd.api.types.is_string_dtype(s) or s.dtype == object
                             or isinstance(s.dtype, pd.CategoricalDtype)):
        return None
    if s.iloc[:1000].nunique() > STATES or not 1 < s.nunique(dropna=False) <= STATES:
        return None
    try:
        return pd.factorize(s, use_na_sentinel=False)[0]
    except TypeError:   # (lists, dicts: no states)
        return None


def _says(codes: np.ndarray, known: np.ndarray) -> float:
    """How often the value of ``codes`` says whether a time is ``known``: the share of rows
    whose value's other rows mostly agree with them."""
    n = np.bincount(codes)
    yes = np.bincount(codes, weights=known)
    return float(np.maximum(yes, n - yes).sum() / len(codes))


def later_flags(df: pd.DataFrame, time: pd.Series, later: list[str], skip=()) -> dict:
    """The columns of ``df`` whose values say, in 99 % of rows or more, whether one of its
    ``later`` columns of times is known (and so say more than that the time is mostly
    known, or mostly not): column -> (that column, the share). Only a column after the
    rows' ``time`` in 1 % of them or more counts (a later event)."""
    out, states = {}, None
    for col in later:
        known = df[col].notna().to_numpy()
        if (df[col] > time).mean() < LATER_SHARE or known.all() or not known.any():
            continue
        if states is None:   # each column read once, whatever the later columns
            states = {c: v for c in df.columns if c not in skip and c not in later
                      and (v := _states(df[c])) is not None}
        unsure = min(known.mean(), 1 - known.mean())   # (a guess of the commoner: wrong)
        for flag, v in states.items():
            same = _says(v, known)
            if same >= 0.99 and 1 - same <= unsure / 4 and flag not in out:
                out[flag] = (col, same)
    return out


def flags_of_later(t: TableSchema, df: pd.DataFrame) -> None:
    """A column whose values say whether a later time of its row is known tells a seed
    what happens after it, as the time itself would: it stops, until the schema drops it
    or says it was known when the row began (its stype)."""
    if t.time is None or t.time not in df:
        return
    later = [c for c in df.columns if (c in t.events or (c in t.stypes and t.stypes[c] is None))
             and c != t.time and pd.api.types.is_datetime64_any_dtype(df[c])]
    flags = later_flags(df, df[t.time], later, skip={t.pkey, t.time, *t.fkeys, *t.stypes})
    if flags:
        flag, (col, same) = next(iter(flags.items()))
        raise DataError(
            f"{t.where(flag)}: says whether {col!r} is known in {same:.1%} of its rows; "
            f"{col} comes after the row's time, so as a feature this column tells a seed "
            "what happens later (a leak of the future: the row's state when the file was "
            f"written). Drop it (stypes: {{{flag}: drop}}), or, if it was known when the row "
            f"began, say so (stypes: {{{flag}: categorical}})")


def named_states(df: pd.DataFrame, skip=()) -> list[tuple[str, str]]:
    """The draft's notes on columns named as a row's state (``status``, ``is_active``,
    ``churned``) that no later time shows to change: (column, note). Nothing in the files
    says when such a state was written; by its name, at the export."""
    return [(c, f"{c}: by its name, the row's state when the file was written: for a seed "
                "before then, what is still to come (a churn task's label, if it is "
                f"churned or active); unless it was known when the row began, drop it "
                f"(stypes: {{{c}: drop}})") for c in df.columns
            if c not in skip and set(name_words(c)) & set(STATE_WORDS)
            and 1 < df[c].nunique() <= STATES and not pd.api.types.is_float_dtype(df[c])]
