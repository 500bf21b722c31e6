"""Synthetic H&M articles: the catalogue and every article's hidden life cycle.

Products in sections and product types, colour variants, names and descriptions (the
``articles`` frame), plus what no column shows: launch day, rise and decay, season,
popularity and price level (see :mod:`rdl.data.synthetic_hm`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.synthetic_hm.util import _cat, _norm, _some, _str
from rdl.data.synthetic_hm.vocab import (APPEARANCES, COLOURS, GARMENT_GROUPS, INDEX_GROUPS,
                                         INDEXES, PERCEIVED_MASTERS, PERCEIVED_VALUES,
                                         PRODUCT_TYPES, SECTIONS, _DESC_ADJ, _DESC_FEATURE,
                                         _DESC_MATERIAL, _NAME_HEADS, _NAME_STYLES, _NAME_TAILS)

ARTICLES_PER_PRODUCT = 105_542 / 47_224
PRICE_FACTOR = 1.5                     # price levels of PRODUCT_TYPES are multiplied by it


def _table(rows, *names):
    return {n: np.array([r[i] for r in rows]) for i, n in enumerate(names)}


def _articles(rng, n_art: int, start: pd.Timestamp, n_days: int) -> dict:
    """Article rows plus their hidden life cycle (launch, rise, decay, season, popularity)."""
    sec = _table(SECTIONS, "no", "name", "index", "groups", "share", "evergreen")
    typ = _table(PRODUCT_TYPES, "no", "name", "group", "garment", "season", "price", "share")
    n_prod = max(1, min(n_art, round(n_art / ARTICLES_PER_PRODUCT)))

    # products: section, then a product type among the groups the section sells
    p_sec = rng.choice(len(SECTIONS), n_prod, p=_norm(sec["share"].astype(float)))
    p_type = np.empty(n_prod, dtype=np.int64)
    for s in range(len(SECTIONS)):
        idx = np.flatnonzero(p_sec == s)
        ok = np.isin(typ["group"], sec["groups"][s].split("|"))
        p_type[idx] = rng.choice(np.flatnonzero(ok), idx.size, p=_norm(typ["share"][ok]))
    index_code = sec["index"][p_sec]
    index_group = np.array([INDEXES[c][1] for c in index_code])
    garment = typ["garment"][p_type].copy()
    is_garment = np.char.startswith(typ["group"][p_type].astype(str), "Garment")
    garment[is_garment & (index_code == "G")] = 1006
    garment[(garment == 1002) & (rng.random(n_prod) < 0.4)] = 1005
    garment[is_garment & (rng.random(n_prod) < 0.03)] = 1023
    dep_key = sec["no"][p_sec] * 10_000 + garment
    dep_keys, dep_idx = np.unique(dep_key, return_inverse=True)
    dep_no = np.sort(rng.choice(np.arange(1000, 10000), dep_keys.size, replace=False))[dep_idx]
    sec_word = np.array([n.split()[0].replace("&", "").strip() or n for n in sec["name"]])
    dep_name = _cat(np.array([GARMENT_GROUPS[g] for g in garment]), " ", sec_word[p_sec])

    # names and descriptions, shared by the variants of a product
    type_name = typ["name"][p_type]
    prod_name = _cat(_NAME_HEADS[rng.integers(0, _NAME_HEADS.size, n_prod)],
                     _NAME_TAILS[rng.integers(0, _NAME_TAILS.size, n_prod)],
                     _NAME_STYLES[rng.integers(0, _NAME_STYLES.size, n_prod)], " ", type_name)
    desc = _cat(_DESC_ADJ[rng.integers(0, _DESC_ADJ.size, n_prod)], " ",
                np.char.lower(type_name.astype(str)), " in ",
                _DESC_MATERIAL[rng.integers(0, _DESC_MATERIAL.size, n_prod)],
                _DESC_FEATURE[rng.integers(0, _DESC_FEATURE.size, n_prod)], ".")
    desc = desc.astype(object)
    desc[_some(rng, n_prod, 0.004)] = np.nan

    # variants: every product has >= 1, the rest go to popular products
    extra = rng.multinomial(n_art - n_prod, _norm(rng.lognormal(0, 0.8, n_prod))) if n_art > n_prod \
        else np.zeros(n_prod, dtype=np.int64)
    n_var = 1 + extra
    prod = np.repeat(np.arange(n_prod), n_var)
    var_rank = np.arange(n_art) - np.repeat(np.cumsum(n_var) - n_var, n_var)
    product_code = np.sort(rng.choice(np.arange(108_000, 960_000), n_prod, replace=False))
    suffix = rng.integers(1, 25, n_prod)[prod] + var_rank * rng.integers(1, 4, n_prod)[prod]
    article_id = product_code[prod].astype(np.int64) * 1000 + suffix

    col = _table(COLOURS, "code", "name", "value", "master", "share")
    app = _table(APPEARANCES, "no", "name", "share")
    a_col = rng.choice(len(COLOURS), n_art, p=_norm(col["share"]))
    a_app = rng.choice(len(APPEARANCES), n_art, p=_norm(app["share"]))
    t, s = p_type[prod], p_sec[prod]
    frame = pd.DataFrame({
        "article_id": article_id,
        "product_code": product_code[prod].astype(np.int64),
        "prod_name": _str(prod_name[prod]),
        "product_type_no": typ["no"][t].astype(np.int64),
        "product_type_name": _str(typ["name"][t]),
        "product_group_name": _str(typ["group"][t]),
        "graphical_appearance_no": app["no"][a_app].astype(np.int64),
        "graphical_appearance_name": _str(app["name"][a_app]),
        "colour_group_code": col["code"][a_col].astype(np.int64),
        "colour_group_name": _str(col["name"][a_col]),
        "perceived_colour_value_id": col["value"][a_col].astype(np.int64),
        "perceived_colour_value_name": _str(np.array([PERCEIVED_VALUES[v] for v in col["value"]])[a_col]),
        "perceived_colour_master_id": col["master"][a_col].astype(np.int64),
        "perceived_colour_master_name": _str(np.array([PERCEIVED_MASTERS[m] for m in col["master"]])[a_col]),
        "department_no": dep_no[prod].astype(np.int64),
        "department_name": _str(dep_name[prod]),
        "index_code": _str(index_code[prod]),
        "index_name": _str(np.array([INDEXES[c][0] for c in index_code])[prod]),
        "index_group_no": index_group[prod].astype(np.int64),
        "index_group_name": _str(np.array([INDEX_GROUPS[g] for g in index_group])[prod]),
        "section_no": sec["no"][s].astype(np.int64),
        "section_name": _str(sec["name"][s]),
        "garment_group_no": garment[prod].astype(np.int64),
        "garment_group_name": _str(np.array([GARMENT_GROUPS[g] for g in garment])[prod]),
        "detail_desc": pd.array(desc[prod], dtype="str"),
    })

    # hidden life cycle: launch (days from start), rise, half-life, season, popularity
    launch = rng.uniform(-450, n_days - 3, n_prod)[prod] + np.where(
        rng.random(n_art) < 0.3, rng.uniform(0, 120, n_art), 0.0)
    evergreen = rng.random(n_art) < sec["evergreen"][s]
    half_life = np.where(evergreen, 2000.0, rng.lognormal(np.log(40), 0.6, n_art))
    rise = rng.uniform(3, 21, n_art)
    season = typ["season"][t]
    peak_doy = np.select([season == 1, season == 2], [175.0, 350.0], 0.0)
    amp = np.where(season > 0, rng.uniform(0.5, 1.1, n_art), 0.0)
    pop = rng.lognormal(0, 1.0, n_prod)[prod] * rng.lognormal(0, 0.7, n_art)
    level = PRICE_FACTOR * typ["price"][t] * np.select([index_group == 4, index_group == 26], [0.6, 1.1], 1.0)[prod]
    level *= np.where(sec["no"][s] == 19, 2.0, 1.0) * rng.lognormal(0, 0.25, n_art)
    markdown1 = launch + rise + rng.lognormal(np.log(60), 0.4, n_art)
    return {"frame": frame, "section": s, "product": prod, "launch": launch, "rise": rise,
            "half_life": half_life, "peak_doy": peak_doy, "amp": amp, "pop": pop,
            "price": level, "markdown1": markdown1,
            "markdown2": markdown1 + rng.lognormal(np.log(50), 0.4, n_art),
            "start_doy": start.day_of_year}


def _article_weights(art: dict, t: float) -> np.ndarray:
    """Popularity of every article on day ``t`` (days from start): life cycle x season."""
    age = t - art["launch"]
    life = np.where(age < art["rise"], np.clip(age / art["rise"], 0, None),
                    np.exp2(-(age - art["rise"]) / art["half_life"]))
    life[age < 0] = 0.0
    doy = art["start_doy"] + t
    season = np.exp(art["amp"] * (np.cos(2 * np.pi * (doy - art["peak_doy"]) / 365.25) - 1))
    return art["pop"] * life * season, life


def _article_prices(art: dict, a: np.ndarray, day: np.ndarray, sale: np.ndarray,
                    channel: np.ndarray) -> np.ndarray:
    """Price of article ``a`` on ``day``: level, markdowns with age, sale periods, quantised."""
    p = art["price"][a].copy()
    p *= np.where(day > art["markdown1"][a], 0.7, 1.0)
    p *= np.where(day > art["markdown2"][a], 0.7, 1.0)
    p *= np.where(sale & (day - art["launch"][a] > 28), 0.8, 1.0)
    p *= np.where(channel == 1, 0.97, 1.0)
    return np.clip(np.round(p * 5900) / 5900, 1 / 5900, 0.5915)
