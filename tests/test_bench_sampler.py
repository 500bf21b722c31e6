"""``python -m rdl.bench sampler``'s train-step comparison runs on rdl's own run pieces
(it had broken when the data settings left the data module's constructor)."""
from __future__ import annotations

from rdl.bench.sampler.train_step import measure_train_step


def test_the_train_step_comparison_times_sampler_loader_and_step(rdl_cache):
    res = measure_train_step(steps=2, warmup=1, overrides=(
        "debug=tiny", f"data.cache_dir={rdl_cache}", "compile.enabled=false"))
    rows = {r["what"].split()[0]: r for r in res["rows"]}
    assert list(rows) == ["sampler.sample_from_nodes", "loader", "compiled"]
    for r in rows.values():
        assert r["ms/batch_median"] > 0 and r["steps"] == 2
    assert rows["compiled"]["vs_train_step"] == 1
