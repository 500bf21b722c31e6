"""``python -m rdl.bench ranker``: the ranker per week beside the simple link baselines."""
import csv

import pytest

from rdl.bench import ranker


def test_ranker_bench_reports_each_week_and_the_leads(tmp_path, rdl_cache):
    ranker.main(["--backtest", "0", "1", "--set", "debug=tiny", f"data.cache_dir={rdl_cache}",
                 "data.ranker.rounds=20", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "ranker.csv")))
    assert [(r["backtest"], r["split"]) for r in rows] == [("0", "val"), ("0", "test"),
                                                          ("1", "val"), ("1", "test")]
    # backtest 1 moves both weeks back one window: its test week is backtest 0's val week
    assert rows[3]["time"] == rows[0]["time"]
    for r in rows:
        assert 0 < float(r["LightGBM ranker"]) <= 1 and 0 < float(r["candidate recall"]) <= 1
        assert float(r["peak GiB"]) > 0 and float(r["ranker s"]) > 0
    leads = list(csv.DictReader(open(tmp_path / "ranker-leads.csv")))
    assert leads[0]["weeks"] == "4" and "(" in leads[0]["ranker over past links"]
    gain = list(csv.DictReader(open(tmp_path / "ranker-gain.csv")))[0]
    shares = {k: float(v.rstrip(" %")) for k, v in gain.items() if k != "task"}
    assert {"pair", "co-occurrence", "popularity", "entity", "item"} <= set(shares)
    assert sum(shares.values()) == pytest.approx(100, abs=0.5)
