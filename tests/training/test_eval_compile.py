"""``compile.eval``: evaluation compiled, eager, or (``auto``) compiled where a run
evaluates enough batches to pay for its graph's compile."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from rdl.training.compile import EVAL_BATCHES, CompileOptions, planned_eval_batches


def trainer(fn="fit", val=(3,), train=50, max_epochs=10, max_steps=-1, every=1,
            interval=1.0, test=(4,), predict=(7,)):
    return SimpleNamespace(state=SimpleNamespace(fn=fn), num_val_batches=list(val),
                           num_training_batches=train, max_epochs=max_epochs,
                           max_steps=max_steps, check_val_every_n_epoch=every,
                           val_check_interval=interval, num_test_batches=list(test),
                           num_predict_batches=list(predict))


@pytest.mark.parametrize("kw,want", [
    ({}, 3 * 11),                                        # 10 validations and the best's
    ({"val": (3, 2)}, 5 * 11),                           # each loader's
    ({"every": 2}, 3 * 6),                               # every other epoch
    ({"interval": 0.25}, 3 * 41),                        # four times an epoch
    ({"every": None, "interval": 100}, 3 * 6),           # every 100 steps of 500
    ({"max_epochs": -1, "max_steps": 1000}, 3 * 21),     # 1,000 steps of 50 an epoch
    ({"max_epochs": -1, "max_steps": -1}, float("inf")),  # until stopped
    ({"val": (float("inf"),)}, float("inf")),            # a loader of unknown length
    ({"fn": "validate"}, 3), ({"fn": "test"}, 4), ({"fn": "predict"}, 7)])
def test_the_batches_a_trainer_call_evaluates(kw, want):
    assert planned_eval_batches(trainer(**kw)) == want


def test_auto_compiles_evaluation_where_it_is_long_and_keeps_it_compiled(tiny_cfg):
    from rdl.api import build

    _, _, module = build(tiny_cfg())   # compile.eval=auto, the default
    assert module.compile_options.eval == "auto"
    module._trainer = trainer(val=(3,))
    module.eval()
    module.on_validation_start()
    assert module.model_fn is module.model, "33 batches: eager"
    module._trainer = trainer(fn="predict", predict=(EVAL_BATCHES,))
    module.on_predict_start()
    assert module.model_fn is module.forward_fn is not module.model
    module._trainer = trainer(fn="test", test=(1,))
    module.on_test_start()   # compiled once: it stays
    assert module.model_fn is module.forward_fn
    module._trainer = None


@pytest.mark.parametrize("value", ["yes", 1000, 1, None])
def test_compile_eval_takes_true_false_or_auto(value):
    with pytest.raises(ValueError, match="compile.eval"):
        CompileOptions(eval=value)


@pytest.mark.parametrize("setting,graphs", [("auto", 1), ("true", 2)])
def test_a_short_run_evaluates_eager_unless_told(tmp_path, run_train, setting, graphs):
    """A tiny run's few validation batches run the eager model under ``auto``: one graph
    compiled, training's; ``true`` compiles evaluation's too. (AOTAutograd's graphs:
    counted as Inductor's are, in seconds.)"""
    out = run_train(tmp_path, "task=user-churn", f"compile.eval={setting}",
                    "+compile.kwargs.backend=aot_eager")
    assert out.returncode == 0, out.stderr[-3000:]
    found = re.search(r"torch.compile: (\d+) graphs compiled, 0 graph breaks \((.*?);",
                      out.stdout)
    assert found and int(found[1]) == graphs, out.stdout[-2000:]
    assert ("evaluation eager" in found[2]) == (graphs == 1)
