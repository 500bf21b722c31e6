"""A learned vector per entity (``model.entity_embeddings=true``, :class:`rdl.nn.NodeModel`):
each seed gets its own entity's row, and training moves only rows that were training seeds."""
from __future__ import annotations

import pytest
import torch

from rdl.nn.model import NodeModel
from tests.nn.test_gnn import EDGES, SIZES


def _model(**kwargs):
    torch.manual_seed(0)
    return NodeModel("c", metadata=(list(SIZES), EDGES), col_names={}, col_stats={},
                     time_types=[], channels=8, encoder_layers=1, **kwargs)


def test_each_seed_gets_its_own_entitys_vector(monkeypatch):
    model = _model(entity_embeddings=True, num_entities=10)
    assert model.takes_seed_ids
    assert torch.count_nonzero(model.entity_emb.weight) == 0   # zero: features alone at first
    with torch.no_grad():
        model.entity_emb.weight.copy_(torch.randn(10, 8))
    x = {nt: torch.zeros(n, 8) for nt, n in SIZES.items()}   # every row alike
    # the encoder is not under test: every node type encoded as the same zeros
    monkeypatch.setattr(model.gnn.encoder, "forward", lambda tf, *rest: dict(x))
    edges = {e: torch.zeros(2, 0, dtype=torch.long) for e in EDGES}
    seed_time = torch.zeros(3)
    args = ({}, edges, {}, {}, seed_time)
    out = model(*args, seed_id=torch.tensor([4, 4, 7]))
    assert torch.equal(out[0], out[1])          # one entity twice: one output
    assert not torch.equal(out[0], out[2])      # another entity: another output
    with pytest.raises(ValueError, match="seed_id"):
        model(*args)


def test_off_by_default_and_needs_the_row_count():
    assert _model().entity_emb is None and not _model().takes_seed_ids
    with pytest.raises(ValueError, match="num_entities"):
        _model(entity_embeddings=True)


def test_a_model_that_does_not_name_num_entities_is_not_given_it():
    from rdl.families import data_module
    from rdl.training.data_settings import DataSettings
    from tests.training.test_label_history import make_task, random_db

    class Old(torch.nn.Module):   # an own model from before, passing **kwargs on
        def __init__(self, entity_table, **kwargs):
            super().__init__()

    dm = data_module(random_db(), make_task("user-churn"), DataSettings.of(
        batch_size=16, num_neighbors=[2], cache_dir=False, tree_prior=False))
    plain = dm.model_kwargs()
    assert "num_entities" not in plain and dm.model_kwargs(Old) == plain
    assert dm.model_kwargs(NodeModel) == {**plain, "num_entities": dm.data["customer"].num_nodes}


def test_training_moves_only_the_rows_of_training_seeds(tmp_path, rdl_cache, monkeypatch):
    from rdl.api import config, fit, make_model, prepare
    from rdl.families.node.module import NodeTaskModule
    from tests.conftest import SHORT, TINY
    seen = []   # (training?, each seed's row of its split table, the seed_id the model got)
    inputs = NodeTaskModule.inputs

    def recording(self, batch, seed_table=None):
        args, kwargs = inputs(self, batch, seed_table)
        seen.append((self.training, batch[self.entity].input_id.clone(), kwargs["seed_id"]))
        return args, kwargs

    monkeypatch.setattr(NodeTaskModule, "inputs", recording)
    cfg = config(*TINY, *SHORT, f"data.cache_dir={rdl_cache}", "model.entity_embeddings=true",
                 "data.tree_prior=false", "data.deep_features=null", "compile.enabled=false",
                 f"output_dir={tmp_path}")
    data = prepare(cfg)
    model = make_model(cfg, data)
    task = data.task
    assert model.entity_emb.num_embeddings == data.data[task.entity_table].num_nodes
    fit(cfg, data, model)
    # the wiring: in every training step each seed's vector is its own entity's row
    train_rows = torch.as_tensor(data.tables["train"][task.entity_col].to_numpy())
    steps = [(i, s) for training, i, s in seen if training]
    assert steps, "no training step passed seed ids"
    for input_id, seed_id in steps:
        assert torch.equal(seed_id[: input_id.numel()], train_rows[input_id])
    moved = set(torch.nonzero(model.entity_emb.weight.abs().sum(-1)).flatten().tolist())
    train = set(data.tables["train"][task.entity_col].tolist())
    assert moved, "no entity's vector was trained"
    assert moved <= train   # val and test seeds that never were training seeds stay zero
