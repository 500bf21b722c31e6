from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.link import IDGNN, ContextGNN, ContextGT, TwoTower
from rdl.nn.model import HeteroGraphSAGE, NodeModel, RelGNN
from rdl.nn.transformer import RelGraphTransformer

__all__ = ["HeteroEncoder", "RelativeTimeEncoder", "HeteroGraphSAGE", "RelGNN", "NodeModel",
           "IDGNN", "ContextGNN", "ContextGT", "TwoTower", "RelGraphTransformer"]
