"""Message passing over the sampled relational subgraph."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import HeteroConv, SAGEConv

from rdl.nn.names import TypeDict


class HeteroGraphSAGE(torch.nn.Module):
    """Heterogeneous GraphSAGE: per layer, a SAGEConv per edge type, summed per destination
    node type, then layer norm and ReLU.

    Args:
        node_types, edge_types: the graph's metadata.
        channels: width of every node type.
        num_layers: message-passing layers (0 leaves the features unchanged).
        aggr: neighbourhood aggregation inside each SAGEConv (RelBench: ``sum``), or a
            list of them (``["sum", "max"]``), whose outputs are concatenated.
    """

    def __init__(self, node_types: list[str], edge_types: list[tuple], channels: int,
                 num_layers: int = 2, aggr: str | list[str] = "sum"):
        super().__init__()
        # A list of aggregations (``model.aggr=[sum,max]``) arrives from Hydra as a
        # ListConfig, which PyG's aggregation resolver does not take.
        aggr = aggr if isinstance(aggr, str) else list(aggr)
        # The convs into one node type are summed, so one bias per type is enough: the
        # first edge type into it has one. (Duplicate biases also get identical gradient
        # reductions, which Inductor's CPU code generator mishandles in bfloat16.)
        first = {}
        for et in edge_types:
            first.setdefault(et[2], et)
        self.convs = torch.nn.ModuleList(
            HeteroConv({et: SAGEConv((channels, channels), channels, aggr=aggr,
                                     bias=first[et[2]] == et) for et in edge_types}, aggr="sum")
            for _ in range(num_layers))
        self.norms = torch.nn.ModuleList(
            TypeDict({nt: torch.nn.LayerNorm(channels) for nt in node_types})
            for _ in range(num_layers))

    def reset_parameters(self):
        for conv in self.convs:
            conv.reset_parameters()
        for norms in self.norms:
            for norm in norms.values():
                norm.reset_parameters()

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict: dict,
                out_types: tuple[str, ...] | None = None) -> dict[str, Tensor]:
        """``out_types``: the node types whose output is used (default: all). Each layer
        then updates only the types whose features can still reach them (the last layer
        only ``out_types``): the result is the same for those types, the other entries
        are left unfinished, and a node-level head on the seeds skips most of the work."""
        layers = zip(self.convs, self.norms, self.updated_types(edge_index_dict, out_types))
        for conv, norms, types in layers:
            edges = {et: ei for et, ei in edge_index_dict.items() if types is None or et[2] in types}
            out = conv(x_dict, edges)
            # A node type that receives no edge type keeps its features.
            x_dict = {nt: norms[nt](out[nt]).relu() if nt in out else x for nt, x in x_dict.items()}
        return x_dict

    def updated_types(self, edge_types, out_types) -> list[set | None]:
        """Per layer, the node types whose output some type of ``out_types`` needs."""
        if out_types is None:
            return [None] * len(self.convs)
        layers = [set(out_types)]
        for _ in range(len(self.convs) - 1):
            last = layers[0]
            layers.insert(0, last | {src for src, _, dst in edge_types if dst in last})
        return layers
