"""Synthetic H&M transactions: the week-by-week simulation of visits and baskets.

Poisson visits per customer and week, baskets of repeats and taste-driven picks, prices
marked down with age and in sales (see :mod:`rdl.data.synthetic_hm`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.synthetic_hm.articles import _article_prices, _article_weights
from rdl.data.synthetic_hm.customers import _favourites, _life
from rdl.data.synthetic_hm.vocab import INDEXES, SECTIONS, TIME_DTYPE

_FAVOURITE_CUTS = (0.45, 0.75, 0.90)   # favourite 1, 2, 3, else explore
BURST = 0.5                            # how much recent visits raise the visit rate
P_COPY = 0.04                          # a basket row is a copy of the previous one
RATE_FUDGE = 1.37                      # bursts + first visits: expected rows / base rate


def _day_weights(start: pd.Timestamp, n_days: int) -> pd.DataFrame:
    """Shop traffic per day: weekday pattern, Black Friday / Christmas / summer-sale peaks."""
    days = start + pd.to_timedelta(np.arange(n_days), unit="D")
    weekday = np.array([0.9, 0.9, 0.95, 1.0, 1.1, 1.2, 1.0])[days.day_of_week]
    doy = days.day_of_year.to_numpy()
    bump = lambda centre, width, h: h * np.exp(-0.5 * ((doy - centre) / width) ** 2)  # noqa: E731
    level = 1 + bump(330, 4, 0.8) + bump(350, 8, 0.4) + bump(182, 10, 0.3) + bump(100, 15, -0.2)
    sale = ((doy >= 360) | (doy <= 20)) | ((doy >= 175) & (doy <= 205))
    return pd.DataFrame({"w": weekday * level, "sale": sale})


#: a week's (or the whole simulation's) rows: their arrays and dtypes
TX_ARRAYS = {"day": np.int16, "customer": np.int32, "article": np.int32, "price": np.float64,
             "channel": np.int8}


def _transactions(rng, cust: dict, art: dict, day_w: pd.DataFrame, n_tx: float) -> dict:
    """Simulate visits week by week (:func:`_weeks`); returns arrays day, customer, article,
    price, channel."""
    out = list(_weeks(rng, cust, art, day_w, n_tx))
    return {k: np.concatenate([o[k] for o in out] or [np.zeros(0, t)])
            for k, t in TX_ARRAYS.items()}


def _weeks(rng, cust: dict, art: dict, day_w: pd.DataFrame, n_tx: float):
    """The simulation, one week at a time: yields each week's rows (arrays as
    :data:`TX_ARRAYS`, sorted by day and customer), a week without rows skipped. Its state
    between weeks is per customer (purchase history, recent visits), never the rows: a
    caller that writes each week away holds one week's rows (:mod:`.files`). Draws from
    ``rng`` as each week is asked for: consumed whole, the same draws in the same order."""
    n_days = len(day_w)
    n_weeks = -(-n_days // 7)
    g = day_w["w"].to_numpy()
    sale = day_w["sale"].to_numpy()
    n_sec = len(SECTIONS)

    # sections and the articles in them, sorted by section for within-section draws
    by_sec = np.argsort(art["section"], kind="stable")
    sec_bounds = np.searchsorted(art["section"][by_sec], np.arange(n_sec + 1))
    prod = art["product"]
    prod_start = np.searchsorted(prod, np.arange(prod.max() + 2))
    sec_group = np.array([INDEXES[s[2]][1] for s in SECTIONS])
    sec_mass = np.bincount(art["section"], art["pop"], n_sec) + 1e-9
    fav = _favourites(rng, cust, sec_mass, sec_group)

    # rate normaliser: expected rows = sum of weekly base rates x basket size x burst factor
    basket_mean = 1 + 2.0 * cust["basket"]
    base = sum((_life(cust, 7 * w + 3.5) * cust["activity"] * basket_mean).sum()
               * g[7 * w:7 * w + 7].sum() for w in range(n_weeks))
    k = n_tx / (base * RATE_FUDGE) if base > 0 else 0.0
    # a section's typical weight: off season (or when its articles fade) favourites give way
    sec_ref = sum(np.bincount(art["section"], _article_weights(art, 7 * w + 3.5)[0], n_sec)
                  for w in range(n_weeks)) / n_weeks

    K = 8                                         # ring buffer of past purchases
    hist = np.full((cust["n"], K), -1, dtype=np.int32)
    n_hist = np.zeros(cust["n"], dtype=np.int64)
    heat = np.zeros(cust["n"])                    # recent visits, decays each week
    for w in range(n_weeks):
        d0, d1 = 7 * w, min(7 * w + 7, n_days)
        gw = g[d0:d1]
        weights, life = _article_weights(art, d0 + 3.5)
        lam = k * cust["activity"] * _life(cust, d0 + 3.5) * gw.sum() * (1 + BURST * (1 - np.exp(-heat)))
        n_vis = rng.poisson(lam)
        newbies = np.flatnonzero((cust["join"] >= max(d0, 0)) & (cust["join"] < d1) & (cust["stop"] > d1))
        heat = 0.55 * heat + n_vis
        v_cust = np.concatenate([np.repeat(np.arange(cust["n"]), n_vis), newbies])
        if v_cust.size == 0:
            continue
        v_day = d0 + np.searchsorted(np.cumsum(gw) / gw.sum(), rng.random(v_cust.size), side="right")
        v_day[v_cust.size - newbies.size:] = np.floor(cust["join"][newbies])   # first visit = join
        lo = np.floor(np.clip(cust["join"][v_cust], d0, d1 - 1))
        hi = np.floor(np.clip(cust["stop"][v_cust], lo, d1 - 1))
        v_day = np.clip(v_day, lo, hi)
        order = np.argsort(v_cust, kind="stable")
        v_cust, v_day = v_cust[order], v_day[order].astype(np.int64)
        v_chan = np.where(rng.random(v_cust.size) < cust["online"][v_cust], 2, 1)
        size = 1 + rng.negative_binomial(1.2, 1.2 / (1.2 + 2.0 * cust["basket"][v_cust]))

        r_vis = np.repeat(np.arange(v_cust.size), size)
        c = v_cust[r_vis]
        pos = np.arange(r_vis.size) - np.repeat(np.cumsum(size) - size, size)
        a = _choose(rng, c, fav, hist, n_hist, cust["repeat"], weights, life, art["section"],
                    sec_ref, by_sec, sec_bounds, prod, prod_start)
        dup = (pos > 0) & (rng.random(r_vis.size) < P_COPY)
        a = a[np.maximum.accumulate(np.where(dup, 0, np.arange(r_vis.size)))]

        # remember purchases: slot = (purchases so far + rank this week) mod K
        first = np.searchsorted(c, c, side="left")
        hist[c, (n_hist[c] + np.arange(c.size) - first) % K] = a
        n_hist += np.bincount(c, minlength=cust["n"])

        day, chan = v_day[r_vis], v_chan[r_vis]
        price = _article_prices(art, a, day, sale[day], chan)
        o = np.lexsort((c, day))
        yield {k: v[o].astype(TX_ARRAYS[k], copy=False) for k, v in
               (("day", day), ("customer", c), ("article", a), ("price", price),
                ("channel", chan))}


def _choose(rng, c, fav, hist, n_hist, p_repeat, weights, life, section, sec_ref, by_sec,
            sec_bounds, prod, prod_start) -> np.ndarray:
    """One article per row: a repeat (or colour sibling) if still sold, else a taste pick.

    A taste pick takes a favourite section with probability ``_FAVOURITE_CUTS``, kept with
    probability (section weight now / its typical weight), else a section in proportion to
    the weights now (explore); then an article of the section in proportion to its weight.
    """
    n = c.size
    a = np.full(n, -1, dtype=np.int64)
    rep = (rng.random(n) < p_repeat[c]) & (n_hist[c] > 0)
    if rep.any():
        rc = c[rep]
        cand = hist[rc, rng.integers(0, np.minimum(n_hist[rc], hist.shape[1]))].astype(np.int64)
        sib = rng.random(cand.size) < 0.3
        p = prod[cand[sib]]
        cand[sib] = prod_start[p] + rng.integers(0, prod_start[p + 1] - prod_start[p])
        a[rep] = np.where(life[cand] > 0.05, cand, -1)

    todo = np.flatnonzero(a < 0)
    sec_w = np.bincount(section, weights, sec_bounds.size - 1)
    u = rng.random(todo.size)
    slot = np.searchsorted(_FAVOURITE_CUTS, u, side="right")
    sec = np.where(slot < 3, fav[c[todo], np.minimum(slot, 2)], -1)
    keep = np.clip(sec_w / np.maximum(sec_ref, 1e-12), 0, 1)[np.maximum(sec, 0)]
    explore = (sec < 0) | (rng.random(todo.size) >= keep) | (sec_w[np.maximum(sec, 0)] <= 0)
    cum_sec = np.cumsum(sec_w)
    sec[explore] = np.searchsorted(cum_sec, rng.random(explore.sum()) * cum_sec[-1], side="right")
    sec = np.minimum(sec, sec_w.size - 1)
    cum = np.concatenate([[0.0], np.cumsum(weights[by_sec])])
    lo, hi = cum[sec_bounds[sec]], cum[sec_bounds[sec + 1]]
    pos = np.searchsorted(cum, lo + rng.random(todo.size) * (hi - lo), side="right") - 1
    a[todo] = by_sec[np.clip(pos, sec_bounds[sec], sec_bounds[sec + 1] - 1)]
    return a


def _transaction_frame(tx: dict, customer_id: pd.Series, articles: pd.DataFrame,
                       start: pd.Timestamp) -> pd.DataFrame:
    day = tx["day"].astype("timedelta64[D]").astype("timedelta64[ns]")
    return pd.DataFrame({
        "t_dat": (np.datetime64(start.date(), "ns") + day).astype(TIME_DTYPE),
        "customer_id": customer_id.array.take(tx["customer"]),
        "article_id": articles["article_id"].to_numpy()[tx["article"]],
        "price": tx["price"].astype(np.float64),
        "sales_channel_id": tx["channel"].astype(np.int64),
    })
