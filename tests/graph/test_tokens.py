"""Token sets: each seed's nearest rows per node type, leak-free, in order, padded."""
import pytest
import torch

from rdl.graph.tokens import TokenSet, select
from rdl.tasks import HISTORY
from rdl.families import data_module
from rdl.training.data_settings import DataSettings
from rdl.training.shapes import Exact
from tests.training.test_label_history import make_task, random_db

BUDGETS = {"customer": 3, "transactions": 5, "article": 4, HISTORY: 2}


def sampled_batches(strict: bool, strategy: str = "uniform"):
    # the batches as sampled, as a token model's loader has them (no pad nodes or edges)
    dm = data_module(random_db(), make_task("user-churn"), DataSettings.of(batch_size=16,
                       num_neighbors=[6, 3], strategy=strategy, strict=strict, cache_dir=False,
                       tree_prior=False), shapes=Exact())
    tokens = TokenSet("customer", BUDGETS)
    for split in ("train", "val", "test"):
        for batch in dm.loader(split, shuffle=False):
            yield dm, tokens(batch)


def brute_force(batch, t: str, b: int, k: int) -> list[int]:
    """The first ``k`` type-``t`` nodes of seed ``b`` by (hop, newest, node), in Python."""
    store = batch[t]
    hops = [h for h, c in enumerate(store.num_sampled_nodes) for _ in range(c)]
    time = store.get("time")
    nodes = [i for i in range(store.num_nodes) if int(store.batch[i]) == b]
    key = (lambda i: (hops[i], -int(time[i]), i)) if time is not None else (lambda i: (hops[i], i))
    return sorted(nodes, key=key)[:k]


@pytest.mark.parametrize("strict", [False, True])
def test_tokens_are_each_seeds_nearest_rows_and_never_from_its_future(strict):
    seen_pad = seen_full = 0
    for dm, batch in sampled_batches(strict):
        seed_time = batch["customer"].seed_time
        B = seed_time.numel()
        for t, k in BUDGETS.items():
            store = batch[t]
            assert store.tok_node.shape == store.tok_mask.shape == store.tok_hop.shape == (B, k)
            for b in range(B):
                want = brute_force(batch, t, b, k)
                got = store.tok_node[b][store.tok_mask[b]].tolist()
                assert got == want, (t, b)
                # real tokens first, pads after: zeros, hop 0
                m = store.tok_mask[b]
                assert m.tolist() == [True] * len(want) + [False] * (k - len(want))
                assert (store.tok_node[b][~m] == 0).all() and (store.tok_hop[b][~m] == 0).all()
                hops = [h for h, c in enumerate(store.num_sampled_nodes) for _ in range(c)]
                assert store.tok_hop[b][m].tolist() == [hops[i] for i in want]
                deg = [sum(int((ei[j] == i).sum()) for (src, _, dst), ei in
                           batch.collect("edge_index").items() for j, end in ((0, src), (1, dst))
                           if end == t) for i in want]
                assert store.tok_deg[b][m].tolist() == deg and (store.tok_deg[b][~m] == 0).all()
                if "time" in store:
                    assert store.tok_time[b][m].tolist() == store.time[want].tolist()
                assert store.tok_id[b][m].tolist() == store.n_id[want].tolist()
                seen_pad += len(want) < k
                seen_full += len(want) == k
                # Leak: every token's row, looked up in the full graph, is no newer than
                # its seed (strictly older in strict mode; a label history row only once
                # its window has closed, which its time is).
                if "time" in dm.data[t]:
                    row_time = dm.data[t].time[store.n_id[got]]
                    if strict and t != HISTORY:
                        assert (row_time < seed_time[b]).all(), (t, b)
                    else:
                        assert (row_time <= seed_time[b]).all(), (t, b)
        # the seed's first token is the seed itself
        assert (batch["customer"].tok_node[:, 0] == torch.arange(B)).all()
        assert batch["customer"].tok_mask[:, 0].all()
    assert seen_pad and seen_full  # both regimes were exercised


def test_select_orders_by_hop_then_newest_then_node():
    seed = torch.tensor([1, 0, 1, 1, 0, 1])
    hop = torch.tensor([0, 0, 1, 1, 1, 1])
    time = torch.tensor([9, 9, 3, 7, 5, 7])
    node, mask, hops = select(seed, hop, time, num_seeds=3, k=3)
    assert node.tolist() == [[1, 4, 0], [0, 3, 5], [0, 0, 0]]
    assert mask.tolist() == [[True, True, False], [True, True, True], [False] * 3]
    assert hops.tolist() == [[0, 1, 0], [0, 1, 1], [0, 0, 0]]
    node, _, _ = select(seed, hop, None, num_seeds=2, k=4)  # no time: hop, then node
    assert node.tolist() == [[1, 4, 0, 0], [0, 2, 3, 5]]


def test_budgets_are_checked():
    with pytest.raises(ValueError, match="at least 1"):
        TokenSet("customer", {"customer": 0, "article": 3})
    with pytest.raises(ValueError, match=">= 0"):
        TokenSet("customer", {"customer": 1, "article": -1})


def test_padded_token_sets_keep_real_seeds_and_mark_only_pad_seed_slots():
    dm, batch = next(iter(sampled_batches(False)))
    B = batch["customer"].seed_time.numel()
    plain = TokenSet("customer", BUDGETS)(batch.clone())
    padded = TokenSet("customer", BUDGETS, pad_to=B + 3)(batch.clone())
    for t, k in BUDGETS.items():
        a, b = plain[t], padded[t]
        for key in ("tok_node", "tok_mask", "tok_hop", "tok_deg", "tok_id", "tok_time"):
            if key not in a:
                continue
            assert b[key].shape == (B + 3, k)
            assert torch.equal(b[key][:B], a[key])
            if key != "tok_mask":
                assert (b[key][B:] == 0).all()
        # a pad seed's only real slot is its seed slot
        want = torch.zeros(3, k, dtype=torch.bool)
        if t == "customer":
            want[:, 0] = True
        assert torch.equal(b.tok_mask[B:], want)
    with pytest.raises(ValueError, match="cannot be padded"):
        TokenSet("customer", BUDGETS, pad_to=B - 1)(batch.clone())
