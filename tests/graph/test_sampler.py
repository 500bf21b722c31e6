"""Tests of rdl.graph.TemporalSampler against a plain brute-force reference."""
from __future__ import annotations

import contextlib
import math
import pickle
from collections import Counter, defaultdict
from itertools import combinations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import HeteroData
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling, NodeSamplerInput
from torch_geometric.sampler.neighbor_sampler import edge_sample

from rdl.graph import TemporalSampler

#: a parameter that needs a GPU (`pytest -m cuda`, benchmarks/gpu.sh)
CUDA_ONLY = [pytest.mark.cuda,
             pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: intra-op threads only add OpenMP stalls on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


DEVICES = [
    "cpu",
    pytest.param("cuda", marks=CUDA_ONLY),
]


# --------------------------------------------------------------------------- #
# Graphs
# --------------------------------------------------------------------------- #
# Time encodings: small int64 times (offset keys), float times and int64
# times too far apart for offset keys (both use rank keys).
TIME_SCALE = {"int": 1, "float": 1, "huge": 2**58}


def to_time(values, mode: str) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(values), dtype=torch.long) * TIME_SCALE[mode]
    return t.double() if mode == "float" else t


def random_graph(seed: int, time_mode: str = "int") -> HeteroData:
    """Relational graph: untimed user/item/tag, timed event/review.

    Small time range (many duplicate times), zero-degree nodes, a multi-edge
    type, a timed->timed edge type and an isolated node type.
    """
    rng = np.random.default_rng(seed)
    n = {
        "user": int(rng.integers(1, 9)),
        "item": int(rng.integers(1, 7)),
        "event": int(rng.integers(0, 30)),
        "review": int(rng.integers(0, 15)),
        "tag": int(rng.integers(1, 4)),
    }
    d = HeteroData()
    for t, c in n.items():
        d[t].num_nodes = c
    d["event"].time = to_time(rng.integers(0, 8, n["event"]), time_mode)
    d["review"].time = to_time(rng.integers(0, 8, n["review"]), time_mode)

    def fk(child: str, parent: str, rel: str, p_null: float = 0.0):
        # Every child row points at one parent (some users/items get none).
        parents = rng.integers(0, max(n[parent], 1), n[child])
        keep = (rng.random(n[child]) >= p_null) & (n[parent] > 0)
        ch = np.arange(n[child])[keep]
        pa = parents[keep]
        d[child, f"f2p_{rel}", parent].edge_index = torch.from_numpy(np.stack([ch, pa])).long()
        d[parent, f"rev_f2p_{rel}", child].edge_index = torch.from_numpy(np.stack([pa, ch])).long()

    fk("event", "user", "user_id")
    fk("event", "item", "item_id", p_null=0.2)
    fk("review", "user", "author")
    fk("review", "event", "about", p_null=0.3)  # timed -> timed
    # Timed src, exactly one incoming edge per dst, edges not in dst order.
    ne = n["event"]
    d["event", "prev", "event"].edge_index = torch.from_numpy(
        np.stack([rng.integers(0, max(ne, 1), ne), rng.permutation(ne)])
    ).long().view(2, ne)
    m = int(rng.integers(0, 12))  # untimed multi-graph with duplicate edges
    d["user", "follows", "user"].edge_index = torch.from_numpy(
        np.stack([rng.integers(0, n["user"], m), rng.integers(0, n["user"], m)])
    ).long()
    # Edge features to check slicing by edge id.
    for et in d.edge_types:
        d[et].edge_attr = torch.arange(d[et].edge_index.size(1)).float().view(-1, 1)
    for t in d.node_types:
        d[t].x = torch.arange(n[t]).float().view(-1, 1)
    return d


def node_time(d: HeteroData, t: str):
    return d[t].time.tolist() if "time" in d[t] else None


# --------------------------------------------------------------------------- #
# Brute-force reference
# --------------------------------------------------------------------------- #
def in_edges(d: HeteroData):
    """{edge_type: {dst: [(src, eid), ...]}} in edge-id order."""
    out = {}
    for et in d.edge_types:
        ei = d[et].edge_index.tolist()
        m = defaultdict(list)
        for eid, (s, t) in enumerate(zip(*ei)):
            m[t].append((s, eid))
        out[et] = m
    return out


def eligible(d, et, dst_node, seed_time, strict, adj):
    """Eligible incoming (src, eid) of dst_node, ranked oldest -> newest by (time, eid)."""
    src = et[0]
    times = node_time(d, src)
    out = []
    for s, eid in adj[et].get(dst_node, []):
        if times is not None and seed_time is not None:
            if strict and not times[s] < seed_time:
                continue
            if not strict and not times[s] <= seed_time:
                continue
        out.append((s, eid))
    if times is not None:
        out.sort(key=lambda p: (times[p[0]], p[1]))
    else:
        out.sort(key=lambda p: p[1])
    return out


def reference(d, seed_type, seed, seed_time, num_neighbors, strict, strategy, adj):
    """BFS of one seed. Needs a deterministic choice: fan-out covers everything
    (or -1) or strategy == 'last'.

    Returns ({(type, node, hop)}, {(edge_type, src, dst, eid)}).
    """
    hops = len(next(iter(num_neighbors.values())))
    visited = {t: {} for t in d.node_types}
    visited[seed_type][seed] = 0
    frontier = {seed_type: [seed]}
    edges = set()
    for h in range(1, hops + 1):
        new = defaultdict(list)
        for et in d.edge_types:
            src, _, dst = et
            k = num_neighbors[et][h - 1]
            for v in frontier.get(dst, []):
                el = eligible(d, et, v, seed_time, strict, adj)
                if k >= 0 and len(el) > k:
                    assert strategy == "last", "reference needs a deterministic choice"
                    el = el[len(el) - k:] if k > 0 else []
                for s, eid in el:
                    edges.add((et, s, v, eid))
                    if s not in visited[src]:
                        visited[src][s] = h
                        new[src].append(s)
        frontier = new
    nodes = {(t, v, h) for t in visited for v, h in visited[t].items()}
    return nodes, edges


# --------------------------------------------------------------------------- #
# Output decoding and structural checks
# --------------------------------------------------------------------------- #
def hop_of(counts):
    out = []
    for h, c in enumerate(counts):
        out += [h] * c
    return out


def decode(out, d):
    """Per seed: ({(type, node, hop)}, {(edge_type, src, dst, eid)})."""
    per_seed = defaultdict(lambda: (set(), set()))
    node = {t: v.cpu().tolist() for t, v in out.node.items()}
    batch = {t: v.cpu().tolist() for t, v in out.batch.items()}
    hops = {t: hop_of(out.num_sampled_nodes[t]) for t in d.node_types}
    for t in d.node_types:
        for i, (v, b) in enumerate(zip(node[t], batch[t])):
            per_seed[b][0].add((t, v, hops[t][i]))
    for et in d.edge_types:
        src, _, dst = et
        for r, c, e in zip(out.row[et].tolist(), out.col[et].tolist(), out.edge[et].tolist()):
            per_seed[batch[dst][c]][1].add((et, node[src][r], node[dst][c], e))
    return per_seed


def check_structure(out, d, seed_type, seeds, seed_times, num_neighbors, strict, strategy, adj):
    """Everything that must hold for any strategy and fan-out."""
    B = len(seeds)
    hops = len(next(iter(num_neighbors.values())))
    # Keys constant: every node/edge type present, full-length hop lists.
    assert set(out.node) == set(d.node_types) == set(out.batch) == set(out.num_sampled_nodes)
    assert set(out.row) == set(d.edge_types) == set(out.col) == set(out.edge)
    assert set(out.num_sampled_edges) == set(d.edge_types)
    for t in d.node_types:
        assert len(out.num_sampled_nodes[t]) == hops + 1
        assert sum(out.num_sampled_nodes[t]) == out.node[t].numel() == out.batch[t].numel()
        assert out.node[t].dtype == torch.long and out.batch[t].dtype == torch.long
    for et in d.edge_types:
        assert len(out.num_sampled_edges[et]) == hops
        assert sum(out.num_sampled_edges[et]) == out.row[et].numel()
        assert out.row[et].numel() == out.col[et].numel() == out.edge[et].numel()
    # Seeds first, in input order.
    assert out.num_sampled_nodes[seed_type][0] == B
    assert out.node[seed_type][:B].cpu().tolist() == list(seeds)
    assert out.batch[seed_type][:B].cpu().tolist() == list(range(B))
    for t in d.node_types:
        if t != seed_type:
            assert out.num_sampled_nodes[t][0] == 0

    node = {t: v.cpu().tolist() for t, v in out.node.items()}
    batch = {t: v.cpu().tolist() for t, v in out.batch.items()}
    nhop = {t: hop_of(out.num_sampled_nodes[t]) for t in d.node_types}
    for t in d.node_types:
        # A global node appears at most once per seed.
        pairs = list(zip(batch[t], node[t]))
        assert len(set(pairs)) == len(pairs)
        assert all(0 <= b < B for b in batch[t])
        assert all(0 <= v < d[t].num_nodes for v in node[t])

    reached = {t: set() for t in d.node_types}  # (local) that are src of an edge of their hop
    per_dst = defaultdict(list)
    for et in d.edge_types:
        src, _, dst = et
        ei = d[et].edge_index
        ehop = [h + 1 for h in hop_of(out.num_sampled_edges[et])]
        times = node_time(d, src)
        for i, (r, c, e) in enumerate(zip(out.row[et].tolist(), out.col[et].tolist(),
                                          out.edge[et].tolist())):
            b = batch[dst][c]
            assert batch[src][r] == b, "edge crosses seed subgraphs"
            # The edge exists in the graph.
            assert 0 <= e < ei.size(1)
            assert ei[0, e].item() == node[src][r] and ei[1, e].item() == node[dst][c]
            # Time filter.
            st_ = seed_times[b]
            if times is not None and st_ is not None:
                if strict:
                    assert times[node[src][r]] < st_
                else:
                    assert times[node[src][r]] <= st_
            # Hop structure.
            h = ehop[i]
            assert nhop[dst][c] == h - 1
            assert nhop[src][r] <= h
            if nhop[src][r] == h:
                reached[src].add(r)
            per_dst[(et, c)].append(e)
    for t in d.node_types:
        for i, h in enumerate(nhop[t]):
            if h > 0:
                assert i in reached[t], "node added without an edge of its hop"

    # Per (edge type, dst node): distinct edges, count == min(k, #eligible).
    for et in d.edge_types:
        src, _, dst = et
        for c, v in enumerate(node[dst]):
            h = nhop[dst][c] + 1
            got = per_dst.get((et, c), [])
            assert len(set(got)) == len(got), "edge sampled twice"
            if h > hops:
                assert got == []
                continue
            k = num_neighbors[et][h - 1]
            el = eligible(d, et, v, seed_times[batch[dst][c]], strict, adj)
            assert set(got) <= {eid for _, eid in el}
            want = len(el) if k < 0 else min(k, len(el))
            assert len(got) == want
            if strategy == "last" and want > 0:
                assert set(got) == {eid for _, eid in el[len(el) - want:]}


def run_sampler(sampler, seed_type, seeds, times):
    t = None if times is None else torch.tensor(times, dtype=torch.long)
    inp = NodeSamplerInput(
        input_id=torch.arange(len(seeds)),
        node=torch.tensor(seeds, dtype=torch.long),
        time=t,
        input_type=seed_type,
    )
    return sampler.sample_from_nodes(inp)


def make_seeds(d, rng, seed_type, n, time_mode="int"):
    seeds = rng.integers(0, d[seed_type].num_nodes, n).tolist()
    # Times from before every row (-1) to after every row (9); duplicates welcome.
    times = (rng.integers(-1, 10, n) * TIME_SCALE[time_mode]).tolist()
    return seeds, times


def check_time_mode(sampler, d, time_mode):
    """int: offset keys; float: rank keys; huge: rank keys unless the span of times
    is small enough for int64 keys (all equal, or one step of 2**58 on a tiny graph)."""
    offset = "event" in sampler._time_min
    if time_mode == "huge":
        t = d["event"].time
        max_nodes = max(d[n].num_nodes for n in d.node_types) + 1
        assert offset == ((int(t.max() - t.min()) + 2) * max_nodes < 2**62)
    else:
        assert offset == (time_mode == "int")


# --------------------------------------------------------------------------- #
# Property tests on random relational graphs
# --------------------------------------------------------------------------- #
hyp = settings(max_examples=30, deadline=None, database=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True])
@given(graph_seed=st.integers(0, 10**6), fan=st.sampled_from([-1, 100]),
       hops=st.integers(1, 3), time_mode=st.sampled_from(sorted(TIME_SCALE)))
@hyp
def test_full_fanout_equals_bruteforce(device, strict, graph_seed, fan, hops, time_mode):
    d = random_graph(graph_seed, time_mode)
    adj = in_edges(d)
    rng = np.random.default_rng(graph_seed + 1)
    nn = {et: [fan] * hops for et in d.edge_types}
    seeds, times = make_seeds(d, rng, "user", int(rng.integers(1, 12)), time_mode)
    for strategy in ("uniform", "last", "mix"):
        s = TemporalSampler(d, nn, strategy=strategy, strict=strict, device=device, random_seed=0)
        if d["event"].num_nodes:
            check_time_mode(s, d, time_mode)
        out = run_sampler(s, "user", seeds, times)
        check_structure(out, d, "user", seeds, times, nn, strict, strategy, adj)
        got = decode(out, d)
        for b, (sd, tm) in enumerate(zip(seeds, times)):
            want = reference(d, "user", sd, tm, nn, strict, strategy, adj)
            assert got[b][0] == want[0], f"nodes of seed {b}"
            assert got[b][1] == want[1], f"edges of seed {b}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True])
@given(graph_seed=st.integers(0, 10**6), hops=st.integers(1, 3),
       fans=st.lists(st.integers(0, 3), min_size=3, max_size=3),
       time_mode=st.sampled_from(sorted(TIME_SCALE)))
@hyp
def test_last_equals_bruteforce(device, strict, graph_seed, hops, fans, time_mode):
    d = random_graph(graph_seed, time_mode)
    adj = in_edges(d)
    rng = np.random.default_rng(graph_seed + 2)
    # Per-edge-type dict, some edge types with a different fan-out, some -1.
    nn = {}
    for i, et in enumerate(d.edge_types):
        nn[et] = [fans[(i + h) % 3] if (i + h) % 4 else -1 for h in range(hops)]
    seeds, times = make_seeds(d, rng, "user", int(rng.integers(1, 12)), time_mode)
    s = TemporalSampler(d, nn, strategy="last", strict=strict, device=device)
    out = run_sampler(s, "user", seeds, times)
    check_structure(out, d, "user", seeds, times, nn, strict, "last", adj)
    got = decode(out, d)
    for b, (sd, tm) in enumerate(zip(seeds, times)):
        want = reference(d, "user", sd, tm, nn, strict, "last", adj)
        assert got[b] == want


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True])
@given(graph_seed=st.integers(0, 10**6), hops=st.integers(1, 3),
       fans=st.lists(st.integers(0, 4), min_size=3, max_size=3))
@hyp
def test_uniform_valid_sample(device, strict, graph_seed, hops, fans):
    d = random_graph(graph_seed)
    adj = in_edges(d)
    rng = np.random.default_rng(graph_seed + 3)
    nn = [fans[h % 3] for h in range(hops)]
    nn_d = {et: nn for et in d.edge_types}
    seeds, times = make_seeds(d, rng, "user", int(rng.integers(1, 12)))
    for strategy in ("uniform", "mix"):
        s = TemporalSampler(d, nn, strategy=strategy, strict=strict, device=device, random_seed=graph_seed)
        out = run_sampler(s, "user", seeds, times)
        check_structure(out, d, "user", seeds, times, nn_d, strict, strategy, adj)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_timed_seed_type_uses_own_time(device, strategy):
    """Seeds of a timed type without input time: their own time is the seed time."""
    for graph_seed in range(20):
        d = random_graph(graph_seed)
        if d["event"].num_nodes == 0:
            continue
        adj = in_edges(d)
        nn = {et: [-1, -1] for et in d.edge_types}
        seeds = list(range(d["event"].num_nodes))
        times = d["event"].time.tolist()
        s = TemporalSampler(d, nn, strategy=strategy, device=device, random_seed=1)
        out = run_sampler(s, "event", seeds, None)
        assert out.metadata[1] is None
        check_structure(out, d, "event", seeds, times, nn, False, strategy, adj)
        got = decode(out, d)
        for b, (sd, tm) in enumerate(zip(seeds, times)):
            assert got[b] == reference(d, "event", sd, tm, nn, False, strategy, adj)


@pytest.mark.parametrize("device", DEVICES)
def test_untimed_seeds_without_time_are_unfiltered(device):
    d = random_graph(7)
    adj = in_edges(d)
    nn = {et: [-1, -1] for et in d.edge_types}
    seeds = list(range(d["user"].num_nodes))
    s = TemporalSampler(d, nn, device=device)
    out = run_sampler(s, "user", seeds, None)
    check_structure(out, d, "user", seeds, [None] * len(seeds), nn, False, "uniform", adj)
    got = decode(out, d)
    for b, sd in enumerate(seeds):
        assert got[b] == reference(d, "user", sd, None, nn, False, "uniform", adj)


# --------------------------------------------------------------------------- #
# Fixed graphs
# --------------------------------------------------------------------------- #
def star_graph(n_rows: int, times=None) -> HeteroData:
    """One customer with n_rows transactions, each to its own article."""
    d = HeteroData()
    d["customer"].num_nodes = 2  # customer 1 has no rows at all
    d["article"].num_nodes = n_rows
    d["transactions"].num_nodes = n_rows
    d["transactions"].time = torch.as_tensor(times if times is not None else list(range(n_rows))).long()
    tx = torch.arange(n_rows)
    cust = torch.zeros(n_rows, dtype=torch.long)
    d["transactions", "f2p_customer_id", "customer"].edge_index = torch.stack([tx, cust])
    d["customer", "rev_f2p_customer_id", "transactions"].edge_index = torch.stack([cust, tx])
    d["transactions", "f2p_article_id", "article"].edge_index = torch.stack([tx, tx])
    d["article", "rev_f2p_article_id", "transactions"].edge_index = torch.stack([tx, tx])
    return d


def per_row_sets(row, val, rows, k):
    """[rows, k] tensor of the sorted values of every row (each row has k)."""
    order = torch.argsort(row * (int(val.max()) + 1) + val)
    return val[order].view(rows, k)


def chi2_critical(df: int, z: float = 4.75) -> float:
    """Wilson-Hilferty upper quantile of chi-square (z=4.75: p ~ 1e-6)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


def chi2_stat(counts, expected):
    return sum((c - expected) ** 2 / expected for c in counts)


ET_TX = ("transactions", "f2p_customer_id", "customer")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "n_elig,k",
    [(6, 3), (4, 3), (3, 2), (9, 2), (7, 3), (5, 1), (12, 4)],  # mid (k<c<=2k) and large paths
)
def test_uniform_chi_square(device, n_elig, k):
    # 3 more rows newer than the seed time must never appear.
    d = star_graph(n_elig + 3)
    draws = max(100 * math.comb(n_elig, k), 2000)
    seed_time = n_elig - 1  # rows 0..n_elig-1 eligible
    s = TemporalSampler(d, [k], strategy="uniform", device=device, random_seed=123)
    out = run_sampler(s, "customer", [0] * draws, [seed_time] * draws)
    e = out.edge[ET_TX].cpu()
    b = out.batch["customer"].cpu()[out.col[ET_TX].cpu()]
    assert int(e.max()) < n_elig
    assert torch.bincount(b, minlength=draws).eq(k).all()
    picked = per_row_sets(b, e, draws, k)
    assert (picked[:, 1:] > picked[:, :-1]).all()  # k distinct rows per draw
    subsets = Counter(map(tuple, picked.tolist()))
    all_subsets = list(combinations(range(n_elig), k))
    assert set(subsets) <= set(all_subsets)
    counts = [subsets[c] for c in all_subsets]
    expected = draws / len(all_subsets)
    df = len(all_subsets) - 1
    if df == 0:
        return
    assert chi2_stat(counts, expected) < chi2_critical(df)


@pytest.mark.parametrize("device", DEVICES)
def test_uniform_large_segment_marginals(device):
    """c >> k: the offset-drawing path; every eligible row equally likely."""
    n, k, draws = 5000, 3, 4000
    d = star_graph(n + 50)
    s = TemporalSampler(d, [k], strategy="uniform", device=device, random_seed=5)
    out = run_sampler(s, "customer", [0] * draws, [n - 1] * draws)
    e = out.edge[ET_TX].cpu()
    assert e.numel() == k * draws and int(e.max()) < n
    b = out.batch["customer"].cpu()[out.col[ET_TX].cpu()]
    key = b * n + e
    assert key.unique().numel() == key.numel()  # without replacement
    bins = torch.bincount(e * 20 // n, minlength=20).tolist()
    assert chi2_stat(bins, k * draws / 20) < chi2_critical(19)


@pytest.mark.parametrize("device", DEVICES)
def test_sample_large_redraw_rounds_are_uniform(device):
    """Force the re-draw rounds (1 draw per round) and check exact uniformity."""
    n, k, rows = 7, 3, 7000
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    start = torch.full((rows,), 10, dtype=torch.long, device=device)
    cnt = torch.full((rows,), n, dtype=torch.long, device=device)
    pos, seg = TemporalSampler._sample_large(start, cnt, k, gen, m=1)
    pos, seg = pos.cpu(), seg.cpu()
    assert pos.numel() == k * rows
    assert torch.bincount(seg, minlength=rows).eq(k).all()
    picked = per_row_sets(seg, pos - 10, rows, k)
    assert (picked[:, 1:] > picked[:, :-1]).all() and picked.min() >= 0 and picked.max() < n
    subsets = Counter(map(tuple, picked.tolist()))
    all_subsets = list(combinations(range(n), k))
    counts = [subsets[c] for c in all_subsets]
    assert chi2_stat(counts, rows / len(all_subsets)) < chi2_critical(len(all_subsets) - 1)


@pytest.mark.parametrize("device", DEVICES)
def test_last_ties_and_strict(device):
    # Times with ties: rows 2,3,4 share time 5.
    times = [1, 3, 5, 5, 5, 9]
    d = star_graph(6, times)
    for strict, seed_time, k, want in [
        (False, 5, 2, {3, 4}),     # ties: larger edge id is "more recent"
        (False, 5, 4, {1, 2, 3, 4}),
        (True, 5, 2, {0, 1}),      # strict drops time == seed time
        (False, 0, 3, set()),      # seed older than every row
        (True, 1, 3, set()),
        (False, 100, -1, {0, 1, 2, 3, 4, 5}),
    ]:
        s = TemporalSampler(d, [k], strategy="last", strict=strict, device=device)
        out = run_sampler(s, "customer", [0], [seed_time])
        assert set(out.edge[ET_TX].cpu().tolist()) == want
        assert set(out.node["transactions"].cpu().tolist()) == want


@pytest.mark.parametrize("device", DEVICES)
def test_mix_takes_the_most_recent_half_and_a_uniform_rest(device):
    times = [1, 3, 5, 5, 5, 9, 2, 4]  # eligible at seed time 5: rows 0-4, 6, 7
    d = star_graph(len(times), times)
    s = TemporalSampler(d, [4], strategy="mix", device=device, random_seed=0)
    counts = Counter()
    for _ in range(400):
        got = s.sample_from_nodes(NodeSamplerInput(
            input_id=torch.arange(1), node=torch.zeros(1, dtype=torch.long),
            time=torch.tensor([5]), input_type="customer")).edge[ET_TX].cpu().tolist()
        assert len(got) == len(set(got)) == 4
        assert {3, 4} <= set(got)  # the 2 most recent (ties: larger edge id is more recent)
        counts.update(set(got) - {3, 4})
    assert set(counts) == {0, 1, 2, 6, 7}  # the other 2 drawn from the older eligible rows
    assert chi2_stat([counts[i] for i in (0, 1, 2, 6, 7)], 800 / 5) < chi2_critical(4)
    short = TemporalSampler(d, [4], strategy="mix", device=device, random_seed=0)
    got = short.sample_from_nodes(NodeSamplerInput(
        input_id=torch.arange(1), node=torch.zeros(1, dtype=torch.long),
        time=torch.tensor([2]), input_type="customer")).edge[ET_TX].cpu().tolist()
    assert sorted(got) == [0, 6]  # fewer eligible than k: all of them


@pytest.mark.parametrize("device", DEVICES)
def test_inclusive_types_keep_equal_times_when_strict(device):
    d = star_graph(6, [1, 3, 5, 5, 5, 9])
    for inclusive, want in [((), {0, 1}), (("transactions",), {0, 1, 2, 3, 4})]:
        s = TemporalSampler(d, [-1], strict=True, inclusive=inclusive, device=device)
        out = run_sampler(s, "customer", [0], [5])
        assert set(out.edge[ET_TX].cpu().tolist()) == want


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("huge", [False, True])
def test_float_seed_time_on_integer_node_times(device, strict, huge):
    """A float seed time s: time <= s (time < s when strict), for offset and rank keys."""
    scale = 2**58 if huge else 1
    times = [t * scale for t in [1, 3, 5, 5, 5, 9]]
    d = star_graph(6, times)
    s = TemporalSampler(d, [-1], strict=strict, device=device)
    assert ("transactions" in s._time_min) != huge
    for st_ in [0.5, 1.0, 4.5, 5.0, 5.5, 8.99, 9.0, 100.0, -1e30, 1e30,
                float("inf"), float("-inf")]:
        inp = NodeSamplerInput(input_id=torch.arange(1), node=torch.zeros(1, dtype=torch.long),
                               time=torch.tensor([st_ * scale], dtype=torch.float64),
                               input_type="customer")
        got = set(s.sample_from_nodes(inp).edge[ET_TX].cpu().tolist())
        want = {i for i, t in enumerate(times) if (t < st_ * scale if strict else t <= st_ * scale)}
        assert got == want, st_


@pytest.mark.parametrize("device", DEVICES)
def test_empty_types_keep_keys(device):
    d = star_graph(5)
    s = TemporalSampler(d, [4, 4, 4], device=device, random_seed=0)
    # Seeds older than every row, plus a customer with no rows: nothing sampled.
    out = run_sampler(s, "customer", [0, 1], [-5, 100])
    assert set(out.node) == {"customer", "article", "transactions"}
    assert set(out.row) == set(d.edge_types) == set(out.col) == set(out.edge)
    assert out.node["transactions"].numel() == 0 and out.node["article"].numel() == 0
    assert out.batch["article"].numel() == 0
    for et in d.edge_types:
        assert out.row[et].numel() == 0 and out.edge[et].dtype == torch.long
        assert out.num_sampled_edges[et] == [0, 0, 0]
    assert out.num_sampled_nodes == {"customer": [2, 0, 0, 0], "article": [0, 0, 0, 0],
                                     "transactions": [0, 0, 0, 0]}
    # Same keys as a batch that does sample.
    out2 = run_sampler(s, "customer", [0], [100])
    assert set(out2.node) == set(out.node) and set(out2.row) == set(out.row)
    assert out2.node["article"].numel() > 0


def test_zero_seeds():
    d = star_graph(5)
    s = TemporalSampler(d, [2, 2])
    out = run_sampler(s, "customer", [], [])
    assert all(v.numel() == 0 for v in out.node.values())
    assert out.num_sampled_nodes["customer"] == [0, 0, 0]


@pytest.mark.parametrize("device", DEVICES)
def test_seed_reproducible(device):
    d = random_graph(3)
    seeds, times = make_seeds(d, np.random.default_rng(0), "user", 50)

    def run(seed):
        s = TemporalSampler(d, [2, 2, 2], random_seed=seed, device=device)
        return [run_sampler(s, "user", seeds, times) for _ in range(3)]

    def flat(outs):
        return [(t, o.node[t].tolist()) for o in outs for t in o.node] + \
               [(et, o.edge[et].tolist()) for o in outs for et in o.edge]

    assert flat(run(11)) == flat(run(11))
    # Pickled sampler continues the same random stream.
    s = TemporalSampler(d, [2, 2, 2], random_seed=4, device=device)
    run_sampler(s, "user", seeds, times)
    s2 = pickle.loads(pickle.dumps(s))
    assert flat([run_sampler(s, "user", seeds, times)]) == flat([run_sampler(s2, "user", seeds, times)])


def test_bad_arguments():
    d = star_graph(3)
    with pytest.raises(ValueError):
        TemporalSampler(d, [1], strategy="first")
    with pytest.raises(ValueError):
        TemporalSampler(d, {("a", "b", "c"): [1]})
    with pytest.raises(ValueError):
        TemporalSampler(d, {ET_TX: [1]})  # missing edge types
    with pytest.raises(ValueError):
        TemporalSampler(d, {et: [1] * (i + 1) for i, et in enumerate(d.edge_types)})


# --------------------------------------------------------------------------- #
# NodeLoader integration
# --------------------------------------------------------------------------- #
@contextlib.contextmanager
def workers_closed(loader):
    """Shut persistent workers down on exit.  Left to the garbage collector, the
    loader <-> iterator cycle (``collate_fn`` is a bound method of the loader)
    costs 5 s per worker: the cycle's multiprocessing queues are finalised
    before the iterator's shutdown can signal the workers."""
    try:
        yield loader
    finally:
        it, loader._iterator = loader._iterator, None
        del it


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
