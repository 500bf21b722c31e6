"""A synthetic H&M database in the Kaggle format, with the signal real shoppers leave.

:func:`generate` returns the three Kaggle frames (``customers``, ``articles``,
``transactions``) with every column of the data contract (``hm-schema.md`` of the project's shared material),
Kaggle-like ids and value sets, and a generative story that gives the three RelBench tasks
(user-churn, item-sales, user-item-purchase) a learnable signal that lives mostly in the
*transactions*, not in the entity rows:

Articles
    Products (a product code) come in one to a dozen colour variants (articles). A product
    belongs to a section (which fixes its index and index group) and has a product type (which
    fixes its product group, garment group, season and price level). Each article has a
    hidden launch day, a popularity life cycle (rise over days, peak, exponential decay; a
    few evergreen basics barely decay), a season (summer or winter items swing over the year)
    and a heavy-tailed base popularity. None of this is a column: the article row cannot tell
    where the article is in its life, its recent sales can.

Customers
    A hidden persona (gender, age band, parent) gives a taste: three favourite sections,
    drawn from index groups that fit the persona. A heavy-tailed activity level, a join day,
    a ramp-up, a decay and a stop day (churn) set the customer's weekly visit rate; recent
    visits raise it for a while (bursts). The visible columns are only weakly tied to this:
    FN / Active / fashion news lean towards active customers, PRE-CREATE towards weak ones,
    LEFT CLUB towards customers who stopped, age towards the taste.

Transactions
    Week by week (a loop of about 55 steps, vectorised over customers) each customer makes a
    Poisson number of visits (days); a visit is a basket of one to many rows. A row is a
    repeat of an article the customer bought before (or a colour sibling of it) if it is
    still sold, else a taste-driven pick: a section (mostly a favourite), then an article of
    the section in proportion to its popularity that week (cumulative weights + searchsorted;
    never a customers x articles matrix). A few rows are copies of the previous row: several
    units of one item, identical rows as in Kaggle. The price is the article's price level,
    marked down as it ages and in sale periods, quantised; the channel (1 store, 2 online)
    follows the customer's habit.

Everything is drawn from ``numpy.random.Generator(seed)``: the same seed and scale give
identical frames. ``scale=1.0`` is the size of RelBench's trimmed rel-hm (about 1.37M
customers, 105k articles, 15.2M transactions from 2019-09-07 to 2020-09-22); rows scale
linearly with ``scale``.

One file per part: ``vocab.py`` (the columns and value sets), ``articles.py``,
``customers.py`` and ``transactions.py`` (the three tables above), ``util.py``, and
``files.py``, which writes the same database as the Kaggle CSV files at any scale in
bounded memory, a week of transactions at a time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdl.data.synthetic_hm.articles import _articles
from rdl.data.synthetic_hm.customers import _customer_frame, _customers
from rdl.data.synthetic_hm.transactions import _day_weights, _transaction_frame, _transactions
from rdl.data.synthetic_hm.vocab import (ARTICLE_COLUMNS, CUSTOMER_COLUMNS, TIME_DTYPE,
                                         TRANSACTION_COLUMNS)

__all__ = ["generate", "GENERATOR_VERSION", "TIME_DTYPE", "CUSTOMER_COLUMNS", "ARTICLE_COLUMNS",
           "TRANSACTION_COLUMNS"]

#: Bump when the generated data changes: it names the cache folders of ``rdl.data.hm``.
GENERATOR_VERSION = 1

FULL_CUSTOMERS = 1_371_980
FULL_ARTICLES = 105_542
FULL_TRANSACTIONS = 15_190_000   # RelBench's rel-hm: 2019-09-07 .. 2020-09-22
FULL_DAYS = 382


def generate(seed: int = 0, scale: float = 0.02, start="2019-09-07",
             end="2020-09-22") -> dict[str, pd.DataFrame]:
    """Synthetic Kaggle frames ``{"customers", "articles", "transactions"}`` (see module doc).

    Args:
        seed: seed of ``numpy.random.Generator``; same seed and scale -> identical frames.
        scale: 1.0 is RelBench's rel-hm size; rows scale linearly.
        start, end: first and last transaction day (inclusive).
    """
    world = _world(seed, scale, start, end)
    tx = _transactions(world.rng, world.cust, world.art, world.day_w, world.n_tx)
    cust_df = _customer_frame(world.rng, world.cust, world.n_days)
    return {"customers": cust_df, "articles": world.art["frame"],
            "transactions": _transaction_frame(tx, cust_df["customer_id"], world.art["frame"],
                                               world.start)}


@dataclass
class _World:
    """What the simulation of the transactions starts from: the generator after the
    articles and customers were drawn, and their hidden state (per article and customer)."""
    rng: np.random.Generator
    art: dict
    cust: dict
    day_w: pd.DataFrame
    n_tx: float
    start: pd.Timestamp
    n_days: int


def _world(seed: int, scale: float, start, end) -> _World:
    """The articles and customers of :func:`generate` (``seed``, ``scale``), drawn in its
    order; :func:`generate` and :func:`~rdl.data.synthetic_hm.files.write_kaggle_files`
    simulate the transactions from it."""
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    start, end = pd.Timestamp(start).normalize(), pd.Timestamp(end).normalize()
    n_days = (end - start).days + 1
    if n_days < 7:
        raise ValueError(f"need at least 7 days between start {start.date()} and end {end.date()}")
    rng = np.random.default_rng(seed)
    n_cust = max(20, round(FULL_CUSTOMERS * scale))
    n_art = max(10, round(FULL_ARTICLES * scale))
    n_tx = FULL_TRANSACTIONS * scale * n_days / FULL_DAYS
    art = _articles(rng, n_art, start, n_days)
    cust = _customers(rng, n_cust, n_days)
    return _World(rng, art, cust, _day_weights(start, n_days), n_tx, start, n_days)
