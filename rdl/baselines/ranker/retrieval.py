"""Retrieval and pair features in DuckDB: each seed's candidate items, and what is known of
each (seed, candidate) pair at the seed's time.

Per seed time ``s`` (:meth:`Retrieval.at`), over the events visible at ``s``
(:mod:`~rdl.baselines.ranker.events`: ``v <= s``, the one visibility rule):

- ``pop``: each item's events in the last 1 and 4 windows and the lookback;
- ``nb``: item-to-item co-occurrence (ItemCF): for every pair of items among one entity's
  ``basket_items`` most recent within the lookback, the number of entities with both;
  the ``neighbours`` most frequent kept per item;
- ``sib_<k>``: per parent value (a foreign key of the item table, or a ``parent_columns``
  value), its items most popular in the last 4 windows;
- ``segpop_<k>``: per value of an entity segment column, the items' events by entities
  of that value in the last 1 and 4 windows;
- the newest items: the item table's rows visible at ``s`` with the latest times (where
  the table has a time).

Then per chunk of seeds at ``s`` (:meth:`Retrieval.pairs`; :meth:`Retrieval.candidates`
without the features): the entity's pairs (count all time and in the last 1 and 4
windows, first and last time), its ``recent_items``, the
candidates of each source (:data:`~rdl.baselines.ranker.settings.SOURCES`) with their ranks,
and the features of every candidate. DuckDB does the joins and the per-group top-n; pandas
only receives the result (one row per seed and candidate).
"""
from __future__ import annotations

import contextlib

import pandas as pd

from rdl import duck

from rdl.baselines.ranker.events import Events
from rdl.baselines.ranker.settings import RankerSettings

_NS_PER_DAY = 86_400 * 10**9


class Retrieval:
    """The ranker's DuckDB session over one task's events.

    Args:
        events: the task's events.
        parents: per parent name, a frame ``(i, p)``: each item row's parent value (int64).
        segments: per segment name, a frame ``(e, g)``: each entity row's value (int64).
        window: the task's window (ns); settings: :class:`RankerSettings`.
    """

    def __init__(self, events: Events, parents: dict[str, pd.DataFrame],
                 segments: dict[str, pd.DataFrame], window: int, settings: RankerSettings,
                 born: pd.DataFrame | None = None):
        self.cfg, self.w = settings, int(window)
        self.parents, self.segments = list(parents), list(segments)
        self.has_new = born is not None and settings.new > 0
        # rdl's memory limit and spill folder (rdl/duck.py), on DuckDB's threads: the
        # results are counts, and each top-n's order is broken by the item, the same on
        # any number of threads
        self._db = contextlib.ExitStack()
        self.con = self._db.enter_context(duck.connect(threads=None))
        self.con.register("ev_df", events.frame[["e", "i", "v"]])
        self.con.execute("CREATE TEMP TABLE ev AS SELECT * FROM ev_df")
        for k, df in enumerate(parents.values()):
            self.con.register(f"it_{k}", df)
        for k, df in enumerate(segments.values()):
            self.con.register(f"seg_{k}", df)
        if self.has_new:   # (i, v): each item row visible from v (its table's time)
            self.con.register("born", born)
        self.s: int | None = None

    def close(self) -> None:
        self._db.close()

    def _q(self, sql: str) -> None:
        self.con.execute(sql)

    def at(self, s: int) -> None:
        """Build the per-time tables for seed time ``s`` (ns) (kept where they are built
        for ``s`` already: val is retrieved for, built and scored at one time)."""
        if s == self.s:
            return
        c, w = self.cfg, self.w
        lo = s - c.lookback * w
        self.s = None   # set once every table is built
        self._q(f"""CREATE OR REPLACE TEMP TABLE pop AS
            SELECT i, count(*) FILTER (WHERE v > {s - w}) AS p1,
                   count(*) FILTER (WHERE v > {s - 4 * w}) AS p4, count(*) AS pl
            FROM ev WHERE v <= {s} AND v > {lo} GROUP BY i""")
        self._q(f"""CREATE OR REPLACE TEMP TABLE basket AS
            SELECT e, i FROM ev WHERE v <= {s} AND v > {lo} GROUP BY e, i
            QUALIFY row_number() OVER (PARTITION BY e ORDER BY max(v) DESC, i) <= {c.basket_items}""")
        self._q(f"""CREATE OR REPLACE TEMP TABLE nb AS
            SELECT a.i, b.i AS j, count(*) AS c FROM basket a JOIN basket b
              ON a.e = b.e AND a.i <> b.i GROUP BY a.i, b.i
            QUALIFY row_number() OVER (PARTITION BY a.i ORDER BY count(*) DESC, b.i) <= {c.neighbours}""")
        for k in range(len(self.parents)):
            self._q(f"""CREATE OR REPLACE TEMP TABLE sib_{k} AS
                SELECT it.p, it.i, pop.p4 FROM it_{k} it JOIN pop ON pop.i = it.i WHERE pop.p4 > 0
                QUALIFY row_number() OVER (PARTITION BY it.p ORDER BY pop.p4 DESC, it.i) <= {max(c.parents, 1)}""")
        for k in range(len(self.segments)):
            self._q(f"""CREATE OR REPLACE TEMP TABLE segpop_{k} AS
                SELECT g.g, ev.i, count(*) FILTER (WHERE ev.v > {s - w}) AS c1, count(*) AS c4
                FROM ev JOIN seg_{k} g ON g.e = ev.e
                WHERE ev.v <= {s} AND ev.v > {s - 4 * w} GROUP BY g.g, ev.i""")
        self.s = s

    def pairs(self, seeds: pd.DataFrame) -> pd.DataFrame:
        """Candidates and pair features of ``seeds`` (columns ``rid``, ``e``; all at the
        time of the last :meth:`at`): one row per (``rid``, item ``i``), sorted."""
        self._candidates(seeds)
        return self._features()

    def candidates(self, seeds: pd.DataFrame) -> pd.DataFrame:
        """The candidates of ``seeds`` alone, as :meth:`pairs` finds them (columns ``rid``,
        ``i``; sorted), without their features."""
        self._candidates(seeds)
        return self.con.execute("SELECT rid, i FROM cand ORDER BY rid, i").df()

    def _candidates(self, seeds: pd.DataFrame) -> None:
        """The tables of :meth:`pairs` up to ``cand``: each seed's candidates and ranks."""
        c, w, s = self.cfg, self.w, self.s
        self.con.register("q_df", seeds[["rid", "e"]])
        self._q("CREATE OR REPLACE TEMP TABLE q AS SELECT * FROM q_df")
        self._q(f"""CREATE OR REPLACE TEMP TABLE pair AS
            SELECT q.rid, ev.i, count(*) AS n_all, count(*) FILTER (WHERE ev.v > {s - w}) AS n_1,
                   count(*) FILTER (WHERE ev.v > {s - 4 * w}) AS n_4,
                   max(ev.v) AS last_v, min(ev.v) AS first_v
            FROM q JOIN ev ON ev.e = q.e AND ev.v <= {s} GROUP BY q.rid, ev.i""")
        self._q(f"""CREATE OR REPLACE TEMP TABLE recent AS SELECT rid, i FROM pair
            QUALIFY row_number() OVER (PARTITION BY rid ORDER BY last_v DESC, i) <= {c.recent_items}""")
        self._q("""CREATE OR REPLACE TEMP TABLE cooc AS
            SELECT r.rid, nb.j AS i, sum(nb.c) AS cooc_sum, max(nb.c) AS cooc_max,
                   count(*) AS cooc_hits
            FROM recent r JOIN nb ON nb.i = r.i GROUP BY r.rid, nb.j""")
        # candidates: each source's top n per seed, with its rank
        ranked = [("past", "pair", "n_all DESC, last_v DESC, i"),
                  ("cooccurrence", "cooc", "cooc_sum DESC, cooc_max DESC, i")]
        parent_terms = []
        for k in range(len(self.parents)):
            self._q(f"""CREATE OR REPLACE TEMP TABLE par_{k} AS
                SELECT r.rid, sib.i, count(DISTINCT r.i) AS hits, max(sib.p4) AS p4
                FROM recent r JOIN it_{k} a ON a.i = r.i JOIN sib_{k} sib ON sib.p = a.p
                GROUP BY r.rid, sib.i""")
            parent_terms.append(f"par_{k}")
        if parent_terms:
            union = " UNION ALL ".join(f"SELECT rid, i, hits, p4 FROM {t}" for t in parent_terms)
            self._q(f"""CREATE OR REPLACE TEMP TABLE par AS SELECT rid, i, sum(hits) AS hits,
                max(p4) AS p4 FROM ({union}) GROUP BY rid, i""")
            ranked.append(("parents", "par", "hits DESC, p4 DESC, i"))
        segment_terms = []
        for k in range(len(self.segments)):
            self._q(f"""CREATE OR REPLACE TEMP TABLE segc_{k} AS
                SELECT q.rid, sp.i, sp.c1, sp.c4 FROM q JOIN seg_{k} g ON g.e = q.e
                JOIN (SELECT * FROM segpop_{k} QUALIFY row_number() OVER
                      (PARTITION BY g ORDER BY c1 DESC, c4 DESC, i) <= {max(c.segments, 1)}) sp
                  ON sp.g = g.g""")
            segment_terms.append(f"SELECT rid, i, c1, c4 FROM segc_{k}")
        if segment_terms:
            self._q(f"""CREATE OR REPLACE TEMP TABLE segc AS SELECT rid, i, max(c1) AS c1,
                max(c4) AS c4 FROM ({' UNION ALL '.join(segment_terms)}) GROUP BY rid, i""")
            ranked.append(("segments", "segc", "c1 DESC, c4 DESC, i"))
        self._q(f"""CREATE OR REPLACE TEMP TABLE popc AS SELECT q.rid, t.i FROM q CROSS JOIN
            (SELECT i FROM pop ORDER BY p1 DESC, p4 DESC, i LIMIT {c.popular}) t""")
        ranked.append(("popular", "popc", "i"))  # the popular list's order is the global rank
        if self.has_new:
            self._q(f"""CREATE OR REPLACE TEMP TABLE newc AS SELECT q.rid, t.i, t.v FROM q CROSS
                JOIN (SELECT i, v FROM born WHERE v <= {s} ORDER BY v DESC, i LIMIT {c.new}) t""")
            ranked.append(("new", "newc", "v DESC, i"))
        picks = []
        for name, table, order in ranked:
            n = getattr(c, name)
            if n:
                picks.append(f"""SELECT rid, i, '{name}' AS src, row_number() OVER
                    (PARTITION BY rid ORDER BY {order}) AS r FROM {table}
                    QUALIFY r <= {n}""")
        self._q(f"""CREATE OR REPLACE TEMP TABLE cand AS
            SELECT rid, i, {', '.join(f"min(r) FILTER (WHERE src = '{n}') AS rank_{n}" for n, *_ in ranked)}
            FROM ({' UNION ALL '.join(picks)}) GROUP BY rid, i""")

    def _features(self) -> pd.DataFrame:
        """Every candidate's features: the pair's, the item's popularity, its co-occurrence,
        parent and segment scores, and the entity's activity."""
        s = self.s
        joins = ["LEFT JOIN pair p ON p.rid = c.rid AND p.i = c.i",
                 "LEFT JOIN pop ON pop.i = c.i",
                 "LEFT JOIN cooc co ON co.rid = c.rid AND co.i = c.i",
                 "LEFT JOIN act ON act.rid = c.rid"]
        cols = ["coalesce(p.n_all, 0) AS pair_count", "coalesce(p.n_1, 0) AS pair_count_1",
                "coalesce(p.n_4, 0) AS pair_count_4",
                f"({s} - p.last_v) / {_NS_PER_DAY} AS pair_days_since_last",
                f"({s} - p.first_v) / {_NS_PER_DAY} AS pair_days_since_first",
                "coalesce(pop.p1, 0) AS item_count_1", "coalesce(pop.p4, 0) AS item_count_4",
                "coalesce(pop.pl, 0) AS item_count_lookback",
                "coalesce(pop.p1, 0) / (coalesce(pop.p4, 0) / 4.0 + 1.0) AS item_trend",
                "coalesce(co.cooc_sum, 0) AS cooc_sum", "coalesce(co.cooc_max, 0) AS cooc_max",
                "coalesce(co.cooc_hits, 0) AS cooc_hits",
                "act.events AS entity_events", "act.items AS entity_items",
                f"({s} - act.last_v) / {_NS_PER_DAY} AS entity_days_since_last",
                *(f"c.rank_{n}" for n in self._ranked_names())]
        self._q("""CREATE OR REPLACE TEMP TABLE act AS SELECT rid, sum(n_all) AS events,
            count(*) AS items, max(last_v) AS last_v FROM pair GROUP BY rid""")
        for k in range(len(self.parents)):
            joins.append(f"LEFT JOIN par_{k} pa{k} ON pa{k}.rid = c.rid AND pa{k}.i = c.i")
            cols.append(f"coalesce(pa{k}.hits, 0) AS parent_hits_{k}")
        for k in range(len(self.segments)):
            joins += [f"LEFT JOIN q q{k} ON q{k}.rid = c.rid",
                      f"LEFT JOIN seg_{k} g{k} ON g{k}.e = q{k}.e",
                      f"LEFT JOIN segpop_{k} sp{k} ON sp{k}.g = g{k}.g AND sp{k}.i = c.i"]
            cols += [f"coalesce(sp{k}.c1, 0) AS segment_count_1_{k}",
                     f"coalesce(sp{k}.c4, 0) AS segment_count_4_{k}"]
        df = self.con.execute(f"SELECT c.rid, c.i, {', '.join(cols)} FROM cand c "
                              f"{' '.join(joins)} ORDER BY c.rid, c.i").df()
        return df

    def _ranked_names(self) -> list[str]:
        names = ["past", "cooccurrence"]
        if self.parents:
            names.append("parents")
        if self.segments:
            names.append("segments")
        return names + ["popular", *(["new"] if self.has_new else [])]
