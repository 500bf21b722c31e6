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
                    "evaluation.ranker_blend=[0.0,0.5,1.0,alone]")
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "metrics.json").read_text())
    blend, ranker = res["model"]["blend"], res["LightGBM ranker"]
    assert list(blend["by_weight"]) == ["0", "0.5", "1", "alone"]
    # weight 0 ranks by the ranker alone: exactly its scores
    for split in ("val", "test"):
        assert blend["by_weight"]["0"][split] == {k: v for k, v in ranker[split].items()
                                                  if k != "candidate_recall"}
        # alone: the model's own ranking of every item, as trained
        assert blend["by_weight"]["alone"][split] == blend["alone"][split]
    # the option best on val, the first listed where two tie
    scores = [t["val"]["map"] for t in blend["by_weight"].values()]
    first_best = list(blend["by_weight"])[scores.index(max(scores))]
    chosen = blend["weight"] if blend["weight"] == "alone" else f"{blend['weight']:g}"
    assert chosen == first_best
    kept = blend["by_weight"][chosen]
    assert res["model"]["val"] == kept["val"] and res["model"]["test"] == kept["test"]
    assert set(blend["alone"]["val"]) == {"map", "precision", "recall"}
    assert "the model on the ranker's candidates: " in out.stdout + out.stderr


@pytest.mark.parametrize("weights", ["[0.5,2.0]", "[none_of_these]", "[true]"])
def test_a_blend_option_that_is_neither_a_weight_nor_alone_is_refused(tiny_cfg, weights):
    from rdl.settings import check_settings
    with pytest.raises(ValueError, match=r"evaluation.ranker_blend=.*\[0, 1\] or alone"):
        check_settings(tiny_cfg(f"evaluation.ranker_blend={weights}"))
    check_settings(tiny_cfg("evaluation.ranker_blend=[0.0,1,alone]"))
