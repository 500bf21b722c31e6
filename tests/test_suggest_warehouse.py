"""``python -m rdl.tasks.suggest`` on a warehouse's schema (TPC-DS's 24 tables printed 804
commands, a call centre of one row first): the tables whose splits rest on the most rows
first, five of them unless asked, and no task on rows that are no entities or targets."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.data.database import Database, Table
from rdl.data.days import times_of_day
from rdl.tasks.suggest import EVAL_K, suggestions


def warehouse(seed: int = 0) -> Database:
    """Sales of products to people in shops, each at a second of the day (a time-of-day
    dimension), in a size (a handful), some returned (a return names its sale)."""
    rng = np.random.default_rng(seed)
    n = 40_000
    clock = pd.DataFrame({"time_sk": range(1440), "hour": np.arange(1440) // 60,
                          "minute": np.arange(1440) % 60})
    at = pd.Timestamp("2005-01-01") + pd.to_timedelta(rng.uniform(0, 720, n), "D")
    sales = pd.DataFrame({"sale_id": range(n), "person": rng.integers(0, 1000, n),
                          "shop": rng.integers(0, 3, n), "product": rng.integers(0, 1000, n),
                          "size": rng.integers(0, 5, n), "time_sk": rng.integers(0, 1440, n),
                          "at": at, "amount": rng.gamma(2.0, 10.0, n)})
    back = rng.choice(n, 2000, replace=False)
    returns = pd.DataFrame({"sale_id": back, "person": sales["person"].to_numpy()[back],
                            "at": at[back] + pd.Timedelta(days=3)})
    static = lambda key, k: Table(pd.DataFrame({key: range(k)}), key, {}, None)  # noqa: E731
    return Database({
        "people": static("person", 1000), "shops": static("shop", 3),
        "products": static("product", 1000), "sizes": static("size", 5),
        "clock": Table(clock, "time_sk", {}, None),
        "sales": Table(sales, "sale_id", {"person": "people", "shop": "shops",
                                          "product": "products", "size": "sizes",
                                          "time_sk": "clock"}, "at"),
        "returns": Table(returns, None, {"sale_id": "sales", "person": "people"}, "at")})


def blocks(lines: list[str]) -> list[str]:
    return [line[2:].split(" (")[0] for line in lines if line.startswith("# ")
            and " rows)" in line.split(":")[0]]


def test_the_tables_whose_splits_rest_on_most_rows_come_first_and_five_unless_asked():
    db = warehouse()
    lines = suggestions(db, ["data=x"])
    # people and products each rest on enough rows, shops (three) on few: after them
    order = blocks(lines)
    assert set(order[:2]) == {"people", "products"} and order[2:] == ["shops", "sizes"]
    header = [i for i, line in enumerate(lines) if line.startswith(f"# {order[1]} (")]
    few = [i for i, line in enumerate(lines) if line.startswith("# few rows")]
    assert few and min(few) > header[0]
    # the first table alone, the rest named
    first = suggestions(db, ["data=x"], tables=1)
    assert blocks(first) == order[:1]
    assert f"# 3 more tables with events, fewer rows in their splits: {order[1]}, shops, " \
        "sizes (--tables 0 prints every one)" in first
    assert not any(f"task.entity_table={order[1]}" in line for line in first)


def test_no_task_on_times_of_day_few_targets_or_rows_named_once(capsys):
    db = warehouse()
    assert times_of_day(db["clock"].df) and not times_of_day(db["products"].df)
    lines = suggestions(db, ["data=x"])
    commands = [line for line in lines if line.startswith("python")]
    # the seconds of a day: no entity, no target
    assert not any("entity_table=clock" in c or "target_table=clock" in c for c in commands)
    # five sizes: a top 12 is every one of them
    assert len(db["sizes"]) <= EVAL_K
    assert not any("target_table=sizes" in c for c in commands)
    assert any(line.startswith("# links to shops, sizes: 12 rows or fewer each") for line in lines)
    # a return names its sale alone: no catalogue to rank; the products are one
    assert not any("task.events=returns task.target_table=sales" in c for c in commands)
    assert any("task.entity_table=people" in c and "task.target_table=products" in c
               for c in commands)


def test_times_of_day_are_told_from_a_table_of_hours_named_so_by_chance():
    quarter = pd.DataFrame({"k": range(96), "hour": np.arange(96) // 4})
    assert times_of_day(quarter)
    uneven = pd.DataFrame({"k": range(96), "hour": np.r_[np.arange(92) // 4, [0, 1, 2, 3]]})
    assert not times_of_day(uneven)
    assert not times_of_day(quarter.head(48))


def test_a_sale_sums_what_was_paid_before_a_unit_s_cost():
    """TPC-DS's sales hold 13 amounts, a unit's cost and price first: the sums suggested
    were ``ss_quantity`` and ``ss_wholesale_cost``. A row's total comes first (what was
    paid), then one of another word (not the tax-inclusive repeat); units before a unit's
    price (an online shop's lines: Quantity, UnitPrice)."""
    from rdl.tasks.suggest import _first_sums

    db = warehouse()
    sales = db["sales"].df.drop(columns="amount")
    rng = np.random.default_rng(1)
    for c in ("ss_quantity", "ss_wholesale_cost", "ss_list_price", "ss_ext_sales_price",
              "ss_net_paid", "ss_net_paid_inc_tax", "ss_net_profit"):
        sales[c] = rng.gamma(2.0, 10.0, len(sales))
    db["sales"].df = sales
    lines = suggestions(db, ["data=x"])
    sums = {line.split("task.value=")[1].split()[0] for line in lines
            if "task.entity_table=people" in line and "task.value=" in line}
    assert sums == {"ss_net_paid", "ss_ext_sales_price"}
    lines_of = Table(pd.DataFrame({"InvoiceNo": [1], "Quantity": [2], "UnitPrice": [1.5],
                                   "at": pd.Timestamp("2011-01-01")}), None, {}, "at")
    assert _first_sums(lines_of) == ["Quantity", "UnitPrice"]
    one = Table(pd.DataFrame({"price": [1.0], "at": pd.Timestamp("2020-01-01")}), None, {}, "at")
    assert _first_sums(one) == ["price"]
