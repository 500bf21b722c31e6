"""Issue-level acceptance on the default synthetic data (slow: about 20 minutes on 2 cores).

The default configs must beat the entity-row-only model (0 message-passing layers, no
seed features, no tree prior), the constant baselines and the label-history baselines
(last label, label mean), and on item-sales LightGBM too (on user-churn it is not yet
beaten on test, docs/results.md); these runs measure it.
"""
import json

import pytest

pytestmark = pytest.mark.slow
#: The entity's own row only: no message passing, no seed features (which aggregate its
#: child rows and label history by hand), no tree prior (trees on those aggregates).
ROW_ONLY = ("model.num_layers=0", "data.seed_features=false", "data.tree_prior=false")


@pytest.fixture
def train(tmp_path, run_train):
    """Trains with the default settings (not the tests' tiny ones) and returns metrics.json."""
    def run(name, *overrides):
        out = run_train(tmp_path / name, *overrides, tiny=False, timeout=1800)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads((tmp_path / name / "metrics.json").read_text())
    return run


def test_churn_gnn_beats_entity_only(train):
    gnn = train("gnn", "task=user-churn")
    flat = train("flat", "task=user-churn", *ROW_ONLY)
    assert gnn["model"]["test"]["auroc"] >= flat["model"]["test"]["auroc"] + 0.03
    mean = next(k for k in gnn if k.startswith("label mean"))
    for baseline in ("last label", mean):
        assert gnn["model"]["test"]["auroc"] > gnn[baseline]["test"]["auroc"] + 0.02


def test_sales_gnn_beats_zero_and_entity_only(train):
    gnn = train("gnn", "task=item-sales")
    flat = train("flat", "task=item-sales", *ROW_ONLY)
    assert gnn["model"]["test"]["mae"] < gnn["zero"]["test"]["mae"]
    assert gnn["model"]["test"]["mae"] < flat["model"]["test"]["mae"]
    mean = next(k for k in gnn if k.startswith("label mean"))
    for baseline in ("last label", mean, "LightGBM"):
        assert gnn["model"]["test"]["mae"] < gnn[baseline]["test"]["mae"]


def test_purchase_hybrid_and_idgnn_beat_baselines(train):
    hybrid = train("hybrid", "experiment=user-item-purchase")    # contextgnn
    idgnn = train("idgnn", "task=user-item-purchase", "model=idgnn")
    for res in (hybrid, idgnn):
        for baseline in ("popularity (last window)", "past links"):
            assert res["model"]["test"]["map"] > res[baseline]["test"]["map"]
    assert hybrid["model"]["test"]["map"] >= idgnn["model"]["test"]["map"]
