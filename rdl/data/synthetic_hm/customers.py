"""Synthetic H&M customers: hidden persona, taste and life cycle, and the visible frame.

A persona (age band, gender, parent) gives three favourite sections; an activity level and
a join / ramp-up / decay / stop life cycle set the visit rate; the ``customers`` frame is
only weakly tied to this (see :mod:`rdl.data.synthetic_hm`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.synthetic_hm.util import _norm, _sigmoid, _some, _str
from rdl.data.synthetic_hm.vocab import INDEX_GROUPS

# Personas: affinity of an index group (1, 2, 3, 4, 26) to a customer's taste.
_AFFINITY_FEMALE = {"young": [0.8, 2.5, 0.2, 0.1, 0.4], "adult": [1.6, 0.6, 0.3, 0.2, 0.4],
                    "middle": [1.8, 0.25, 0.3, 0.2, 0.3], "senior": [1.5, 0.1, 0.3, 0.2, 0.1]}
_AFFINITY_MALE = {"young": [0.1, 0.6, 2.5, 0.1, 0.6], "adult": [0.2, 0.2, 2.5, 0.2, 0.5],
                  "middle": [0.3, 0.1, 2.5, 0.2, 0.3], "senior": [0.3, 0.05, 2.5, 0.2, 0.1]}
_AGE_BANDS = [("young", 0, 26), ("adult", 26, 40), ("middle", 40, 56), ("senior", 56, 200)]
_PARENT_BOOST = 3.0                    # parents' affinity to Baby/Children, multiplied
ACTIVITY_SIGMA = 0.65                  # log-sd of the customers' activity level


def _customers(rng, n: int, n_days: int) -> dict:
    """Hidden customer state: persona, taste, activity, life cycle, habits."""
    young = rng.random(n) < 0.42
    age = np.where(young, rng.normal(24, 3.5, n), rng.normal(48, 11, n)).clip(16, 99).round()
    male = rng.random(n) < 0.1
    parent = rng.random(n) < np.where((age >= 27) & (age < 48), 0.35, 0.06)
    band = np.digitize(age, [b[1] for b in _AGE_BANDS[1:]])
    persona = band * 4 + male * 2 + parent
    # activity: heavy tailed; the middle-aged buy a little more
    activity = rng.lognormal(0, ACTIVITY_SIGMA, n) * np.where((age > 30) & (age < 60), 1.15, 1.0)
    # life cycle in days from start: joined before the window (55%) or during it
    existing = rng.random(n) < 0.55
    join = np.where(existing, rng.uniform(-700, 0, n), rng.uniform(0, n_days, n))
    stop = join + rng.lognormal(np.log(300), 0.9, n)
    return {"n": n, "age": age, "male": male, "parent": parent, "persona": persona,
            "activity": activity, "join": join, "stop": stop,
            "ramp": rng.uniform(14, 90, n), "decay": rng.lognormal(np.log(200), 0.7, n),
            "repeat": rng.beta(1.0, 9, n), "online": rng.beta(1.5, 0.6, n),
            "basket": rng.lognormal(0, 0.35, n)}


def _favourites(rng, cust: dict, sec_mass: np.ndarray, sec_group: np.ndarray) -> np.ndarray:
    """Three favourite sections per customer, drawn from the persona's index-group affinity."""
    groups = list(INDEX_GROUPS)
    fav = np.zeros((cust["n"], 3), dtype=np.int64)
    for p in np.unique(cust["persona"]):
        idx = np.flatnonzero(cust["persona"] == p)
        band, male, parent = _AGE_BANDS[p // 4][0], bool(p // 2 % 2), bool(p % 2)
        aff = np.array((_AFFINITY_MALE if male else _AFFINITY_FEMALE)[band], dtype=float)
        if parent:
            aff[groups.index(4)] *= _PARENT_BOOST
        w = sec_mass * aff[np.searchsorted(groups, sec_group)]
        fav[idx] = rng.choice(sec_mass.size, (idx.size, 3), p=_norm(w))
    return fav


def _life(cust: dict, t: float) -> np.ndarray:
    """Activity multiplier of every customer on day ``t``: ramp up, decay, 0 outside life."""
    since = t - cust["join"]
    ramp = np.clip(0.3 + since / cust["ramp"], None, 1.0)
    decay = np.exp(-np.clip(since - cust["ramp"], 0, None) / cust["decay"])
    return np.where((since >= 0) & (t < cust["stop"]), ramp * decay, 0.0)


def _customer_frame(rng, cust: dict, n_days: int) -> pd.DataFrame:
    """Visible customer columns, only weakly tied to the hidden state."""
    n = cust["n"]
    z = np.log(cust["activity"]) / ACTIVITY_SIGMA
    fn = rng.random(n) < _sigmoid(-0.75 + 0.3 * z)
    active = np.where(fn, rng.random(n) < 0.97, rng.random(n) < 0.01)
    news = np.where(fn, np.where(rng.random(n) < 0.995, "Regularly", "Monthly"), "NONE").astype(object)
    news[_some(rng, n, 0.0117)] = np.nan
    stopped = cust["stop"] < n_days
    club = np.where(rng.random(n) < _sigmoid(-2.4 - 0.35 * z), "PRE-CREATE", "ACTIVE").astype(object)
    club[rng.random(n) < np.where(stopped, 0.0006, 0.0001)] = "LEFT CLUB"
    club[_some(rng, n, 0.0044)] = np.nan
    age = cust["age"].copy()
    age[_some(rng, n, 0.0116)] = np.nan
    return pd.DataFrame({
        "customer_id": _str(np.sort(_hex_ids(rng, n))),
        "FN": np.where(fn, 1.0, np.nan),
        "Active": np.where(active, 1.0, np.nan),
        "club_member_status": pd.array(club, dtype="str"),
        "fashion_news_frequency": pd.array(news, dtype="str"),
        "age": age,
        "postal_code": _str(_postal_codes(rng, n)),
    })


def _postal_codes(rng, n: int) -> np.ndarray:
    """Very skewed: one code for ~9% of customers (as in Kaggle), the rest long-tailed."""
    codes = _hex_ids(rng, max(2, round(0.257 * n)))
    pick = 1 + rng.choice(codes.size - 1, n, p=_norm(rng.lognormal(0, 0.9, codes.size - 1)))
    pick[rng.random(n) < 0.088] = 0
    return codes[pick]


def _hex_ids(rng, n: int) -> np.ndarray:
    """``n`` random 64-character lowercase hex strings (like Kaggle's hashed ids), as bytes."""
    lut = np.array([f"{i:02x}" for i in range(256)], dtype="S2")
    return lut[rng.integers(0, 256, (n, 32), dtype=np.uint8)].view("S64").ravel()
