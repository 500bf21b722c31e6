"""``python -m rdl.bench dfs``: one tiny scale end to end, its report written."""
import csv

from rdl.bench import dfs


def test_the_dfs_benchmark_reports_rows_features_and_memory(tmp_path, rdl_cache, monkeypatch):
    monkeypatch.setenv("RDL_CACHE", str(rdl_cache))
    dfs.main(["--scale", "0.002", "--tasks", "item-sales", "--splits", "val", "test",
              "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "dfs.csv")))
    assert [r["split"] for r in rows] == ["val", "test"]
    for r in rows:
        assert int(r["rows"]) > 0 and int(r["depth 2 features"]) > int(r["depth 1 features"]) > 0
        assert float(r["depth 2 s"]) > 0 and float(r["peak GiB"]) > 0
