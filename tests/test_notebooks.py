"""The notebooks run top to bottom (their code cells, in order, in the notebooks folder), use
rdl's public API alone, and the walkthrough shows what it says: the task's labels, a
leak-free batch, a model that learns."""
import ast
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


#: a code cell whose stored output must not drift: what it shows now is what it stored
STABLE = "stable"


def run(path: Path) -> dict:
    """Runs the notebook's code cells in one scope, as plain Python: IPython's line magics
    (``%matplotlib inline``: plots shown in the notebook) are left out, and plots go to
    matplotlib's file backend. A cell tagged :data:`STABLE` ends in an expression whose
    value must print as its stored output did (whitespace aside: IPython folds long
    lines)."""
    import matplotlib
    matplotlib.use("Agg")
    scope = {}
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines(keepends=True)
            code = "".join(line for line in lines if not line.lstrip().startswith("%"))
            tree = ast.parse(code)
            last = tree.body.pop() if STABLE in cell["metadata"].get("tags", []) else None
            exec(compile(tree, f"{path.name}", "exec"), scope)
            if last is not None:
                assert isinstance(last, ast.Expr), f"{path.name}: a {STABLE} cell ends in an expression"
                value = eval(compile(ast.Expression(last.value), path.name, "eval"), scope)
                with pd.option_context("display.max_columns", 20, "display.width", 80):
                    shown = repr(value)   # pandas' defaults in a notebook, not a terminal's
                stored = next("".join(o["data"]["text/plain"]) for o in cell["outputs"]
                              if o["output_type"] == "execute_result")
                assert shown.split() == stored.split(), (path.name, code)
    return scope


def test_notebooks_are_stored_executed_and_small():
    """A browser (GitHub's viewer) shows a notebook's stored outputs: every code cell has
    run, in order, its plots are inline images, and the file stays small."""
    for path in NOTEBOOKS:
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1)), path.name
        assert path.stat().st_size < 1_000_000, path.name
    quickstart = (NOTEBOOKS[0].parent / "quickstart.ipynb").read_text()
    assert quickstart.count('"image/png"') >= 2
    for path in NOTEBOOKS:   # each has outputs that are checked not to drift (run())
        cells = json.loads(path.read_text())["cells"]
        assert any(STABLE in c["metadata"].get("tags", []) for c in cells), path.name


def test_notebooks_use_the_public_api_alone():
    """``import rdl`` and the names of ``rdl.__all__``: nothing from rdl's modules."""
    import rdl
    for path in NOTEBOOKS:
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "code")
        assert "import rdl" in code, path.name
        assert not re.search(r"from rdl\b|import rdl\.", code), path.name
        used = set(re.findall(r"(?<!-m )\brdl\.(\w+)", code))   # not `python -m rdl.train`
        assert used and used <= set(rdl.__all__), (path.name, used - set(rdl.__all__))


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
    assert scope["out"].shape == (len(batch["customer"].seed_time), 1)
    assert torch.isfinite(scope["out"]).all()
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
