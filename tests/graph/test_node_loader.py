"""rdl.graph.TemporalSampler inside PyG's NodeLoader: batches, worker processes, random streams."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.loader import NodeLoader
from torch_geometric.sampler import NodeSamplerInput

from rdl.graph import TemporalSampler
# _one_thread: the autouse fixture, imported to apply here
from tests.graph.sampling import (  # noqa: F401
    CUDA_ONLY, make_seeds, _one_thread, random_graph, run_sampler, star_graph, workers_closed)


# --------------------------------------------------------------------------- #
# NodeLoader integration
# --------------------------------------------------------------------------- #
def check_loader_batch(batch, d):
    batch = batch.to("cpu")
    ut = "user"
    bs = batch[ut].batch_size
    assert batch[ut].input_id.numel() == bs == batch[ut].seed_time.numel()
    assert set(batch.node_types) == set(d.node_types)
    assert set(batch.edge_types) == set(d.edge_types)
    for t in d.node_types:
        # Node features sliced by n_id.
        assert torch.equal(batch[t].x.view(-1).long(), batch[t].n_id)
        assert batch[t].batch.numel() == batch[t].n_id.numel()
        if t in ("event", "review") and batch[t].n_id.numel() > 0:
            st_ = batch[ut].seed_time[batch[t].batch]
            assert (d[t].time[batch[t].n_id] <= st_).all()
    for et in d.edge_types:
        src, _, dst = et
        ei = batch[et].edge_index
        assert ei.size(0) == 2
        # Edge features sliced by e_id (ids into the original edge_index).
        assert torch.equal(batch[et].edge_attr.view(-1).long(), batch[et].e_id)
        g = d[et].edge_index[:, batch[et].e_id]
        assert torch.equal(batch[src].n_id[ei[0]], g[0])
        assert torch.equal(batch[dst].n_id[ei[1]], g[1])
        assert torch.equal(batch[src].batch[ei[0]], batch[dst].batch[ei[1]])
    return batch


@pytest.mark.parametrize("num_workers,device", [
    (0, "cpu"),
    (2, "cpu"),
    pytest.param(0, "cuda", marks=CUDA_ONLY),
])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_node_loader(num_workers, device, strategy):
    d = random_graph(11)
    n = d["user"].num_nodes
    rng = np.random.default_rng(0)
    ids = torch.from_numpy(rng.integers(0, n, 40)).long()
    times = torch.from_numpy(rng.integers(-1, 10, 40)).long()
    s = TemporalSampler(d, [3, 2], strategy=strategy, random_seed=0, device=device)
    kw = dict(num_workers=num_workers)
    if num_workers:
        kw["persistent_workers"] = True
    loader = NodeLoader(d, node_sampler=s, input_nodes=("user", ids), input_time=times,
                        batch_size=7, shuffle=True, **kw)
    with workers_closed(loader):
        for _epoch in range(2):
            seen = []
            for batch in loader:
                batch = check_loader_batch(batch, d)
                bs = batch["user"].batch_size
                iid = batch["user"].input_id
                assert torch.equal(batch["user"].n_id[:bs], ids[iid])
                assert torch.equal(batch["user"].seed_time, times[iid])
                seen += iid.tolist()
            assert sorted(seen) == list(range(40))


def test_workers_draw_different_streams():
    """Workers re-seed their generator: two workers must not repeat each other."""
    d = star_graph(200)
    ids = torch.zeros(64, dtype=torch.long)
    times = torch.full((64,), 150, dtype=torch.long)
    s = TemporalSampler(d, [5], random_seed=0)
    loader = NodeLoader(d, node_sampler=s, input_nodes=("customer", ids), input_time=times,
                        batch_size=32, shuffle=False, num_workers=2, persistent_workers=True)
    with workers_closed(loader):
        batches = [b["transactions"].n_id.tolist() for b in loader]
    assert len(batches) == 2 and batches[0] != batches[1]


def test_with_random_seed_shares_the_index_and_repeats():
    d = random_graph(3)
    seeds, times = make_seeds(d, np.random.default_rng(0), "user", 50)
    base = TemporalSampler(d, [2, 2, 2])
    a, b = base.with_random_seed(7), base.with_random_seed(7)
    assert a._colptr is base._colptr  # no second index
    out_a, out_b = run_sampler(a, "user", seeds, times), run_sampler(b, "user", seeds, times)
    assert all(torch.equal(out_a.node[t], out_b.node[t]) for t in out_a.node)


def test_rng_per_batch_makes_a_batch_sample_depend_on_its_seeds_alone():
    d = star_graph(200)
    s = TemporalSampler(d, [5], random_seed=0, rng_per_batch=True)

    def sample(ids):
        ids = torch.tensor(ids)
        out = s.sample_from_nodes(NodeSamplerInput(
            input_id=ids, node=torch.zeros(len(ids), dtype=torch.long),
            time=torch.full((len(ids),), 150), input_type="customer"))
        return out.node["transactions"].tolist()

    first = sample([0, 1, 2, 3])
    sample([7, 8])  # another batch in between changes nothing
    assert sample([0, 1, 2, 3]) == first
    assert sample([3, 2, 1, 0]) != first and sample([0, 1, 2, 4]) != first
    assert TemporalSampler(d, [5], random_seed=1, rng_per_batch=True).sample_from_nodes(
        NodeSamplerInput(input_id=torch.tensor([0, 1, 2, 3]), node=torch.zeros(4, dtype=torch.long),
                         time=torch.full((4,), 150), input_type="customer")
    ).node["transactions"].tolist() != first


def test_unseeded_sampler_follows_torch_manual_seed():
    d = random_graph(3)
    seeds, times = make_seeds(d, np.random.default_rng(0), "user", 50)
    outs = []
    for _ in range(2):
        torch.manual_seed(123)
        outs.append(run_sampler(TemporalSampler(d, [2, 2, 2]), "user", seeds, times))
    assert all(torch.equal(outs[0].node[t], outs[1].node[t]) for t in outs[0].node)
