"""A relational graph transformer over fixed-size token sets (after RelGT, arXiv 2505.10960).

Each seed's neighbourhood arrives as tokens, ``K_t`` per node type
(:class:`~rdl.graph.tokens.TokenSet`). A token is its row, encoded by the table's PyTorch
Frame encoder (the same :class:`~rdl.nn.encoder.HeteroEncoder` the GNN uses), plus
encodings of its table, its hop distance from the seed, its age relative to the seed
and its degree in the sampled subgraph (a local structural encoding). Transformer layers
attend over the tokens with the pad slots masked (local attention); the seed token then
attends to a set of learned centroids shared by all seeds (global attention), and a head
reads it. PyTorch's fused ``scaled_dot_product_attention`` throughout.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import MLP, PositionalEncoding

from rdl.nn.encoder import HeteroEncoder
from rdl.nn.interface import NodePredictor
from rdl.nn.model import NODE_NORM
from rdl.nn.names import TypeDict


class TokenAttention(torch.nn.Module):
    """A pre-norm transformer layer: masked multi-head self-attention and a feed-forward
    block, each residual. ``x [B, K, C]``, ``mask [B, K]`` (True: a real token)."""

    def __init__(self, channels: int, heads: int, ff_mult: int = 2, dropout: float = 0.0):
        super().__init__()
        if channels % heads:
            raise ValueError(f"model.channels ({channels}) must be a multiple of model.heads "
                             f"({heads})")
        self.heads, self.dropout = heads, dropout
        self.norm1 = torch.nn.LayerNorm(channels)
        self.qkv = torch.nn.Linear(channels, 3 * channels)
        self.out = torch.nn.Linear(channels, channels)
        self.norm2 = torch.nn.LayerNorm(channels)
        self.ff = torch.nn.Sequential(torch.nn.Linear(channels, ff_mult * channels),
                                      torch.nn.GELU(),
                                      torch.nn.Linear(ff_mult * channels, channels))

    def reset_parameters(self):
        for m in (self.norm1, self.qkv, self.out, self.norm2, self.ff[0], self.ff[2]):
            m.reset_parameters()

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        B, K, C = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(B, K, 3, self.heads, C // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))          # [B, heads, K, C/heads]
        # Every query sees at least the seed token, which is never masked: no empty rows.
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :],
                                             dropout_p=self.dropout if self.training else 0.0)
        x = x + self.out(att.transpose(1, 2).reshape(B, K, C))
        return x + self.ff(self.norm2(x))


class RelGraphTransformer(NodePredictor, torch.nn.Module):
    """Node-level prediction from token sets.

    Args:
        entity_table: the seed node type; its first token is the seed.
        budgets: node type -> tokens per seed ``K_t``, or one ``K_t`` for every node type
            (the data module's token sampler takes them from the model).
        col_names, col_stats: per node type, from the materialised TensorFrames.
        time_types: the node types that have a time.
        out_channels: 1 for binary classification and regression, C for C classes.
        channels: token width.
        num_layers: transformer layers (local attention).
        heads: attention heads.
        encoder_layers: ResNet blocks of each table encoder.
        num_centroids: learned centroids of the global attention (0: none).
        ff_mult: width of the feed-forward blocks, in ``channels``.
        dropout: attention dropout.
        max_hop: hops beyond this share one hop encoding.
        head_layers: MLP layers of the head.
        seed_features: width of each seed's feature vector (0: none), added to the seed
            token (see :mod:`~rdl.features.seed`).
        metadata: the graph's ``(node_types, edge_types)``, which the data module passes to
            every model; unused (tokens need no edges; ``budgets`` is checked against
            ``col_names``).
    """

    takes_tokens = True

    def __init__(self, entity_table: str, budgets: dict | int, col_names: dict, col_stats: dict,
                 time_types: list[str], out_channels: int = 1, channels: int = 128,
                 num_layers: int = 2, heads: int = 4, encoder_layers: int = 4,
                 num_centroids: int = 32, ff_mult: int = 2, dropout: float = 0.0,
                 max_hop: int = 4, head_layers: int = 1, seed_features: int = 0,
                 metadata: tuple | None = None, fused: bool = False,
                 stacked_encoders: bool | int = False):
        super().__init__()
        if channels % heads:
            raise ValueError(f"model.channels ({channels}) must be a multiple of model.heads "
                             f"({heads})")
        if isinstance(budgets, int):
            budgets = {t: budgets for t in col_names}
        budgets = {str(t): int(k) for t, k in dict(budgets).items() if int(k) > 0}
        unknown = sorted(set(budgets) - set(col_names))
        if unknown:
            raise ValueError(f"model.budgets names node types the graph does not have: "
                             f"{unknown}; it has {sorted(col_names)}")
        if entity_table not in budgets:
            raise ValueError(f"model.budgets needs the seed type {entity_table!r}")
        # The seed type first: its first token is the seed.
        self.types = [entity_table] + [t for t in budgets if t != entity_table]
        self.budgets = {t: budgets[t] for t in self.types}
        self.entity_table = entity_table
        self.time_types = [t for t in time_types if t in budgets]
        self.max_hop = max_hop
        self.encoder = HeteroEncoder(channels, {t: col_names[t] for t in self.types},
                                     {t: col_stats[t] for t in self.types}, encoder_layers,
                                     fused=fused, stacked=stacked_encoders)
        self.type_emb = torch.nn.Embedding(len(self.types), channels)
        self.hop_emb = torch.nn.Embedding(max_hop + 1, channels)
        self.pe = PositionalEncoding(channels)
        self.time_lin = TypeDict({t: torch.nn.Linear(channels, channels, bias=False)
                                             for t in self.time_types})
        self.deg_lin = torch.nn.Linear(1, channels, bias=False)
        self.layers = torch.nn.ModuleList(TokenAttention(channels, heads, ff_mult, dropout)
                                          for _ in range(num_layers))
        self.norm = torch.nn.LayerNorm(channels)
        self.centroids = torch.nn.Parameter(torch.empty(num_centroids, channels)) \
            if num_centroids else None
        self.seed_encoder = MLP(in_channels=seed_features, hidden_channels=channels,
                                out_channels=channels, num_layers=2, norm="layer_norm",
                                norm_kwargs=NODE_NORM) if seed_features else None
        self.head = MLP(channels, out_channels=out_channels, num_layers=head_layers,
                        norm="layer_norm", norm_kwargs=NODE_NORM)
        self.reset_parameters()

    def reset_parameters(self):
        self.encoder.reset_parameters()
        for m in (self.type_emb, self.hop_emb, self.deg_lin, self.norm, self.head,
                  *self.time_lin.values(), *self.layers):
            m.reset_parameters()
        if self.centroids is not None:
            torch.nn.init.normal_(self.centroids, std=0.1)
        if self.seed_encoder is not None:
            self.seed_encoder.reset_parameters()

    def forward(self, tf_dict: dict, row_dict: dict, mask_dict: dict, hop_dict: dict,
                deg_dict: dict, time_dict: dict, seed_time: Tensor,
                seed_x: Tensor | None = None,
                stack_sizes: tuple[int, ...] | None = None) -> Tensor:
        """Per node type ``t`` of ``budgets``: ``tf_dict[t]`` a TensorFrame of rows;
        ``row_dict``, ``mask_dict``, ``hop_dict``, ``deg_dict`` ``[B, K_t]``: each token's
        row in it, whether it is real, its hop and degree; ``time_dict[t] [B, K_t]`` its
        time in seconds (timed types); ``seed_time [B]``; ``seed_x [B, F]``;
        ``stack_sizes``: the stacked encoders' padded sizes
        (:meth:`~rdl.nn.encoder.HeteroEncoder.stack_sizes`). Returns
        ``[B, out_channels]``."""
        _, seed = self.encode(tf_dict, row_dict, mask_dict, hop_dict, deg_dict, time_dict,
                              seed_time, seed_x, stack_sizes)
        return self.head(seed)

    def encode(self, tf_dict: dict, row_dict: dict, mask_dict: dict, hop_dict: dict,
               deg_dict: dict, time_dict: dict, seed_time: Tensor,
               seed_x: Tensor | None = None,
               stack_sizes: tuple[int, ...] | None = None) -> tuple[Tensor, Tensor]:
        """The tokens after the transformer layers, ``[B, sum K_t, C]`` in the order of
        :attr:`types` (:meth:`slot` finds a type's; not yet through the final :attr:`norm`,
        which only the tokens read need), and the seed's embedding ``[B, C]``, normed and
        after the global attention (inputs: :meth:`forward`)."""
        x_dict = self.encoder(tf_dict, stack_sizes=stack_sizes)
        tokens, masks = [], []
        for i, t in enumerate(self.types):
            rows = row_dict[t]
            x = x_dict[t].index_select(0, rows.flatten()).view(*rows.shape, -1)
            x = x + self.type_emb.weight[i] + self.hop_emb(hop_dict[t].clamp(max=self.max_hop))
            x = x + self.deg_lin(torch.log1p(deg_dict[t].to(x.dtype)).unsqueeze(-1))
            if t in self.time_lin:
                age = (seed_time.unsqueeze(1) - time_dict[t]).to(x.dtype) / 86400.0
                x = x + self.time_lin[t](self.pe(age.flatten()).view_as(x))
            tokens.append(x)
            masks.append(mask_dict[t])
        x, mask = torch.cat(tokens, 1), torch.cat(masks, 1)
        if self.seed_encoder is not None:
            if seed_x is None:
                raise ValueError("RelGraphTransformer(seed_features=...) needs each seed's seed_x")
            x = torch.cat([x[:, :1] + self.seed_encoder(seed_x).unsqueeze(1), x[:, 1:]], 1)
        for layer in self.layers:
            x = layer(x, mask)
        seed = self.norm(x[:, 0])
        if self.centroids is not None:  # global attention: the seed reads the centroids
            seed = seed + F.scaled_dot_product_attention(
                seed[:, None, None, :], self.centroids[None, None], self.centroids[None, None]
            )[:, 0, 0]
        return x, seed

    def slot(self, node_type: str) -> slice:
        """Where the tokens of ``node_type`` are among :meth:`encode`'s."""
        start = 0
        for t in self.types:
            if t == node_type:
                return slice(start, start + self.budgets[t])
            start += self.budgets[t]
        raise KeyError(f"no token budget for node type {node_type!r}")
