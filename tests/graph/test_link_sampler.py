"""rdl.graph.TemporalSampler's link sampling (sample_from_edges, PyG's LinkLoader) against
PyG's own edge_sample and a brute-force reference; negatives."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch_geometric.data import HeteroData
from torch_geometric.loader import LinkLoader
from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling
from torch_geometric.sampler.neighbor_sampler import edge_sample

from rdl.graph import TemporalSampler
# _one_thread: the autouse fixture, imported to apply here
from tests.graph.sampling import (  # noqa: F401
    chi2_critical, chi2_stat, CUDA_ONLY, DEVICES, hop_of, hyp, in_edges, node_time,
    _one_thread, random_graph, reference, star_graph, TIME_SCALE, to_time, workers_closed)


# --------------------------------------------------------------------------- #
# Link sampling (sample_from_edges / LinkLoader)
# --------------------------------------------------------------------------- #
# Seed-link types of the random graph: distinct untimed endpoints (not an edge
# type of the graph, as for a link-prediction task), a timed dst (negatives
# are time-filtered) and one node type at both ends (an edge type of the graph).
LINK_TYPES = [("user", "buys", "item"), ("user", "visits", "event"), ("user", "follows", "user")]
NEG_MODES = [None, ("binary", 1), ("binary", 1.5), ("binary", 3), ("triplet", 1), ("triplet", 2)]


def neg_of(mode):
    return None if mode is None else NegativeSampling(*mode)


def link_graph(graph_seed: int, time_mode: str = "int") -> HeteroData:
    """random_graph with at least one event (a link type ends there)."""
    for s in range(graph_seed, graph_seed + 100):
        d = random_graph(s, time_mode)
        if d["event"].num_nodes > 0:
            return d
    raise AssertionError("no graph with events")


def random_links(d, link_type, rng, n, time_mode="int"):
    src_t, _, dst_t = link_type
    src = torch.from_numpy(rng.integers(0, d[src_t].num_nodes, n)).long()
    dst = torch.from_numpy(rng.integers(0, d[dst_t].num_nodes, n)).long()
    time = to_time(rng.integers(-1, 10, n), time_mode)
    return torch.stack([src, dst]), time


def edge_input(link_type, eli, time=None, label=None, input_id=None):
    if input_id is None:
        input_id = torch.arange(eli.size(1))
    return EdgeSamplerInput(input_id=input_id, row=eli[0], col=eli[1], label=label, time=time,
                            input_type=link_type)


def link_seeds(out, link_type, num_pos, neg):
    """(src seeds, dst seeds) of a sample_from_edges output, negatives included."""
    src_t, _, dst_t = link_type
    n_neg = 0 if neg is None else math.ceil(num_pos * neg.amount)
    n_src = num_pos if neg is None or neg.is_triplet() else num_pos + n_neg
    n_dst = num_pos + n_neg
    if src_t != dst_t:
        assert out.num_sampled_nodes[src_t][0] == n_src and out.num_sampled_nodes[dst_t][0] == n_dst
        return out.node[src_t][:n_src].cpu(), out.node[dst_t][:n_dst].cpu()
    assert out.num_sampled_nodes[src_t][0] == n_src + n_dst
    seeds = out.node[src_t][:n_src + n_dst].cpu()
    return seeds[:n_src], seeds[n_src:]


class ReplayNegatives(NegativeSampling):
    """Hands PyG's ``edge_sample`` the negatives our sampler drew."""

    def __init__(self, neg, src_neg, dst_neg):
        super().__init__(neg.mode, neg.amount)
        self.drawn = {"src": src_neg, "dst": dst_neg}

    def sample(self, num_samples, endpoint, num_nodes=None):
        out = self.drawn[endpoint]
        assert out.numel() == num_samples
        return out


def pyg_edge_sample(sampler, inputs, neg, out):
    """PyG's own ``edge_sample`` (disjoint, the path pyg-lib takes), with our
    multi-seed ``_sample`` standing in for ``pyg_lib.hetero_neighbor_sample``
    and the negatives of ``out`` replayed."""
    num_pos = inputs.row.numel()
    src, dst = link_seeds(out, inputs.input_type, num_pos, neg)
    replay = None if neg is None else ReplayNegatives(neg, src[num_pos:], dst[num_pos:])
    def sample_fn(seed_dict, seed_time_dict):
        dev = sampler.device
        seed_dict = {k: v.to(dev) for k, v in seed_dict.items()}
        if seed_time_dict is not None:
            seed_time_dict = {k: v.to(dev) for k, v in seed_time_dict.items()}
        res = sampler._sample(seed_dict, seed_time_dict)
        res.batch = {k: v.cpu() for k, v in res.batch.items()}  # PyG mods it on CPU
        return res

    # node_time=None: the replayed negatives are taken as they are.
    return edge_sample(inputs, sample_fn, dict(sampler.num_nodes), True, None, replay)


def to_cpu(x):
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, dict):
        return {k: to_cpu(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def assert_same(a, b, what):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor), what
        assert a.dtype == b.dtype and a.shape == b.shape, \
            f"{what}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
        assert torch.equal(a, b), what
    elif isinstance(a, dict):
        assert set(a) == set(b), what
        for k in a:
            assert_same(a[k], b[k], f"{what}[{k}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{what}[{i}]")
    else:
        assert a == b, what


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("link_type", LINK_TYPES)
@pytest.mark.parametrize("mode", NEG_MODES)
@pytest.mark.parametrize("labels", [False, True])
def test_link_output_matches_pyg_edge_sample(device, link_type, mode, labels):
    """Field by field what PyG's NeighborSampler(disjoint, temporal).sample_from_edges
    returns, given the same node sampling and the same negatives ('last' makes the
    node sampling deterministic)."""
    neg = neg_of(mode)
    if labels and neg is not None and neg.is_triplet():
        pytest.skip("triplet takes no labels")
    for graph_seed in range(3):
        d = link_graph(graph_seed)
        rng = np.random.default_rng(graph_seed)
        num_pos = 7
        eli, time = random_links(d, link_type, rng, num_pos)
        label = torch.from_numpy(rng.integers(1, 4, num_pos)).long() if labels else None
        inputs = edge_input(link_type, eli, time, label, input_id=torch.arange(10, 10 + num_pos))
        s = TemporalSampler(d, [2, 3], strategy="last", device=device, random_seed=graph_seed)
        ours = s.sample_from_edges(inputs, neg_sampling=neg)
        theirs = pyg_edge_sample(s, inputs, neg, ours)
        for field in ("node", "row", "col", "edge", "num_sampled_nodes", "num_sampled_edges"):
            assert_same(to_cpu(getattr(ours, field)), to_cpu(getattr(theirs, field)), field)
        assert_same(to_cpu(ours.metadata), to_cpu(theirs.metadata), "metadata")
        fractional = neg is not None and (num_pos * neg.amount) % num_pos != 0
        if not fractional:
            assert_same(to_cpu(ours.batch), to_cpu(theirs.batch), "batch")
        # Our batch always indexes the seed time of the node's subgraph (PyG's
        # does not for the dst seeds when num_neg is not a multiple of num_pos).
        assert_batch_indexes_seed(ours, link_type, num_pos, neg)
        if mode is None and label is None:
            assert ours.metadata[2] is None


def assert_batch_indexes_seed(out, link_type, num_pos, neg):
    src, dst = link_seeds(out, link_type, num_pos, neg)
    src_t, _, dst_t = link_type
    want_src = torch.arange(src.numel()) % num_pos
    want_dst = torch.arange(dst.numel()) % num_pos
    if src_t != dst_t:
        assert torch.equal(out.batch[src_t][:src.numel()].cpu(), want_src)
        assert torch.equal(out.batch[dst_t][:dst.numel()].cpu(), want_dst)
    else:
        assert torch.equal(out.batch[src_t][:src.numel() + dst.numel()].cpu(),
                           torch.cat([want_src, want_dst]))


def link_reference(d, out, link_type, eli, time, neg, nn, strict, adj):
    """Brute force over every endpoint seed: Counters of (type, node, hop, batch)
    and (edge type, src, dst, eid, batch); `batch` = index of the positive link."""
    num_pos = eli.size(1)
    src, dst = link_seeds(out, link_type, num_pos, neg)
    nodes, edges = Counter(), Counter()
    for seed_type, seeds in ((link_type[0], src), (link_type[-1], dst)):
        for i, v in enumerate(seeds.tolist()):
            b = i % num_pos
            if time is not None:
                t = time[b].item()
            else:  # no link time: a seed of a timed type uses its own time
                t = node_time(d, seed_type)[v] if "time" in d[seed_type] else None
            ns, es = reference(d, seed_type, v, t, nn, strict, "last", adj)
            nodes.update((ty, n, h, b) for ty, n, h in ns)
            edges.update((et, s_, t_, e, b) for et, s_, t_, e in es)
    return nodes, edges


def decode_multiset(out, d):
    node = {t: v.cpu().tolist() for t, v in out.node.items()}
    batch = {t: v.cpu().tolist() for t, v in out.batch.items()}
    nodes = Counter()
    for t in d.node_types:
        for v, b, h in zip(node[t], batch[t], hop_of(out.num_sampled_nodes[t])):
            nodes[(t, v, h, b)] += 1
    edges = Counter()
    for et in d.edge_types:
        src, _, dst = et
        for r, c, e in zip(out.row[et].tolist(), out.col[et].tolist(), out.edge[et].tolist()):
            assert batch[src][r] == batch[dst][c]
            edges[(et, node[src][r], node[dst][c], e, batch[dst][c])] += 1
    return nodes, edges


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True])
@given(graph_seed=st.integers(0, 10**6), hops=st.integers(1, 3),
       fans=st.lists(st.sampled_from([-1, 0, 1, 2, 3]), min_size=3, max_size=3),
       link_i=st.integers(0, len(LINK_TYPES) - 1), mode_i=st.integers(0, len(NEG_MODES) - 1),
       time_mode=st.sampled_from(sorted(TIME_SCALE)), timed=st.booleans())
@hyp
def test_link_last_equals_bruteforce(device, strict, graph_seed, hops, fans, link_i, mode_i,
                                     time_mode, timed):
    """Every endpoint (negatives included) gets exactly the subgraph a node seed
    at the link's time gets; edge_label_index points at the seed links."""
    d = link_graph(graph_seed, time_mode)
    adj = in_edges(d)
    rng = np.random.default_rng(graph_seed + 5)
    link_type, neg = LINK_TYPES[link_i], neg_of(NEG_MODES[mode_i])
    nn = {et: [fans[(i + h) % 3] for h in range(hops)] for i, et in enumerate(d.edge_types)}
    num_pos = int(rng.integers(1, 9))
    eli, time = random_links(d, link_type, rng, num_pos, time_mode)
    if not timed:
        time = None
    s = TemporalSampler(d, nn, strategy="last", strict=strict, device=device, random_seed=graph_seed)
    out = s.sample_from_edges(edge_input(link_type, eli, time), neg_sampling=neg)
    assert decode_multiset(out, d) == link_reference(d, out, link_type, eli, time, neg, nn,
                                                     strict, adj)
    src, dst = link_seeds(out, link_type, num_pos, neg)
    assert torch.equal(src[:num_pos], eli[0]) and torch.equal(dst[:num_pos], eli[1])
    check_negatives(d, link_type, src[num_pos:], dst[num_pos:], time, num_pos, strict)
    src_t, _, dst_t = link_type
    meta = to_cpu(out.metadata)
    if neg is None or neg.is_binary():
        input_id, edge_label_index, edge_label, seed_time = meta
        n = src.numel()
        assert edge_label_index.shape == (2, n)
        assert torch.equal(out.node[src_t].cpu()[edge_label_index[0]], src)
        assert torch.equal(out.node[dst_t].cpu()[edge_label_index[1]], dst)
        if time is not None:
            assert torch.equal(seed_time, time.repeat(n)[:n])
    else:
        input_id, src_index, dst_pos_index, dst_neg_index, seed_time = meta
        assert torch.equal(out.node[src_t].cpu()[src_index], eli[0])
        assert torch.equal(out.node[dst_t].cpu()[dst_pos_index], eli[1])
        negs = out.node[dst_t].cpu()[dst_neg_index].view(num_pos, -1)
        assert torch.equal(negs.t().reshape(-1), dst[num_pos:])
        if time is not None:
            assert torch.equal(seed_time, time)


def check_negatives(d, link_type, src_neg, dst_neg, time, num_pos, strict):
    """Negatives in range; of a timed type, visible at their positive's time
    (or the oldest node when none is)."""
    for t, negs in ((link_type[0], src_neg), (link_type[-1], dst_neg)):
        assert ((negs >= 0) & (negs < d[t].num_nodes)).all()
        if time is None or "time" not in d[t] or negs.numel() == 0:
            continue
        nt = d[t].time
        st_ = time.repeat(negs.numel())[:negs.numel()]
        ok = nt[negs] < st_ if strict else nt[negs] <= st_
        none_visible = (nt.view(1, -1) < st_.view(-1, 1) if strict
                        else nt.view(1, -1) <= st_.view(-1, 1)).sum(1) == 0
        oldest = torch.argsort(nt, stable=True)[0]
        assert (ok | (none_visible & (negs == oldest))).all()


def check_link_batch(batch, d, link_type, neg, eli_all, time_all, label_all, strict):
    batch = batch.to("cpu")
    src_t, _, dst_t = link_type
    iid = batch[link_type].input_id
    num_pos = iid.numel()
    assert set(batch.node_types) == set(d.node_types)
    if neg is None or neg.is_binary():
        eli = batch[link_type].edge_label_index
        seed_time = batch[link_type].edge_label_time
        n = num_pos + (0 if neg is None else math.ceil(num_pos * neg.amount))
        assert eli.shape == (2, n) and seed_time.shape == (n,)
        # Positives first: the loader's links, at their time.
        assert torch.equal(batch[src_t].n_id[eli[0, :num_pos]], eli_all[0, iid])
        assert torch.equal(batch[dst_t].n_id[eli[1, :num_pos]], eli_all[1, iid])
        assert torch.equal(seed_time, time_all[iid].repeat(n)[:n])
        label = batch[link_type].edge_label if neg is not None or label_all is not None else None
        if neg is not None:
            want = (torch.ones(num_pos) if label_all is None
                    else label_all[iid] + (1 if label_all.min() == 0 else 0))
            assert label.shape == (n,) and label.dtype == want.dtype
            assert torch.equal(label[:num_pos], want) and (label[num_pos:] == 0).all()
        elif label_all is not None:
            assert torch.equal(label, label_all[iid])
    else:
        amount = int(neg.amount)
        src_index = batch[src_t].src_index
        dst_pos, dst_neg = batch[dst_t].dst_pos_index, batch[dst_t].dst_neg_index
        assert src_index.shape == dst_pos.shape == (num_pos,)
        assert dst_neg.shape == ((num_pos,) if amount == 1 else (num_pos, amount))
        assert torch.equal(batch[src_t].n_id[src_index], eli_all[0, iid])
        assert torch.equal(batch[dst_t].n_id[dst_pos], eli_all[1, iid])
        seed_time = batch[src_t].seed_time
        assert torch.equal(seed_time, time_all[iid])
        assert torch.equal(batch[dst_t].seed_time, seed_time)
        assert "edge_label_index" not in batch[link_type]
    # Every endpoint's subgraph respects its time: seed_time[batch].
    for t in d.node_types:
        b = batch[t].batch
        assert ((b >= 0) & (b < num_pos)).all()
        assert torch.equal(batch[t].x.view(-1).long(), batch[t].n_id)
        if "time" in d[t] and b.numel() > 0:
            first = batch[t].num_sampled_nodes[0]  # seeds are not filtered
            nt, st_ = d[t].time[batch[t].n_id[first:]], seed_time[b[first:]]
            assert (nt < st_).all() if strict else (nt <= st_).all()
    for et in d.edge_types:
        s_, _, t_ = et
        ei = batch[et].edge_index
        g = d[et].edge_index[:, batch[et].e_id]
        assert torch.equal(batch[s_].n_id[ei[0]], g[0]) and torch.equal(batch[t_].n_id[ei[1]], g[1])
        assert torch.equal(batch[s_].batch[ei[0]], batch[t_].batch[ei[1]])
    return iid


@pytest.mark.parametrize("num_workers,device", [
    (0, "cpu"),
    (2, "cpu"),
    pytest.param(0, "cuda", marks=CUDA_ONLY),
])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("mode", [None, ("binary", 2), ("triplet", 2)])
def test_link_loader(num_workers, device, strict, mode):
    d = link_graph(11)
    rng = np.random.default_rng(1)
    neg = neg_of(mode)
    kw = dict(num_workers=num_workers)
    if num_workers:
        kw["persistent_workers"] = True
    combos = [(lt, strategy, labeled) for lt in LINK_TYPES
              for strategy, labeled in (("uniform", False), ("last", True))]
    if num_workers:  # worker start-up is the slow part: fewer loaders
        combos = [combos[2], combos[5]]  # timed dst, uniform; one node type, last
    for link_type, strategy, labeled in combos:
        eli, time = random_links(d, link_type, rng, 30)
        label = None
        if labeled and (neg is None or neg.is_binary()):
            label = torch.from_numpy(rng.integers(0, 3, 30)).long()
        s = TemporalSampler(d, [3, 2], strategy=strategy, strict=strict, random_seed=0, device=device)
        loader = LinkLoader(d, link_sampler=s, edge_label_index=(link_type, eli),
                            edge_label=label, edge_label_time=time, neg_sampling=neg,
                            batch_size=8, shuffle=True, **kw)
        with workers_closed(loader):
            for _epoch in range(1 + (num_workers > 0)):
                seen = []
                for batch in loader:
                    seen += check_link_batch(batch, d, link_type, neg, eli, time, label,
                                             strict).tolist()
                assert sorted(seen) == list(range(30))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_negatives_uniform(device, mode):
    """Untimed dst: negatives uniform over all dst nodes (chi-square)."""
    d = star_graph(12)
    lt = ("customer", "buys", "article")
    s = TemporalSampler(d, [1], random_seed=3, device=device)
    num_pos, amount = 50, 40
    eli = torch.zeros(2, num_pos, dtype=torch.long)
    out = s.sample_from_edges(edge_input(lt, eli, torch.full((num_pos,), 100)),
                              NegativeSampling(mode, amount))
    src, dst = link_seeds(out, lt, num_pos, NegativeSampling(mode, amount))
    counts = torch.bincount(dst[num_pos:], minlength=12).tolist()
    assert chi2_stat(counts, num_pos * amount / 12) < chi2_critical(11)
    if mode == "binary":  # src negatives too, over the 2 customers
        assert chi2_stat(torch.bincount(src[num_pos:], minlength=2).tolist(),
                         num_pos * amount / 2) < chi2_critical(1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True])
def test_negatives_timed_dst(device, strict):
    """Timed dst: each negative uniform over the nodes visible at its time;
    the oldest node when none is."""
    times = [5, 1, 3, 3, 9, 7, 3, 1]  # transaction times (node ids 0..7)
    d = star_graph(8, times)
    lt = ("customer", "made", "transactions")
    s = TemporalSampler(d, [1], strict=strict, random_seed=1, device=device)
    t_arr = torch.tensor(times)
    for seed_time in (0, 1, 3, 6, 100):
        num_pos, amount = 40, 50
        eli = torch.zeros(2, num_pos, dtype=torch.long)
        neg = NegativeSampling("triplet", amount)
        out = s.sample_from_edges(edge_input(lt, eli, torch.full((num_pos,), seed_time)), neg)
        _, dst = link_seeds(out, lt, num_pos, neg)
        negs = dst[num_pos:]
        visible = (t_arr < seed_time) if strict else (t_arr <= seed_time)
        if not visible.any():
            assert (negs == 1).all()  # oldest: time 1, smallest id
            continue
        assert visible[negs].all()
        ids = visible.nonzero().view(-1)
        counts = torch.bincount(negs, minlength=8)[ids].tolist()
        if len(ids) > 1:
            assert chi2_stat(counts, negs.numel() / len(ids)) < chi2_critical(len(ids) - 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("timed", [False, True])
def test_negatives_weighted(device, timed):
    times = [0, 0, 0, 0, 5, 5]
    d = star_graph(6, times)
    lt = ("customer", "made", "transactions")
    w = torch.tensor([1.0, 0.0, 2.0, 5.0, 10.0, 1.0])
    s = TemporalSampler(d, [1], random_seed=2, device=device)
    num_pos, amount = 100, 40
    neg = NegativeSampling("triplet", amount, dst_weight=w)
    time = torch.full((num_pos,), 3 if timed else 100)
    for _ in range(2):  # second call reuses the cached CDF
        out = s.sample_from_edges(edge_input(lt, torch.zeros(2, num_pos, dtype=torch.long), time),
                                  neg)
        negs = link_seeds(out, lt, num_pos, neg)[1][num_pos:]
        p = w.clone()
        if timed:
            p[4:] = 0  # not visible at time 3
        counts = torch.bincount(negs, minlength=6)
        assert (counts[p == 0] == 0).all()
        ids = (p > 0).nonzero().view(-1)
        exp = (p[ids] / p[ids].sum() * negs.numel()).tolist()
        stat = sum((c - e) ** 2 / e for c, e in zip(counts[ids].tolist(), exp))
        assert stat < chi2_critical(len(ids) - 1)
    with pytest.raises(ValueError):
        s.sample_from_edges(edge_input(lt, torch.zeros(2, 3, dtype=torch.long), time[:3]),
                            NegativeSampling("binary", 1, dst_weight=torch.ones(5)))


@pytest.mark.parametrize("device", DEVICES)
def test_link_reproducible_and_errors(device):
    d = link_graph(4)
    rng = np.random.default_rng(0)
    lt = LINK_TYPES[0]
    eli, time = random_links(d, lt, rng, 20)
    neg = NegativeSampling("binary", 2)

    def run(seed):
        s = TemporalSampler(d, [2, 2], random_seed=seed, device=device)
        outs = [s.sample_from_edges(edge_input(lt, eli, time), neg) for _ in range(2)]
        return [(t, o.node[t].tolist()) for o in outs for t in o.node]

    assert run(5) == run(5)
    s = TemporalSampler(d, [2, 2], random_seed=0, device=device)
    with pytest.raises(ValueError):  # triplet with labels
        s.sample_from_edges(edge_input(lt, eli, time, label=torch.ones(20)),
                            NegativeSampling("triplet", 1))
    with pytest.raises(ValueError):
        s.sample_from_edges(edge_input(("user", "x", "nope"), eli, time))
    # No seed links: empty, well-formed output.
    out = s.sample_from_edges(edge_input(lt, eli[:, :0], time[:0]), NegativeSampling("triplet", 2))
    assert all(v.numel() == 0 for v in out.node.values())
    assert out.metadata[3].shape == (0, 2)
