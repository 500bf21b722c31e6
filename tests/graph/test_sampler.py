"""Tests of rdl.graph.TemporalSampler's node sampling against a plain brute-force reference
(tests/graph/sampling.py), on random and fixed graphs."""
from __future__ import annotations

import math
import pickle
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch_geometric.sampler import NodeSamplerInput

from rdl.graph import TemporalSampler
# _one_thread: the autouse fixture, imported to apply here
from tests.graph.sampling import (  # noqa: F401
    check_structure, check_time_mode, chi2_critical, chi2_stat, decode, DEVICES, hyp,
    in_edges, make_seeds, _one_thread, per_row_sets, random_graph, reference, run_sampler,
    star_graph, TIME_SCALE)


# --------------------------------------------------------------------------- #
# Property tests on random relational graphs
# --------------------------------------------------------------------------- #
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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("time_mode", sorted(TIME_SCALE))
def test_an_index_file_is_written_once_then_read_mapped_and_samples_the_same(
        tmp_path, device, time_mode):
    """``index_file``: the first sampler builds the index and writes it; the next reads it
    (its tensors mapped from the file on the CPU), builds nothing, and draws exactly what a
    sampler without a file draws, for every strategy. A file of another graph, or a
    damaged one, is not used: the index is built and the file replaced."""
    from rdl.graph import temporal_index
    from tests.test_prepared_cache import mapped

    d = random_graph(7, time_mode)
    seeds, times = make_seeds(d, np.random.default_rng(1), "user", 40, time_mode)
    path = tmp_path / "index.pt"
    built = []
    real = temporal_index.TemporalIndex._make_index

    def counted(self, *args):
        built.append(1)
        return real(self, *args)

    def draws(sampler):
        out = run_sampler(sampler, "user", seeds, times)
        return ([(t, out.node[t].tolist()) for t in out.node]
                + [(et, out.edge[et].tolist()) for et in out.edge])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(temporal_index.TemporalIndex, "_make_index", counted)
        for strategy in ("uniform", "last", "mix"):
            plain = TemporalSampler(d, [3, 2], strategy=strategy, device=device, random_seed=5)
            first = TemporalSampler(d, [3, 2], strategy=strategy, device=device, random_seed=5,
                                    index_file=path)
            assert path.exists()
            read = TemporalSampler(d, [3, 2], strategy=strategy, device=device, random_seed=5,
                                   index_file=path)
            assert draws(plain) == draws(first) == draws(read), strategy
        assert len(built) == 1 + 3   # each plain sampler's, and the first file's
        if torch.device(device).type == "cpu":
            some = next(iter(read._row.values()))
            assert mapped(some, path)
        built.clear()
        other = random_graph(8, time_mode)
        TemporalSampler(other, [3, 2], device=device, index_file=path)   # another graph
        assert built == [1]
        again = TemporalSampler(other, [3, 2], device=device, index_file=path)
        assert built == [1] and again._unit.keys() == read._unit.keys()
        path.write_bytes(b"damaged")
        TemporalSampler(d, [3, 2], device=device, index_file=path)
        assert built == [1, 1]
        TemporalSampler(d, [3, 2], device=device, index_file=path)
        assert built == [1, 1]
