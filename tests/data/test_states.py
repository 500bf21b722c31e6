"""A row's state as of the export (an order's status beside its delivered_at and
cancelled_at): as a feature it tells a seed what happens after the row's time; the loader
stops on it, the draft drops it (rdl.data.states)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from rdl.data.states import later_flags
from tests.data.test_folder import fails

N = 400


def shop(folder, noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Orders whose status says which of their later times are known (``noise``: the
    share of rows whose status says nothing of them)."""
    rng = np.random.default_rng(seed)
    created = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 90 * 24, N), "h")
    status = rng.choice(["delivered", "cancelled", "shipped", "processing"], N,
                        p=[0.6, 0.15, 0.15, 0.1])
    later = created + pd.to_timedelta(rng.integers(24, 240, N), "h")
    orders = pd.DataFrame({
        "order_id": np.arange(N), "customer_id": rng.integers(0, 50, N), "created_at": created,
        "status": status, "payment": rng.choice(["card", "paypal", "voucher"], N),
        "delivered_at": later.where(status == "delivered"),
        "cancelled_at": later.where(status == "cancelled"),
        "total": rng.random(N).round(2)})
    mixed = rng.random(N) < noise
    orders.loc[mixed, "status"] = rng.choice(["delivered", "shipped"], int(mixed.sum()))
    orders.to_csv(folder / "orders.csv", index=False)
    pd.DataFrame({"customer_id": np.arange(50)}).to_csv(folder / "customers.csv", index=False)
    return orders


SCHEMA = {"tables": {"customers": {"pkey": "customer_id"},
                     "orders": {"pkey": "order_id", "time": "created_at",
                                "fkeys": {"customer_id": "customers"},
                                "events": ["delivered_at", "cancelled_at"]}}}


def test_an_order_s_status_stops_the_load_as_its_later_times_would(tmp_path):
    """Before, only yes/no columns (returned, is_current) were caught: an order's status of
    four words, which says whether it was delivered or cancelled, trained as a feature."""
    shop(tmp_path)
    fails(tmp_path, "orders.csv (table 'orders', column 'status'): says whether "
          "'delivered_at' is known in 100.0% of its rows", "stypes: {status: drop}",
          "the row's state when the file was written", schema=SCHEMA)
    for st in ("drop", "categorical"):   # dropped, or declared known when the row began
        SCHEMA["tables"]["orders"]["stypes"] = {"status": st}
        assert len(load_folder(tmp_path, SCHEMA)["orders"]) == N
    del SCHEMA["tables"]["orders"]["stypes"]


def test_the_draft_drops_the_status_and_keeps_what_says_nothing_of_later(tmp_path):
    shop(tmp_path)
    orders = yaml.safe_load(draft(tmp_path))["tables"]["orders"]
    assert orders["stypes"] == {"status": "drop"}   # payment stays a feature
    assert orders["events"] == ["delivered_at", "cancelled_at"]
    assert len(load_folder(tmp_path, yaml.safe_load(draft(tmp_path)))["orders"]) == N


@pytest.mark.parametrize("noise, flagged", [(0.0, True), (0.005, True), (0.3, False)])
def test_a_state_is_flagged_only_where_it_says_whether_the_time_is_known(
        tmp_path, noise, flagged):
    orders = shop(tmp_path, noise)
    found = later_flags(orders, orders["created_at"], ["delivered_at", "cancelled_at"],
                        skip={"order_id", "created_at", "customer_id"})
    assert ("status" in found) == flagged and "payment" not in found


def test_a_column_mostly_one_value_beside_a_time_mostly_known_is_no_state(tmp_path):
    """Where the later time is known in 99.5 % of rows, a column 99.5 % one value says no
    more than a guess would: not flagged."""
    orders = shop(tmp_path)
    orders["delivered_at"] = orders["created_at"] + pd.Timedelta("1D")
    orders.loc[:1, "delivered_at"] = pd.NaT
    orders["channel"] = ["web"] * (N - 2) + ["shop", "phone"]
    found = later_flags(orders, orders["created_at"], ["delivered_at"], skip={"order_id"})
    assert "channel" not in found


def test_the_draft_notes_columns_named_as_a_row_s_state(tmp_path):
    """A CRM's customers with is_active and churned (a churn task's label), and the
    Lahman databank's franchises with active (whether a franchise still plays today):
    nothing says when the state was written; the draft says what it is. A US state, a
    customer's name and a column of numbers are no state."""
    pd.DataFrame({"customer_id": range(6), "is_active": list("YNYYNY"),
                  "churned": [0, 1, 0, 0, 1, 0], "state": ["CA", "NY", "CA", "TX", "NY", "WA"],
                  "status_score": [0.5, 0.1, 0.7, 0.9, 0.3, 0.2],
                  "name": list("abcdef")}).to_csv(tmp_path / "customers.csv", index=False)
    text = draft(tmp_path)
    noted = [line.split(":")[0].strip("# ") for line in text.splitlines()
             if "the row's state when the file was written" in line]
    assert noted == ["is_active", "churned"]
    assert "(stypes: {is_active: drop})" in text
