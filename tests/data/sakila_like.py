"""A folder in the shape of MySQL's Sakila sample database as ``SELECT ... INTO OUTFILE``
or a client's CSV export writes it: every table with a ``last_update`` (the row's change
time, 2006-02-15 on all), customers created on 2006-02-14 (after most of their rentals:
the data was migrated), rentals from 2005 with a ``return_date`` days later (missing
for a few), payments on the day of their rental."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def write_sakila(folder: Path, customers: int = 60, films: int = 40, rentals: int = 1500,
                 seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    update = lambda n, t: [t] * n   # noqa: E731
    pd.DataFrame({"language_id": [1, 2], "name": ["English", "Italian"],
                  "last_update": update(2, "2006-02-15 05:02:19")}).to_csv(
        folder / "language.csv", index=False)
    pd.DataFrame({"store_id": [1, 2], "address": ["47 MySakila Drive", "28 MySQL Boulevard"],
                  "last_update": update(2, "2006-02-15 04:57:12")}).to_csv(
        folder / "store.csv", index=False)
    pd.DataFrame({
        "film_id": np.arange(1, films + 1), "title": [f"FILM {i}" for i in range(films)],
        "release_year": 2006, "language_id": rng.integers(1, 3, films),
        "rental_rate": rng.choice([0.99, 2.99, 4.99], films),
        "length": rng.integers(46, 186, films), "rating": rng.choice(["G", "PG", "R"], films),
        "last_update": update(films, "2006-02-15 05:03:42")}).to_csv(
        folder / "film.csv", index=False)
    items = films * 2
    pd.DataFrame({"inventory_id": np.arange(1, items + 1),
                  "film_id": rng.integers(1, films + 1, items),
                  "store_id": rng.integers(1, 3, items),
                  "last_update": update(items, "2006-02-15 05:09:17")}).to_csv(
        folder / "inventory.csv", index=False)
    pd.DataFrame({
        "customer_id": np.arange(1, customers + 1), "store_id": rng.integers(1, 3, customers),
        "first_name": [f"NAME{i}" for i in range(customers)],
        "active": rng.choice([0, 1], customers, p=[0.03, 0.97]),
        "create_date": update(customers, "2006-02-14 22:04:36"),
        "last_update": update(customers, "2006-02-15 04:57:20")}).to_csv(
        folder / "customer.csv", index=False)
    start = pd.Timestamp("2005-05-24 22:53:30")
    when = np.sort(start + pd.to_timedelta(rng.uniform(0, 90, rentals), unit="D"))
    returned = pd.Series(when + pd.to_timedelta(rng.uniform(1, 9, rentals), unit="D"))
    returned[rng.random(rentals) < 0.02] = pd.NaT
    fmt = lambda t: pd.Series(t).dt.strftime("%Y-%m-%d %H:%M:%S")   # noqa: E731
    rental = pd.DataFrame({
        "rental_id": np.arange(1, rentals + 1), "rental_date": fmt(when),
        "inventory_id": rng.integers(1, items + 1, rentals),
        "customer_id": rng.integers(1, customers + 1, rentals),
        "return_date": fmt(returned), "staff_id": rng.integers(1, 3, rentals),
        "last_update": update(rentals, "2006-02-15 21:30:53")})
    rental.to_csv(folder / "rental.csv", index=False)
    pd.DataFrame({
        "payment_id": np.arange(1, rentals + 1), "customer_id": rental["customer_id"],
        "staff_id": rental["staff_id"], "rental_id": rental["rental_id"],
        "amount": rng.choice([0.99, 2.99, 4.99, 5.99], rentals),
        "payment_date": rental["rental_date"],
        "last_update": update(rentals, "2006-02-15 22:12:30")}).to_csv(
        folder / "payment.csv", index=False)
    return folder
