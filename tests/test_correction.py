"""How much of its correction of its prior a node model keeps, chosen on val
(``evaluation.correction_scales``, rdl/families/node/correction.py)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from rdl.baselines.tree_mean import MEAN
from rdl.baselines.trees import DEPTH1, DEPTH2
from rdl.families.node.correction import scaled_on_val
from rdl.predict import predict
from tests.conftest import task_overrides


class _Task:
    def __init__(self, mode):
        self.monitor, self.monitor_mode = "score", mode


class _Data:
    def __init__(self, mode):
        self.task = _Task(mode)


class _Module:
    correction_scale = 1.0


class _Trainer:
    """Lightning's loops as the choice sees them: a val score of the module's factor
    (``val(scale)``), a test score of its own, and the checkpoints it saves."""

    def __init__(self, module, val):
        self.module, self.val, self.saved, self.loaded = module, val, [], []

    def validate(self, module, ckpt_path=None, **kwargs):
        if ckpt_path:
            self.loaded.append((ckpt_path, module.correction_scale))
        return [{"val/score": self.val(module.correction_scale), "val/loss": 9.0}]

    def test(self, module, ckpt_path=None, **kwargs):
        assert ckpt_path is None, "the weights loaded once, for val"
        return [{"test/score": 10 * module.correction_scale}]

    def save_checkpoint(self, path, weights_only=None):
        self.saved.append((path, self.module.correction_scale))


@pytest.mark.parametrize("mode,val,want", [
    ("max", lambda s: 0.7 - (s - 0.5) ** 2, 0.5),   # a peak inside the grid
    ("min", lambda s: abs(s - 0.25), 0.25),          # lower is better
    ("max", lambda s: 0.7, 1.0),                     # a tie keeps the first (as trained)
    ("max", lambda s: 0.7 - s, 0.0),                 # the prior alone
])
def test_the_factor_best_on_val_is_kept_and_saved(mode, val, want):
    module = _Module()
    trainer = _Trainer(module, val)
    model = scaled_on_val(trainer, module, _Data(mode), "best.ckpt", [1.0, 0.75, 0.5, 0.25, 0])
    assert module.correction_scale == want
    assert trainer.loaded == [("best.ckpt", 1.0)], "the best weights loaded once, at 1"
    assert trainer.saved == [("best.ckpt", want)], "the factor saved with them, for predict"
    by = model["correction"]["by_scale"]
    assert list(by) == ["1", "0.75", "0.5", "0.25", "0"]
    assert model["correction"]["scale"] == want
    assert model["val"] == {"score": val(want)} and model["test"] == {"score": 10 * want}
    # every factor's val score; the test scores of the one kept and of 1 (as trained) only
    assert all(by[f"{s:g}"]["val"] == {"score": val(s)} for s in (1, .75, .5, .25, 0))
    assert {s for s in by if "test" in by[s]} == {"1", f"{want:g}"}
    assert by["1"]["test"] == {"score": 10.0}


def _predict(rdl_cache, ckpt, out) -> dict:
    """``rdl.predict`` of the val split from ``ckpt`` (in this process): its metrics."""
    cfg = OmegaConf.create({"ckpt_path": str(ckpt), "split": "val", "format": "csv",
                            "output": str(out), "accelerator": "cpu",
                            "run": {"data": {"cache_dir": str(rdl_cache)}}})
    return predict(cfg)[2]


def test_at_zero_the_model_is_its_prior_and_predict_keeps_the_factor(
        tmp_path, run_train, rdl_cache):
    run = tmp_path / "run"
    out = run_train(run, *task_overrides("user-churn"), "compile.enabled=false",
                    "evaluation.correction_scales=[0.0]", "data.prior_margin=0",
                    "data.prior_trees=mean")
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run / "metrics.json").read_text())
    model = results["model"]
    assert (f"the correction of the prior ({model['prior']}) scaled by 0,"
            in out.stderr + out.stdout)
    # factor 0 chosen, and the model as trained (factor 1) scored beside it
    assert model["correction"]["scale"] == 0.0
    assert sorted(model["correction"]["by_scale"]) == ["0", "1"]
    # the prior is the baseline best on val, whatever its lead (prior_margin=0), of the
    # trees' mean and the simple baselines (each LightGBM alone is printed, no candidate);
    # at 0 the model scores as it does, both splits
    printed = {w: r for w, r in results.items() if w not in ("task", "model")}
    candidates = [w for w in printed if w not in (DEPTH1, DEPTH2)]
    assert MEAN in candidates and len(candidates) > 2
    assert model["prior"] == max(candidates, key=lambda w: printed[w]["val"]["auroc"])
    prior = printed[model["prior"]]
    for split in ("val", "test"):
        assert model[split]["auroc"] == pytest.approx(prior[split]["auroc"], abs=1e-4)
    # rdl.predict applies the factor the checkpoint holds; without it, the trained correction
    ckpt = run / "checkpoints" / "best.ckpt"
    assert _predict(rdl_cache, ckpt, tmp_path / "a.csv")["auroc"] == pytest.approx(
        model["val"]["auroc"], abs=1e-4)
    state = torch.load(ckpt, weights_only=False)
    assert state.pop("rdl_correction_scale") == 0.0
    torch.save(state, tmp_path / "as_trained.ckpt")
    _predict(rdl_cache, tmp_path / "as_trained.ckpt", tmp_path / "b.csv")
    at_zero, as_trained = (pd.read_csv(tmp_path / f)["churn"] for f in ("a.csv", "b.csv"))
    assert (at_zero - as_trained).abs().max() > 1e-4, "the trained correction is not zero"


def test_one_factor_of_one_is_the_run_as_before():
    from rdl.families.node.family import NodeFamily
    calls = []

    class T:
        def validate(self, module, **kw):
            calls.append("val")
            return [{"val/score": 1.0}]

        def test(self, module, **kw):
            calls.append("test")
            return [{"test/score": 2.0}]

    class D:
        prior, prior_name = object(), "last label"
        task, tables = None, {}   # (no val labels: none of one value)
    model = NodeFamily().evaluate(T(), _Module(), D(), None, {"correction_scales": [1.0]})
    assert calls == ["val", "test"]
    assert model == {"val": {"score": 1.0}, "test": {"score": 2.0}, "prior": "last label"}
