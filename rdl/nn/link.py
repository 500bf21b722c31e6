"""Link-prediction models: rank ``dst_table`` rows for each ``src_table`` seed.

Three families on the :class:`~rdl.nn.model.RelGNN` backbone, and one on the graph
transformer:

- :class:`TwoTower`: the seed's subgraph embedding against each candidate's own subgraph
  embedding (plus an optional shallow embedding of the candidate), a dot product.
- :class:`IDGNN`: one subgraph around the seed, which is marked (identity awareness);
  messages flow both ways, and every candidate *in the subgraph* is scored from its
  features, so the score is pair-wise. Candidates outside the subgraph are not scored.
- :class:`ContextGNN`: ID-GNN's pair-wise scores for the candidates in the seed's subgraph,
  a two-tower score (seed embedding against a shallow embedding of every candidate) for all
  others, one ranking (in the spirit of ContextGNN, Yuan et al. 2024).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import MLP

from rdl.nn.interface import LinkPredictor, Run, listwise_loss
from rdl.nn.model import NODE_NORM, RelGNN
from rdl.nn.transformer import RelGraphTransformer


class IDGNN(LinkPredictor, torch.nn.Module):
    """Identity-aware GNN for recommendation (RelBench's ID-GNN baseline).

    Args:
        src_table, dst_table: the seed and the candidate node types.
        num_dst_nodes: unused (ID-GNN scores only what it sees); the link models share
            one signature.
        channels, head_layers: width, and MLP layers of the scoring head.
        **kwargs: the :class:`RelGNN` arguments.

    ``forward`` returns one logit per ``dst_table`` node of the batch, ``[N_dst]``: the
    score of (its seed, that row).
    """

    #: it scores only the ``dst_table`` rows of the seed's sampled subgraph (``-inf``
    #: elsewhere): the target table must lie within the sampled hops of the seed's
    #: (checked once the schema is read, :meth:`rdl.families.link.LinkFamily.check_schema`)
    scores_in_subgraph_only: bool = True

    def __init__(self, src_table: str, dst_table: str, num_dst_nodes: int | None = None,
                 channels: int = 128, head_layers: int = 1, **kwargs):
        super().__init__()
        self.src_table, self.dst_table = src_table, dst_table
        self.gnn = RelGNN(channels=channels, id_table=src_table, **kwargs)
        self.head = MLP(channels, out_channels=1, num_layers=head_layers, norm="layer_norm",
                        norm_kwargs=NODE_NORM)

    @property
    def time_types(self) -> list[str]:
        return self.gnn.time_types

    def reset_parameters(self):
        self.gnn.reset_parameters()
        self.head.reset_parameters()

    def forward(self, tf_dict, edge_index_dict, time_dict, batch_dict, seed_time,
                row_dict=None, stack_sizes=None) -> Tensor:
        x_dict = self.gnn(tf_dict, edge_index_dict, time_dict, batch_dict, seed_time, row_dict,
                          out_types=(self.dst_table,), stack_sizes=stack_sizes)
        return self.head(x_dict[self.dst_table]).squeeze(-1)

    def link_scores(self, run: Run, batch, num_dst: int) -> Tensor:
        """Its logit where a candidate is in the seed's subgraph, -inf elsewhere."""
        dst = batch[self.dst_table]
        out = torch.full((batch[self.src_table].batch_size, num_dst), float("-inf"),
                         device=dst.n_id.device)
        n = dst.num_nodes   # a compiled run's batch holds pad nodes' seeds after them
        return out.index_put((dst.batch[:n], dst.n_id), run()[:n])

    def loss_targets(self, batch) -> tuple:
        return (batch[self.dst_table].dst_y,)

    def loss_of(self, out: Tensor, y: Tensor) -> Tensor:
        """A label per candidate in the subgraph (RelBench): binary cross-entropy."""
        logits = out[: y.numel()]  # without the pad rows
        return F.binary_cross_entropy_with_logits(logits, y, reduction="sum") / max(y.numel(), 1)


class ContextGNN(LinkPredictor, torch.nn.Module):
    """Pair-wise scores inside the seed's subgraph, two-tower scores outside it.

    Args:
        src_table, dst_table: the seed and the candidate node types.
        num_dst_nodes: rows of ``dst_table`` (the shallow embedding's size).
        channels, head_layers: width, and MLP layers of the pair-wise head.
        **kwargs: the :class:`RelGNN` arguments.

    ``forward`` returns ``(pair [N_dst], seed [B, C])``: a logit per ``dst_table`` node of
    the batch and the seeds' embeddings; :meth:`scores` turns them into ``[B, num_dst]``.
    """

    def __init__(self, src_table: str, dst_table: str, num_dst_nodes: int, channels: int = 128,
                 head_layers: int = 1, **kwargs):
        super().__init__()
        self.src_table, self.dst_table = src_table, dst_table
        self.gnn = RelGNN(channels=channels, id_table=src_table, **kwargs)
        self.pair_head = MLP(channels, out_channels=1, num_layers=head_layers,
                             norm="layer_norm", norm_kwargs=NODE_NORM)
        self.seed_head = MLP(channels, out_channels=channels, num_layers=head_layers,
                             norm="layer_norm", norm_kwargs=NODE_NORM)
        self.dst_emb = torch.nn.Embedding(num_dst_nodes, channels)
        self.dst_bias = torch.nn.Embedding(num_dst_nodes, 1)
        self.reset_parameters()

    @property
    def time_types(self) -> list[str]:
        return self.gnn.time_types

    def reset_parameters(self):
        self.gnn.reset_parameters()
        self.pair_head.reset_parameters()
        self.seed_head.reset_parameters()
        torch.nn.init.normal_(self.dst_emb.weight, std=0.1)
        torch.nn.init.zeros_(self.dst_bias.weight)

    def forward(self, tf_dict, edge_index_dict, time_dict, batch_dict, seed_time, row_dict=None,
                stack_sizes=None):
        x_dict = self.gnn(tf_dict, edge_index_dict, time_dict, batch_dict, seed_time, row_dict,
                          out_types=(self.src_table, self.dst_table), stack_sizes=stack_sizes)
        pair = self.pair_head(x_dict[self.dst_table]).squeeze(-1)
        seed = self.seed_head(x_dict[self.src_table][: seed_time.size(0)])
        return pair, seed

    def scores(self, pair: Tensor, seed: Tensor, dst_batch: Tensor, dst_id: Tensor) -> Tensor:
        """``[B, num_dst]`` logits: two-tower everywhere, pair-wise where the candidate is
        in the seed's subgraph (``dst_batch``, ``dst_id``: seed index and row of each
        ``dst_table`` node of the batch; unique pairs, as the sampler dedupes per seed)."""
        out = seed @ self.dst_emb.weight.t() + self.dst_bias.weight.t()
        return out.index_put((dst_batch, dst_id), pair)

    def link_scores(self, run: Run, batch, num_dst: int) -> Tensor:
        dst = batch[self.dst_table]
        return self.batch_scores(run(), dst.batch, dst.n_id)

    def batch_scores(self, out: tuple, dst_batch: Tensor, dst_id: Tensor) -> Tensor:
        """:meth:`scores` of the model's output over a batch, whose ``dst_table`` nodes
        are ``dst_id`` (their rows), each seeded at ``dst_batch`` (a compiled run's holds
        its pad nodes' seeds after them)."""
        pair, seed = out
        n = dst_id.size(0)
        return self.scores(pair[:n], seed, dst_batch[:n], dst_id)

    def loss_targets(self, batch) -> tuple:
        dst = batch[self.dst_table]
        return dst.batch, dst.n_id, batch[self.src_table].y

    def loss_of(self, out: tuple, dst_batch: Tensor, dst_id: Tensor, y: Tensor) -> Tensor:
        return listwise_loss(self.batch_scores(out, dst_batch, dst_id), y)


class TwoTower(LinkPredictor, torch.nn.Module):
    """Two towers over one backbone: seed rows and candidate rows are each embedded from
    their own subgraph; a candidate's score is the dot product with the seed's embedding.

    Args:
        src_table, dst_table: the seed and the candidate node types.
        num_dst_nodes: rows of ``dst_table``; with ``shallow=True`` each gets a learned
            embedding added to its subgraph embedding.
        channels, head_layers: width, and MLP layers of each tower's head.
        **kwargs: the :class:`RelGNN` arguments.
    """

    def __init__(self, src_table: str, dst_table: str, num_dst_nodes: int, channels: int = 128,
                 head_layers: int = 1, shallow: bool = True, **kwargs):
        super().__init__()
        self.src_table, self.dst_table = src_table, dst_table
        self.gnn = RelGNN(channels=channels, **kwargs)
        self.src_head = MLP(channels, out_channels=channels, num_layers=head_layers,
                            norm="layer_norm", norm_kwargs=NODE_NORM)
        self.dst_head = MLP(channels, out_channels=channels, num_layers=head_layers,
                            norm="layer_norm", norm_kwargs=NODE_NORM)
        self.dst_emb = torch.nn.Embedding(num_dst_nodes, channels) if shallow else None
        self.reset_parameters()

    @property
    def time_types(self) -> list[str]:
        return self.gnn.time_types

    def reset_parameters(self):
        self.gnn.reset_parameters()
        self.src_head.reset_parameters()
        self.dst_head.reset_parameters()
        if self.dst_emb is not None:
            torch.nn.init.normal_(self.dst_emb.weight, std=0.1)

    def forward(self, tf_dict, edge_index_dict, time_dict, batch_dict, seed_time,
                src_index: Tensor, dst_index: Tensor, dst_id: Tensor, row_dict=None,
                stack_sizes=None):
        """Embeddings of the seeds at ``src_index`` among the ``src_table`` nodes and at
        ``dst_index`` among the ``dst_table`` nodes (``dst_id``: their rows)."""
        x_dict = self.gnn(tf_dict, edge_index_dict, time_dict, batch_dict, seed_time, row_dict,
                          out_types=(self.src_table, self.dst_table), stack_sizes=stack_sizes)
        # index_select: its gradient is an index_add (x[index]'s an accumulating index_put)
        src = self.src_head(x_dict[self.src_table].index_select(0, src_index))
        dst = self.dst_head(x_dict[self.dst_table].index_select(0, dst_index))
        if self.dst_emb is not None:
            dst = dst + self.dst_emb(dst_id)
        return src, dst

    embeds_candidates = True

    def candidate_embeddings(self, run: Run, batch) -> Tensor:
        # Only the candidates' embeddings are needed; spare rows stand in as the seeds.
        B = batch[self.dst_table].batch_size
        index = torch.arange(B, device=batch[self.dst_table].n_id.device)
        return run(run.spare(self.src_table), index, batch[self.dst_table].n_id[:B])[1]

    def link_scores(self, run: Run, batch, num_dst: int) -> Tensor:
        """The seeds' embeddings against :attr:`candidates` (every row's)."""
        # Only seed embeddings are needed; spare rows stand in as candidates, so that the
        # compiled model sees the same shapes as in :meth:`candidate_embeddings`.
        B = batch[self.src_table].batch_size
        spare = run.spare(self.dst_table)
        src, _ = run(torch.arange(B, device=spare.device), spare, torch.zeros_like(spare))
        return src @ self.candidates.t()

    def link_loss(self, run: Run, batch, num_dst: int) -> tuple[Tensor, int]:
        """Bayesian personalised ranking on (seed, true row, random row) triplets."""
        dst = batch[self.dst_table]
        pos, neg = dst.dst_pos_index, dst.dst_neg_index
        dst_index = torch.cat([pos, neg])
        src, out = run(batch[self.src_table].src_index, dst_index, dst.n_id[dst_index])
        p, n = out.split([pos.numel(), neg.numel()])
        return -F.logsigmoid((src * p).sum(-1) - (src * n).sum(-1)).mean(), pos.numel()


class ContextGT(LinkPredictor, RelGraphTransformer):
    """:class:`ContextGNN`'s hybrid on the graph transformer: the seed's neighbourhood as
    token sets (:class:`~rdl.nn.transformer.RelGraphTransformer`); the ``dst_table``
    tokens, which have attended to the seed's, get pair-wise scores, every other candidate
    the seed token's embedding against a shallow embedding of it; one ranking.

    Args:
        src_table, dst_table: the seed and the candidate node types; ``budgets`` must give
            ``dst_table`` tokens.
        num_dst_nodes: rows of ``dst_table``.
        channels, head_layers: width, and MLP layers of the seed and pair-wise heads.
        **kwargs: the other :class:`~rdl.nn.transformer.RelGraphTransformer` arguments.

    ``forward`` returns ``(pair [B, K_dst], seed [B, C])``; :meth:`scores` turns them into
    ``[B, num_dst]``.
    """

    takes_tokens = True

    def __init__(self, src_table: str, dst_table: str, num_dst_nodes: int, budgets: dict | int,
                 col_names: dict, col_stats: dict, time_types: list[str], channels: int = 128,
                 head_layers: int = 1, **kwargs):
        super().__init__(src_table, budgets, col_names, col_stats, time_types,
                         out_channels=channels, channels=channels, head_layers=head_layers,
                         **kwargs)
        if dst_table not in self.budgets:
            raise ValueError(f"model.budgets needs tokens of the candidate type {dst_table!r}")
        self.src_table, self.dst_table = src_table, dst_table
        self.pair_head = MLP(channels, out_channels=1, num_layers=head_layers,
                             norm="layer_norm", norm_kwargs=NODE_NORM)
        self.dst_emb = torch.nn.Embedding(num_dst_nodes, channels)
        self.dst_bias = torch.nn.Embedding(num_dst_nodes, 1)
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        if hasattr(self, "pair_head"):  # the parent's constructor calls this first
            self.pair_head.reset_parameters()
            torch.nn.init.normal_(self.dst_emb.weight, std=0.1)
            torch.nn.init.zeros_(self.dst_bias.weight)

    def forward(self, tf_dict, row_dict, mask_dict, hop_dict, deg_dict, time_dict, seed_time,
                seed_x=None, stack_sizes=None) -> tuple[Tensor, Tensor]:
        x, seed = self.encode(tf_dict, row_dict, mask_dict, hop_dict, deg_dict, time_dict,
                              seed_time, seed_x, stack_sizes)
        pair = self.pair_head(self.norm(x[:, self.slot(self.dst_table)])).squeeze(-1)
        return pair, self.head(seed)

    def scores(self, pair: Tensor, seed: Tensor, dst_id: Tensor, dst_mask: Tensor) -> Tensor:
        """``[B, num_dst]`` logits: two-tower everywhere, pair-wise for each seed's real
        ``dst_table`` tokens (``dst_id``, ``dst_mask`` ``[B, K_dst]``: their rows, and
        which are real; a seed's tokens are distinct rows)."""
        num_dst = self.dst_emb.num_embeddings
        out = seed @ self.dst_emb.weight.t() + self.dst_bias.weight.t()
        # Pad slots write to an extra column, dropped after: no boolean indexing (a shape
        # that depends on the data), and no two writes to one real cell.
        out = torch.cat([out, out.new_zeros(out.size(0), 1)], 1)
        seeds = torch.arange(out.size(0), device=out.device).unsqueeze(1).expand_as(dst_id)
        cols = torch.where(dst_mask, dst_id, num_dst)
        return out.index_put((seeds, cols), pair)[:, :num_dst]

    def link_scores(self, run: Run, batch, num_dst: int) -> Tensor:
        dst, B = batch[self.dst_table], batch[self.src_table].batch_size
        pair, seed = run()
        return self.scores(pair, seed, dst.tok_id[:B], dst.tok_mask[:B])
