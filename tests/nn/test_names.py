"""Per-table modules under names PyTorch refuses as module names (issue 30)."""
import pytest
import torch

from rdl.nn.names import TypeDict, module_key, node_type

REFUSED = ["dim.tags", "", "type", "training", "forward", "__init__", "<x>", "a%2Eb", "50%.x"]


def test_torch_refuses_these_names():
    for name in REFUSED[:6]:
        with pytest.raises(KeyError):
            torch.nn.ModuleDict({name: torch.nn.Linear(1, 1)})


def test_any_table_name_gets_a_module_of_its_own():
    names = ["users", *REFUSED]
    d = TypeDict({n: torch.nn.Linear(1, 1, bias=False) for n in names})
    assert list(d.keys()) == names and list(d) == names
    assert len({module_key(n) for n in names}) == len(names)   # no two names clash
    for i, n in enumerate(names):
        torch.nn.init.constant_(d[n].weight, i)
        assert n in d and node_type(module_key(n)) == n
    assert [float(m.weight) for _, m in d.items()] == list(range(len(names)))
    # a plain name keeps its key: checkpoints written before keep loading
    assert "users.weight" in d.state_dict() and module_key("users") == "users"
    again = TypeDict({n: torch.nn.Linear(1, 1, bias=False) for n in names})
    again.load_state_dict(d.state_dict())
    assert float(again["dim.tags"].weight) == 1.0
    assert "x" not in d and 3 not in d


def test_a_refused_name_traces_as_one_graph():
    d = TypeDict({"dim.tags": torch.nn.Linear(2, 2), "type": torch.nn.Linear(2, 2)})
    f = torch.compile(lambda x: {n: d[n](x[n]) for n in x}, fullgraph=True, backend="eager")
    x = {"dim.tags": torch.ones(3, 2), "type": torch.zeros(3, 2)}
    torch.testing.assert_close(f(x)["dim.tags"], d["dim.tags"](x["dim.tags"]))
