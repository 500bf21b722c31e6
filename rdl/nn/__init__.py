from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.gnn import HeteroGraphSAGE
from rdl.nn.link import IDGNN, ContextGNN, TwoTower
from rdl.nn.model import NodeModel, RelGNN

__all__ = ["HeteroEncoder", "RelativeTimeEncoder", "HeteroGraphSAGE", "RelGNN", "NodeModel",
           "IDGNN", "ContextGNN", "TwoTower"]
