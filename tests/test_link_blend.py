"""The link model on the LightGBM ranker's candidates (rdl/families/link/blend.py): scores
standardised per seed, and the weight chosen on val in a run of ``rdl.train``."""
import json

import numpy as np
import pytest

from rdl.baselines.ranker.features import Candidates
from rdl.baselines.ranker.fit import top_k
from rdl.families.link.blend import Scored, blend, per_seed_z


def test_scores_are_standardised_over_each_seeds_candidates():
    rid = np.array([0, 0, 0, 1, 1, 2])
    f = Candidates(rid, np.arange(6), np.zeros(6), [[1], [2], [3]], np.zeros(3))
    z = per_seed_z(f, np.array([1.0, 2.0, 3.0, 10.0, 30.0, 5.0]))
    s = np.sqrt(2 / 3)
    assert z == pytest.approx([-1 / s, 0, 1 / s, -1, 1, 0])   # a lone candidate: 0


def _two_seeds():
    """Seed 0: candidates 1, 2, 3 (true: 4, which retrieval missed); seed 1: candidates 5, 6
    (true: 6). The model's top 2 of every item: 4, 3 for seed 0 and 6, 7 for seed 1."""
    f = Candidates(np.array([0, 0, 0, 1, 1]), np.array([1, 2, 3, 5, 6]),
                   np.array([0, 0, 0, 0, 1]), [[4], [6]], np.array([0, 1]))
    ranker = np.array([3.0, 2.0, 1.0, 2.0, 1.0])
    model = Scored(candidates=np.array([0.0, 1.0, 2.0, 0.5, 3.0]),
                   rid=np.array([0, 0, 1, 1]), item=np.array([4, 3, 6, 7]),
                   score=np.array([5.0, 2.0, 3.0, 1.0]))
    return f, ranker, model


def test_weight_0_is_the_ranker_alone_and_1_the_model_alone_over_every_item():
    f, ranker, model = _two_seeds()
    rows, score = blend(f, ranker, model, 0.0)
    assert top_k(rows, score, 3) == [[1, 2, 3], [5, 6]]     # the candidates only
    rows, score = blend(f, ranker, model, 1.0)
    # the model's order over the candidates and its own top items, the missed 4 first
    assert top_k(rows, score, 3) == [[4, 3, 2], [6, 7, 5]]
    assert rows.label.tolist().count(1) == 2                  # 4 and 6 are true
    assert len(rows.rid) == 7                                 # 3 (top of seed 0) and 6 once


def test_an_item_retrieval_missed_gets_the_rankers_lowest_score():
    f, ranker, model = _two_seeds()
    rows, score = blend(f, ranker, model, 0.5)
    z = per_seed_z(f, ranker)
    at = np.flatnonzero((rows.rid == 0) & (rows.item == 4))
    mean, std = 1.0, np.sqrt(2 / 3)                           # the model over seed 0's candidates
    assert score[at] == pytest.approx(0.5 * z[:3].min() + 0.5 * (5.0 - mean) / std)


def test_a_candidate_the_model_did_not_score_gets_its_lowest_score():
    """ID-GNN scores only the items in the seed's subgraph (-inf elsewhere): such a
    candidate ranks as the seed's worst scored one, and a top item scored -inf is not
    added. One -inf used to turn the seed's every score into NaN (the blend's val MAP
    fell to popularity's on H&M, 7.1 % at every weight above 0)."""
    f, ranker, _ = _two_seeds()
    model = Scored(candidates=np.array([0.0, -np.inf, 2.0, 0.5, 3.0]),   # item 2: unscored
                   rid=np.array([0, 0, 1, 1]), item=np.array([4, 3, 6, 7]),
                   score=np.array([5.0, 2.0, 3.0, -np.inf]))               # 7: unscored
    z = per_seed_z(f, model.candidates)
    assert z[:3] == pytest.approx([-1, -1, 1])     # seed 0 over its scored 1 and 3: mean 1, sd 1
    assert z[3:] == pytest.approx(per_seed_z(f, np.array([0, 0, 0, 0.5, 3.0]))[3:])
    for w in (0.5, 1.0):
        rows, score = blend(f, ranker, model, w)
        assert np.isfinite(score).all()
        assert len(rows.rid) == 6                   # 4 added to seed 0, 7 not to seed 1
    assert top_k(rows, score, 2) == [[4, 3], [6, 5]]


def test_the_weight_best_on_val_is_kept(tmp_path, run_train):
    out = run_train(tmp_path, "experiment=user-item-purchase", "compile.enabled=false",
                    "evaluation.ranker_blend=[0.0,0.5,1.0]")
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "metrics.json").read_text())
    blend, ranker = res["model"]["blend"], res["LightGBM ranker"]
    assert list(blend["by_weight"]) == ["0", "0.5", "1"]
    for split in ("val", "test"):
        # weight 0 ranks by the ranker alone: exactly its scores
        assert blend["by_weight"]["0"][split] == {k: v for k, v in ranker[split].items()
                                                  if k != "candidate_recall"}
        # weight 1 by the model alone: its own ranking of every item, as trained
        assert blend["by_weight"]["1"][split] == pytest.approx(blend["alone"][split], abs=1e-6)
    best = max(blend["by_weight"].values(), key=lambda t: t["val"]["map"])["val"]["map"]
    kept = blend["by_weight"][f"{blend['weight']:g}"]
    assert kept["val"]["map"] == best
    assert res["model"]["val"] == kept["val"] and res["model"]["test"] == kept["test"]
    assert set(blend["alone"]["val"]) == {"map", "precision", "recall"}
    assert "the model on the ranker's candidates: weight" in out.stdout + out.stderr


@pytest.mark.parametrize("weights", ["[0.5,2.0]", "[alone]", "[true]"])
def test_a_blend_weight_outside_0_1_is_refused(tiny_cfg, weights):
    from rdl.settings import check_settings
    with pytest.raises(ValueError, match=r"evaluation.ranker_blend=.*in \[0, 1\]"):
        check_settings(tiny_cfg(f"evaluation.ranker_blend={weights}"))
    check_settings(tiny_cfg("evaluation.ranker_blend=[0.0,1,0.5]"))


def test_a_model_that_scores_its_subgraph_only_needs_the_target_within_its_hops(tiny_cfg):
    """ID-GNN scores only the target rows its sampled subgraph holds. On lahman-player-team
    (people - batting - teams - franchises: 3 hops) its two hops held no franchise, its
    own MAP was 0.98 % and no blend weight could use it: now one error, once the schema is
    read, naming the path and the settings. ContextGNN scores every row and trains."""
    import rdl
    from rdl.tasks.paths import schema_path

    cfg = tiny_cfg("task=user-item-purchase", "model=idgnn", "model.num_layers=1")
    with pytest.raises(ValueError, match=r"IDGNN scores only the rows of 'article' .* 1 hops "
                       r"from 'customer' .* 2 hops away \(customer - transactions - article\)"
                       r".*model.num_layers=2"):
        rdl.prepare(cfg)
    db = rdl.load_database(cfg)
    assert schema_path(db, "customer", "article") == ["customer", "transactions", "article"]
    assert schema_path(db, "customer", "customer") == ["customer"]
    assert schema_path(db, "customer", "nowhere") is None
