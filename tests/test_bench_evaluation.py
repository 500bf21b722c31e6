"""``python -m rdl.bench evaluation``: the compiled and the eager model timed over the same
val batches, and the batches after which evaluation's compile pays."""
from __future__ import annotations

import csv
import math

import pytest


def test_the_benchmark_times_both_models_and_the_compile(rdl_cache, tmp_path, capsys):
    import torch
    from torch._dynamo.utils import counters

    from rdl.bench.evaluation import main
    from rdl.training.compile import EVAL_BATCHES

    torch._dynamo.reset()
    counters.clear()
    main(["--tasks", "user-churn", "--batches", "2", "--repeat", "2", "--set", "debug=tiny",
          f"data.cache_dir={rdl_cache}", "+compile.kwargs.backend=aot_eager",
          "--out", str(tmp_path)])
    assert int(counters["stats"]["unique_graphs"]) == 1   # evaluation's graph, once
    with open(tmp_path / "evaluation.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert row["task"] == "user-churn" and row["device"] == "cpu"
    assert 1 <= int(row["batches"]) <= 2   # (at most --batches: the tiny val may hold fewer)
    first, c, e = (float(row[k]) for k in ("first_call_s", "compiled_ms", "eager_ms"))
    assert first > 0 and c > 0 and e > 0
    even = float(row["even_after"])
    assert math.isinf(even) if e <= c else math.isclose(even, first / ((e - c) / 1e3),
                                                        rel_tol=1e-6)
    assert int(row["auto_threshold"]) == EVAL_BATCHES
    assert "Evaluation compiled against eager on cpu" in capsys.readouterr().out


def test_bad_counts_are_refused():
    from rdl.bench.evaluation import main

    with pytest.raises(SystemExit):
        main(["--batches", "0"])
