"""Feature names, the one rule: what a feature is called, readably and as LightGBM stores it.

A readable name spells the feature's path through the schema from the seed's entity
table ``E``: ``E>P`` a table it refers to, ``C`` a table referring to it, ``C>P`` and
``P<C`` one hop further up or down, then the column, ``col=value`` for the count of a
category value, and the aggregate (``sale.amount.avg_4``,
``sale>product.colour=red.count_12``). A hop by a foreign key names the key too,
``table.key``, where the table has other keys to the same table or refers to itself
(:func:`hop`): ``posts.ParentId>posts`` is the post a post answers, ``posts.ParentId``
the posts answering it, ``postLinks.PostId`` and ``postLinks.RelatedPostId`` the links
from and to it. Where a schema's own names still make two names equal (a column called
``a=b`` beside a column ``a`` with a value ``b=c``), the later one gets ``#2``
(:func:`distinct`); every feature table has distinct columns, whatever the schema.

LightGBM keeps its feature names in its model text: one line of them, separated by
spaces, none of ``",:[]{}`` (it refuses those). :func:`lightgbm_names` gives it each name
with every character but plain printable ASCII (less those, whitespace, the backslash and
``~``) as ``_``; a name longer than :data:`MAX_LENGTH` characters, or one that became
another's this way, is cut and ends with ``~`` and 12 hex digits of a hash of the
readable name. A category value with a newline, quotes, separators, any Unicode or
hundreds of characters thus never reaches LightGBM, two names never become one, and the
readable name stays in the fit's name map (``TreeFit.names``) for logs and feature
importances.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

import pandas as pd

#: the longest name LightGBM is given (a longer one is cut and hashed)
MAX_LENGTH = 100
#: characters a LightGBM name keeps: printable ASCII but whitespace, LightGBM's refused
#: ``",:[]{}``, the backslash and ``~`` (which only starts the hash of a changed name)
_UNSAFE = re.compile(r"[^A-Za-z0-9!#$%&'()*+\-./;<=>?@^_`|]")


def hop(name: str, keys: dict, key: str, path: str | None = None) -> str:
    """Where the hop by foreign key ``key`` of table ``name`` (``keys``: its foreign keys,
    column -> table) starts: ``path`` (default ``name``), with ``.key`` where the table has
    other keys to the same table or the key refers to the table itself."""
    ref = keys[key]
    path = name if path is None else path
    named = ref == name or sum(r == ref for r in keys.values()) > 1
    return f"{path}.{key}" if named else path


def up(name: str, keys: dict, key: str, path: str | None = None) -> str:
    """The path to the rows table ``name`` refers to by ``key`` (from ``path``)."""
    return f"{hop(name, keys, key, path)}>{keys[key]}"


def down(path: str, child: str, keys: dict, key: str) -> str:
    """The path from ``path`` to the rows of table ``child`` (its foreign keys ``keys``)
    referring to it by ``key``."""
    return f"{path}<{hop(child, keys, key)}"


def distinct(names: Iterable) -> list[str]:
    """``names`` as strings, each one that is already there before ending in ``#2``
    (``#3``, ...): the first keeps its name."""
    out, seen = [], set()
    for name in map(str, names):
        new, k = name, 2
        while new in seen:
            new, k = f"{name}#{k}", k + 1
        seen.add(new)
        out.append(new)
    return out


class Columns(dict):
    """Feature columns by name, where a name given again is made :func:`distinct` (the
    later column gets ``#2``) rather than replacing the first."""

    def __setitem__(self, name, values):
        super().__setitem__(distinct([*self, name])[-1], values)

    def update(self, other=(), **kw):
        for name, values in dict(other, **kw).items():
            self[name] = values


def side_by_side(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The feature tables ``parts`` side by side, their columns made :func:`distinct`."""
    out = pd.concat(parts, axis=1)
    names = distinct(out.columns)
    if names != list(out.columns):
        out.columns = names
    return out


def lightgbm_names(columns: Iterable) -> dict[str, str]:
    """``{LightGBM's name: readable name}`` of ``columns``, in their order: each name's
    characters that LightGBM's model text cannot hold as ``_``; then, where that is longer
    than :data:`MAX_LENGTH` or is also another's, cut and ended with ``~`` and a hash of
    the readable name (:func:`distinct` the last guard: a name given twice)."""
    columns = [str(c) for c in columns]
    clean = [_UNSAFE.sub("_", c) for c in columns]
    shared = Counter(clean)
    out = [c if shared[c] == 1 and len(c) <= MAX_LENGTH
           else f"{c[:MAX_LENGTH - 13]}~{_hash(name)}" for name, c in zip(columns, clean)]
    return dict(zip(distinct(out), columns))


def _hash(name: str) -> str:
    """12 hex digits of a hash of ``name`` (the same on every machine)."""
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def shown(name: str, width: int = 80) -> str:
    """A readable name on one line of a log: control characters escaped, cut to ``width``."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(name))
    return text if len(text) <= width else text[:width - 3] + "..."
