from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.gnn import HeteroGraphSAGE
from rdl.nn.link import IDGNN, ContextGNN, ContextGT, TwoTower
from rdl.nn.model import NodeModel, RelGNN
from rdl.nn.transformer import RelGraphTransformer

__all__ = ["HeteroEncoder", "RelativeTimeEncoder", "HeteroGraphSAGE", "RelGNN", "NodeModel",
           "IDGNN", "ContextGNN", "ContextGT", "TwoTower", "RelGraphTransformer"]
