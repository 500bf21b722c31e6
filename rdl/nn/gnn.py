"""Message passing over the sampled relational subgraph."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import HeteroConv, SAGEConv


class HeteroGraphSAGE(torch.nn.Module):
    """Heterogeneous GraphSAGE: per layer, a SAGEConv per edge type, summed per destination
    node type, then layer norm and ReLU.

    Args:
        node_types, edge_types: the graph's metadata.
        channels: width of every node type.
        num_layers: message-passing layers (0 leaves the features unchanged).
        aggr: neighbourhood aggregation inside each SAGEConv (RelBench: ``sum``).
    """

    def __init__(self, node_types: list[str], edge_types: list[tuple], channels: int,
                 num_layers: int = 2, aggr: str = "sum"):
        super().__init__()
        self.convs = torch.nn.ModuleList(
            HeteroConv({et: SAGEConv((channels, channels), channels, aggr=aggr) for et in edge_types},
                       aggr="sum")
            for _ in range(num_layers))
        self.norms = torch.nn.ModuleList(
            torch.nn.ModuleDict({nt: torch.nn.LayerNorm(channels) for nt in node_types})
            for _ in range(num_layers))

    def reset_parameters(self):
        for conv in self.convs:
            conv.reset_parameters()
        for norms in self.norms:
            for norm in norms.values():
                norm.reset_parameters()

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict: dict) -> dict[str, Tensor]:
        for conv, norms in zip(self.convs, self.norms):
            out = conv(x_dict, edge_index_dict)
            # A node type that receives no edge type keeps its features.
            x_dict = {nt: norms[nt](out[nt]).relu() if nt in out else x for nt, x in x_dict.items()}
        return x_dict
