"""The notebooks run top to bottom (their code cells, in order, in the notebooks folder), and
the walkthrough shows what it says: the task's labels, a leak-free batch, a model that
learns."""
import json
from pathlib import Path

import pytest
import torch

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


def run(path: Path) -> dict:
    scope = {}
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}", "exec"), scope)
    return scope


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # what a notebook writes stays out of the checkout
    scope = run(path)
    if path.name == "quickstart.ipynb":
        check_quickstart(scope, tmp_path)
        return
    assert path.name == "walkthrough.ipynb", f"{path.name}: say here what it must show"
    assert list(scope["train"].columns) == ["timestamp", "customer_id", "churn"]
    assert set(scope["train"].churn.unique()) == {0, 1}
    batch = scope["batch"]
    tx, seed_time = batch["transactions"], batch["customer"].seed_time
    assert len(tx.time) > 0 and bool((tx.time <= seed_time[tx.batch]).all())
    assert scope["out"].shape == (32, 1) and torch.isfinite(scope["out"]).all()
    losses = scope["losses"]
    assert losses[-1] < 0.8 * losses[0], losses


def check_quickstart(scope: dict, root: Path) -> None:
    """The schema, a seed's subgraph no newer than its seed time, a run, and its plots."""
    schema = scope["schema"]
    assert set(schema["table"]) == {"customer", "article", "transactions"}
    assert schema.set_index("table").loc["transactions", "time column"] == "t_dat"
    batch, sub = scope["batch"], scope["sub"]
    assert len(sub["customer"]) == 1 and len(sub["transactions"]) > 0
    tx = batch["transactions"]
    assert bool((tx.time[sub["transactions"]] <= batch["customer"].seed_time[0]).all())
    assert (root / "out" / "run" / "metrics.json").exists()
    for plot in ("subgraph.png", "curves.png"):
        assert (root / "out" / plot).stat().st_size > 10_000, plot
