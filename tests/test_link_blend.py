"""The link model on the LightGBM ranker's candidates (rdl/families/link/blend.py): scores
standardised per seed, and the weight chosen on val in a run of ``rdl.train``."""
import json

import numpy as np
import pytest

from rdl.baselines.ranker.features import Candidates
from rdl.families.link.blend import per_seed_z


def test_scores_are_standardised_over_each_seeds_candidates():
    rid = np.array([0, 0, 0, 1, 1, 2])
    f = Candidates(rid, np.arange(6), np.zeros(6), [[1], [2], [3]], np.zeros(3))
    z = per_seed_z(f, np.array([1.0, 2.0, 3.0, 10.0, 30.0, 5.0]))
    s = np.sqrt(2 / 3)
    assert z == pytest.approx([-1 / s, 0, 1 / s, -1, 1, 0])   # a lone candidate: 0


def test_the_weight_best_on_val_is_kept(tmp_path, run_train):
    out = run_train(tmp_path, "experiment=user-item-purchase", "compile.enabled=false",
                    "evaluation.ranker_blend=[0.0,0.5,1.0]")
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "metrics.json").read_text())
    blend, ranker = res["model"]["blend"], res["LightGBM ranker"]
    assert list(blend["by_weight"]) == ["0", "0.5", "1"]
    # weight 0 ranks by the ranker alone: exactly its scores
    for split in ("val", "test"):
        assert blend["by_weight"]["0"][split] == {k: v for k, v in ranker[split].items()
                                                  if k != "candidate_recall"}
    best = max(blend["by_weight"].values(), key=lambda t: t["val"]["map"])["val"]["map"]
    kept = blend["by_weight"][f"{blend['weight']:g}"]
    assert kept["val"]["map"] == best
    assert res["model"]["val"] == kept["val"] and res["model"]["test"] == kept["test"]
    # the model's own ranking of every item, as trained, beside it
    assert set(blend["alone"]["val"]) == {"map", "precision", "recall"}
    assert "the model on the ranker's candidates: weight" in out.stdout + out.stderr
