"""Tests of rdl.graph.TemporalSampler against a plain brute-force reference."""
from __future__ import annotations

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
from torch_geometric.loader import NodeLoader
from torch_geometric.sampler import NodeSamplerInput

from rdl.graph import TemporalSampler

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")),
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
    """int: offset keys; float: rank keys; huge: rank keys unless all times are equal."""
    offset = "event" in sampler._time_min
    if time_mode == "huge":
        assert offset == (d["event"].time.unique().numel() == 1)
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
    for strategy in ("uniform", "last"):
        s = TemporalSampler(d, nn, strategy=strategy, strict=strict, device=device, seed=0)
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
    s = TemporalSampler(d, nn, strategy="uniform", strict=strict, device=device, seed=graph_seed)
    out = run_sampler(s, "user", seeds, times)
    check_structure(out, d, "user", seeds, times, nn_d, strict, "uniform", adj)


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
        s = TemporalSampler(d, nn, strategy=strategy, device=device, seed=1)
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
    s = TemporalSampler(d, [k], strategy="uniform", device=device, seed=123)
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
    s = TemporalSampler(d, [k], strategy="uniform", device=device, seed=5)
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
def test_empty_types_keep_keys(device):
    d = star_graph(5)
    s = TemporalSampler(d, [4, 4, 4], device=device, seed=0)
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
        s = TemporalSampler(d, [2, 2, 2], seed=seed, device=device)
        return [run_sampler(s, "user", seeds, times) for _ in range(3)]

    def flat(outs):
        return [(t, o.node[t].tolist()) for o in outs for t in o.node] + \
               [(et, o.edge[et].tolist()) for o in outs for et in o.edge]

    assert flat(run(11)) == flat(run(11))
    # Pickled sampler continues the same random stream.
    s = TemporalSampler(d, [2, 2, 2], seed=4, device=device)
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
    pytest.param(0, "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                     reason="no CUDA")),
])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_node_loader(num_workers, device, strategy):
    d = random_graph(11)
    n = d["user"].num_nodes
    rng = np.random.default_rng(0)
    ids = torch.from_numpy(rng.integers(0, n, 40)).long()
    times = torch.from_numpy(rng.integers(-1, 10, 40)).long()
    s = TemporalSampler(d, [3, 2], strategy=strategy, seed=0, device=device)
    kw = dict(num_workers=num_workers)
    if num_workers:
        kw["persistent_workers"] = True
    loader = NodeLoader(d, node_sampler=s, input_nodes=("user", ids), input_time=times,
                        batch_size=7, shuffle=True, **kw)
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
    s = TemporalSampler(d, [5], seed=0)
    loader = NodeLoader(d, node_sampler=s, input_nodes=("customer", ids), input_time=times,
                        batch_size=32, shuffle=False, num_workers=2, persistent_workers=True)
    batches = [b["transactions"].n_id.tolist() for b in loader]
    assert len(batches) == 2 and batches[0] != batches[1]



def test_with_seed_shares_the_index_and_repeats():
    d = random_graph(3)
    seeds, times = make_seeds(d, np.random.default_rng(0), "user", 50)
    base = TemporalSampler(d, [2, 2, 2])
    a, b = base.with_seed(7), base.with_seed(7)
    assert a._colptr is base._colptr  # no second index
    out_a, out_b = run_sampler(a, "user", seeds, times), run_sampler(b, "user", seeds, times)
    assert all(torch.equal(out_a.node[t], out_b.node[t]) for t in out_a.node)


def test_unseeded_sampler_follows_torch_manual_seed():
    d = random_graph(3)
    seeds, times = make_seeds(d, np.random.default_rng(0), "user", 50)
    outs = []
    for _ in range(2):
        torch.manual_seed(123)
        outs.append(run_sampler(TemporalSampler(d, [2, 2, 2]), "user", seeds, times))
    assert all(torch.equal(outs[0].node[t], outs[1].node[t]) for t in outs[0].node)
