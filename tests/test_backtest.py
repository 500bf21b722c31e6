"""rdl.backtest: a sweep over moved split times, compared against a plain computation."""
import json
import math
import re

import pandas as pd
import pytest

from tests.zygote import command
import yaml

from rdl.backtest import read_runs, table
from rdl.backtest.cli import main


def fake_run(folder, job, overrides, backtest, model, lgbm, k=4, task="item-sales",
             mode="min", metric="mae"):
    """A run folder as ``python -m rdl.train -m`` leaves it: ``.hydra/config.yaml``,
    ``.hydra/overrides.yaml`` and ``metrics.json`` (``model``, ``lgbm``: val, test)."""
    run = folder / str(job)
    (run / ".hydra").mkdir(parents=True)
    config = {"backtest": backtest, "task": {
        "name": task, "monitor": metric, "monitor_mode": mode, "window": "7d",
        "val_timestamp": "2020-09-07", "test_timestamp": "2020-09-14"}}
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    res = lambda v, t: {"val": {metric: v}, "test": {metric: t}}  # noqa: E731
    (run / "metrics.json").write_text(json.dumps({
        "task": task, "model": res(*model), f"label mean (last {k})": res(0.5, 0.5),
        "LightGBM": res(*lgbm)}))


def test_leads_means_and_wins_match_a_plain_computation(tmp_path, capsys):
    # MAE: lower is better, so the model's lead is baseline - model.
    runs = [(0, (0.020, 0.030), (0.021, 0.029)), (2, (0.022, 0.025), (0.024, 0.026)),
            (4, (0.030, 0.020), (0.030, 0.023))]
    for job, (back, model, lgbm) in enumerate(runs):
        fake_run(tmp_path, job, [f"backtest={back}"], back, model, lgbm, k=2 + job)
    main([str(tmp_path)])
    printed = capsys.readouterr().out
    assert (tmp_path / "backtest.md").read_text() + "\n" == printed
    val, test = printed.split("on test")
    # weeks: each job's val and test, moved back 7 days per backtest step
    assert "| backtest=4 | 2020-08-10 |" in val and "| backtest=4 | 2020-08-17 |" in test
    assert printed.index("backtest=0 |") < printed.index("backtest=4 |")  # latest first
    lead = {s: [lgbm[i] - model[i] for _, model, lgbm in runs]
            for i, s in enumerate(("val", "test"))}
    for split, values in [*lead.items(), ("all", lead["val"] + lead["test"])]:
        n = len(values)
        mean = sum(values) / n
        se = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
        wins = sum(v > 0 for v in values)
        # four significant digits of the typical MAE (0.025: 5 decimals; the label mean's
        # 0.5 takes none from them)
        assert f"{mean:+.5f} ± {se:.5f} ({wins}/{n})" in printed.split("| LightGBM ")[-1]
    # the label mean's k differs per run (chosen on each run's val): one baseline
    assert printed.count("| label mean |") == 3 and "last 3" not in printed  # 2 columns, 1 row


def test_auroc_lead_is_model_minus_baseline(tmp_path):
    churn = dict(task="user-churn", mode="max", metric="auroc")
    fake_run(tmp_path, 0, ["task=user-churn", "seed=0"], 0, (0.71, 0.70), (0.70, 0.72), **churn)
    fake_run(tmp_path, 1, ["task=user-churn", "seed=1"], 0, (0.72, 0.73), (0.70, 0.72), **churn)
    text = re.sub(" +", " ", table(read_runs(tmp_path)))  # the columns' padding aside
    val, test = text.split("on test")
    assert "| seed=0 | 2020-09-07 | 0.7100* | 0.5000 | 0.7000 |" in val  # the best marked
    assert "| seed=0 | 2020-09-14 | 0.7000 | 0.5000 | 0.7200* |" in test
    assert "| LightGBM | +0.0150 ± 0.0050 (2/2) | -0.0050 ± 0.0150 (1/2) |" in text


def test_small_errors_keep_four_significant_digits(tmp_path):
    """An MAE of 0.025 shows as 0.02464 and a lead of 0.00011 as such, as in the report."""
    for job in range(2):
        fake_run(tmp_path, job, [f"backtest={job}"], job, (0.02464, 0.02563),
                 (0.02453, 0.02640), k=2)
    text = re.sub(" +", " ", table(read_runs(tmp_path)))
    assert "0.5000" in text   # four decimals while a value of 0.1 or more is in the table
    # the fake label mean's 0.5 replaced by a small error too
    for path in tmp_path.glob("*/metrics.json"):
        metrics = json.loads(path.read_text())
        metrics["label mean (last 2)"] = {"val": {"mae": 0.03}, "test": {"mae": 0.03}}
        path.write_text(json.dumps(metrics))
    text = re.sub(" +", " ", table(read_runs(tmp_path)))
    assert "| backtest=0 | 2020-09-07 | 0.02464 | 0.03000 | 0.02453* |" in text
    assert "| LightGBM | -0.00011 ± 0.00000 (0/2) | +0.00077 ± 0.00000 (2/2) |" in text


#: each kind's baselines, as rdl.train names them, and its monitored metric
KINDS = {"user-churn": (["constant (train rate)", "last label", "label mean (last 16)",
                         "LightGBM"], "auroc", "max"),
         "item-sales": (["zero", "train median", "last label", "label mean (last 16)",
                         "LightGBM"], "mae", "min"),
         "user-item-purchase": (["popularity (last window)", "past links"], "map", "max")}


@pytest.mark.parametrize("task", KINDS)
def test_the_table_fits_100_columns_and_marks_the_best(tmp_path, task):
    who, metric, mode = KINDS[task]
    for job, back in enumerate((0, 2, 4, 6, 8, 10)):
        run = tmp_path / str(job)
        fake_run(tmp_path, job, [f"task={task}", f"backtest={back}"], back, (0.5, 0.5),
                 (0.5, 0.5), task=task, mode=mode, metric=metric)
        # the model best on val, the last baseline on test
        values = {w: (0.3 + 0.01 * i, 0.3 + 0.01 * i) for i, w in enumerate(who)}
        values["model"] = (0.2, 0.5) if mode == "min" else (0.9, 0.1)
        values[who[-1]] = (0.4, 0.1) if mode == "min" else (0.4, 0.9)
        (run / "metrics.json").write_text(json.dumps(
            {"task": task, **{w: {"val": {metric: v}, "test": {metric: t}}
                              for w, (v, t) in values.items()}}))
    text = table(read_runs(tmp_path))
    assert max(len(line) for line in text.splitlines()) <= 100, text
    val, test = re.sub(" +", " ", text).split("on test")
    for rows, marked in ((val, 2), (test, 2 + len(who))):  # the model's cell, the last one's
        rows = [line.split(" | ") for line in rows.splitlines() if line.startswith("| backtest=")]
        assert len(rows) == 6
        for cells in rows:
            assert [i for i, c in enumerate(cells) if "*" in c] == [marked], cells
    assert "| backtest=10 | 2020-06-29 |" in val


def test_bad_folders_are_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path)])
    assert f"{tmp_path}: no metrics.json under it" in capsys.readouterr().err
    fake_run(tmp_path, 0, [], 0, (0.1, 0.1), (0.1, 0.1))
    fake_run(tmp_path, 1, [], 0, (0.7, 0.7), (0.7, 0.7), task="user-churn", mode="max",
             metric="auroc")
    with pytest.raises(SystemExit):
        main([str(tmp_path)])
    assert "holds runs of several tasks ['item-sales', 'user-churn']" in capsys.readouterr().err
    assert not (tmp_path / "backtest.md").exists()


def test_backtest_setting_reaches_the_task_and_its_splits(tiny_cfg):
    """``backtest=3`` as rdl.train composes it: the task, its split tables, the graph and
    the LightGBM baseline all end three windows earlier."""
    from rdl.api import build
    task, dm, _ = build(tiny_cfg("task=user-churn", "backtest=3", "compile.enabled=false"))
    default = read_task(tiny_cfg("task=user-churn"))
    week = pd.Timedelta("7D")
    assert (task.val_time, task.test_time) == (default.val_time - 3 * week,
                                                 default.test_time - 3 * week)
    assert dm.tables["train"]["timestamp"].max() == task.val_time - week
    assert (dm.tables["val"]["timestamp"] == task.val_time).all()
    assert (dm.tables["test"]["timestamp"] == task.test_time).all()
    # the graph holds no row after the moved test time
    for nt in dm.data.node_types:
        if "time" in dm.data[nt]:
            assert dm.data[nt].time.max() <= task.test_time.value // 10**9, nt
    assert dm.tree_fit.frames["test"]["timestamp"].eq(task.test_time).all()


def read_task(cfg):
    from hydra.utils import instantiate
    return instantiate(cfg.task, _convert_="all")


def test_a_relbench_task_s_times_come_from_the_run(tmp_path):
    """A RelBench task's config leaves its times and metric null (they are its folder's):
    the run's task.json, written by rdl.train, says what it used."""
    for job, back in enumerate((0, 1)):
        fake_run(tmp_path, job, [f"backtest={back}"], back, (0.6, 0.7), (0.55, 0.65),
                 task="user-churn", mode="max", metric="auroc")
        run = tmp_path / str(job)
        config = yaml.safe_load((run / ".hydra" / "config.yaml").read_text())
        config["task"].update(val_timestamp=None, test_timestamp=None, window=None,
                              monitor=None, monitor_mode=None)
        (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
        val = pd.Timestamp("1972-08-16 09:36") - back * pd.Timedelta(days=30)
        (run / "task.json").write_text(json.dumps({
            "name": "user-churn", "val": str(val), "test": str(val + pd.Timedelta(days=120)),
            "monitor": "auroc", "monitor_mode": "max"}))
    runs = read_runs(tmp_path)
    assert [str(r["val"]) for r in runs] == ["1972-08-16", "1972-07-17"]
    assert all(r["monitor"] == "auroc" and r["higher"] for r in runs)
    assert "1972-07-17" in table(runs)


def test_several_sweeps_give_one_row_each_against_a_plain_computation(tmp_path, capsys):
    """python -m rdl.backtest A B: per sweep the mean ± standard error of the model, both
    LightGBMs and the simple baseline best on val, and the model's lead over each."""
    scores = {  # per sweep and run: model, depth 2, depth 1, last label, label mean, and the
        # model as trained (its correction at factor 1; val, test)
        "churn": [((0.75, 0.74), (0.74, 0.73), (0.73, 0.74), (0.60, 0.62), (0.61, 0.58),
                   (0.74, 0.75)),
                  ((0.72, 0.76), (0.73, 0.74), (0.735, 0.72), (0.59, 0.64), (0.62, 0.57),
                   (0.71, 0.70)),
                  ((0.77, 0.71), (0.75, 0.70), (0.74, 0.71), (0.58, 0.61), (0.63, 0.60),
                   (0.77, 0.71))]}
    folder = tmp_path / "churn"
    for job, (model, deep, lgbm, last, mean, trained) in enumerate(scores["churn"]):
        fake_run(folder, job, [f"backtest={2 * job}"], 2 * job, model, lgbm,
                 task="user-churn", mode="max", metric="auroc")
        path = folder / str(job) / "metrics.json"
        metrics = json.loads(path.read_text())
        for who, (v, t) in {"LightGBM (depth 2)": deep, "last label": last,
                            "label mean (last 4)": mean}.items():
            metrics[who] = {"val": {"auroc": v}, "test": {"auroc": t}}
        res = lambda v, t: {"val": {"auroc": v}, "test": {"auroc": t}}  # noqa: E731
        metrics["model"]["correction"] = {"scale": 0.5, "by_scale": {
            "1": res(*trained), "0.5": res(*model)}}
        path.write_text(json.dumps(metrics))
    other = tmp_path / "sales"
    for job in range(2):  # no depth-2 LightGBM in this one: its cells are "-"
        fake_run(other, job, [f"backtest={job}"], job, (0.02, 0.03), (0.021, 0.031))
    main([str(folder), str(other), "--out", str(tmp_path / "overview.md")])
    printed = capsys.readouterr().out
    assert (tmp_path / "overview.md").read_text() + "\n" == printed
    row = next(line for line in printed.splitlines() if line.startswith("| churn"))
    cells = [c.strip() for c in row.strip("|").split("|")]

    def flat(i):
        return [v for run in scores["churn"] for v in run[i]]

    def mean_se(values):
        n = len(values)
        m = sum(values) / n
        return m, math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1) / n)

    assert cells[2] == "6 (6 distinct)"
    for i, col in ((0, 3), (1, 4), (2, 5)):
        assert cells[col] == "{:.4f} ± {:.4f}".format(*mean_se(flat(i)))
    # the last label's val mean (0.59) beats the label mean's (0.62)? no: 0.62 > 0.59, so the
    # label mean is chosen on val, although the last label is better on test
    assert cells[6].startswith("label mean: ")
    lead = [a - b for a, b in zip(flat(0), flat(1))]
    m, se = mean_se(lead)
    assert cells[7] == f"{m:+.4f} ± {se:.4f} ({sum(v > 0 for v in lead)}/6)"
    assert cells[13] == ("ahead" if m > se else "behind" if m < -se else "level")
    # the model with its correction as trained (where scaled on val: these runs' factor 1)
    lead = [a - b for a, b in zip(flat(5), flat(1))]
    m, se = mean_se(lead)
    assert cells[8] == f"{m:+.4f} ± {se:.4f} ({sum(v > 0 for v in lead)}/6)"
    # the prior: per run the LightGBM better on val (depth 2, depth 1, depth 2 here)
    prior = [v for run, pick in zip(scores["churn"], (1, 2, 1)) for v in run[pick]]
    lead = [a - b for a, b in zip(flat(0), prior)]
    m, se = mean_se(lead)
    assert cells[10] == f"{m:+.4f} ± {se:.4f} ({sum(v > 0 for v in lead)}/6)"
    # last: each printed baseline the model trails by more than a standard error
    names = ("LightGBM (depth 2)", "LightGBM", "last label", "label mean (last 4)")
    behind = []
    for i, who in enumerate(names, start=1):
        m, se = mean_se([a - b for a, b in zip(flat(0), flat(i))])
        if m < -se:
            behind.append(who)
    assert cells[14] == (", ".join(behind) or "none")
    assert "LightGBM (depth 2)" not in behind and cells[13] != "behind"
    sales = re.sub(" +", " ", next(line for line in printed.splitlines()
                                   if line.startswith("| sales")))
    assert "| 4 (3 distinct) | 0.02500 ± 0.00289 | - |" in sales  # weeks: val of 0 = test of 1
    assert sales.split(" | ")[8] == "-", "no correction scaled in these runs"


@pytest.mark.parametrize("split", ["test", "val"])
def test_the_overview_can_average_one_split_only(tmp_path, capsys, split):
    """--split test: every cell over the test scores alone; the best simple baseline is
    still chosen on val (the last label here, although the label mean wins on test)."""
    runs = [((0.02, 0.030), (0.021, 0.031), (0.03, 0.028)),
            ((0.024, 0.026), (0.022, 0.029), (0.031, 0.027)),
            ((0.019, 0.033), (0.023, 0.030), (0.029, 0.031))]   # model, LightGBM, last label
    for name in ("a", "b"):
        for job, (model, lgbm, last) in enumerate(runs):
            fake_run(tmp_path / name, job, [f"backtest={2 * job}"], 2 * job, model, lgbm)
            path = tmp_path / name / str(job) / "metrics.json"
            metrics = json.loads(path.read_text())
            metrics["last label"] = {"val": {"mae": last[0]}, "test": {"mae": last[1]}}
            metrics["label mean (last 4)"] = {"val": {"mae": 0.04}, "test": {"mae": 0.025}}
            path.write_text(json.dumps(metrics))
    main([str(tmp_path / "a"), str(tmp_path / "b"), "--split", split])
    printed = capsys.readouterr().out
    assert f"{split} scores only" in printed
    cells = [c.strip() for c in next(line for line in printed.splitlines()
                                     if line.startswith("| a")).strip("|").split("|")]
    i = 1 if split == "test" else 0

    def mean_se(values):
        m = sum(values) / len(values)
        return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))

    model, lgbm, last = ([r[j][i] for r in runs] for j in range(3))
    assert cells[2] == "3 (3 distinct)"   # three runs, one score each
    assert cells[3] == "{:.5f} ± {:.5f}".format(*mean_se(model))
    assert cells[6] == "last label: {:.5f} ± {:.5f}".format(*mean_se(last))
    lead = [b - a for a, b in zip(model, lgbm)]   # MAE: lower is better
    assert cells[9] == "{:+.5f} ± {:.5f} ({}/3)".format(*mean_se(lead), sum(v > 0 for v in lead))


# -- link tasks: every metric, any baseline, and their row in the overview ------------------
LINK_METRICS = ("map", "precision", "recall")


def link_run(folder, job, back, values, task="user-item-purchase", beside=False):
    """A link task's run folder; ``values``: who -> {metric: (val, test)}. A
    "candidate recall" goes into the split dicts, or (``beside``) beside them as
    ``{"val": ..., "test": ...}``."""
    run = folder / str(job)
    (run / ".hydra").mkdir(parents=True)
    metrics = {m: {"_target_": f"rdl.training.metrics.Link{n}", "k": 12}
               for m, n in zip(LINK_METRICS, ("MAP", "Precision", "Recall"))}
    config = {"backtest": back, "task": {
        "name": task, "monitor": "map", "monitor_mode": "max", "window": "7d",
        "val_timestamp": "2020-09-07", "test_timestamp": "2020-09-14", "metrics": metrics}}
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([f"backtest={back}"]))
    out = {"task": task}
    for who, scores in values.items():
        entry = {s: {m: v[i] for m, v in scores.items()
                     if not (beside and m == "candidate recall")}
                 for i, s in enumerate(("val", "test"))}
        if beside and "candidate recall" in scores:
            entry["candidate recall"] = dict(zip(("val", "test"), scores["candidate recall"]))
            entry["settings"] = {"candidates": 100}   # not a number per split: left out
        out[who] = entry
    (run / "metrics.json").write_text(json.dumps(out))


def link_values(rng, base=0.10):
    """The model and three baselines (the ranker with its candidates' recall), drawn."""
    def draw(level):
        return {m: (level + rng.uniform(-0.03, 0.03), level + rng.uniform(-0.03, 0.03))
                for m in LINK_METRICS}
    values = {"model": draw(base + 0.04), "popularity (last window)": draw(base - 0.03),
              "past links": draw(base), "LightGBM ranker": draw(base + 0.03)}
    values["LightGBM ranker"]["candidate recall"] = (rng.uniform(0.5, 0.7),
                                                     rng.uniform(0.5, 0.7))
    return values


def plain(values):
    n = len(values)
    m = sum(values) / n
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1) / n)


@pytest.mark.parametrize("beside", [False, True])
def test_a_link_backtest_shows_every_metric_of_every_baseline(tmp_path, beside):
    """MAP, precision and recall: the mean ± standard error of the model and of each
    baseline (an unknown one, the ranker, too, with its candidates' recall) and the model's
    lead over each with the weeks won, against a plain computation."""
    import random
    rng = random.Random(3)
    runs = [link_values(rng) for _ in range(5)]
    for job, values in enumerate(runs):
        link_run(tmp_path, job, job, values, beside=beside)
    text = table(read_runs(tmp_path))
    assert max(len(line) for line in text.splitlines()) <= 100, text
    flat = re.sub(" +", " ", text)
    short = {"popularity (last window)": "popularity", "past links": "past links",
             "LightGBM ranker": "LightGBM ranker"}
    for metric in LINK_METRICS:
        digits = 4   # every value is 0.1 or more
        for who in ("model", *short):
            for i, split in enumerate(("val", "test")):
                m, se = plain([r[who][metric][i] for r in runs])
                assert f"{m:.{digits}f} ± {se:.{digits}f}" in flat, (metric, who, split)
        leads = flat.split(f"The model's lead in {metric} ")[1].split("The model's lead")[0]
        for who, name in short.items():
            val = [r["model"][metric][0] - r[who][metric][0] for r in runs]
            test = [r["model"][metric][1] - r[who][metric][1] for r in runs]
            cells = [f"{plain(v)[0]:+.4f} ± {plain(v)[1]:.4f} ({sum(x > 0 for x in v)}/{len(v)})"
                     for v in (val, test, val + test)]
            assert f"| {name} | {' | '.join(cells)} |" in leads, (metric, name)
    # the ranker's candidates' recall: its mean, no lead (the model has none)
    m, se = plain([r["LightGBM ranker"]["candidate recall"][1] for r in runs])
    row = next(line for line in flat.splitlines() if line.startswith("| candidate recall"))
    assert "| LightGBM ranker |" in row and f"{m:.4f} ± {se:.4f}" in row
    assert "lead in candidate recall" not in text and "settings" not in text


def test_each_metric_s_lead_follows_its_own_direction(tmp_path):
    """Regression monitored by MAE (lower is better) also scores R2 (higher is better): each
    lead is positive where the model is better by that metric, from task.json's directions
    or, in a run without them, from the metric classes in the run's config."""
    for job, (mae, r2) in enumerate([((0.10, 0.20), (0.50, 0.40)),
                                     ((0.12, 0.18), (0.45, 0.42))]):
        fake_run(tmp_path, job, [f"backtest={job}"], job, mae, (0.11, 0.19))
        path = tmp_path / str(job) / "metrics.json"
        metrics = json.loads(path.read_text())
        for split, i in (("val", 0), ("test", 1)):
            metrics["model"][split]["r2"] = r2[i]
            metrics["LightGBM"][split]["r2"] = 0.44
        path.write_text(json.dumps(metrics))
        config = yaml.safe_load((tmp_path / str(job) / ".hydra" / "config.yaml").read_text())
        config["task"]["metrics"] = {"mae": {"_target_": "torchmetrics.MeanAbsoluteError"},
                                     "r2": {"_target_": "torchmetrics.R2Score"}}
        (tmp_path / str(job) / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    if job := 1:   # the second run says so in its task.json, as rdl.train writes it now
        (tmp_path / "1" / "task.json").write_text(json.dumps({
            "name": "item-sales", "val": "2020-08-31", "test": "2020-09-07", "monitor": "mae",
            "monitor_mode": "min", "higher": {"mae": False, "r2": True}}))
    text = re.sub(" +", " ", table(read_runs(tmp_path)))
    r2 = text.split("The model's lead in r2 ")[1]
    # r2: val 0.50 and 0.45 against 0.44 (both won), test 0.40 and 0.42 (both lost)
    assert "| LightGBM | +0.0350 ± 0.0250 (2/2) | -0.0300 ± 0.0100 (0/2) |" in r2
    mae = text.split("The model's lead in mae ")[1].split("The model's lead")[0]
    # mae: val 0.11 - 0.10 and 0.11 - 0.12, test 0.19 - 0.20 and 0.19 - 0.18
    assert "| LightGBM | +0.0000 ± 0.0100 (1/2) | +0.0000 ± 0.0100 (1/2) |" in mae
    assert "| r2 ↑ | model |" in text and "| mae ↓ | model |" in text


def test_the_overview_gives_link_sweeps_their_own_rows(tmp_path, capsys):
    """A link sweep beside a node one: the node sweep in the LightGBM table, the link
    sweeps in theirs with the model, the baseline best on val (the ranker is one, although
    its name starts as LightGBM's), each baseline and the model's lead over it, and the
    ranker's candidates' recall; a sweep without the ranker has "-" there."""
    import random
    rng = random.Random(7)
    hm = [link_values(rng) for _ in range(5)]
    # past links best on val in every run, popularity best on test: chosen on val
    for r in hm:
        r["past links"]["map"] = (0.30, 0.05)
        r["popularity (last window)"]["map"] = (0.20, 0.40)
    forum = [link_values(rng, base=0.2) for _ in range(3)]
    for r in forum:
        del r["LightGBM ranker"]
    for job, values in enumerate(hm):
        link_run(tmp_path / "hm", job, job, values)
    for job, values in enumerate(forum):
        link_run(tmp_path / "forum", job, job, values, task="forum-user-vote")
    for job in range(2):
        fake_run(tmp_path / "sales", job, [f"backtest={job}"], job, (0.02, 0.03), (0.021, 0.031))
    main([str(tmp_path / "sales"), str(tmp_path / "hm"), str(tmp_path / "forum")])
    printed = capsys.readouterr().out
    node, link = printed.split("Sweeps without LightGBM")
    assert "| sales" in node and "| hm" not in node and "| sales" not in link
    head = [c.strip() for c in next(line for line in link.splitlines()
                                     if line.startswith("| sweep")).strip("|").split("|")]
    assert "LightGBM (depth 2)" not in head and "LightGBM ranker: candidate recall" in head
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in link.splitlines() if line.startswith(("| hm", "| forum"))}
    cell = dict(zip(head, rows["hm"]))
    flat = {w: [v for r in hm for v in r[w]["map"]] for w in hm[0]}
    assert cell["weeks"] == "10 (6 distinct)"
    assert cell["model"] == "{:.4f} ± {:.4f}".format(*plain(flat["model"]))
    assert cell["best baseline on val"] == "past links: {:.4f} ± {:.4f}".format(
        *plain(flat["past links"]))
    for who, name in (("past links", "past links"), ("LightGBM ranker", "LightGBM ranker"),
                      ("popularity (last window)", "popularity")):
        d = [a - b for a, b in zip(flat["model"], flat[who])]
        assert cell[name] == "{:.4f} ± {:.4f}".format(*plain(flat[who]))
        assert cell[f"model over {name}"] == "{:+.4f} ± {:.4f} ({}/10)".format(
            *plain(d), sum(x > 0 for x in d))
    d = [a - b for a, b in zip(flat["model"], flat["past links"])]
    m, se = plain(d)
    assert cell["model vs best baseline"] == ("ahead" if m > se else "behind" if m < -se
                                              else "level")
    recall = [v for r in hm for v in r["LightGBM ranker"]["candidate recall"]]
    assert cell["LightGBM ranker: candidate recall"] == "{:.4f} ± {:.4f}".format(*plain(recall))
    other = dict(zip(head, rows["forum"]))
    assert other["LightGBM ranker"] == "-" and other["LightGBM ranker: candidate recall"] == "-"
    assert other["weeks"] == "6 (4 distinct)"


def test_a_link_task_s_backtest_runs_end_to_end(tmp_path, rdl_cache):
    """python -m rdl.train -m experiment=forum-user-vote backtest=0,3, then rdl.backtest:
    three weeks back, users who sign up and posts created after the moved test time are not
    in its graph (their test seeds and targets are left out, else the test loader failed);
    the table shows MAP, precision and recall of the model and both baselines."""
    import os
    import sys
    small = ("data.db.scale=0.001", "data.batch_size=64", "data.num_neighbors=[16,8]",
             "model.channels=16", "model.encoder_layers=1", "trainer.max_epochs=1",
             "trainer.limit_train_batches=2", "trainer.limit_val_batches=1",
             "compile.enabled=false", "data.ranker=null")
    sweep = tmp_path / "sweep"
    out = command(
        [sys.executable, "-m", "rdl.train", "-m", "experiment=forum-user-vote", *small,
         "backtest=0,3", f"hydra.sweep.dir={sweep}"],
        env={**os.environ, "RDL_CACHE": str(rdl_cache), "HYDRA_FULL_ERROR": "0"}, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = read_runs(sweep)
    assert [r["test"] for r in runs] == [pd.Timestamp("2024-06-17").date(),
                                         pd.Timestamp("2024-05-27").date()]
    assert runs[0]["directions"] == {"map": True, "precision": True, "recall": True}
    text = table(runs)
    for metric in ("map", "precision", "recall"):
        assert f"The model's lead in {metric} " in text
        for who in ("model", "popularity", "past links"):
            assert re.search(rf"\| {metric} ↑ +\| {who} ", text), (metric, who)


def test_each_run_s_prior_is_shown_and_the_model_is_compared_with_it(tmp_path, capsys):
    """Runs that name the baseline their model started from (``model.prior``, the best on
    val): the sweep's table shows it per run with the factor kept and the model's lead over
    it, and the overview's "model over its prior" takes it run by run (here a label mean,
    then LightGBM), not the LightGBM better on val."""
    runs = [((0.020, 0.030), (0.021, 0.029), (0.019, 0.028), "label mean (last 4)"),
            ((0.022, 0.025), (0.024, 0.026), (0.030, 0.031), "LightGBM")]
    for name in ("a", "b"):
        for job, (model, lgbm, mean, prior) in enumerate(runs):
            fake_run(tmp_path / name, job, [f"backtest={job}"], job, model, lgbm)
            path = tmp_path / name / str(job) / "metrics.json"
            metrics = json.loads(path.read_text())
            metrics["label mean (last 4)"] = {"val": {"mae": mean[0]}, "test": {"mae": mean[1]}}
            metrics["model"].update(prior=prior, correction={"scale": 0.25, "by_scale": {}})
            path.write_text(json.dumps(metrics))
    text = table(read_runs(tmp_path / "a"))
    assert max(len(line) for line in text.splitlines()) <= 100
    shown = re.sub(" +", " ", text.split("The baseline each run's model started from")[1])
    assert "| backtest=0 | 2020-09-14 | label mean (last 4) | 0.25 | -0.00100 | -0.00200 |" in shown
    assert "| backtest=1 | 2020-09-07 | LightGBM | 0.25 | +0.00200 | +0.00100 |" in shown
    main([str(tmp_path / "a"), str(tmp_path / "b")])
    printed = capsys.readouterr().out
    head = [c.strip() for c in next(line for line in printed.splitlines()
                                    if line.startswith("| sweep")).strip("|").split("|")]
    cells = [c.strip() for c in next(line for line in printed.splitlines()
                                     if line.startswith("| a")).strip("|").split("|")]
    lead = [-0.001, -0.002, 0.002, 0.001]   # prior - model (MAE): run 0's label mean, run 1's trees
    mean = sum(lead) / 4
    se = math.sqrt(sum((v - mean) ** 2 for v in lead) / 3 / 4)
    assert cells[head.index("model over its prior")] == f"{mean:+.5f} ± {se:.5f} (2/4)"
    # a run that names no prior: none is guessed in the sweep's table
    for path in (tmp_path / "a").glob("*/metrics.json"):
        metrics = json.loads(path.read_text())
        del metrics["model"]["prior"]
        path.write_text(json.dumps(metrics))
    assert "started from" not in table(read_runs(tmp_path / "a"))


def test_the_overview_names_every_printed_baseline_ahead_of_the_model(tmp_path, capsys):
    """The node table's last column lists each baseline the model trails by more than a
    standard error (here the mean of both LightGBMs, every week), "none" where it trails
    none; the mean is a LightGBM, never the best simple baseline."""
    res = lambda v, t: {"val": {"auroc": v}, "test": {"auroc": t}}  # noqa: E731
    for name, gap in (("behind", 0.01), ("level", 0.0)):
        for job in range(3):
            fake_run(tmp_path / name, job, [f"backtest={2 * job}"], 2 * job,
                     (0.70 + job / 100, 0.71 + job / 100), (0.60, 0.60), task="user-churn",
                     mode="max", metric="auroc")
            path = tmp_path / name / str(job) / "metrics.json"
            metrics = json.loads(path.read_text())
            metrics["LightGBM (depth 2)"] = res(0.65, 0.65)
            metrics["LightGBM (mean of depth 1, 2)"] = res(
                0.70 + job / 100 + gap + job / 1000, 0.71 + job / 100 + gap - job / 1000)
            path.write_text(json.dumps(metrics))
    main([str(tmp_path / "behind"), str(tmp_path / "level"), "--out", str(tmp_path / "o.md")])
    printed = capsys.readouterr().out
    for name, want in (("behind", "LightGBM (mean of depth 1, 2)"), ("level", "none")):
        row = next(line for line in printed.splitlines() if line.startswith(f"| {name}"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[-1] == want
        assert cells[6].startswith("label mean")
