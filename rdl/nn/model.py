"""The relational GNN: encode rows, add their age, pass messages. ``HeteroGraphSAGE`` passes
the messages, ``RelGNN`` is the shared backbone, ``NodeModel`` puts a head on the seed rows
for node-level tasks."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import MLP, HeteroConv, SAGEConv

from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.fused import fusable, sage_layer, stacked_layer_norm
from rdl.nn.interface import NodePredictor
from rdl.nn.names import TypeDict

#: Layer norm of each node on its own in PyG's ``MLP``: its default mode, ``"graph"``,
#: normalises over the whole batch, and one seed's prediction would depend on the others.
NODE_NORM = {"mode": "node"}


class HeteroGraphSAGE(torch.nn.Module):
    """Heterogeneous GraphSAGE: per layer, a SAGEConv per edge type, summed per destination
    node type, then layer norm and ReLU.

    Args:
        node_types, edge_types: the graph's metadata.
        channels: width of every node type.
        num_layers: message-passing layers (0 leaves the features unchanged).
        aggr: neighbourhood aggregation inside each SAGEConv (RelBench: ``sum``), or a
            list of them (``["sum", "max"]``), whose outputs are concatenated.
        fused: compute each layer with one gather, one scatter, one matmul per
            destination type and one norm over the stacked types
            (:func:`~rdl.nn.fused.sage_layer`) instead of per edge and node type: the
            same parameters and, up to float rounding, the same outputs, in a fraction of
            the kernels (for a GPU bound by launches; on a CPU it costs a few per cent of a
            compiled step). Aggregations other than sum, mean, min and max run per type.
    """

    def __init__(self, node_types: list[str], edge_types: list[tuple], channels: int,
                 num_layers: int = 2, aggr: str | list[str] = "sum", fused: bool = False):
        super().__init__()
        # A list of aggregations (``model.aggr=[sum,max]``) arrives from Hydra as a
        # ListConfig, which PyG's aggregation resolver does not take.
        aggr = aggr if isinstance(aggr, str) else list(aggr)
        self.aggr = aggr
        self.fused = bool(fused) and fusable(aggr)
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
            if self.fused:
                out = sage_layer(conv, x_dict, edges, self.aggr)
                done = dict(zip(out, stacked_layer_norm(list(out.values()),
                                                        [norms[nt] for nt in out])))
            else:
                out = conv(x_dict, edges)
                done = {nt: norms[nt](x) for nt, x in out.items()}
            # A node type that receives no edge type keeps its features.
            x_dict = {nt: done[nt].relu() if nt in done else x for nt, x in x_dict.items()}
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


class RelGNN(torch.nn.Module):
    """RelBench's backbone: per-table ResNet encoders, a relative-time encoding and
    heterogeneous GraphSAGE; returns the features of every node of the batch.

    Args:
        metadata: ``(node_types, edge_types)`` of the graph.
        col_names, col_stats: per node type, from the materialised TensorFrames.
        time_types: the node types that have a time.
        channels: width (RelBench: 128).
        num_layers: message-passing layers (RelBench: 2; 0 keeps the row encodings).
        encoder_layers: ResNet blocks of each table encoder.
        aggr: SAGEConv aggregation.
        fused: message passing and the table encoders' first blocks in fewer, larger ops
            (:class:`HeteroGraphSAGE`, :class:`~rdl.nn.encoder.HeteroEncoder`).
        stacked_encoders: the table encoders' later blocks as batched matmuls over all
            tables, their parameters held stacked (:class:`~rdl.nn.encoder.HeteroEncoder`;
            opt-in: padding's arithmetic; a number: rows per chunk, each table padded to
            whole chunks only).
        id_table: identity awareness (ID-GNN): the seed nodes of this type, the first
            ``len(seed_time)`` nodes of it, get a learned vector added before message passing.
    """

    def __init__(self, metadata: tuple, col_names: dict, col_stats: dict, time_types: list[str],
                 channels: int = 128, num_layers: int = 2, encoder_layers: int = 4,
                 aggr: str = "sum", id_table: str | None = None, fused: bool = False,
                 stacked_encoders: bool | int = False):
        super().__init__()
        node_types, edge_types = metadata
        self.time_types = list(time_types)
        self.id_table = id_table
        self.encoder = HeteroEncoder(channels, col_names, col_stats, num_layers=encoder_layers,
                                     fused=fused, stacked=stacked_encoders)
        self.time_encoder = RelativeTimeEncoder(time_types, channels)
        self.gnn = HeteroGraphSAGE(node_types, edge_types, channels, num_layers, aggr, fused)
        self.id_emb = torch.nn.Parameter(torch.empty(channels)) if id_table else None
        self.reset_parameters()

    def reset_parameters(self):
        for m in (self.encoder, self.time_encoder, self.gnn):
            m.reset_parameters()
        if self.id_emb is not None:
            torch.nn.init.normal_(self.id_emb, std=0.1)

    def forward(self, tf_dict: dict, edge_index_dict: dict, time_dict: dict,
                batch_dict: dict, seed_time: Tensor, row_dict: dict | None = None,
                out_types: tuple[str, ...] | None = None,
                seed_add: tuple[str, Tensor] | None = None,
                stack_sizes: tuple[int, ...] | None = None) -> dict[str, Tensor]:
        """Inputs: node type -> TensorFrame of its rows; edge type -> ``[2, E]``; timed
        node type -> time ``[N_t]`` (seconds) and seed index ``[N_t]``; ``seed_time [B]``;
        node type -> each node's row in its TensorFrame ``[N_t]`` (default: node i is row
        i); ``seed_add``: ``(node type, [B, channels])`` added to the encodings of the
        seed nodes of that type before message passing; ``stack_sizes``: the stacked
        encoders' padded sizes (:meth:`HeteroEncoder.stack_sizes
        <rdl.nn.encoder.HeteroEncoder.stack_sizes>`). Returns node type ->
        ``[N_t, channels]``, final for ``out_types`` (default: all; see
        :class:`HeteroGraphSAGE`)."""
        x_dict = self.encoder(tf_dict, row_dict, stack_sizes)
        for nt, rel in self.time_encoder(seed_time, time_dict, batch_dict).items():
            x_dict[nt] = x_dict[nt] + rel
        if self.id_emb is not None:
            x = x_dict[self.id_table]
            is_seed = torch.arange(x.size(0), device=x.device) < seed_time.size(0)
            x_dict[self.id_table] = x + is_seed.unsqueeze(-1) * self.id_emb
        if seed_add is not None:
            nt, add = seed_add
            x = x_dict[nt]
            x_dict[nt] = x + F.pad(add, (0, 0, 0, x.size(0) - add.size(0)))
        return self.gnn(x_dict, edge_index_dict, out_types)


class NodeModel(NodePredictor, torch.nn.Module):
    """Node-level prediction: :class:`RelGNN` and an MLP head on the seed nodes.

    Args:
        entity_table: the seed node type.
        out_channels: 1 for binary classification and regression, C for C classes.
        head_layers: MLP layers of the head.
        seed_features: width ``F`` of each seed's feature vector (0: none); an MLP maps it
            to ``channels`` and adds it to the seed's encoding before message passing
            (see :mod:`~rdl.features.seed`).
        seed_layers: layers of that MLP.
        entity_embeddings: a learned vector per row of ``entity_table`` (``[num_entities,
            channels]``, zero at the start), added to the seed's encoding before message
            passing: what the model learns of a recurring entity (a customer seen in many
            training weeks) beyond its features. An entity no training seed was keeps
            zero, its features alone. Opt-in: rows x channels parameters, with Adam's two
            moments three times that in memory.
        num_entities: rows of ``entity_table`` (from the data).
        **kwargs: the :class:`RelGNN` arguments (``num_layers=0``: no message passing, the
            entity-features-only baseline).
    """

    min_layers = 0

    def __init__(self, entity_table: str, out_channels: int = 1, head_layers: int = 1,
                 channels: int = 128, seed_features: int = 0, seed_layers: int = 2,
                 entity_embeddings: bool = False, num_entities: int = 0, **kwargs):
        super().__init__()
        if entity_embeddings and num_entities < 1:
            raise ValueError("NodeModel(entity_embeddings=True) needs num_entities >= 1, the "
                             "rows of the entity table")
        self.entity_table = entity_table
        self.takes_seed_ids = bool(entity_embeddings)
        self.entity_emb = (torch.nn.Embedding(num_entities, channels)
                           if entity_embeddings else None)
        if self.entity_emb is not None:
            torch.nn.init.zeros_(self.entity_emb.weight)
        self.gnn = RelGNN(channels=channels, **kwargs)
        self.head = MLP(channels, out_channels=out_channels, num_layers=head_layers,
                        norm="layer_norm", norm_kwargs=NODE_NORM)
        self.seed_encoder = MLP(in_channels=seed_features, hidden_channels=channels,
                                out_channels=channels, num_layers=seed_layers,
                                norm="layer_norm", norm_kwargs=NODE_NORM
                                ) if seed_features else None

    @property
    def time_types(self) -> list[str]:
        return self.gnn.time_types

    def reset_parameters(self):
        self.gnn.reset_parameters()
        self.head.reset_parameters()
        if self.seed_encoder is not None:
            self.seed_encoder.reset_parameters()
        if self.entity_emb is not None:
            torch.nn.init.zeros_(self.entity_emb.weight)

    def forward(self, tf_dict: dict, edge_index_dict: dict, time_dict: dict,
                batch_dict: dict, seed_time: Tensor, row_dict: dict | None = None,
                seed_x: Tensor | None = None, seed_id: Tensor | None = None,
                stack_sizes: tuple[int, ...] | None = None) -> Tensor:
        """Returns ``[B, out_channels]`` for the ``B = len(seed_time)`` seed nodes, which
        come first among the ``entity_table`` nodes (inputs: see :class:`RelGNN`;
        ``seed_x [B, seed_features]``: required if ``seed_features`` is set; ``seed_id
        [B]``, each seed's row of ``entity_table``: required with ``entity_embeddings``)."""
        add = None
        if self.seed_encoder is not None:
            if seed_x is None:
                raise ValueError("NodeModel(seed_features=...) needs each seed's seed_x")
            add = self.seed_encoder(seed_x)
        if self.entity_emb is not None:
            if seed_id is None:
                raise ValueError("NodeModel(entity_embeddings=True) needs each seed's seed_id")
            emb = self.entity_emb(seed_id)
            add = emb if add is None else add + emb
        seed_add = None if add is None else (self.entity_table, add)
        x_dict = self.gnn(tf_dict, edge_index_dict, time_dict, batch_dict, seed_time, row_dict,
                          out_types=(self.entity_table,), seed_add=seed_add,
                          stack_sizes=stack_sizes)
        return self.head(x_dict[self.entity_table][: seed_time.size(0)])
