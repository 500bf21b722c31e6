"""The relational GNN for node-level tasks: encode rows, add their age, pass messages,
predict on the seed rows."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import MLP

from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.gnn import HeteroGraphSAGE


class NodeModel(torch.nn.Module):
    """RelBench's node-level GNN: per-table ResNet encoders, a relative-time encoding,
    heterogeneous GraphSAGE and an MLP head on the seed nodes.

    Args:
        metadata: ``(node_types, edge_types)`` of the graph.
        col_names, col_stats: per node type, from the materialised TensorFrames.
        time_types: the node types that have a time.
        entity_table: the seed node type.
        out_channels: 1 for binary classification and regression, C for C classes.
        channels: width (RelBench: 128).
        num_layers: message-passing layers (RelBench: 2; 0 gives the entity-features-only
            baseline).
        encoder_layers: ResNet blocks of each table encoder.
        aggr: SAGEConv aggregation.
        head_layers: MLP layers of the head.
    """

    def __init__(self, metadata: tuple, col_names: dict, col_stats: dict, time_types: list[str],
                 entity_table: str, out_channels: int = 1, channels: int = 128,
                 num_layers: int = 2, encoder_layers: int = 4, aggr: str = "sum",
                 head_layers: int = 1):
        super().__init__()
        node_types, edge_types = metadata
        self.entity_table = entity_table
        self.num_layers = num_layers
        self.encoder = HeteroEncoder(channels, col_names, col_stats, num_layers=encoder_layers)
        self.time_encoder = RelativeTimeEncoder(time_types, channels)
        self.gnn = HeteroGraphSAGE(node_types, edge_types, channels, num_layers, aggr)
        self.head = MLP(channels, out_channels=out_channels, num_layers=head_layers,
                        norm="layer_norm")

    def reset_parameters(self):
        for m in (self.encoder, self.time_encoder, self.gnn, self.head):
            m.reset_parameters()

    def forward(self, tf_dict: dict, edge_index_dict: dict, time_dict: dict,
                batch_dict: dict, seed_time: Tensor) -> Tensor:
        """Returns ``[B, out_channels]`` for the ``B = len(seed_time)`` seed nodes, which
        come first among the ``entity_table`` nodes."""
        x_dict = self.encoder(tf_dict)
        for nt, rel in self.time_encoder(seed_time, time_dict, batch_dict).items():
            x_dict[nt] = x_dict[nt] + rel
        x_dict = self.gnn(x_dict, edge_index_dict)
        return self.head(x_dict[self.entity_table][: seed_time.size(0)])
