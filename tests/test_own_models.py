"""A node model and a link model added from outside the package: a module and a YAML on
Hydra's search path, trained through ``python -m rdl.train`` with no edit in ``rdl/``
(issue 29: a new model is one Python file and one YAML; ``rdl/nn/interface.py``)."""
from __future__ import annotations

import json
import math
import textwrap

import pytest

MODELS = textwrap.dedent('''
    """Two models of a user's own, built from rdl's layers."""
    import torch
    from torch_geometric.nn import MLP

    from rdl.nn import RelGNN
    from rdl.nn.interface import LinkPredictor, NodePredictor


    class MeanHead(NodePredictor, torch.nn.Module):
        """RelGNN's seed features, a two-layer head."""

        def __init__(self, entity_table, out_channels=1, channels=32, seed_features=0,
                     **kwargs):
            super().__init__()
            self.entity_table = entity_table
            self.gnn = RelGNN(channels=channels, **kwargs)
            self.head = MLP(channels, hidden_channels=channels, out_channels=out_channels,
                            num_layers=2)

        @property
        def time_types(self):
            return self.gnn.time_types

        def reset_parameters(self):
            self.gnn.reset_parameters()
            self.head.reset_parameters()

        def forward(self, tf_dict, edge_index_dict, time_dict, batch_dict, seed_time,
                    row_dict=None, seed_x=None):
            x = self.gnn(tf_dict, edge_index_dict, time_dict, batch_dict, seed_time,
                         row_dict, out_types=(self.entity_table,))[self.entity_table]
            return self.head(x[: seed_time.size(0)])


    class SeedDotShallow(LinkPredictor, torch.nn.Module):
        """The seed's embedding against a learned embedding of every candidate."""

        def __init__(self, src_table, dst_table, num_dst_nodes, channels=32, **kwargs):
            super().__init__()
            self.src_table, self.dst_table = src_table, dst_table
            self.gnn = RelGNN(channels=channels, **kwargs)
            self.dst_emb = torch.nn.Embedding(num_dst_nodes, channels)

        @property
        def time_types(self):
            return self.gnn.time_types

        def reset_parameters(self):
            self.gnn.reset_parameters()
            self.dst_emb.reset_parameters()

        def forward(self, tf_dict, edge_index_dict, time_dict, batch_dict, seed_time,
                    row_dict=None):
            x = self.gnn(tf_dict, edge_index_dict, time_dict, batch_dict, seed_time,
                         row_dict, out_types=(self.src_table,))[self.src_table]
            return x[: seed_time.size(0)]

        def link_scores(self, run, batch, num_dst):
            return run() @ self.dst_emb.weight.t()
''')

YAML = {
    "mean-head": "_target_: my_models.MeanHead\nchannels: 32\nnum_layers: 2\n"
                 "encoder_layers: 1\n",
    "seed-dot": "_target_: my_models.SeedDotShallow\nchannels: 32\nnum_layers: 2\n"
                "encoder_layers: 1\ndata_defaults:\n  strategy: last\n",
}


@pytest.mark.parametrize("task,model,metric", [("user-churn", "mean-head", "auroc"),
                                               ("user-item-purchase", "seed-dot", "map")])
def test_a_model_from_outside_the_package_trains(tmp_path, run_train, task, model, metric):
    (tmp_path / "my_models.py").write_text(MODELS)
    conf = tmp_path / "my_conf" / "model"
    conf.mkdir(parents=True)
    for name, text in YAML.items():
        (conf / f"{name}.yaml").write_text(text)
    run = tmp_path / "run"
    out = run_train(run, f"hydra.searchpath=[file://{tmp_path / 'my_conf'}]", f"task={task}",
                    f"model={model}", "compile.enabled=false",
                    env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run / "metrics.json").read_text())["model"]
    assert math.isfinite(results["test"][metric]), results
    if model == "seed-dot":   # its data_defaults applied where data.strategy is null
        assert "data.strategy=last (from model my_models.SeedDotShallow" in out.stderr + \
            out.stdout
