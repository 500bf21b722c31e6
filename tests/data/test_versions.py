"""A dimension that keeps its history as versions, as warehouses do (a slowly changing
dimension of type 2): a row per version of a customer, valid from one time to the next
version's start, the current one's end written 9999-12-31; facts reference the version
valid when they happened."""
from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder

OPEN = "9999-12-31"


def versions(folder, customers: int = 80, sales: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows, sk = [], 0
    for cid in range(1, customers + 1):
        t = pd.Timestamp("2023-01-01") + pd.Timedelta(days=int(rng.integers(0, 200)))
        n = int(rng.integers(1, 4))
        for v in range(n):
            sk += 1
            end = t + pd.Timedelta(days=int(rng.integers(30, 200))) if v < n - 1 else None
            rows.append((sk, f"C{cid:04d}", rng.choice(["gold", "silver"]), t,
                         OPEN if end is None else end.strftime("%Y-%m-%d")))
            t = end
    dim = pd.DataFrame(rows, columns=["customer_sk", "customer_id", "segment", "valid_from",
                                      "valid_to"])
    dim.to_csv(folder / "dim_customer.csv", index=False)
    ends = pd.to_datetime(dim["valid_to"].replace(OPEN, "2024-06-30"))
    pick = rng.integers(0, len(dim), sales)
    at = dim["valid_from"].to_numpy()[pick] + (ends.to_numpy()[pick] - dim["valid_from"]
                                               .to_numpy()[pick]) * rng.random(sales)
    pd.DataFrame({"sale_id": np.arange(sales), "customer_sk": dim["customer_sk"].to_numpy()[pick],
                  "sold_at": pd.Series(at).dt.floor("s"), "amount": rng.random(sales).round(2)}
                 ).to_csv(folder / "fact_sales.csv", index=False)
    return dim


def test_the_draft_times_versions_from_their_start_and_their_end_as_it_comes(tmp_path):
    dim = versions(tmp_path)
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    d = schema["dim_customer"]
    assert d["missing"] == [OPEN]            # 'still valid', not a time
    assert d["time"] == "valid_from"         # a version exists from its start
    assert d["events"] == ["valid_to"]       # its end, known when the next version began
    assert schema["fact_sales"]["fkeys"] == {"customer_sk": "dim_customer"}
    db = load_folder(tmp_path, {"tables": schema})
    t = db["dim_customer"]
    assert len(t) == len(dim) and t.time_col == "valid_from"
    ends = db["dim_customer_valid_to"].df
    assert len(ends) == int((dim["valid_to"] != OPEN).sum())   # a row per version ended
