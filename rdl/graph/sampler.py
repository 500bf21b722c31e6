"""Temporal neighbour sampler for heterogeneous (relational) graphs.

``TemporalSampler`` is a vectorised-torch replacement for PyG's
``NeighborSampler(disjoint=True, temporal_strategy=..., time_attr=...)``
(which needs ``pyg-lib``).  It plugs into ``torch_geometric.loader.NodeLoader``
(``sample_from_nodes``) and ``torch_geometric.loader.LinkLoader``
(``sample_from_edges``) and returns ordinary ``HeteroSamplerOutput`` objects.

Semantics (those of pyg-lib's ``hetero_neighbor_sample`` in disjoint temporal
mode, with the decisions below made explicit):

* Disjoint subgraphs: every seed gets its own subgraph.  Within one seed's
  subgraph a global node appears at most once: nodes are de-duplicated by the
  pair ``(seed index, global node id)``.  A node reached again (in the same or
  a later hop, through the same or another edge type) only adds the edge.
  ``batch[node_type]`` holds the seed index (``0..B-1``) of every node (link
  sampling: see below).
* Node order per type: the seeds first (input type only, in input order), then
  the nodes added by hop 1, hop 2, ... (``num_sampled_nodes[type][h]`` of
  them for hop ``h``, entry 0 being the seed count).  Within one hop and one
  edge type, new nodes are ordered by ``(seed index, global id)``; when several
  edge types add nodes of the same type in the same hop, they follow the order
  of ``data.edge_types``.
* Hop ``h`` expands every node added at hop ``h-1`` (the seeds for ``h=1``):
  for every edge type ``(src, rel, dst)`` whose ``dst`` is that node's type, up
  to ``num_neighbors[edge_type][h-1]`` incoming edges are sampled without
  replacement.  ``-1`` takes every eligible edge, ``0`` none.
* Time filter: a neighbour of a *timed* node type (one that has
  ``data[type][time_attr]``) is eligible iff ``time <= seed_time``
  (``strict=False``, the pyg-lib rule) or ``time < seed_time``
  (``strict=True``; node types listed in ``inclusive`` keep ``<=``: a label
  history row's time is when its window closed, so it is known at that very
  time).  Neighbours of untimed node types are always eligible.
  Seed times come from ``NodeSamplerInput.time``; if it is ``None`` the seeds'
  own ``time_attr`` is used, and if the input type has no time either, no
  filter is applied.
* ``"uniform"``: a uniformly random subset of ``min(k, #eligible)`` eligible
  edges.  ``"last"``: the ``min(k, #eligible)`` most recent eligible edges; ties
  in time are broken by the original edge id (larger edge id = more recent),
  i.e. edges are ranked by ``(src time, edge id)``.  For an untimed source type
  ``"last"`` takes the ``k`` largest edge ids.  ``"mix"``: the ``k // 2`` most
  recent (as ``"last"``) and a uniform subset of ``k - k // 2`` of the older
  eligible edges: recent activity seen in full, and a sample of the long past.
* Output tensors live on the sampler ``device``; ``edge`` holds ids into the
  original ``edge_index`` (so ``edge_permutation`` is ``None``).  Every node
  type and edge type of the graph is always present in the output dicts (empty
  tensors when nothing was sampled), so the keys never change across batches.
  ``metadata = (input_id, seed_time)`` as in PyG, moved to ``device``
  (``seed_time`` is ``None`` when the loader gave no input time).
* Seed times are compared with each node type's time (int64 seconds in rdl);
  float node times work too, and a float seed time against integer node times
  means ``time <= floor(seed)`` (``time < ceil(seed)`` when strict).
* Several seed types (link sampling): the seeds of all types are numbered
  consecutively in order (pyg-lib's ``batch_idx``); a seed type without a given
  time uses its own node time, or no filter if it has none.

Link sampling (``sample_from_edges``) is described in :mod:`rdl.graph.link_sampling`.
The class is assembled from three mixins, one file each: :mod:`rdl.graph.temporal_index`
(the time-sorted CSC index and the time rule), :mod:`rdl.graph.node_sampling` (the
disjoint hop expansion behind ``sample_from_nodes``) and :mod:`rdl.graph.link_sampling`
(``sample_from_edges`` and its negatives).
"""
from __future__ import annotations

import copy
import os
from typing import Dict, List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.sampler import BaseSampler
from torch_geometric.sampler.base import NumNeighbors
from torch_geometric.typing import EdgeType, NodeType

from rdl.graph.link_sampling import LinkSampling
from rdl.graph.node_sampling import NodeSampling
from rdl.graph.temporal_index import TemporalIndex

__all__ = ["TemporalSampler"]

_STRATEGIES = ("uniform", "last", "mix")


def _parse_num_neighbors(
    num_neighbors, edge_types: List[EdgeType]
) -> Tuple[Dict[EdgeType, List[int]], int]:
    if isinstance(num_neighbors, NumNeighbors):
        num_neighbors = num_neighbors.get_values(edge_types)
    if isinstance(num_neighbors, (list, tuple)):
        values = [int(v) for v in num_neighbors]
        out = {et: list(values) for et in edge_types}
    elif isinstance(num_neighbors, dict):
        known = set(edge_types)
        unknown = [k for k in num_neighbors if tuple(k) not in known]
        if unknown:
            raise ValueError(f"num_neighbors names edge types not in the graph: {unknown}")
        given = {tuple(k): [int(x) for x in v] for k, v in num_neighbors.items()}
        missing = [et for et in edge_types if et not in given]
        if missing:
            raise ValueError(f"num_neighbors lacks edge types {missing}")
        out = {et: given[et] for et in edge_types}
    else:
        raise TypeError(f"num_neighbors must be a list or a dict (got {type(num_neighbors)})")
    hops = {len(v) for v in out.values()}
    if len(hops) > 1:
        raise ValueError("num_neighbors must give the same number of hops for every edge type")
    num_hops = hops.pop() if hops else 0
    for et, v in out.items():
        if any(x < -1 for x in v):
            raise ValueError(f"num_neighbors[{et}] has values below -1: {v}")
    return out, num_hops


class TemporalSampler(LinkSampling, NodeSampling, TemporalIndex, BaseSampler):
    r"""Disjoint temporal neighbour sampler over a :class:`HeteroData` graph.

    Args:
        data: the graph; ``data[t][time_attr]`` (int64 seconds) for timed node
            types, ``data[et].edge_index`` for every edge type.
        num_neighbors: fan-out per hop, for every edge type (list) or per edge
            type (dict of lists, all the same length).  ``-1``: all eligible.
        strategy: ``"uniform"``, ``"last"`` or ``"mix"``.
        time_attr: name of the node-level time attribute.
        strict: eligible iff ``time < seed_time`` instead of ``<=``.
        inclusive: node types eligible iff ``time <= seed_time`` even when strict.
        device: where the CSC index lives and sampling runs (CPU or CUDA); the random
            numbers are drawn on the host whatever the device, so that a sampler on a GPU
            samples exactly what the CPU sampler samples (:mod:`rdl.graph.random_draws`).
        random_seed: the seed of the sampler's own :class:`torch.Generator` (a random
            number's; the seeds of a batch are its input nodes).
        rng_per_batch: re-seed that generator for each batch from ``random_seed`` and the
            batch's input ids.
        index_file: a file that keeps the graph's CSC index between runs
            (:mod:`rdl.graph.temporal_index`): read, mapped, where it holds this graph's,
            else written after the build. Give each graph its own (rdl: the graph cache
            entry's, :func:`rdl.graph.store.index_file`).

    ``sample_from_nodes`` serves ``NodeLoader``, ``sample_from_edges``
    ``LinkLoader`` (with ``neg_sampling`` None, binary or triplet); see the
    module docstrings (here and :mod:`rdl.graph.link_sampling`) for the exact
    semantics.

    The sampler draws one random stream, from ``random_seed`` or, without one, from
    torch's global RNG. In DataLoader worker processes the generator is
    re-seeded once per worker from ``(random_seed, worker_info.seed)`` so that workers
    draw different streams. With ``rng_per_batch`` (and a ``random_seed``), each
    batch instead draws from a generator seeded by it and the batch's
    input ids (:meth:`reseed_for`): a batch's sample then depends on nothing
    else, not on the batches before it, the worker that samples it or the pass
    over the data. rdl's loaders use it: an evaluation pass repeats exactly,
    and a run resumed mid-epoch draws what the uninterrupted run drew.
    With ``device="cuda"`` use ``num_workers=0`` (CUDA does not survive a fork);
    CPU samplers work with any number of workers.

    CPU note: the ops are many and mostly small, so intra-op threading helps
    little; on a busy machine ``torch.set_num_threads(1)`` (what DataLoader
    workers use) avoids OpenMP stalls.
    """

    def __init__(
        self,
        data: HeteroData,
        num_neighbors: Union[List[int], Dict[EdgeType, List[int]]],
        strategy: str = "uniform",
        time_attr: str = "time",
        strict: bool = False,
        inclusive: tuple = (),
        device: Union[str, torch.device, None] = None,
        random_seed: Optional[int] = None,
        rng_per_batch: bool = False,
        index_file: Optional[str] = None,
    ):
        if not isinstance(data, HeteroData):
            raise TypeError("TemporalSampler expects a HeteroData graph")
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {_STRATEGIES} (got {strategy!r})")
        self.strategy = strategy
        self.time_attr = time_attr
        self.strict = bool(strict)
        self.inclusive = frozenset(inclusive)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.random_seed, self.rng_per_batch = random_seed, rng_per_batch

        self.node_types, self.edge_types = data.metadata()
        self.node_types = list(self.node_types)
        self.edge_types = [tuple(et) for et in self.edge_types]
        self.num_neighbors, self.num_hops = _parse_num_neighbors(num_neighbors, self.edge_types)
        self.num_nodes: Dict[NodeType, int] = {t: int(data[t].num_nodes or 0) for t in self.node_types}

        self._build_index(data, time_attr, index_file)

        self._generator: Optional[torch.Generator] = None
        self._worker_key = None
        # Built on first use by negative sampling: sorted time keys, weight CDFs.
        self._neg_cache: Dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ #
    # Pickling / workers
    # ------------------------------------------------------------------ #
    def __getstate__(self):
        state = self.__dict__.copy()
        gen = state.pop("_generator")
        state["_gen_state"] = gen.get_state() if gen is not None else None
        return state

    def __setstate__(self, state):
        gen_state = state.pop("_gen_state", None)
        self.__dict__.update(state)
        self._generator = None
        if gen_state is not None:
            self._generator = torch.Generator()  # on the host, whatever the device
            self._generator.set_state(gen_state)

    def _get_generator(self) -> torch.Generator:
        info = torch.utils.data.get_worker_info()
        if info is not None:
            key = (os.getpid(), info.id, info.seed)
            if self._worker_key != key:
                base = 0 if self.random_seed is None else int(self.random_seed)
                mixed = (base * 0x9E3779B97F4A7C15 + info.seed * 0xBF58476D1CE4E5B9 + 1) % (2**63)
                gen = torch.Generator()  # on the host: see random_draws
                gen.manual_seed(mixed)
                self._generator = gen
                self._worker_key = key
            return self._generator
        if self._generator is None:
            # On the host whatever the device: a sampler on a GPU draws the CPU sampler's
            # random numbers (:mod:`rdl.graph.random_draws`).
            gen = torch.Generator()
            # Unseeded: draw the seed from torch's global RNG, so that
            # ``pl.seed_everything`` / ``torch.manual_seed`` make runs repeatable.
            seed = (self.random_seed if self.random_seed is not None
                    else torch.randint(2**62, (1,)).item())
            gen.manual_seed(int(seed))
            self._generator = gen
        return self._generator

    def reseed_for(self, input_id: Optional[Tensor]) -> None:
        """With :attr:`rng_per_batch`, seeds the generator from :attr:`random_seed` and a
        batch's ``input_id`` (their values and order)."""
        if (not self.rng_per_batch or self.random_seed is None or input_id is None
                or input_id.numel() == 0):
            return
        ids = input_id.detach().to("cpu", torch.int64).view(-1)
        # A position-weighted sum of the ids, wrapping in int64: batches of other ids, or
        # of the same ids in another order, get other seeds.
        pos = torch.arange(1, 2 * ids.numel(), 2, dtype=torch.int64)
        h = int(((ids + 0x632BE59BD9B4E019) * pos * -0x61C8864680B583EB).sum())
        self._get_generator().manual_seed(
            (int(self.random_seed) * 0x9E3779B97F4A7C15 + h + ids.numel()) % (2**63))

    def with_random_seed(self, random_seed: Optional[int]) -> "TemporalSampler":
        """A sampler that shares this one's index but draws from its own random stream."""
        other = copy.copy(self)
        other.random_seed, other._generator, other._worker_key = random_seed, None, None
        return other

    @property
    def edge_permutation(self):
        return None  # `edge` already holds ids into the original edge_index

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(strategy={self.strategy!r}, hops={self.num_hops}, "
                f"strict={self.strict}, device={self.device})")
