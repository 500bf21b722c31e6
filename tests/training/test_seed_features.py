"""Seed features: each seed's aggregated past as a model input, leak-free, scaled on the
train split, and attached to the right seed of every batch."""
import numpy as np
import pytest
import torch

from rdl.features.table import entity_features
from rdl.data import Database, Table
from rdl.nn import NodeModel
from rdl.families.node.module import NodeTaskModule
from rdl.features.seed import seed_features
from tests.training.test_label_history import datamodule, make_task, random_db

SPLITS = ("train", "val", "test")


def tables_of(task, db):
    return {s: task.split_table(s, db) for s in SPLITS}


@pytest.mark.parametrize("name", ["item-sales", "user-churn"])
def test_columns_are_the_feature_table_without_the_entity_row(name):
    task, db = make_task(name), random_db()
    tables = tables_of(task, db)
    history = task.history(tables)
    feats, names = seed_features(task, db.upto(task.test_time), tables, history)
    full = entity_features(task, db.upto(task.test_time), tables["train"], history)
    own = [c for c in full.columns if c.startswith(f"{task.entity_table}.")]
    values = [c for c in names if not c.endswith(".missing")]
    assert own and not set(own) & set(values)
    assert values == [c for c in full.columns if c not in own]
    for split in SPLITS:
        assert feats[split].shape == (len(tables[split]), len(names))
        assert feats[split].dtype == torch.float32 and torch.isfinite(feats[split]).all()


def test_scaling_is_robust_and_fitted_on_train():
    task, db = make_task("user-churn"), random_db()
    tables = tables_of(task, db)
    history = task.history(tables)
    feats, names = seed_features(task, db.upto(task.test_time), tables, history)
    raw = entity_features(task, db.upto(task.test_time), tables["train"], history, own=False)
    x = feats["train"].numpy()
    for j, col in enumerate(c for c in names if not c.endswith(".missing")):
        v = raw[col].to_numpy(dtype=np.float64)
        ok = ~np.isnan(v)
        # asinh((x - median) / s) is increasing and 0 at the median
        order = np.argsort(v[ok], kind="stable")
        assert (np.diff(x[ok, j][order]) >= -1e-6).all(), col
        assert abs(np.median(x[ok, j])) < 1e-5, col
        if (~ok).any():  # missing: 0 and its indicator set
            flag = names.index(f"{col}.missing")
            assert (x[~ok, j] == 0).all() and (x[~ok, flag] == 1).all() and (x[ok, flag] == 0).all()
    assert any(c.endswith(".missing") for c in names)  # days since last row, last label


def test_no_row_after_the_seed_changes_its_features():
    task = make_task("user-churn")
    db = random_db()
    tables = tables_of(task, db)
    history = task.history(tables)
    base, _ = seed_features(task, db.upto(task.test_time), tables, history)
    # Move every transaction after the val time somewhere else: a val seed must not notice.
    tx = db["transactions"].df.copy()
    late = tx["t_dat"] > task.val_time
    assert late.any()
    tx.loc[late, "customer_id"] = (tx.loc[late, "customer_id"] + 1) % 15
    tx.loc[late, "price"] = 1e6
    moved = Database({**db.tables, "transactions": Table(tx, fkeys=db["transactions"].fkeys,
                                                         time_col="t_dat")})
    # The same seeds and history, features from the changed database; train statistics
    # only come from train seeds, all before the val time.
    again, _ = seed_features(task, moved.upto(task.test_time), tables, history)
    assert torch.equal(base["train"], again["train"])
    assert torch.equal(base["val"], again["val"])
    assert not torch.equal(base["test"], again["test"])  # the change is visible later


@pytest.mark.parametrize("name", ["item-sales", "user-churn"])
def test_batches_carry_their_own_seeds_features(name):
    dm = datamodule(make_task(name))
    width = dm.model_kwargs()["seed_features"]
    assert width == len(dm.seed_feature_names) > 0
    for split in SPLITS:
        loader = dm.loader(split, shuffle=True)
        for batch in loader:
            store = batch[dm.task.entity_table]
            assert torch.equal(store.seed_x, dm.seed_x[split][store.input_id])
            break


def test_switch_off_and_link_tasks_have_none():
    dm = datamodule(make_task("user-churn"), seed_features=False)
    assert dm.seed_x is None and "seed_features" not in dm.model_kwargs()
    batch = next(iter(dm.loader("train")))
    assert "seed_x" not in batch["customer"]


def test_model_uses_the_features_of_each_seed():
    dm = datamodule(make_task("user-churn"))
    torch.manual_seed(0)
    model = NodeModel(channels=16, encoder_layers=1, num_layers=2, **dm.model_kwargs()).eval()
    batch = next(iter(dm.loader("val", shuffle=False)))
    module = NodeTaskModule(model, dm.task, optimizer=torch.optim.Adam, compile=False)
    args, kwargs = module.inputs(batch)
    out = model(*args, **kwargs)
    seed_x = kwargs["seed_x"].clone()
    # One seed's features changed: its output changes, and no other (each seed has its
    # own subgraph).
    seed_x[0] += 3.0
    out2 = model(*args, **{**kwargs, "seed_x": seed_x})
    assert not torch.allclose(out[0], out2[0])
    torch.testing.assert_close(out[1:], out2[1:])
    with pytest.raises(ValueError, match="seed_x"):
        model(*args, **{k: v for k, v in kwargs.items() if k != "seed_x"})
