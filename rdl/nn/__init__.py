from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.gnn import HeteroGraphSAGE
from rdl.nn.model import NodeModel

__all__ = ["HeteroEncoder", "RelativeTimeEncoder", "HeteroGraphSAGE", "NodeModel"]
