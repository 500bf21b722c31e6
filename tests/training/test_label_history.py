"""Label history: the task's earlier labels as a node type, never seen before their window
closes. Checked against a brute-force scan of every (seed, label) pair."""
import numpy as np
import pandas as pd
import pytest
import torch

from rdl.data import Database, Table
from rdl.graph.build import to_seconds
from rdl.families.node import NodeTask
from rdl.tasks import HISTORY
from rdl.families import data_module
from rdl.families.link import LinkTask
from rdl.training.data_settings import DataSettings


def random_db(seed: int = 0, days: int = 75) -> Database:
    rng = np.random.default_rng(seed)
    n = 600
    tx = pd.DataFrame({
        "t_dat": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, days, n), "D"),
        "customer_id": pd.array(rng.integers(0, 15, n), dtype="Int64"),
        "article_id": pd.array(rng.integers(0, 8, n), dtype="Int64"),
        "price": rng.random(n).round(3),
    })
    return Database({
        "customer": Table(pd.DataFrame({"customer_id": range(15), "age": rng.random(15)}),
                          pkey="customer_id"),
        "article": Table(pd.DataFrame({"article_id": range(8), "colour": rng.random(8)}),
                         pkey="article_id"),
        "transactions": Table(tx, fkeys={"customer_id": "customer", "article_id": "article"},
                              time_col="t_dat"),
    })


def make_task(name: str):
    entity = {"item-sales": ("article", "article_id", "sales", "regression"),
              "user-churn": ("customer", "customer_id", "churn", "binary_classification")}[name]
    table, col, target, kind = entity
    return NodeTask(name=name, sql=f"hm/{name}.sql", kind=kind, entity_table=table,
                    entity_col=col, target_col=target, window="7d",
                    val_timestamp="2020-02-26", test_timestamp="2020-03-04")


def datamodule(task, **kwargs):
    return data_module(random_db(), task, DataSettings.of(
        batch_size=16, num_neighbors=[-1], cache_dir=False, **{"tree_prior": False, **kwargs}))


def test_history_holds_train_and_val_labels_with_their_closing_time():
    task = make_task("item-sales")
    db = random_db()
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    hist = task.history(tables)
    assert len(hist) == len(tables["train"]) + len(tables["val"])
    assert (hist["available"] == hist["timestamp"] + pd.Timedelta("7D")).all()
    assert hist["timestamp"].max() == task.val_time  # never a test label
    table, stypes = task.history_table(tables)
    assert table.fkeys == {"article_id": "article"} and table.time_col == "available"
    assert stypes == {"sales": "numerical", "available": None}  # the time is not a feature


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("name", ["item-sales", "user-churn"])
def test_no_label_is_sampled_before_its_window_closes(name, strict):
    """Every label row sampled for a seed at time s has ``available <= s``, and with all
    neighbours taken the sampled set is exactly the brute-force one, strict mode included
    (a label whose window closes at s itself is known at s)."""
    task = make_task(name)
    dm = datamodule(task, strict=strict)
    hist = task.history(dm.tables)
    # brute force from the labels themselves: the window of a label at t closes at t + 7d
    avail = to_seconds(hist["timestamp"] + pd.Timedelta("7D"))
    entity = torch.from_numpy(hist[task.entity_col].to_numpy())
    closing_at_seed = 0
    for split in ("train", "val", "test"):
        for batch in dm.loader(split, shuffle=False):
            seeds = batch[task.entity_table]
            B = seeds.seed_time.numel()
            seed_node, seed_time = seeds.n_id[:B], seeds.seed_time
            h = batch[HISTORY]
            seed = h.batch[:h.num_nodes]   # without the pad nodes' (a compiled run's loader)
            assert (avail[h.n_id] <= seed_time[seed]).all()
            for b in range(B):
                got = set(h.n_id[seed == b].tolist())
                want = set(torch.nonzero((entity == seed_node[b]) & (avail <= seed_time[b]))
                           .flatten().tolist())
                assert got == want
                closing_at_seed += int((avail[list(got)] == seed_time[b]).sum()) if got else 0
    assert closing_at_seed > 0  # the boundary case was exercised


def test_history_switch_and_link_tasks():
    task = make_task("user-churn")
    assert HISTORY not in datamodule(task, label_history=False).data.node_types
    dm = datamodule(task)
    assert HISTORY in dm.data.node_types and HISTORY in dm.model_kwargs()["time_types"]
    link = LinkTask(name="user-item-purchase", sql="hm/user-item-purchase.sql",
                    kind="link_prediction", entity_table="customer", entity_col="customer_id",
                    target_table="article", target_col="article_id", window="7d",
                    val_timestamp="2020-02-26", test_timestamp="2020-03-04")
    assert HISTORY not in datamodule(link).data.node_types  # node tasks only
    assert not hasattr(link, "history_table")   # the node family's alone


def test_a_table_named_like_the_history_is_an_error():
    db = random_db()
    db.tables[HISTORY] = Table(pd.DataFrame({"x": [1]}))
    with pytest.raises(Exception, match="label_history=false"):
        data_module(db, make_task("user-churn"),
                    DataSettings.of(num_neighbors=[-1], cache_dir=False, tree_prior=False))
