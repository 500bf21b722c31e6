"""The report a run ends with (rdl/report.py): at most 100 columns whatever the task's kind,
the monitored metric first, each metric's direction, the best value of each column marked,
the weeks scored in the heading, and metrics.json as before."""
from __future__ import annotations

import json
import re

import pytest
from hydra.utils import instantiate

from rdl.report import BEST, WIDTH, directions, report, report_text, task_report


def read_report(text: str) -> dict:
    """The report in ``text`` (the first one; a run's whole output will do), parsed:
    ``heading``, ``lines`` (all of the report's), ``metrics`` (in the table's order),
    ``arrows`` (metric -> "↑", "↓" or ""), ``percent`` (metrics shown in %), ``rows``
    (name -> {split: {metric: value as shown}}), ``best`` (name -> the (split, metric)
    columns marked best in its row) and ``notes`` (the lines below the table)."""
    start = text.rfind("\n", 0, text.index(": model vs baselines")) + 1
    lines = text[start:].split("\n\n")[0].split("\n")
    table = next(i for i, line in enumerate(lines)
                 if line.split() and set(line.split()) <= {"val", "test"})
    heading = " ".join(line.strip() for line in lines[:table - 1])  # a long one wraps
    titles, splits = lines[table - 1:table + 1]
    assert splits.split() == ["val", "test"] * (len(splits.split()) // 2), splits
    metrics, arrows, percent = [], {}, set()
    for title in re.split(r"\s{2,}", titles.strip()):
        m = re.fullmatch(r"(\S+)( %)?(?: ([↑↓]))?", title)
        assert m, title
        metrics.append(m.group(1))
        arrows[m.group(1)] = m.group(3) or ""
        if m.group(2):
            percent.add(m.group(1))
    label_width = len(splits) - len(splits.lstrip())
    rows, best, notes = {}, {}, []
    for line in lines[table + 1:]:
        cells = line[label_width:].split()
        if line[:label_width].strip() and len(cells) == 2 * len(metrics) and all(
                re.fullmatch(r"-?[\d.]+\*?|nan|-", c) for c in cells):
            name = line[:label_width].strip()
            rows[name] = {"val": {}, "test": {}}
            best[name] = set()
            for i, cell in enumerate(cells):
                split, metric = ("val", "test")[i % 2], metrics[i // 2]
                rows[name][split][metric] = float(cell.rstrip(BEST)) if cell != "-" else None
                if cell.endswith(BEST):
                    best[name].add((split, metric))
        else:
            notes.append(line)
    return dict(heading=heading, lines=lines, metrics=metrics, arrows=arrows, percent=percent,
                rows=rows, best=best, notes=notes)


def check_fits(report: dict, monitor: str) -> None:
    """Every line fits; the monitored metric is the first column; all metrics' place said."""
    too_wide = [line for line in report["lines"] if len(line) > WIDTH]
    assert not too_wide, too_wide
    assert report["metrics"][0] == monitor
    assert "all metrics: " in said(report), report["notes"]


def said(report: dict) -> str:
    """The notes below the table as one text (a long one wraps)."""
    return " ".join(line.strip() for line in report["notes"])


def res(val: dict, test: dict) -> dict:
    return {"val": val, "test": test}


BINARY = {
    "model": res(dict(auroc=0.7086, average_precision=0.8654, accuracy=0.7618, f1=0.8595),
                 dict(auroc=0.7073, average_precision=0.8684, accuracy=0.7661, f1=0.8622)),
    "constant (train rate)": res(dict(auroc=0.5, average_precision=0.7502, accuracy=0.7502,
                                      f1=0.8572),
                                 dict(auroc=0.5, average_precision=0.7503, accuracy=0.7503,
                                      f1=0.8573)),
    "label mean (last 16)": res(dict(auroc=0.6316, average_precision=0.8071, accuracy=0.7074,
                                     f1=0.8053),
                                dict(auroc=0.6261, average_precision=0.8079, accuracy=0.7010,
                                     f1=0.8005)),
    # beats the model on test AUROC, and on test average precision
    "LightGBM": res(dict(auroc=0.7045, average_precision=0.8650, accuracy=0.7553, f1=0.8591),
                    dict(auroc=0.7144, average_precision=0.8709, accuracy=0.7566, f1=0.8597)),
}
BINARY_HIGHER = dict(auroc=True, average_precision=True, accuracy=True, f1=True)


def test_binary_report(tmp_path):
    # the results in metrics.json's order (Lightning's, alphabetical): auroc is not first
    results = {w: {s: dict(sorted(r[s].items())) for s in r} for w, r in BINARY.items()}
    text = report_text(results, "user-churn", "auroc", "max", higher=BINARY_HIGHER,
                       val_time="2020-08-24", test_time="2020-08-31", backtest=2,
                       metrics_path=tmp_path / "metrics.json")
    r = read_report(text)
    check_fits(r, "auroc")
    assert r["heading"] == ("user-churn: model vs baselines, backtest 2: val 2020-08-24, "
                            "test 2020-08-31 (seed times)")
    # the monitored metric, then the task's order (the ``higher`` dict's)
    assert r["metrics"] == ["auroc", "average_precision", "accuracy", "f1"]
    assert set(r["arrows"].values()) == {"↑"}
    assert ("val", "auroc") in r["best"]["model"]
    assert ("test", "auroc") in r["best"]["LightGBM"]
    assert ("test", "auroc") not in r["best"]["model"]
    assert ("test", "average_precision") in r["best"]["LightGBM"]
    # each column marked once: no ties here
    for split in ("val", "test"):
        for m in r["metrics"]:
            assert sum((split, m) in b for b in r["best"].values()) == 1, (split, m)
    assert r["rows"]["label mean (last 16)"]["test"]["auroc"] == 0.6261
    assert "auroc, model vs the best baseline, LightGBM: val 0.0041 ahead, test 0.0071 behind" \
        in r["notes"]
    assert "auroc is monitored; ↑ higher is better, ↓ lower; * best in its column" in r["notes"]


REGRESSION = {
    "model": res(dict(mae=0.0287, rmse=0.0801, r2=0.912), dict(mae=0.0585, rmse=0.1702, r2=0.41)),
    "zero": res(dict(mae=0.0889, rmse=0.3172, r2=-0.0853), dict(mae=0.0762, rmse=0.2023,
                                                                 r2=-0.1106)),
    "train median": res(dict(mae=0.0889, rmse=0.3172, r2=-0.0853),
                        dict(mae=0.0762, rmse=0.2023, r2=-0.1106)),
    "last label": res(dict(mae=0.0301, rmse=0.0677, r2=0.9506),
                      dict(mae=0.0612, rmse=0.1536, r2=0.3598)),
    "label mean (last 16)": res(dict(mae=0.0290, rmse=0.1007, r2=0.8906),
                                dict(mae=0.0551, rmse=0.1271, r2=0.5611)),  # best test MAE
    "LightGBM": res(dict(mae=0.0291, rmse=0.0681, r2=0.9499), dict(mae=0.0590, rmse=0.1525,
                                                                    r2=0.3684)),
}


def test_regression_report_marks_the_lowest_error_best(tmp_path):
    text = report_text(REGRESSION, "item-sales", "mae", "min",
                       higher=dict(mae=False, rmse=False, r2=True),
                       val_time="2020-09-07", test_time="2020-09-14",
                       metrics_path=tmp_path / "metrics.json")
    r = read_report(text)
    check_fits(r, "mae")
    assert r["heading"] == ("item-sales: model vs baselines, val 2020-09-07, test 2020-09-14 "
                            "(seed times)")
    assert r["arrows"] == {"mae": "↓", "rmse": "↓", "r2": "↑"}
    assert ("val", "mae") in r["best"]["model"]             # lowest MAE
    assert ("test", "mae") in r["best"]["label mean (last 16)"]
    assert ("val", "rmse") in r["best"]["last label"]       # lowest RMSE
    assert ("val", "r2") in r["best"]["last label"]         # highest R²
    assert ("test", "r2") in r["best"]["label mean (last 16)"]
    assert ("val", "mae") not in r["best"]["zero"]
    assert ("mae, model vs the best baseline: val 0.00030 ahead of label mean (last 16), "
            "test 0.00340 behind label mean (last 16)") not in r["notes"]  # one baseline: named once
    assert ("mae, model vs the best baseline, label mean (last 16): val 0.00030 ahead, "
            "test 0.00340 behind") in r["notes"]


def test_the_report_says_which_baseline_the_model_corrects():
    """A node model's prior (chosen on val) and the factor of its correction
    kept on val, in a note; a model without a prior has none."""
    model = dict(REGRESSION["model"], prior="label mean (last 16)",
                 correction={"scale": 0.5, "by_scale": {}})
    r = read_report(report_text({**REGRESSION, "model": model}, "item-sales", "mae", "min"))
    assert ("the model corrects label mean (last 16), its prior chosen on val, its "
            "correction scaled by 0.5 on val") in said(r)
    assert all(len(line) <= WIDTH for line in r["lines"])
    assert "corrects" not in said(read_report(report_text(REGRESSION, "item-sales", "mae",
                                                          "min")))


def test_small_values_keep_four_significant_digits():
    """An MAE of 0.025 is shown as 0.02464, not 0.0246: a lead of 0.00011 over LightGBM is
    seen, and the best is marked on the value that is lowest, not on a tie of rounding."""
    results = {"model": res(dict(mae=0.025634, r2=0.8881), dict(mae=0.024641, r2=0.9182)),
               "LightGBM": res(dict(mae=0.026401, r2=0.8774), dict(mae=0.024531, r2=0.9216))}
    r = read_report(report_text(results, "item-sales", "mae", "min",
                                higher=dict(mae=False, r2=True)))
    assert r["rows"]["model"]["test"] == {"mae": 0.02464, "r2": 0.9182}   # r2: 4 decimals
    assert r["best"]["LightGBM"] == {("test", "mae"), ("test", "r2")}
    assert ("mae, model vs the best baseline, LightGBM: val 0.00077 ahead, test 0.00011 behind"
            in r["notes"])
    # a baseline far off (item-sales' label a year before, 0.1063) keeps them
    far = {**results, "label a year before": res(dict(mae=0.100041, r2=-0.2376),
                                                 dict(mae=0.106321, r2=-0.1236))}
    r = read_report(report_text(far, "item-sales", "mae", "min", higher=dict(mae=False, r2=True)))
    assert r["rows"]["model"]["test"] == {"mae": 0.02464, "r2": 0.9182}
    assert r["rows"]["label a year before"]["test"]["mae"] == 0.10632


def test_metrics_that_do_not_fit_are_named_and_the_monitored_one_stays(tmp_path):
    """Wide values (sales in euros) leave no room for every metric: the monitored one is
    shown, the others as many as fit, and the note names the rest and metrics.json."""
    wide = {w: {s: {m: v * 1e6 for m, v in r[s].items()} for s in r}
            for w, r in REGRESSION.items()}
    wide["constant (train class rates)"] = wide.pop("zero")  # the longest baseline name
    text = report_text(wide, "item-sales", "rmse", "min",
                       higher=dict(mae=False, rmse=False, r2=True),
                       metrics_path=tmp_path / "run" / "metrics.json")
    r = read_report(text)
    check_fits(r, "rmse")
    assert len(r["metrics"]) < 3
    hidden = [m for m in ("mae", "rmse", "r2") if m not in r["metrics"]]
    assert f"not shown: {', '.join(hidden)}; all metrics: {tmp_path}/run/metrics.json" in said(r)
    assert r["rows"]["model"]["val"]["rmse"] == 80100.0


LINK = {
    "model": res(dict(map=0.1641, precision=0.0512, recall=0.2011),
                 dict(map=0.1599, precision=0.0498, recall=0.1987)),
    "popularity (last window)": res(dict(map=0.0412, precision=0.0233, recall=0.0901),
                                    dict(map=0.0398, precision=0.0229, recall=0.0877)),
    "past links": res(dict(map=0.1502, precision=0.0555, recall=0.2120),
                      dict(map=0.1612, precision=0.0530, recall=0.2101)),
}


def test_link_report_shows_map_in_percent():
    text = report_text(LINK, "user-item-purchase", "map", "max",
                       higher=dict(map=True, precision=True, recall=True), percent=("map",),
                       val_time="2020-09-07", test_time="2020-09-14", metrics_path="m.json")
    r = read_report(text)
    check_fits(r, "map")
    assert r["percent"] == {"map"} and r["arrows"]["map"] == "↑"
    assert r["rows"]["model"]["val"]["map"] == 16.41
    assert r["rows"]["model"]["val"]["precision"] == 0.0512
    assert ("val", "map") in r["best"]["model"] and ("test", "map") in r["best"]["past links"]
    assert ("val", "recall") in r["best"]["past links"]
    assert "map %, model vs the best baseline, past links: val 1.39 ahead, test 0.13 behind" \
        in r["notes"]
    assert not any("in %:" in line for line in r["lines"])  # folded into the table


def test_multiclass_with_the_longest_baseline_name_fits():
    results = {"model": res(dict(accuracy=0.61, macro_f1=0.42), dict(accuracy=0.6, macro_f1=0.4)),
               "constant (train class rates)": res(dict(accuracy=0.55, macro_f1=0.1),
                                                   dict(accuracy=0.62, macro_f1=0.1)),
               "label mean (last 16)": res(dict(accuracy=0.5, macro_f1=0.3),
                                           dict(accuracy=0.5, macro_f1=0.3))}
    name = "rel-trial/study-outcome-of-every-site-in-the-next-quarter"  # a long heading wraps
    r = read_report(report_text(results, name, "accuracy", "max",
                                higher=dict(accuracy=True, macro_f1=True), metrics_path="m",
                                val_time="2020-09-07 12:30", test_time="2020-09-14", backtest=12))
    check_fits(r, "accuracy")
    assert len(r["lines"][0]) < len(r["heading"])
    assert r["heading"] == (f"{name}: model vs baselines, backtest 12: val 2020-09-07 12:30, "
                            "test 2020-09-14 (seed times)")
    assert r["metrics"] == ["accuracy", "macro_f1"]
    assert ("test", "accuracy") in r["best"]["constant (train class rates)"]


def test_a_metric_of_unknown_direction_has_no_arrow_nor_mark():
    results = {"model": res(dict(auroc=0.7, odd=1.0), dict(auroc=0.7, odd=1.0)),
               "LightGBM": res(dict(auroc=0.6, odd=2.0), dict(auroc=0.8, odd=2.0))}
    r = read_report(report_text(results, "t", "auroc", "max", higher={}, metrics_path="m"))
    assert r["arrows"] == {"auroc": "↑", "odd": ""}  # the monitored one: from the mode
    assert not any(m == "odd" for b in r["best"].values() for _, m in b)


@pytest.mark.parametrize("overrides,monitor,higher", [
    (("task=user-churn",), "auroc", dict(auroc=True, average_precision=True, accuracy=True,
                                         f1=True)),
    (("task=item-sales",), "mae", dict(mae=False, rmse=False, r2=True)),
    (("experiment=user-item-purchase",), "map", dict(map=True, precision=True, recall=True)),
])
def test_directions_come_from_the_task_s_metrics(tiny_cfg, overrides, monitor, higher):
    cfg = tiny_cfg(*overrides)
    task = instantiate(cfg.task, _convert_="all", backtest=2)
    assert directions(task) == higher and task.monitor == monitor
    results = {"model": res({m: 0.5 for m in higher}, {m: 0.5 for m in higher}),
               "a baseline": res({m: 0.25 for m in higher}, {m: 0.75 for m in higher})}
    r = read_report(task_report(task, results, "run/metrics.json"))
    check_fits(r, monitor)
    assert r["heading"] == (f"{task.name}: model vs baselines, backtest 2: val 2020-08-24, "
                            "test 2020-08-31 (seed times)")
    assert r["percent"] == set(task.kind.percent)


def test_report_prints_and_writes_metrics_json_as_before(tiny_cfg, tmp_path, capsys):
    task = instantiate(tiny_cfg("task=user-churn").task, _convert_="all")
    text = report(task, BINARY, tmp_path)
    assert capsys.readouterr().out == f"\n{text}\n\n"
    # what rdl.backtest and the tests read: the task's name, then each result as given
    assert (tmp_path / "metrics.json").read_text() == json.dumps(
        {"task": "user-churn", **BINARY}, indent=2)


def test_a_short_run_prints_the_report(tmp_path, run_train):
    """End to end: a tiny run of a task whose monitored metric is lower-is-better, moved
    one week back."""
    out = run_train(tmp_path, "task=item-sales", "backtest=1", "compile.enabled=false")
    assert out.returncode == 0, out.stderr[-3000:]
    r = read_report(out.stdout)
    check_fits(r, "mae")
    assert r["heading"] == ("item-sales: model vs baselines, backtest 1: val 2020-08-31, "
                            "test 2020-09-07 (seed times)")
    assert r["arrows"] == {"mae": "↓", "rmse": "↓", "r2": "↑"}
    results = json.loads((tmp_path / "metrics.json").read_text())
    assert list(r["rows"]) == [w for w in results if w != "task"]
    for split in ("val", "test"):
        lowest = min(results[w][split]["mae"] for w in r["rows"])
        marked = [w for w in r["rows"] if (split, "mae") in r["best"][w]]
        assert marked and all(round(results[w][split]["mae"], 4) == round(lowest, 4)
                              for w in marked), (split, marked)
    assert f"all metrics: {tmp_path}/metrics.json" in said(r)


def test_the_heading_says_the_weeks_of_a_task_with_several_seed_times():
    from rdl.report import heading
    assert heading("rel-amazon/user-churn", "2015-10-01", "2016-01-01", eval_times=3) == (
        "rel-amazon/user-churn: model vs baselines, val 2015-10-01, test 2016-01-01 (first of "
        "up to 3 seed times)")
    assert heading("t") == "t: model vs baselines"


def test_a_split_of_few_rows_is_named_in_the_report(tiny_cfg, tmp_path, capsys):
    """A binary split's metrics rest on its rarer class: 3 positives of 500 rows is thin,
    200 of 500 is not; a regression's on its rows; a link task's on its seeds with a
    target. The note comes in the report, under the table."""
    import pandas as pd

    from rdl.tasks.kinds import FEW, few_rows
    churn = instantiate(tiny_cfg("task=user-churn").task, _convert_="all")
    label = churn.target_col

    def split(positive, rows):
        return pd.DataFrame({label: [1] * positive + [0] * (rows - positive)})

    assert few_rows(churn, {"val": split(200, 500), "test": split(300, 500)}) == ""
    note = few_rows(churn, {"val": split(3, 500), "test": split(480, 500)})
    assert note.startswith(f"few rows: val 3 positive of 500 rows, test 20 negative of 500 "
                           f"rows: a metric over fewer than {FEW} says little")
    assert few_rows(churn, {"val": split(FEW, 2 * FEW), "test": split(FEW - 1, 2 * FEW)}) \
        .startswith(f"few rows: test {FEW - 1} positive of {2 * FEW} rows:")

    sales = instantiate(tiny_cfg("task=item-sales").task, _convert_="all")
    values = pd.DataFrame({sales.target_col: [0.0] * 150 + [None] * 10})
    assert few_rows(sales, {"val": values, "test": values.head(60)}) == (
        f"few rows: test 60 rows: a metric over fewer than {FEW} says little (more seeds a "
        "split: a longer window, earlier split times; or many windows: python -m rdl.backtest)")

    links = instantiate(tiny_cfg("task=user-item-purchase").task, _convert_="all")
    lists = pd.DataFrame({links.target_col: [[1, 2]] * 40 + [[]] * 200})
    assert few_rows(links, {"test": lists}).startswith(
        "few rows: test 40 seeds with a target of 240 rows:")

    text = report(churn, BINARY, tmp_path, {"val": split(3, 500), "test": split(200, 500)})
    r = read_report(text)
    check_fits(r, "auroc")
    assert "few rows: val 3 positive of 500 rows: a metric over fewer than" in said(r)
    assert "few rows" not in report(churn, BINARY, tmp_path, {"val": split(200, 500)})
    capsys.readouterr()
