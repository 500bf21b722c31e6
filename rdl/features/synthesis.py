"""The parts of the depth-2 feature synthesis (:mod:`rdl.features.deep`), one method each,
over one chunk of seeds: parents, group label histories, and per child table its
aggregates, its rows' parents (with their popularity at the seed time) and children.
Every join is DuckDB SQL on one thread under the one visibility rule.

What does not depend on the seeds (a table's rows as the SQL reads them, a group's label
means) is made once per :func:`~rdl.features.deep.deep_features` call and shared by its
chunks. Each chunk's joins read only the rows its seeds' windows can hold (:meth:`Synthesis.window`:
a time after the earliest seed's window opens, visible at the latest seed), not the whole
table: the work grows with the rows, not with chunks times rows. The rows kept keep their
order, and each float aggregate adds a group's rows in that order (:func:`_duck`'s
``ordered``), so the features are those of the whole table, bit for bit."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch_frame

from rdl import duck
from rdl.data.database import Table
from rdl.features.labels import label_matrix
from rdl.features.names import Columns, down, hop, side_by_side, up
from rdl.features.table import left_out, own_features
from rdl.tasks.window import shift
from rdl.visibility import includes_equal, sql_comparison, visible

STATS = ("avg", "min", "max", "stddev_samp")
#: each chunk's joins read only the rows its seeds' windows can hold (False: every row of
#: the table, as before; the tests compare the two)
WINDOWED = True


class Synthesis:
    """The seeds and settings one :func:`deep_features` call shares among its parts."""

    def __init__(self, task, db, df, strict, settings, shared: dict | None = None):
        self.task, self.db, self.strict, self.settings = task, db, strict, settings
        self.ids = df[task.entity_col].to_numpy(dtype=np.int64)
        self.seeds = df["timestamp"].to_numpy().astype("datetime64[ns]")
        self.q = pd.DataFrame({"rid": np.arange(len(df)), "e": self.ids,
                               "s": self.seeds.astype(np.int64)})
        # where each seed's last n windows begin (ns): whole months for a calendar window
        for n in sorted({1, 4, *settings.windows}):
            self.q[f"l{n}"] = shift(self.seeds, task.window, -n).astype(np.int64)
        self.le = sql_comparison(strict)
        # shared by the chunks of one call: what does not depend on the seeds (column kinds,
        # key indexes, the tables' rows as the SQL reads them, group label means)
        self._shared: dict = {} if shared is None else shared
        self._popularity: dict = {}
        self.erow = self.rows_of(task.entity_table, self.ids)

    def once(self, key: tuple, make):
        """``make()``, made once per call (for every chunk) under ``key``."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    def window(self, rows: pd.DataFrame, n: int, t: str = "t") -> pd.DataFrame:
        """The rows (times ``t`` in ns) that the last ``n`` windows before some seed of
        this chunk can hold: after the earliest seed's windows open, visible at the latest
        seed. In their order: a group's float aggregates add its rows in the same order as
        over the whole table, and so come out the same, bit for bit."""
        if not WINDOWED:
            return rows
        s = self.q["s"].to_numpy()
        if not len(s):
            return rows.iloc[:0]
        times = rows[t].to_numpy()
        keep = np.flatnonzero((times > self.opens(n)) & visible(times, s.max(), self.strict))
        if len(keep) and keep[-1] - keep[0] == len(keep) - 1:   # a table in time order:
            return rows.iloc[keep[0]:keep[-1] + 1]              # a slice, no copy
        return rows.iloc[keep]

    def opens(self, n: int) -> int:
        """When the earliest seed's last ``n`` windows open (ns): a row at that time is
        outside them."""
        return int(self.q[f"l{n}"].min())

    def rows_of(self, name: str, keys) -> np.ndarray:
        """The row positions in table ``name`` of the primary keys ``keys`` (-1: none)."""
        def index():
            table = self.db[name]
            return pd.Index(table.df[table.pkey].to_numpy(np.float64, na_value=np.nan))
        keys = np.asarray(pd.array(keys).to_numpy(np.float64, na_value=np.nan)
                          if not isinstance(keys, np.ndarray) else keys, dtype=np.float64)
        return self.once(("index", name), index).get_indexer(keys)

    # -- column kinds -------------------------------------------------------------------
    def kinds(self, name: str) -> dict[str, list[str]]:
        """A table's numerical and categorical feature columns, as the graph types them."""
        def infer():
            from rdl.graph.build import infer_stypes
            table = self.db[name]
            st = infer_stypes(table, self.db.stypes.get(name), name=name)
            num = [c for c, s in st.items() if s == torch_frame.numerical and c != table.time_col]
            # strings the graph embeds as text (a small table's few names) are categories
            # here unless they are free text or names
            cat = [c for c, s in st.items()
                   if s in (torch_frame.categorical, torch_frame.text_embedded)
                   and c != table.time_col and not left_out(table.df[c])]
            return {"num": num, "cat": cat}
        return self.once(("kinds", name), infer)

    def top_values(self, table: Table, col: str) -> list:
        """The column's ``top_k`` most frequent values in rows up to the val time."""
        df = table.df
        if table.time_col is not None:
            df = df[df[table.time_col] <= self.task.val_time]
        counts = df[col].dropna().astype("string").value_counts(sort=False)
        # most frequent first, ties by value: the same columns on every machine
        counts = counts.sort_index(kind="stable").sort_values(ascending=False, kind="stable")
        return list(counts.index[:self.settings.top_k])

    def codes(self, table: Table, col: str, rows=None) -> tuple[np.ndarray, list]:
        """The column's values as codes of its top values (-1: another or none), in the
        smallest integer type that holds them: a child table's rows carry a code per
        categorical column of theirs and of their parents' (a byte each, not eight)."""
        top = self.top_values(table, col)
        values = table.df[col] if rows is None else table.df[col].iloc[rows]
        codes = pd.Index(top, dtype="string").get_indexer(values.astype("string"))
        return codes.astype(np.min_scalar_type(-max(len(top), 1))), top  # -1..len-1

    # -- parents ------------------------------------------------------------------------
    def parents(self) -> pd.DataFrame | None:
        """The columns of each referenced parent row, NaN where it is later than the seed;
        and the parent's child rows in the last 1 and 4 windows (``E > P < C``)."""
        task, entity = self.task, self.db[self.task.entity_table]
        parts = []
        for fkey, ref in entity.fkeys.items():
            parent = self.db[ref]
            if parent.pkey is None:
                continue
            fk = entity.df[fkey].to_numpy(dtype=np.float64, na_value=np.nan)
            pid = np.where(self.erow >= 0, fk[np.maximum(self.erow, 0)], np.nan)
            prow = self.rows_of(ref, pid)
            known = prow >= 0
            pid = np.where(known, pid, -1).astype(np.int64)
            path = up(task.entity_table, entity.fkeys, fkey)
            cols = own_features(path, parent, pid, self.seeds)
            if parent.time_col is not None:  # a parent from after the seed is not there yet
                t = parent.df[parent.time_col].to_numpy().astype("datetime64[ns]")
                pt = np.where(known, t[np.maximum(prow, 0)], np.datetime64("NaT"))
                seen = (pt <= self.seeds) if includes_equal(self.strict) else (pt < self.seeds)
                known &= seen
            cols = cols.where(pd.Series(known, index=cols.index), axis=0)
            parts.append(cols)
            for name, child in self.db:
                for cfk in [f for f, r in child.fkeys.items() if r == ref]:
                    if child.time_col is None or name == task.entity_table:
                        continue
                    pop = self.popularity(name, child, cfk)
                    parts.append(self.lookup(pop, pid, down(path, name, child.fkeys, cfk)))
        return side_by_side(parts) if parts else None

    # -- popularity of a parent at each seed time ---------------------------------------
    def popularity(self, name: str, child: Table, fkey: str) -> pd.DataFrame:
        """Per distinct seed time ``s`` and parent row ``p``: the child rows of ``p`` in the
        last 1 and 4 windows before ``s`` (``pop_1``, ``pop_4``)."""
        key = (name, fkey)
        if key not in self._popularity:
            def rows():
                c = pd.DataFrame({"p": child.df[fkey], "t": child.df[child.time_col]}).dropna()
                return c.assign(p=c["p"].to_numpy(dtype=np.int64),
                                t=c["t"].to_numpy().astype("datetime64[ns]").astype(np.int64))
            c = self.window(self.once(("popularity", name, fkey), rows), 4)
            s = self.q[["s", "l1", "l4"]].drop_duplicates("s").sort_values("s")
            sql = ("SELECT s.s, c.p, count(*) FILTER (WHERE c.t > s.l1) AS pop_1, "
                   "count(*) AS pop_4 FROM s JOIN c "
                   f"ON c.t > s.l4 AND c.t {self.le} s.s GROUP BY s.s, c.p")
            self._popularity[key] = _duck(sql, s=s, c=c)
        return self._popularity[key]

    def lookup(self, pop: pd.DataFrame, pid: np.ndarray, prefix: str) -> pd.DataFrame:
        """``pop`` at each seed's time for parent ``pid`` (0 where it had no row)."""
        q = pd.DataFrame({"rid": np.arange(len(pid)), "p": pid, "s": self.q["s"]})
        hit = q.merge(pop, on=["s", "p"], how="left").set_index("rid").reindex(q["rid"])
        return pd.DataFrame({f"{prefix}.count_1": hit["pop_1"].fillna(0).to_numpy(np.float64),
                             f"{prefix}.count_4": hit["pop_4"].fillna(0).to_numpy(np.float64)})

    # -- group label histories ----------------------------------------------------------
    def group_histories(self, history: pd.DataFrame | None) -> pd.DataFrame | None:
        """Per categorical column of the entity (a group), the mean label of the group's
        entities at its last closed window before ``s`` and over its last 4."""
        if history is None or len(history) == 0:
            return None
        out = Columns()
        for col, codes, g, ycols in self.once(("groups",),
                                              lambda: self.group_means(history)):
            seeds = pd.DataFrame({"rid": np.arange(len(self.ids)),
                                  "g": np.where(self.erow >= 0, codes[self.erow], -1),
                                  "t": self.seeds})
            hit = pd.merge_asof(seeds.sort_values("t", kind="stable"), g,
                                left_on="t", right_on="available", by="g",
                                direction="backward", allow_exact_matches=True)
            hit = hit.set_index("rid").reindex(np.arange(len(self.ids)))
            for j, c in enumerate(ycols):
                tag = "" if len(ycols) == 1 else f".class_{j}"
                out[f"group[{col}].label_last{tag}"] = hit[c].to_numpy(np.float64)
                out[f"group[{col}].label_mean_4{tag}"] = hit[f"{c}_4"].to_numpy(np.float64)
        return pd.DataFrame(out, index=pd.RangeIndex(len(self.ids))) if out else None

    def group_means(self, history: pd.DataFrame) -> list[tuple]:
        """Per group column of the entity: its code per entity row, and per group and time
        a label closes (``available``, in order) the mean label and the mean of the last 4."""
        task = self.task
        entity = self.db[task.entity_table]
        e, y = task.entity_col, task.target_col
        h = history[[e, "available", y]].dropna(subset=[y])
        labels = label_matrix(task, h[y])
        out = []
        for col in self.kinds(task.entity_table)["cat"]:
            values = entity.df[col].astype("string")
            if values.nunique() > self.settings.max_group_values or values.nunique() < 2:
                continue
            codes = pd.Categorical(values.astype(object)).codes.astype(np.int64)
            g = pd.DataFrame(labels, columns=[f"y{j}" for j in range(labels.shape[1])])
            hrow = self.rows_of(task.entity_table, h[e].to_numpy(np.float64))
            g["g"] = np.where(hrow >= 0, codes[hrow], -1)
            g["available"] = h["available"].to_numpy().astype("datetime64[ns]")
            g = g[g["g"] >= 0].groupby(["g", "available"], sort=True).mean().reset_index()
            ycols = [c for c in g.columns if c.startswith("y")]
            roll = g.groupby("g", sort=False)[ycols].rolling(4, min_periods=1).mean()
            g[[f"{c}_4" for c in ycols]] = roll.reset_index(level=0, drop=True).to_numpy()
            out.append((col, codes, g.sort_values("available", kind="stable"), ycols))
        return out

    # -- one child table ----------------------------------------------------------------
    def child(self, name: str, table: Table, fkey: str) -> pd.DataFrame:
        """Everything of one child table ``C`` (and its parents and children) over the
        entity's ``C`` rows in the last windows."""
        settings = self.settings
        c, cols, pops, prefix = self.once(("child", name, fkey),
                                          lambda: self.child_rows(name, table, fkey))
        wmax = max(settings.windows)
        c = self.window(c, wmax)
        sql = (f"SELECT q.rid, {', '.join(f'{x} AS f{i}' for i, (x, _) in enumerate(cols))} "
               f"FROM c JOIN q ON c.e = q.e AND c.t > q.l{wmax} "
               f"AND c.t {self.le} q.s GROUP BY q.rid")
        agg = _duck(sql, ordered=True, q=self.q, c=c).set_index("rid").reindex(
            np.arange(len(self.ids)))
        out = Columns()
        for i, (expr, col) in enumerate(cols):
            v = agg[f"f{i}"].to_numpy(dtype=np.float64, na_value=np.nan)
            out[col] = np.nan_to_num(v) if expr.startswith("count") else v
        # the counts themselves are depth 1's; their trends are not
        n = {w: out.pop(f"{prefix}.n_{w}") for w in (1, *settings.windows)}
        for a, b in zip((1, *settings.windows), settings.windows):
            if a < b:
                out[f"{prefix}.trend_{a}_{b}"] = n[a] / a - n[b] / b
        for ref_col, cname, ctable, cfk, pp in pops:
            pop = self.popularity(cname, ctable, cfk)
            out.update(self.popularity_over_rows(c, ref_col, pop, pp, wmax))
        out.update(self.grandchildren(name, table, fkey, prefix, wmax))
        return pd.DataFrame(out, index=pd.RangeIndex(len(self.ids)))

    def child_rows(self, name: str, table: Table, fkey: str) -> tuple:
        """The rows of child table ``C`` as the SQL of :meth:`child` reads them (entity,
        time, numbers, other keys, its parents' numbers and category codes), the
        aggregates' SQL and names, the parents whose popularity to look up, the prefix."""
        task, settings = self.task, self.settings
        prefix = hop(name, table.fkeys, fkey)
        kinds = self.kinds(name)
        src = table.df
        keep = src[fkey].notna().to_numpy() & src[table.time_col].notna().to_numpy()
        rows = np.flatnonzero(keep)
        c = {"e": src[fkey].to_numpy(dtype=np.float64, na_value=np.nan)[rows].astype(np.int64),
             "t": src[table.time_col].to_numpy().astype("datetime64[ns]")[rows].astype(np.int64)}
        # (columns gathered, one frame made at the end: a wide schema's hundreds, each
        # inserted into a frame, fragmented it; pandas warned)
        cols = []   # (sql expression over the windows, name), in output order
        wmax = max(settings.windows)
        win = {n: f"c.t > q.l{n}" for n in (1, *settings.windows)}
        for n in (1, *settings.windows):
            cols.append((f"count(*) FILTER (WHERE {win[n]})", f"{prefix}.n_{n}"))
        for k, col in enumerate(kinds["num"]):
            c[f"x{k}"] = src[col].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
            for n in settings.windows:
                cols += [(f"{f}(c.x{k}) FILTER (WHERE {win[n]})", f"{prefix}.{col}.{f}_{n}")
                         for f in STATS]
        others = [f for f in table.fkeys if f != fkey]
        for k, f in enumerate(others):
            c[f"k{k}"] = src[f].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
            for n in settings.windows:
                cols.append((f"count(DISTINCT c.k{k}) FILTER (WHERE {win[n]})",
                             f"{prefix}.{f}.distinct_{n}"))
        cats = [(col, table, None, prefix) for col in kinds["cat"]]
        # parents of the child rows: their numbers (means) and categories (top-k counts)
        pops = []
        for k, f in enumerate(others):
            ref = table.fkeys[f]
            parent = self.db[ref]
            if parent.pkey is None or ref == task.entity_table:
                continue
            pidx = self.rows_of(ref, c[f"k{k}"])
            has = pidx >= 0
            pidx = np.maximum(pidx, 0)
            pp = up(name, table.fkeys, f, path=prefix)
            for j, col in enumerate(self.kinds(ref)["num"]):
                v = parent.df[col].to_numpy(dtype=np.float64, na_value=np.nan)
                c[f"p{k}_{j}"] = np.where(has, v[pidx], np.nan)
                cols += [(f"avg(c.p{k}_{j}) FILTER (WHERE {win[n]})", f"{pp}.{col}.avg_{n}")
                         for n in settings.windows]
            cats += [(col, parent, (pidx, has), pp) for col in self.kinds(ref)["cat"]]
            for cname, ctable in self.db:
                for cfk in [x for x, r in ctable.fkeys.items() if r == ref]:
                    if ctable.time_col is not None:
                        pops.append((f"k{k}", cname, ctable, cfk,
                                     down(pp, cname, ctable.fkeys, cfk)))
        for j, (col, owner, via, pp) in enumerate(cats):
            if via is None:
                code, top = self.codes(owner, col, rows)
            else:
                pcode, top = self.codes(owner, col)
                code = np.where(via[1], pcode[via[0]], -1)
            c[f"c{j}"] = code
            for v, value in enumerate(top):
                cols.append((f"count(*) FILTER (WHERE c.c{j} = {v})",
                             f"{pp}.{col}={value}.count_{wmax}"))
        return pd.DataFrame(c), cols, pops, prefix

    def popularity_over_rows(self, c, ref_col, pop, pp, wmax) -> dict:
        """The parent's popularity at ``s``, averaged over the entity's child rows ``c``
        (those of the last ``wmax`` windows, :meth:`window`; integers: any order adds
        them up the same)."""
        cc = c[["e", "t", ref_col]].rename(columns={ref_col: "p"}).dropna()
        cc = cc.assign(p=cc["p"].astype(np.int64))
        sql = ("SELECT q.rid, avg(coalesce(pop.pop_1, 0)) AS a1, avg(coalesce(pop.pop_4, 0)) "
               f"AS a4 FROM q JOIN cc ON cc.e = q.e AND cc.t > q.l{wmax} "
               f"AND cc.t {self.le} q.s LEFT JOIN pop ON pop.s = q.s AND pop.p = cc.p "
               "GROUP BY q.rid")
        agg = _duck(sql, q=self.q, cc=cc, pop=pop).set_index("rid").reindex(
            np.arange(len(self.ids)))
        return {f"{pp}.count_1.avg_{wmax}": agg["a1"].to_numpy(np.float64, na_value=np.nan),
                f"{pp}.count_4.avg_{wmax}": agg["a4"].to_numpy(np.float64, na_value=np.nan)}

    def grandchildren(self, name, table, fkey, prefix, wmax) -> dict:
        """Rows of tables ``G`` referencing the entity's ``C`` rows (``C`` needs a primary
        key): their count and numeric means, both ``C`` and ``G`` rows visible at ``s``."""
        out = Columns()
        if table.pkey is None:
            return out
        for gp, nums, gg in self.once(("grandchildren", name, fkey),
                                      lambda: self.grandchild_rows(name, table, fkey, prefix)):
            gg = self.window(gg, wmax)
            terms = ["count(*) AS n"] + [f"avg(gg.x{j}) AS x{j}" for j in range(len(nums))]
            sql = (f"SELECT q.rid, {', '.join(terms)} FROM gg JOIN q ON gg.e = q.e "
                   f"AND gg.t > q.l{wmax} AND gg.t {self.le} q.s "
                   f"AND gg.ct {self.le} q.s GROUP BY q.rid")
            agg = _duck(sql, ordered=True, q=self.q, gg=gg).set_index("rid").reindex(
                np.arange(len(self.ids)))
            out[f"{gp}.count_{wmax}"] = agg["n"].fillna(0).to_numpy(np.float64)
            for j, col in enumerate(nums):
                out[f"{gp}.{col}.avg_{wmax}"] = agg[f"x{j}"].to_numpy(np.float64, na_value=np.nan)
        return out

    def grandchild_rows(self, name, table, fkey, prefix) -> list[tuple]:
        """Per table ``G`` referencing ``C`` (per key): the prefix of its features, its
        numeric columns and its rows as :meth:`grandchildren`'s SQL reads them (the entity
        of their ``C`` row, its time ``ct``, their own time ``t`` and numbers)."""
        # per row of C: its entity's key (NaN: none) and its time
        owner = table.df[fkey].to_numpy(dtype=np.float64, na_value=np.nan)
        ct = table.df[table.time_col].to_numpy().astype("datetime64[ns]")
        owner = np.where(np.isnat(ct), np.nan, owner)
        ct = ct.astype(np.int64)
        out = []
        for gname, g in self.db:
            for gfk in [f for f, r in g.fkeys.items() if r == name]:
                ridx = self.rows_of(name, g.df[gfk].to_numpy(dtype=np.float64, na_value=np.nan))
                ok = ridx >= 0
                ok[ok] = ~np.isnan(owner[ridx[ok]])
                if g.time_col is not None:
                    ok &= g.df[g.time_col].notna().to_numpy()
                gg = pd.DataFrame({"e": owner[ridx[ok]].astype(np.int64), "ct": ct[ridx[ok]]})
                gg["t"] = (g.df[g.time_col].to_numpy().astype("datetime64[ns]")
                           .astype(np.int64)[ok] if g.time_col else gg["ct"])
                nums = self.kinds(gname)["num"]
                for j, col in enumerate(nums):
                    gg[f"x{j}"] = g.df[col].to_numpy(dtype=np.float64, na_value=np.nan)[ok]
                out.append((down(prefix, gname, g.fkeys, gfk), nums, gg))
        return out


def _duck(sql: str, ordered: bool = False, **frames) -> pd.DataFrame:
    """``sql`` over the given frames in DuckDB, on one thread (float sums in one order),
    within its memory limit (:mod:`rdl.duck`). ``ordered``: the join as written, its right
    side (the seeds) hashed and its left (the rows) streamed through in their order, so
    that each group adds its rows in the rows' order whatever the sizes. Left to itself
    DuckDB hashes the smaller side, and a group whose rows come from the hash table gets
    them in another order: where a chunk's rows, cut to its windows, are fewer than its
    seeds, its float sums would differ in their last bits from the whole table's."""
    with duck.cursor(ordered) as con:
        for name, frame in frames.items():
            con.register(name, frame)
        return con.execute(sql).df()
