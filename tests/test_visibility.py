"""The one rule of temporal correctness (:mod:`rdl.visibility`), checked row by row in each
vectorised form that applies it: the sampler's temporal index, the feature table's SQL and
all-time sums, the label history's statistics (an entity's own, and every entity's). The
times are drawn with many ties, and seeds sit exactly on row times, where ``<=`` and ``<``
differ."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.loader import NodeLoader

from rdl.data.database import Table
from rdl.features.labels import closed_statistic, visible_labels
from rdl.features.table import WINDOWS, child_features
from rdl.graph import TemporalSampler
from rdl.families.node import NodeTask
from rdl.visibility import visible

RNG = np.random.default_rng(0)
N_ENT, N_ROWS, N_SEEDS = 8, 300, 40
ENT = RNG.integers(0, N_ENT, N_ROWS)
TIME = RNG.integers(0, 30, N_ROWS)                      # days, many ties
SEED_ENT = RNG.integers(0, N_ENT, N_SEEDS)
SEED_TIME = TIME[RNG.integers(0, N_ROWS, N_SEEDS)]     # on row times


@pytest.mark.parametrize("strict", [False, True])
def test_the_sampler_gives_a_seed_exactly_its_visible_rows(strict):
    d = HeteroData()
    d["entity"].num_nodes = N_ENT
    d["entity"].x = torch.zeros(N_ENT, 1)
    d["row"].num_nodes = N_ROWS
    d["row"].x = torch.zeros(N_ROWS, 1)
    d["row"].time = torch.from_numpy(TIME)
    rows = torch.arange(N_ROWS)
    d["row", "f2p_entity", "entity"].edge_index = torch.stack([rows, torch.from_numpy(ENT)])
    sampler = TemporalSampler(d, [-1], strict=strict, random_seed=0)
    loader = NodeLoader(d, node_sampler=sampler, batch_size=N_SEEDS,
                        input_nodes=("entity", torch.from_numpy(SEED_ENT)),
                        input_time=torch.from_numpy(SEED_TIME))
    batch = next(iter(loader))
    got = {(int(b), int(r)) for b, r in zip(batch["row"].batch, batch["row"].n_id)}
    want = {(i, r) for i in range(N_SEEDS) for r in range(N_ROWS)
            if ENT[r] == SEED_ENT[i] and visible(TIME[r], SEED_TIME[i], strict)}
    assert got == want and want


@pytest.mark.parametrize("strict", [False, True])
def test_the_feature_table_counts_exactly_the_visible_rows(strict):
    day = np.timedelta64(1, "D")
    t0 = np.datetime64("2024-01-01")
    table = Table(pd.DataFrame({"id": np.arange(N_ROWS), "ent": ENT, "t": t0 + TIME * day,
                                "x": np.ones(N_ROWS)}), pkey="id", fkeys={"ent": "e"},
                  time_col="t")
    seeds = (t0 + SEED_TIME * day).astype("datetime64[ns]").astype(np.int64)
    got = child_features("c", table, "ent", SEED_ENT, seeds, pd.Timedelta("7D"), strict)
    for i in range(N_SEEDS):
        seen = (ENT == SEED_ENT[i]) & visible(TIME, SEED_TIME[i], strict)
        assert got["c.count_all"][i] == seen.sum()
        for n in WINDOWS:
            assert got[f"c.count_{n}"][i] == (seen & (TIME > SEED_TIME[i] - 7 * n)).sum()


def test_the_label_history_shows_exactly_the_closed_windows():
    """A label is a row at the time its window closes, visible at that very time (strict
    or not: every row it counts lies before)."""
    task = NodeTask(name="t", sql="hm/user-churn.sql", kind="regression", entity_table="e",
                    entity_col="ent", target_col="y",
                    val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    t0 = pd.Timestamp("2024-01-01")
    # one label per entity and seed time, as a task's are
    first = pd.DataFrame({"ent": ENT, "day": TIME}).drop_duplicates().index.to_numpy()
    ent, day = ENT[first], TIME[first]
    history = pd.DataFrame({"ent": ent, "y": np.arange(len(ent), dtype=float),
                            "available": t0 + pd.to_timedelta(day, "D")})
    df = pd.DataFrame({"timestamp": t0 + pd.to_timedelta(SEED_TIME, "D"), "ent": SEED_ENT})
    got = visible_labels(task, df, history)["count"]
    for i in range(N_SEEDS):
        assert got[i] == ((ent == SEED_ENT[i]) & visible(day, SEED_TIME[i])).sum()
    # every entity's labels closed by the seed's time (a simple prior's train values)
    got = closed_statistic(task, df, history, len)[:, 0]
    for i in range(N_SEEDS):
        n = visible(day, SEED_TIME[i]).sum()
        assert got[i] == n if n else np.isnan(got[i])
