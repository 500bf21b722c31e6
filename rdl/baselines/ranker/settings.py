"""``data.ranker``: the bounds of the LightGBM ranker (:mod:`rdl.baselines.ranker`)."""
from __future__ import annotations

from dataclasses import dataclass, fields

from rdl.sections import settings_of

#: the retrieval sources, in the order their candidates are listed
SOURCES = ("past", "cooccurrence", "parents", "segments", "popular", "new")


@dataclass(frozen=True)
class RankerSettings:
    """How many candidates each retrieval source gives a seed, what the sources look at, and
    how many seeds the ranker trains on (time and memory stay bounded at any scale).

    Args:
        past, cooccurrence, parents, segments, popular, new: candidates per seed from each
            source (0: the source is off): the entity's past links (most frequent, then
            most recent); items bought with the entity's recent items by the same entities
            (item-to-item co-occurrence); items sharing a parent row (a foreign key of the
            item table, or a ``parent_columns`` value) with the entity's recent items; the
            items most popular last window among entities of the same segment (each
            categorical column of the entity table with at most ``max_segment_values``
            values, at most ``segment_columns`` of them); the items most popular last
            window overall; the newest items (the item table's latest rows by its time, where
            it has one: a forum's new posts, a shop's new arrivals).
        recent_items: the entity's most recent distinct items that co-occurrence and
            parents start from.
        basket_items: per entity, the most recent distinct items counted in co-occurrence.
        neighbours: co-occurring items kept per item.
        lookback: task windows of history that popularity and co-occurrence count.
        parent_columns: columns of the item table whose shared values make items siblings
            (rel-hm's ``product_code``), beside its foreign keys.
        train_times: the train split's last seed times the ranker trains on.
        train_seeds, val_seeds: at most this many seeds (a seeded sample) to train on and
            to stop early on (of those with a true item among their candidates: their
            features are built at once, so memory grows with these, not with the data).
        chunk_seeds: seeds of a split to score whose candidates and features are built,
            scored and let go of at once (memory: about ``chunk_seeds`` x candidates per
            seed x features floats, whatever the split's size), and seeds per retrieval
            query. The scores do not depend on it.
        rounds, patience: LightGBM's boosting rounds, and early stopping's patience on val.
    """
    past: int = 30
    cooccurrence: int = 30
    parents: int = 20
    segments: int = 12
    popular: int = 24
    new: int = 12
    recent_items: int = 10
    basket_items: int = 30
    neighbours: int = 20
    lookback: int = 12
    max_segment_values: int = 50
    segment_columns: int = 3
    parent_columns: tuple = ()
    train_times: int = 4
    train_seeds: int = 20_000
    val_seeds: int = 20_000
    chunk_seeds: int = 10_000
    rounds: int = 500
    patience: int = 30

    def __post_init__(self):
        object.__setattr__(self, "parent_columns", tuple(self.parent_columns))
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "parent_columns":
                if not all(isinstance(c, str) for c in v):
                    raise ValueError(f"data.ranker.parent_columns={list(v)}: column names")
                continue
            least = 0 if f.name in SOURCES else 1
            if not isinstance(v, int) or isinstance(v, bool) or v < least:
                raise ValueError(f"data.ranker.{f.name}={v!r}: must be an integer >= {least}")
        if not any(getattr(self, s) for s in SOURCES):
            raise ValueError(f"data.ranker: every source is off ({', '.join(SOURCES)} all 0)")

    @property
    def per_seed(self) -> int:
        """The most candidates a seed can get (the sources' union)."""
        return sum(getattr(self, s) for s in SOURCES)

    @classmethod
    def of(cls, value) -> "RankerSettings | None":
        """From the config: a dict of settings, or null/false (off)."""
        if value is None or value is False or isinstance(value, cls):
            return value or None
        if value is True:
            return cls()
        return settings_of(cls, dict(value), "data.ranker")
