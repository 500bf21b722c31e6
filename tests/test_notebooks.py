"""The notebooks run top to bottom (their code cells, in order, in the notebooks folder)."""
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(tmp_path))
    monkeypatch.chdir(path.parent)
    cells = json.loads(path.read_text())["cells"]
    scope = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}", "exec"), scope)
    assert scope["out"].shape == (32, 1)
