"""``python -m rdl.bench scale`` (rdl/bench/scale.py, scale_stages.py): the cost curve's
rows, ratios and sums, each stage's own peak, and the benchmark end to end at a tiny
scale."""
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from rdl.bench import scale
from rdl.bench.report import reset_peak_rss
from rdl.bench.scale_stages import STAGES, Meter

#: a tiny model, a few steps, eager: the stages' plumbing, not their speed
TINY = ["model.channels=16", "model.encoder_layers=1", "data.batch_size=64",
        "data.num_neighbors=[8,4]", "trainer.limit_train_batches=3", "compile.enabled=false"]


def test_each_stage_against_scale_1_and_the_first_run_summed():
    rows = [{"scale": s, "stage": st, "seconds": s * (i + 1), "peak_gib": s + i / 10}
            for s in (0.5, 1.0) for i, st in enumerate(STAGES)]
    rows[1]["seconds"] = rows[1]["peak_gib"] = None   # read failed at scale 0.5
    got = scale.curve(rows)
    half = {r["stage"]: r for r in got if r["scale"] == 0.5}
    one = {r["stage"]: r for r in got if r["scale"] == 1.0}
    assert half["write"]["vs_scale_1"] == pytest.approx(0.5)
    assert half["read"]["vs_scale_1"] is None and scale.SUM not in half  # its read failed
    assert one[scale.SUM]["seconds"] == sum(one[s]["seconds"] for s in scale.FIRST_RUN)
    assert one[scale.SUM]["peak_gib"] == max(one[s]["peak_gib"] for s in scale.FIRST_RUN)
    assert one[scale.SUM]["vs_scale_1"] == 1.0
    assert "depth2" not in scale.FIRST_RUN   # inside trees: not counted twice
    table = {r["stage"]: r for r in scale.pivot(got)}
    assert table["write"]["scale 0.5"] == "0.5 s, 0.50 GiB, x0.50"
    assert table["read"]["scale 0.5"] == "failed"
    # no scale 1 in the run: no ratios
    assert all(r["vs_scale_1"] is None for r in scale.curve([dict(r) for r in rows[:9]]))


def test_a_stage_s_peak_is_its_own_and_an_outer_one_keeps_its_parts():
    from rdl import progress

    if not reset_peak_rss():
        pytest.skip("this system does not let a process reset its peak memory")
    meter = Meter()
    progress.listeners.append(meter)
    try:
        with progress.stage("outer"):
            with progress.stage("big"):
                big = np.ones(2**28 // 8)   # 256 MiB, every page written
                del big
            with progress.stage("small"):
                np.ones(2**20).sum()
    finally:
        progress.listeners.remove(meter)
    got = {d["name"]: d for d in meter.done}
    assert list(got) == ["big", "small", "outer"]
    assert got["big"]["peak_gib"] - got["small"]["peak_gib"] >= 0.2   # freed before small
    assert got["outer"]["peak_gib"] >= got["big"]["peak_gib"]
    assert got["outer"]["seconds"] >= got["big"]["seconds"] + got["small"]["seconds"]


def test_the_anonymous_peak_leaves_out_the_pages_of_a_mapped_file(tmp_path):
    """``peak_anon_gib``: the process's own memory alone. A 256 MiB array counts in both
    peaks; reading every page of a mapped 256 MiB file counts in the resident peak only
    (the kernel can drop those pages: a mapped cache's)."""
    import time

    from rdl import progress
    from rdl.bench.report import anon_rss_gib

    if not reset_peak_rss() or anon_rss_gib() is None:
        pytest.skip("this system does not report a process's peak or anonymous memory")
    path = tmp_path / "mapped.bin"
    np.ones(2**28 // 8).tofile(path)
    meter = Meter()
    progress.listeners.append(meter)
    try:
        with progress.stage("own"):
            own = np.ones(2**28 // 8)
            time.sleep(0.3)   # the sampler's turn
            del own
        with progress.stage("mapped"):
            mapped = np.memmap(path, dtype=np.float64, mode="r")
            assert mapped.sum() == 2**28 // 8   # every page read
            time.sleep(0.3)
            del mapped
    finally:
        progress.listeners.remove(meter)
    got = {d["name"]: d for d in meter.done}
    start = min(got["own"]["peak_anon_gib"], got["mapped"]["peak_anon_gib"])
    assert got["own"]["peak_anon_gib"] - start >= 0.2
    assert got["mapped"]["peak_gib"] - got["mapped"]["peak_anon_gib"] >= 0.2
    assert got["mapped"]["peak_anon_gib"] < got["own"]["peak_anon_gib"] - 0.2


def test_the_files_come_from_the_writer_or_from_files():
    with pytest.raises(SystemExit):
        scale.main(["--stages", "read"])               # nothing to read
    with pytest.raises(SystemExit):
        scale.main(["--files", "x", "--scale", "1"])   # and the write stage too


def check_rows(out, stages):
    """Every stage's row has its seconds and peak (and its setup's), and so has the sum of
    a first run where all its stages ran; the tables, the JSON and the logs are written."""
    rows = list(csv.DictReader(open(out / "scale.csv")))
    summed = [scale.SUM] if set(scale.FIRST_RUN) <= set(stages) else []
    assert [r["stage"] for r in rows] == [*stages, *summed]
    for r in rows:
        assert not r["error"], r
        assert float(r["seconds"]) > 0 and float(r["peak_gib"]) > 0, r
        if r["stage"] != scale.SUM:
            assert float(r["setup_s"]) >= 0 and float(r["setup_peak_gib"]) > 0, r
    assert (out / "scale.md").read_text().count("| 0.002 |") == len(rows)
    saved = json.loads((out / "scale.json").read_text())
    assert [r["stage"] for r in saved["rows"]] == [*stages, *summed]
    assert (out / "scale-curve.md").exists()
    for stage in stages:
        assert (out / "logs" / f"scale-0.002-{stage}.log").exists()
    return {r["stage"]: r for r in saved["rows"]}


def test_the_files_written_and_read_at_a_tiny_scale(tmp_path):
    stages = ["write", "read"]
    scale.main(["--scale", "0.002", "--stages", *stages, "--out", str(tmp_path)])
    rows = check_rows(tmp_path, stages)
    assert rows["write"]["largest_week"] < rows["write"]["rows"] / 10   # a week at a time
    # the database's rows: the written transactions plus the customers and articles
    assert rows["read"]["rows"] == (rows["write"]["rows"] + rows["write"]["customers"]
                                    + rows["write"]["articles"])
    assert [d["name"] for d in rows["read"]["inner"]] == ["loading the database"]


@pytest.fixture
def tiny_out(tmp_path, request):
    stages = request.param
    scale.main(["--scale", "0.002", "--stages", *stages, "--out", str(tmp_path), "--set", *TINY])
    return tmp_path, stages


@pytest.mark.slow   # every stage: nine processes that import torch, the trees, three trainings
@pytest.mark.parametrize("tiny_out", [list(STAGES)], indirect=True)
def test_every_stage_at_a_tiny_scale(tiny_out):
    rows = check_rows(*tiny_out)
    inner = {s: [d["name"] for d in r.get("inner", [])] for s, r in rows.items()}
    assert "depth-2 synthesis" in inner["trees"]   # the trees run it again
    assert "graph build" in inner["graph"]
    assert "graph read from the cache" in inner["restart"]   # the graph cache is warm
    # the stages' setups start from what those before them left: the tables stage's split
    # tables (no SQL run again), the trees stage's prepared data (no tree fitted again)
    for stage in ("depth2", "trees", "epoch"):
        assert not any(n.startswith("split tables") for n in inner[stage]), stage
    assert "prepared data read from the cache" in inner["epoch"]
    assert "depth-2 synthesis" not in inner["epoch"]
    assert rows["epoch"]["batches"] == 3 and rows["restart"]["batches"] == 1
    assert rows["epoch"]["rows"] > 0 and rows["tables"]["rows"] > 0
    assert rows["checks"]["rows"] == rows["read"]["rows"]
    curve = list(csv.DictReader(open(tiny_out[0] / "scale-curve.csv")))
    assert [r["stage"] for r in curve] == [*STAGES, scale.SUM]


def test_a_stage_past_max_gib_stops_and_says_so(tmp_path):
    """--max-gib: the stage's process ends once its resident memory passes it (importing
    pandas alone passes 0.05 GiB), its row an error, not a measurement."""
    scale.main(["--scale", "0.002", "--stages", "write", "--max-gib", "0.05",
                "--out", str(tmp_path)])
    row = json.loads((tmp_path / "scale.json").read_text())["rows"][0]
    assert row["seconds"] is None and "stopped: resident memory passed 0.05 GiB" in row["error"]
    assert row["stopped_at_gib"] > 0.05
    assert "failed" in (tmp_path / "scale-curve.md").read_text()


def test_a_curve_stopped_midway_keeps_the_stages_it_measured(tmp_path, monkeypatch):
    """The report is rewritten after each stage: a curve of hours stopped in its third
    stage (here, Ctrl-C in the stage's process) leaves the first two's rows."""
    from rdl.bench.train import runner
    calls = []

    def child(spec, timeout, log, **kwargs):
        calls.append(spec["stage"])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return {"seconds": float(len(calls)), "peak_gib": 0.5, "setup_s": 0.0,
                "setup_peak_gib": 0.1}
    monkeypatch.setattr(runner, "_run_child", child)
    with pytest.raises(KeyboardInterrupt):
        scale.main(["--scale", "0.002", "--stages", "write", "read", "checks",
                    "--out", str(tmp_path), "--work", str(tmp_path)])
    saved = json.loads((tmp_path / "scale.json").read_text())["rows"]
    assert [(r["stage"], r["seconds"]) for r in saved] == [("write", 1.0), ("read", 2.0)]
    assert (tmp_path / "scale-curve.md").read_text().count("0.50 GiB") == 2


def test_a_kept_work_folder_runs_later_stages_in_its_caches(tmp_path, monkeypatch):
    """--keep keeps a scale's work folder; --in runs stages in it again (its files and
    rdl cache: the RDL_CACHE the stages see), and keeps it."""
    from rdl.bench.train import runner
    seen = []

    def child(spec, timeout, log, env=None, **kwargs):
        seen.append((spec["stage"], spec["files"], env["RDL_CACHE"]))
        Path(spec["files"]).mkdir(parents=True, exist_ok=True)
        return {"seconds": 1.0, "peak_gib": 0.5, "setup_s": 0.0, "setup_peak_gib": 0.1}
    monkeypatch.setattr(runner, "_run_child", child)
    work = tmp_path / "work"
    work.mkdir()
    scale.main(["--scale", "0.002", "--stages", "write", "read", "--keep",
                "--out", str(tmp_path / "a"), "--work", str(work)])
    kept = next(work.iterdir())
    assert seen[0][1] == str(kept / "files") and seen[0][2] == str(kept / "cache")
    scale.main(["--scale", "0.002", "--stages", "restart", "--in", str(kept),
                "--out", str(tmp_path / "b")])
    assert seen[-1] == ("restart", str(kept / "files"), str(kept / "cache"))
    assert kept.is_dir() and list(work.iterdir()) == [kept]
    with pytest.raises(SystemExit):   # not a kept work folder
        scale.main(["--scale", "0.002", "--stages", "restart", "--in", str(tmp_path / "b")])
