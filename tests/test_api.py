"""rdl as a library (rdl/api.py, docs/api.md): the database, the task, the graph, the model
and a short training run through the public functions alone."""
import json
import subprocess
import sys

import pytest
import torch
from torch_geometric.data import HeteroData

import rdl


def test_import_rdl_is_light():
    """``import rdl`` does not import torch, Lightning or PyG: the API loads on first use."""
    code = ("import sys, rdl; heavy = [m for m in ('torch', 'pytorch_lightning', "
            "'torch_geometric') if m in sys.modules]; print(heavy); rdl.fit; "
            "print('pytorch_lightning' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["[]", "True"]


def test_database_task_graph_model_and_two_steps(tmp_path, rdl_cache):
    cfg = rdl.config("task=user-churn", "debug=tiny", f"data.cache_dir={rdl_cache}",
                     "compile.enabled=false", "trainer.max_epochs=1",
                     "trainer.limit_train_batches=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1",
                     f"output_dir={tmp_path}")
    db = rdl.load_database(cfg)
    assert set(db.tables) == {"customer", "article", "transactions"}
    assert db["transactions"].fkeys == {"customer_id": "customer", "article_id": "article"}

    task = rdl.load_task(cfg)
    train = task.split_table("train", db)
    assert list(train.columns) == ["timestamp", "customer_id", "churn"]
    assert train.timestamp.max() < task.val_time

    data = rdl.prepare(cfg, db, task)
    assert isinstance(data.data, HeteroData)
    assert {"customer", "article", "transactions"} <= set(data.data.node_types)
    assert data.tables["val"].timestamp.eq(task.val_time).all()
    batch = next(iter(data.train_dataloader()))
    tx = batch["transactions"]
    assert bool((tx.time <= batch["customer"].seed_time[tx.batch]).all())  # nothing from later

    model = rdl.make_model(cfg, data)
    assert isinstance(model, torch.nn.Module)
    before = {k: v.clone() for k, v in model.state_dict().items()}

    results = rdl.fit(cfg, data, model)
    assert set(results["model"]["test"]) == {"accuracy", "auroc", "average_precision", "f1"}
    assert {"model", "LightGBM", "LightGBM (depth 2)"} <= set(results)
    # tree_fit is the tree baseline better on val; the prior, of the baselines the run
    # prints (tests/training/test_prior_choice.py), is named in the results
    fits = data.tree_fits
    assert data.tree_fit is max(fits.values(), key=lambda f: f.val_score())
    assert results["model"]["prior"] == data.prior_name and data.prior_name in results
    # depth 2: depth 1's features and the depth-2 ones chosen on val (none, 10, 30 or all)
    # (the trees' own feature names: a fit read from the prepared cache keeps no features)
    one, two = (fits[name].booster.feature_name() for name in ("LightGBM", "LightGBM (depth 2)"))
    kept = len(two) - len(one)
    assert list(two[:len(one)]) == list(one) and (kept in (0, 10, 30) or kept > 30), kept
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert changed, "two steps changed no weight"
    ckpt = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["global_step"] == 2
    assert json.loads((tmp_path / "metrics.json").read_text())["task"] == "user-churn"


def test_config_is_the_command_lines_and_settings_are_checked(tmp_path):
    cfg = rdl.config("task=item-sales", "model.channels=8", f"output_dir={tmp_path}")
    assert (cfg.task.name, cfg.model.channels, cfg.output_dir) == ("item-sales", 8, str(tmp_path))
    assert rdl.config().output_dir.startswith("outputs/")   # as the command line's runs
    with pytest.raises(ValueError, match="model.channels"):
        rdl.prepare(rdl.config("model.channels=0"))          # before any data is read
