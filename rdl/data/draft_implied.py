"""The draft's tables ``implied: true`` (:mod:`rdl.data.implied`): a column of keys that no
table holds, repeated, is an entity of its own (a flat export's movie, customer or plot),
with its attributes (its columns of one value per key) and, where such a key holds one
value per another's (an invoice's customer on each of its lines), a chain of them."""
from __future__ import annotations

import re

import pandas as pd

from rdl.data.draft_times import norm, on_export
from rdl.data.implied import hashable
from rdl.data.names import name_words

#: how text keys' names end beyond id and key (an invoice's InvoiceNo, a StockCode); whole
#: numbers so named are often counts (Instacart's order_number: a user's n-th order)
TEXT_KEYS = ("code", "no", "number", "sku")


#: plurals that drop no s (people: person_id), and the singulars they end in
IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman",
             "indices": "index", "vertices": "vertex", "analyses": "analysis",
             "criteria": "criterion", "media": "medium"}


def plural(word: str) -> str:
    """A table's name for the rows a key names (plot: plots, category: categories, status:
    statuses, person: people); a word that is its own plural stays (species, series)."""
    low = word.lower()
    for many, one in IRREGULAR.items():
        if low.endswith(one):
            return word[:len(word) - len(one)] + many
    if low.endswith("ies"):
        return word
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if low.endswith("y") and low[-2:-1] not in ("", *"aeiou"):
        return word[:-1] + "ies"
    return word + "s"


def implied_name(col) -> str:
    """The name of the table an ``implied: true`` would make of a key column that no table
    holds: its words before ``id``, ``key``, ``code``, ... in plural (``species_id``:
    species; a column ``id``: ids, to be named), without a first word of one or two
    letters before others, the prefix a warehouse gives each column of a table
    (TPC-DS's ``i_brand_id``: brands, not i_brands; ``wp_web_page_id``: web_pages)."""
    stem = re.sub(r"[\s_.-]*(id|key|code|no|number|sku)$", "", str(col), flags=re.I)
    return plural(re.sub(r"^[A-Za-z]{1,2}[\s_.-]+(?=[A-Za-z])", "", stem) or stem or str(col))


def implied_names(columns) -> dict[str, str]:
    """The tables ``implied: true`` makes of key columns no table holds: a column named as
    another's key after a role (``RelatedPostId`` beside ``PostId`` in a Stack Exchange
    dump's post links: posts) takes that one's table, as a table's key named so does
    (:func:`rdl.data.draft_keys._by_role`); else :func:`implied_name`."""
    words = {c: name_words(c) for c in columns}
    out = {}
    for c, w in words.items():
        roles = [u for u, v in words.items() if len(v) >= 2 and len(v) < len(w)
                 and w[-len(v):] == v]
        out[c] = implied_name(max(roles, key=lambda u: len(words[u])) if roles else c)
    return out


#: the values of a key that must repeat before its columns of one value per key are told
#: as its attributes (:func:`attributes_of`)
MIN_REPEATED = 10


def implied_spec(df: pd.DataFrame, col, skip=()) -> str:
    """The schema line of the table an ``implied: true`` would make of ``df``'s column
    ``col``, with its attributes (:func:`attributes_of`) where it has some."""
    return spec_line(implied_name(col), col, attributes_of(df, col, skip))


#: the share of the keys that repeat whose rows may hold more than one value of a text
#: column for the draft to give the column as each key's first (``{column: first}``): a
#: customer who moved, a description retyped for a few products
CHANGING = 0.05


class First(str):
    """An attribute's name, taken as each key's first value (``{column: first}``,
    :mod:`rdl.data.implied`); its rows keep their own."""


def spec_line(table, col, attributes: list, quote=str, fkeys=None) -> str:
    """``table: {pkey: col, implied: true, attributes: [...], fkeys: {...}}`` (``quote``: a
    name as YAML writes it)."""
    def named(c) -> str:
        return f"{{{quote(str(c))}: first}}" if isinstance(c, First) else quote(str(c))
    return (f"{quote(table)}: {{pkey: {quote(col)}, implied: true"
            + (f", attributes: [{', '.join(map(named, attributes))}]" if attributes else "")
            + (f", fkeys: {{{', '.join(f'{quote(c)}: {quote(t)}' for c, t in fkeys.items())}}}"
               if fkeys else "") + "}")


def _repeats(df: pd.DataFrame, col) -> bool:
    """Whether at least half the rows share their ``col`` with another and
    :data:`MIN_REPEATED` values repeat: enough for a column of one value per key (or a key
    of one per another's) to say so, not by chance."""
    repeated = df[col].duplicated(keep=False) & df[col].notna()
    return repeated.sum() >= 0.5 * len(df) and df.loc[repeated, col].nunique() >= MIN_REPEATED


def _one_per(df: pd.DataFrame, col, c, values=None) -> bool:
    """Whether ``c`` (or its ``values``) holds one value per value of ``col``, a missing one
    counting as one."""
    return not _changing(df, col, c, values)


def _changing(df: pd.DataFrame, col, c, values=None) -> int:
    """How many values of ``col`` hold more than one of ``c`` (or of its ``values``), a
    missing one counting as one."""
    keyed = df[col].notna()
    pairs = pd.DataFrame({"k": df.loc[keyed, col], "v": df.loc[keyed, c] if values is None
                          else values}).drop_duplicates()
    return int(pairs["k"][pairs["k"].duplicated()].nunique())


def chains(df: pd.DataFrame, keys) -> dict:
    """``b -> a`` for each of ``keys`` (columns of keys no table holds) that holds one value
    per value of another of fewer keys, ``a`` the one of fewest (an invoice's customer on
    each of its lines; a customer's region, not an invoice's): ``b`` is an attribute of
    ``a``'s table and its foreign key, and the entities chain as the database the file was
    exported from did (lines, invoices, customers)."""
    n = {c: df[c].nunique() for c in keys}
    found = {}
    for b in keys:
        finer = [a for a in keys if n[a] > n[b] >= 2 and _repeats(df, a) and _one_per(df, a, b)]
        if finer:
            found[b] = min(finer, key=n.get)
    return found


def implied_tables(name: str, df: pd.DataFrame, keys, skip, time) -> tuple[dict, dict, dict]:
    """What file ``name``'s keys of no table (``keys``) make (rows ``df``; ``skip``: its key,
    time and stypes): their :func:`chains`, each one's attributes (its columns of one value
    per key but those of a coarser key: a customer's country is no invoice's), and the
    totals computed on export among them (column -> why), which the rows drop and no table
    takes. The chains are told, not drafted: the rows keep every key, for a chained schema
    puts what a customer buys a hop further from the customer, where the link model found
    half of it (docs/results.md, "Chained entities")."""
    chained = chains(df, keys)
    own = {c: attributes_of(df, c, {*skip, *keys}) for c in keys}
    totals = export_totals(name, df, own, time)
    def coarser(c) -> list:
        up = [b for b, a in chained.items() if a == c]
        return up + [x for b in up for x in coarser(b)]
    return chained, {c: [x for x in own[c] if x not in totals and not any(
        x in own[b] for b in coarser(c))] for c in keys}, totals


def attributes_of(df: pd.DataFrame, col, skip=()) -> list:
    """The columns of ``df`` that hold one value per value of ``col`` (a missing one counts
    as one): in a flat export, the entity's own columns repeated in each of its rows (a
    customer's country, a movie's genres), which its implied table takes (``attributes:``,
    :mod:`rdl.data.implied`). Where at least half the rows share their ``col`` with
    another, and :data:`MIN_REPEATED` values repeat (else a column may be one by chance);
    not ``skip`` (keys, time, a total computed on export: :func:`export_totals`), no
    column named as a key, no column of times (one computed on export, a customer's last
    order, would be seen at the first), none of one value throughout. A text column of one
    value per key but for a few keys (:data:`CHANGING`) is given as each key's first
    (:class:`First`): a customer who moved, a description retyped."""
    if not _repeats(df, col):
        return []
    keyed, out = df[col].notna(), []
    repeating = df.loc[df[col].duplicated(keep=False) & keyed, col].nunique()
    for c in df.columns:
        text = not pd.api.types.is_numeric_dtype(df[c])
        if c == col or c in skip or norm(c).endswith(("id", "key", *(TEXT_KEYS if text else ())))\
                or pd.api.types.is_datetime64_any_dtype(df[c]):
            continue
        values = hashable(df.loc[keyed, c])   # (a column of lists: tuples)
        if values.nunique(dropna=False) < 2:
            continue
        changing = _changing(df, col, c, values)
        if not changing:
            out.append(c)
        elif text and changing <= CHANGING * repeating:
            out.append(First(c))
    return out


def export_totals(name: str, df: pd.DataFrame, attributes: dict, time) -> dict:
    """column -> why, for the columns of table ``name`` (rows ``df``) that
    :func:`~rdl.data.draft_times.on_export` finds on the tables ``implied: true`` would
    make (``attributes``: key column -> its attributes, :func:`attributes_of`): totals or
    averages over the rows holding a key, later ones included (a movie's
    ``total_ratings`` on each of its ratings), which would show every row what is still
    to come (as an attribute the loader stops on them)."""
    found = {}
    for col, cols in attributes.items():
        cols = [c for c in cols if c not in found]
        if time is None or not cols:
            continue
        rows, table = df[df[col].notna()], implied_name(col)
        first = rows.groupby(col, sort=False)[time].min()
        entity = rows.drop_duplicates(col).set_index(col).loc[first.index, cols].reset_index()
        found.update({c: why for (t, c), why in on_export(
            {name: df.drop(columns=cols), table: entity.assign(**{time: first.to_numpy()})},
            {table: col}, {name: ({col: (table, "")}, []), table: ({}, [])},
            {name: (time, "", {}), table: (time, "", {})}).items() if t == table})
    return found


def unnamed_entities(df: pd.DataFrame, skip, held) -> list[str]:
    """Notes on text columns named as no key that a flat export's entities may be written
    as: repeated, each value with columns of one value per value (a pizza's type beside its
    name, a country's region), that no key's table takes (``held``: the file's keys and
    their attributes; ``skip``: its key, time and stypes); each with the table
    ``implied: true`` would make of it, for a person to say (a category with a code beside
    it is no entity)."""
    notes = []
    for c in df.columns:
        values = df[c].dropna()
        if c in skip or c in held or pd.api.types.is_numeric_dtype(df[c]) \
                or pd.api.types.is_datetime64_any_dtype(df[c]) or not len(values) \
                or not isinstance(values.iloc[0], str):
            continue
        attributes = [a for a in attributes_of(df, c, {*skip, *held})
                      if not isinstance(a, First)]
        if attributes:
            notes.append(f"{c}: {values.nunique():,} values, each with one "
                         f"{', '.join(map(str, attributes))}: if each is an entity (a product, "
                         f"a place), a table of them: {spec_line(implied_name(c), c, attributes)}"
                         f", and fkeys: {{{c}: {implied_name(c)}}} here")
    return notes


class Unheld(tuple):
    """``(column, why)`` of a column of repeated keys that no table holds: drafted as the
    foreign key of the table ``implied: true`` makes of them (:func:`implied_lines`)."""


def implied_lines(made: dict, quote) -> list[str]:
    """The drafted tables ``implied: true`` makes (``made``: table -> ``(name, column,
    attributes, coarser)`` per table whose column holds its keys; the first's attributes,
    and the keys of one value per its key: :func:`chains`, ``column -> table``); ``quote``:
    a name as YAML writes it."""
    return ["  " + spec_line(table, refs[0][1], refs[0][2], quote)
            + f"   # no file: a row per key {', '.join(f'{n}.{c}' for n, c, *_ in refs)} "
            "holds, from its first appearance" + (
                "; attributes: its columns of one value per key" if refs[0][2] else "") + (
                "; {column: first}: one value per key but for a few keys, each key's first "
                "taken (its rows keep theirs)" if any(isinstance(c, First) for c in refs[0][2])
                else "") + "".join(
                f"; {b}: one per {refs[0][1]}, the key of a coarser entity (attributes: [{b}], "
                f"fkeys: {{{b}: {t}}} here, and none on the rows, would chain them; a link "
                "task's targets then lie a hop further)" for b, t in refs[0][3].items())
            + "; if they are no entities, drop this and the foreign key"
            for table, refs in made.items()]

