"""Heterogeneous GraphSAGE: updating only the node types that the output needs gives the
same output for them as updating every type."""
import pytest
import torch

from rdl.nn.model import HeteroGraphSAGE

EDGES = [("tx", "f2p_c", "c"), ("c", "rev_f2p_c", "tx"), ("tx", "f2p_a", "a"),
         ("a", "rev_f2p_a", "tx"), ("a", "f2p_g", "g")]
SIZES = {"c": 5, "tx": 12, "a": 7, "g": 3}


@pytest.mark.parametrize("num_layers", [1, 2, 3])
@pytest.mark.parametrize("out_types", [("c",), ("a",), ("c", "a"), ("g",)])
def test_only_needed_types_are_updated(num_layers, out_types):
    torch.manual_seed(num_layers)
    gnn = HeteroGraphSAGE(list(SIZES), EDGES, channels=8, num_layers=num_layers)
    x = {nt: torch.randn(n, 8) for nt, n in SIZES.items()}
    edges = {(s, r, d): torch.stack([torch.randint(0, SIZES[s], (20,)),
                                     torch.randint(0, SIZES[d], (20,))]) for s, r, d in EDGES}
    full = gnn(x, edges)
    trimmed = gnn(x, edges, out_types)
    for nt in out_types:
        torch.testing.assert_close(trimmed[nt], full[nt])
    layers = gnn.updated_types(edges, out_types)
    assert layers[-1] == set(out_types)  # the last layer updates the output types only
    if num_layers > 1 and out_types == ("c",):
        assert layers[-2] == {"c", "tx"}  # what reaches a customer in one hop
    untouched = set(SIZES) - set().union(*layers)
    for nt in untouched:  # never updated: still the input
        assert trimmed[nt] is x[nt]


def test_several_aggregations_from_a_hydra_list():
    """``model.aggr=[sum,max]`` reaches the model as a ListConfig: both aggregations apply."""
    from omegaconf import OmegaConf
    torch.manual_seed(0)
    gnn = HeteroGraphSAGE(list(SIZES), EDGES, channels=8, num_layers=1,
                          aggr=OmegaConf.create(["sum", "max"]))
    conv = gnn.convs[0].convs[EDGES[0]]
    assert conv.lin_l.in_channels == 16  # sum and max concatenated
    x = {nt: torch.randn(n, 8) for nt, n in SIZES.items()}
    edges = {(s, r, d): torch.stack([torch.randint(0, SIZES[s], (20,)),
                                     torch.randint(0, SIZES[d], (20,))]) for s, r, d in EDGES}
    assert gnn(x, edges)["c"].shape == (5, 8)
