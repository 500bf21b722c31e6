"""What the sampler tests share: random relational graphs, a plain brute-force reference
of temporal sampling, checks of a sampler's output against it, fixed graphs and
statistics."""
from __future__ import annotations

import contextlib
import math
from collections import defaultdict

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, settings
from torch_geometric.data import HeteroData
from torch_geometric.sampler import NodeSamplerInput


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


#: hypothesis settings of the property tests
hyp = settings(max_examples=30, deadline=None, database=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])


# --------------------------------------------------------------------------- #
# Fixed graphs and statistics
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
