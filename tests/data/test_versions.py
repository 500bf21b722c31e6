"""A dimension that keeps its history as versions, as warehouses do (a slowly changing
dimension of type 2): a row per version of a customer, valid from one time to the next
version's start, the current one's end written 9999-12-31; facts reference the version
valid when they happened."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder

OPEN = "9999-12-31"


def versions(folder, customers: int = 80, sales: int = 1500, seed: int = 0,
             before: pd.Timedelta = pd.Timedelta(0)):
    """``before``: how long before the next version's start a version's valid_to is
    written (Kimball: the day before, or its last second)."""
    rng = np.random.default_rng(seed)
    rows, sk = [], 0
    for cid in range(1, customers + 1):
        t = pd.Timestamp("2023-01-01") + pd.Timedelta(days=int(rng.integers(0, 200)))
        n = int(rng.integers(1, 4))
        for v in range(n):
            sk += 1
            end = t + pd.Timedelta(days=int(rng.integers(30, 200))) if v < n - 1 else None
            rows.append((sk, f"C{cid:04d}", rng.choice(["gold", "silver"]), t,
                         OPEN if end is None else str(end - before)))
            t = end
    dim = pd.DataFrame(rows, columns=["customer_sk", "customer_id", "segment", "valid_from",
                                      "valid_to"])
    dim["is_current"] = (dim["valid_to"] == OPEN).astype(int)   # known at the export only
    dim.to_csv(folder / "dim_customer.csv", index=False)
    ends = pd.to_datetime(dim["valid_to"].replace(OPEN, "2024-06-30"), format="ISO8601")
    pick = rng.integers(0, len(dim), sales)
    at = dim["valid_from"].to_numpy()[pick] + (ends.to_numpy()[pick] - dim["valid_from"]
                                               .to_numpy()[pick]) * rng.random(sales)
    pd.DataFrame({"sale_id": np.arange(sales), "customer_sk": dim["customer_sk"].to_numpy()[pick],
                  "sold_at": pd.Series(at).dt.floor("s"), "amount": rng.random(sales).round(2)}
                 ).to_csv(folder / "fact_sales.csv", index=False)
    return dim


@pytest.mark.parametrize("before", [pd.Timedelta(0), pd.Timedelta(days=1),
                                    pd.Timedelta(seconds=1)])
def test_the_draft_times_versions_from_their_start_and_their_end_as_it_comes(tmp_path, before):
    """valid_to at the next version's start, or the day or second before it: before, the
    last two were drafted as known when the version began (by valid_to's name), a leak."""
    dim = versions(tmp_path, before=before)
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    d = schema["dim_customer"]
    assert d["missing"] == [OPEN]            # 'still valid', not a time
    assert d["time"] == "valid_from"         # a version exists from its start
    assert d["events"] == ["valid_to"]       # its end, known when the next version began
    assert d["stypes"] == {"is_current": "drop"}   # whether it ended: the same future
    assert schema["fact_sales"]["fkeys"] == {"customer_sk": "dim_customer"}
    db = load_folder(tmp_path, {"tables": schema})
    t = db["dim_customer"]
    assert len(t) == len(dim) and t.time_col == "valid_from"
    ends = db["dim_customer_valid_to"].df
    assert len(ends) == int((dim["valid_to"] != OPEN).sum())   # a row per version ended


def test_a_flag_that_says_a_later_time_is_known_stops_as_the_time_does(tmp_path):
    """A rental's returned (Y/N) beside its return_date, a version's is_current beside its
    valid_to: as features they tell a seed what happens later."""
    from tests.data.sakila_like import write_sakila
    from tests.data.test_folder import fails
    from tests.data.test_leaks import schema

    folder = write_sakila(tmp_path / "sakila")
    rental = pd.read_csv(folder / "rental.csv")
    rental["returned"] = np.where(rental["return_date"].notna(), "Y", "N")
    rental.to_csv(folder / "rental.csv", index=False)
    dropped = schema(rental={"stypes": {"last_update": "drop", "return_date": "drop"}})
    fails(folder, "rental.csv (table 'rental', column 'returned'): says whether "
          "'return_date' is known in 100.0% of its rows", "stypes: {returned: drop}",
          schema=dropped)
    for st in ("drop", "categorical"):   # dropped, or declared known when the row began
        dropped["tables"]["rental"]["stypes"]["returned"] = st
        assert len(load_folder(folder, dropped)["rental"]) == len(rental)
    as_events = schema(rental={"stypes": {"last_update": "drop"}, "events": ["return_date"]})
    fails(folder, "column 'returned'): says whether 'return_date' is known", schema=as_events)
    schema_text = yaml.safe_load(draft(folder))["tables"]["rental"]
    assert schema_text["stypes"]["returned"] == "drop"
