"""benchmarks/prepared_digest.py: a digest per tensor, array and frame, keyed by where it
sits, that tells one changed value, dtype or shape apart, and nothing else."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import torch

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "prepared_digest.py"


def _script():
    spec = importlib.util.spec_from_file_location("prepared_digest", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _walked(x) -> dict:
    out = {}
    _script().walk(x, "x", out)
    return out


def test_the_digest_tells_a_changed_value_dtype_or_shape_apart():
    base = {"t": torch.arange(6.0), "a": np.arange(4), "f": pd.DataFrame({"c": [1, 2]}),
            "s": [pd.Timestamp("2020-01-01"), 3]}
    same = {"t": torch.arange(6.0), "a": np.arange(4), "f": pd.DataFrame({"c": [1, 2]}),
            "s": [pd.Timestamp("2020-01-01"), 3]}
    assert _walked(base) == _walked(same)
    assert sorted(_walked(base)) == ["x[a]", "x[f]", "x[s][0]", "x[s][1]", "x[t]"]
    changed = [("t", torch.tensor([0, 1, 2, 3, 4, 5.0000005])), ("t", torch.arange(6)),
               ("t", torch.arange(6.0).view(2, 3)), ("a", np.arange(4).astype(np.int32)),
               ("f", pd.DataFrame({"c": [1, 3]})), ("f", pd.DataFrame({"c": [1.0, 2.0]})),
               ("f", pd.DataFrame({"d": [1, 2]}))]
    for key, value in changed:
        got = _walked({**base, key: value})
        assert [k for k in got if got[k] != _walked(base)[k]] == [f"x[{key}]"], key
