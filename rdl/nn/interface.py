"""What training asks of a model, beyond ``forward``: two small interfaces, declared by the
model class. A new model is a module that subclasses one of them, and a YAML in
``conf/model/`` naming it (``_target_``); nothing else in rdl needs to know it.

Every model is a plain ``nn.Module`` built with the data's constructor arguments
(:meth:`RelDataModule.model_kwargs <rdl.training.datamodule.RelDataModule.model_kwargs>`:
``metadata``, ``col_names``, ``col_stats``, ``time_types``, and for a node model
``entity_table``, ``out_channels``, ``seed_features`` and, to a model whose constructor
names it, ``num_entities`` (rows of the entity table), for a link model ``src_table``,
``dst_table`` and ``num_dst_nodes``) and the YAML's own, with ``time_types`` (the node
types whose times it encodes) and ``reset_parameters()``. Its ``forward`` takes a batch's
inputs (:meth:`TaskModule.inputs <rdl.training.module.TaskModule.inputs>`).

Which interface it subclasses says which family of tasks it trains on
(:func:`rdl.families.model_family`): :class:`NodePredictor` (one output per seed) or
:class:`LinkPredictor` (a ranking of the ``dst_table`` rows).

Its YAML (``conf/model/<name>.yaml``) must set ``channels`` (its width, an integer >= 1) and
``num_layers`` (its message-passing or attention layers): rdl checks both before any data
is read, and samples one hop of ``data.num_neighbors`` per layer
(:func:`rdl.settings.check_settings`, :func:`rdl.api.data_settings`).

Class attributes say what the model needs:

- ``min_layers``: the fewest ``num_layers`` it trains with;
- ``takes_tokens``: it takes token sets (:class:`~rdl.graph.tokens.TokenSet`) instead of
  edges, and samples every hop of ``data.num_neighbors``; it has ``budgets``.
"""
from __future__ import annotations

from typing import Callable, ClassVar

import torch
from torch import Tensor

class Run:
    """The model's forward over one batch: ``run(*extra)``, ``extra`` appended to the
    batch's inputs; ``run.spare(node_type)``: rows of that type the model may pass as
    throwaway inputs (the batch's pad rows; none in a batch with none, an eager run's)."""

    def __init__(self, forward: Callable[..., object], spare: Callable[[str], Tensor]):
        self.forward, self.spare = forward, spare

    def __call__(self, *extra):
        return self.forward(*extra)


def listwise_loss(scores: Tensor, pos: Tensor) -> Tensor:
    """Softmax cross-entropy of each true row against all rows: ``scores [B, N]``,
    ``pos [B, L]`` true rows padded with -1; averaged over the true rows."""
    valid = pos >= 0
    logp = scores.log_softmax(-1).gather(1, pos.clamp(min=0))
    return -(logp * valid).sum() / valid.sum().clamp(min=1)


class NodePredictor:
    """A node model: ``forward`` returns ``[B, out_channels]`` for the batch's ``B`` seeds.
    It has an MLP ``head`` (PyG's ``MLP``) whose output is the prediction."""

    min_layers: ClassVar[int] = 1
    takes_tokens: ClassVar[bool] = False
    #: ``forward`` takes ``seed_id [B]``, each seed's row of the entity table (a model
    #: with an embedding per entity sets it)
    takes_seed_ids: bool = False

    def start_from_base(self) -> None:
        """Zero the head's last layer: the model then outputs 0, and the module's output is
        the base it corrects (the tree prior) exactly, until training finds a correction."""
        last = self.head.lins[-1]
        torch.nn.init.zeros_(last.weight)
        torch.nn.init.zeros_(last.bias)


class LinkPredictor:
    """A link model: ranks every ``dst_table`` row for each ``src_table`` seed. The module
    calls :meth:`link_scores` to evaluate and :meth:`link_loss` to train, each with
    ``run`` (the model's forward over the batch) and ``num_dst`` (rows of ``dst_table``).
    The loader attaches each seed's true rows as ``batch[src_table].y`` (``[B, L]``, -1
    padded) and marks true ``dst_table`` nodes of the subgraph as ``batch[dst_table].dst_y``.
    A compiled run's batch holds the model's pad entries after each type's
    ``num_nodes`` real ones (``tf_index``; ``time`` and ``batch`` of a timed type;
    ``edge_index``: :class:`~rdl.training.shapes.PadNodes`): read a node type's ``batch``
    beside its ``n_id`` as ``batch[:num_nodes]``."""

    min_layers: ClassVar[int] = 1
    takes_tokens: ClassVar[bool] = False
    #: the candidates are embedded once per evaluation time (:meth:`candidate_embeddings`,
    #: over every ``dst_table`` row seeded at the split's time), into ``candidates``
    embeds_candidates: ClassVar[bool] = False
    src_table: str
    dst_table: str

    def link_scores(self, run: Run, batch, num_dst: int) -> Tensor:
        """``[B, num_dst]`` logits of every ``dst_table`` row for each seed."""
        raise NotImplementedError

    def link_loss(self, run: Run, batch, num_dst: int) -> tuple[Tensor, int]:
        """The training loss of a batch and the number of seeds it averages: by default
        :meth:`loss_of` where the model has :meth:`loss_targets`, else a softmax over all
        rows (:func:`listwise_loss`)."""
        seeds, targets = batch[self.src_table], self.loss_targets(batch)
        if targets is not None:
            return self.loss_of(run(), *targets), seeds.batch_size
        return listwise_loss(self.link_scores(run, batch, num_dst), seeds.y), seeds.batch_size

    def loss_targets(self, batch) -> tuple | None:
        """The tensors of ``batch`` that :meth:`loss_of` reads beside the model's output,
        for a loss averaged over the batch's seeds. With them a compiled run traces the
        model and its loss as one graph (:meth:`TaskModule.compile_loss
        <rdl.training.module.TaskModule.compile_loss>`); None (the default): the loss is
        :meth:`link_loss`'s, after the compiled model."""
        return None

    def loss_of(self, out, *targets: Tensor) -> Tensor:
        """The training loss of the model's output over a batch (``forward`` of its inputs,
        nothing appended) and :meth:`loss_targets`."""
        raise NotImplementedError

    def candidate_embeddings(self, run: Run, batch) -> Tensor:
        """Embeddings of the seeds of a batch seeded at ``dst_table`` rows (``run``: the
        forward over it with ``dst_table`` as the seed type)."""
        raise NotImplementedError
