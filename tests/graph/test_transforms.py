"""Loader transforms: bidirectional edges, link targets."""
import torch
from torch_geometric.data import HeteroData

from rdl.graph.transforms import AttachLinkTarget, Bidirectional, pad_lists


def batch() -> HeteroData:
    b = HeteroData()
    b["customer"].num_nodes = 2
    b["transactions"].num_nodes = 3
    b["article"].n_id = torch.tensor([7, 8, 7])
    b["article"].batch = torch.tensor([0, 0, 1])
    b["customer"].input_id = torch.tensor([1, 0])
    # hop 1: tx 0, 1 -> customer 0, tx 2 -> customer 1; hop 2: customer 0 -> tx 0 (the
    # reverse of an edge already there) and articles -> tx
    b["transactions", "f2p_customer_id", "customer"].edge_index = torch.tensor([[0, 1, 2], [0, 0, 1]])
    b["customer", "rev_f2p_customer_id", "transactions"].edge_index = torch.tensor([[0], [0]])
    b["article", "rev_f2p_article_id", "transactions"].edge_index = torch.tensor([[0, 1, 2], [0, 1, 2]])
    b["transactions", "f2p_article_id", "article"].edge_index = torch.empty(2, 0, dtype=torch.long)
    return b


def pairs(e):
    return set(map(tuple, e.t().tolist()))


def test_bidirectional_adds_reverses_without_duplicates():
    b = Bidirectional()(batch())
    fwd = b["transactions", "f2p_customer_id", "customer"].edge_index
    rev = b["customer", "rev_f2p_customer_id", "transactions"].edge_index
    assert pairs(fwd) == {(0, 0), (1, 0), (2, 1)}           # (0, 0) not doubled
    assert fwd.size(1) == 3
    assert pairs(rev) == {(c, t) for t, c in pairs(fwd)}
    # articles now receive messages from their transactions
    assert pairs(b["transactions", "f2p_article_id", "article"].edge_index) == {(0, 0), (1, 1), (2, 2)}


def test_pad_lists():
    ptr, idx = torch.tensor([0, 2, 2, 5]), torch.tensor([4, 5, 6, 7, 8])
    assert pad_lists(ptr, idx, torch.tensor([2, 1, 0])).tolist() == [[6, 7, 8], [-1, -1, -1],
                                                                     [4, 5, -1]]


def test_attach_link_target_marks_true_candidates_of_their_own_seed():
    # table row 0 -> {8}, row 1 -> {7}; seed 0 is row 1, seed 1 is row 0
    ptr, idx = torch.tensor([0, 1, 2]), torch.tensor([8, 7])
    b = AttachLinkTarget("customer", "article", ptr, idx, num_dst=10)(batch())
    assert b["customer"].y.tolist() == [[7], [8]]
    # article nodes: (seed 0, 7) true, (seed 0, 8) false, (seed 1, 7) false
    assert b["article"].dst_y.tolist() == [1.0, 0.0, 0.0]


def test_attach_link_target_from_a_table_to_itself():
    """RelBench's post-post-related links posts to posts: the seeds' true rows and the
    candidates' marks live on one node type and neither overwrites the other."""
    b = HeteroData()
    b["posts"].input_id = torch.tensor([1, 0])      # seeds: table rows 1 and 0
    b["posts"].n_id = torch.tensor([3, 4, 9, 5, 9, 2, 2])
    b["posts"].batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    ptr, idx = torch.tensor([0, 1, 3]), torch.tensor([2, 9, 5])  # row 0 -> {2}, 1 -> {9, 5}
    b = AttachLinkTarget("posts", "posts", ptr, idx, num_dst=10)(b)
    assert b["posts"].y.tolist() == [[9, 5], [2, -1]]
    assert b["posts"].dst_y.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0]
