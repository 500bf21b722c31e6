"""The label a year before (the seasonal naive forecast): each seed's label of the same
window a year earlier, read only where its window has closed by the seed's time; a printed
baseline (its last label where there is none) and, for a calendar window, a feature of the
trees."""
import numpy as np
import pandas as pd
import pytest

from rdl.baselines.history import CHANGE, LAST, YEAR, history_baselines
from rdl.baselines.trees import boost_base, seasonal_base
from rdl.data import Database, Table
from rdl.families.node import NodeTask
from rdl.families.node.simple_prior import simple_prior
from rdl.features.labels import year_before
from rdl.features.table import entity_features
from rdl.tasks.window import seasonal_lag
from .shop import METRICS, make_task, shop_tables

VAL, TEST = pd.Timestamp("2019-07-01"), pd.Timestamp("2019-08-01")
MONTHS = pd.date_range("2018-01-01", "2019-06-01", freq="MS")   # the train seed times


def monthly(window="1mo", val=VAL, test=TEST, kind="regression") -> NodeTask:
    metric, mode = ("mae", "min") if kind == "regression" else ("auroc", "max")
    return NodeTask(name="series-task", sql="hm/item-sales.sql", kind=kind,
                    entity_table="series", entity_col="series_id", target_col="y",
                    window=window, val_timestamp=str(val.date()), test_timestamp=str(test.date()),
                    metrics=METRICS[kind](), monitor=metric, monitor_mode=mode)


def series_tables() -> dict[str, pd.DataFrame]:
    """Series 0 labelled every month (its value the month's number plus 100 a year);
    series 1 in two months only, neither a year before a val or test seed; series 2 never
    before val; series 3 in val alone, at two val seed times a year apart."""
    rows = [(m, 0, 100.0 * (m.year - 2018) + m.month) for m in MONTHS]
    rows += [(pd.Timestamp("2018-03-01"), 1, 50.0), (pd.Timestamp("2019-05-01"), 1, 60.0)]
    train = pd.DataFrame(rows, columns=["timestamp", "series_id", "y"])
    val = pd.DataFrame({"timestamp": [VAL, VAL, VAL, VAL - pd.DateOffset(months=12), VAL],
                        "series_id": [0, 1, 2, 3, 3], "y": [107.0, 61.0, 5.0, 40.0, 41.0]})
    test = pd.DataFrame({"timestamp": [TEST] * 4, "series_id": [0, 1, 2, 3],
                         "y": [108.0, 62.0, 6.0, 42.0]})
    return {"train": train, "val": val, "test": test}


def series_db() -> Database:
    return Database({"series": Table(pd.DataFrame({"series_id": range(4),
                                                   "size": [1.0, 2.0, 3.0, 4.0]}), "series_id")})


def test_seasonal_lag_is_the_whole_windows_nearest_a_year():
    assert [seasonal_lag(w) for w in ("1mo", "3mo", "1q", "2mo", "7d", "1d", "30d")] == \
        [12, 4, 4, 6, 52, 365, 12]
    # a year holds fewer than two such windows, or the months do not divide it
    assert [seasonal_lag(w) for w in ("1y", "12mo", "5mo", "250d", "400d")] == [None] * 5


def test_year_before_reads_the_same_month_a_year_earlier_once_closed():
    task, tables = monthly(), series_tables()
    history = task.history(tables)
    val = year_before(task, tables["val"], history)[:, 0]
    # series 0: July 2018's label; series 1 and 2: no label in July 2018; series 3 at
    # July 2018 (a val seed): none; at July 2019 its July 2018 label is a val label, whose
    # window closes at the test time only (a val seed never sees another val label)
    assert val[0] == 7.0
    assert np.isnan(val[1:]).all()
    test = year_before(task, tables["test"], history)[:, 0]
    assert test[0] == 8.0 and np.isnan(test[1:3]).all()
    # at the test time August 2018's label of series 3 would be read: it has none
    assert np.isnan(test[3])


def test_seasonal_baselines_fall_back_to_the_last_label():
    task, tables = monthly(), series_tables()
    out = history_baselines(task, tables)
    prior = tables["train"]["y"].mean()
    # val: series 0 a year before (7), 1 its last label (60, closed June 1 <= July 1), 2 and
    # 3 the train mean; test: 0 (8), 1 and 3 their last labels (val's, closed at the test
    # time: 61, and 41 the later of series 3's), 2 its val label (5)
    year = {"val": [7.0, 60.0, prior, prior, prior], "test": [8.0, 61.0, 5.0, 41.0]}
    # series 0's last label (June 2019's 106; at the test time July's 107) moved by last
    # year's change into the month (July 2018 less June 2018: 1); the rest as above
    change = {"val": [107.0, 60.0, prior, prior, prior], "test": [108.0, 61.0, 5.0, 41.0]}
    for name, preds in ((YEAR, year), (CHANGE, change)):
        for split, pred in preds.items():
            y = tables[split]["y"].to_numpy()
            assert out[name][split]["mae"] == pytest.approx(np.abs(np.array(pred) - y).mean(),
                                                            rel=1e-6)
        # the model may start from it: the same predictions as the printed baseline's
        raw = simple_prior(task, name, tables, task.history(tables), splits=("val", "test"))
        for split, pred in preds.items():
            np.testing.assert_allclose(raw[split], pred)
    assert out[YEAR]["test"]["mae"] != pytest.approx(out[LAST]["test"]["mae"])
    assert out[CHANGE]["val"]["mae"] < out[LAST]["val"]["mae"]


def test_no_change_baseline_for_classes():
    tables = {s: df.assign(y=(df["y"] % 2).astype(float)) for s, df in series_tables().items()}
    out = history_baselines(monthly(kind="binary_classification"), tables)
    assert YEAR in out and CHANGE not in out


def test_no_year_before_baseline_without_a_season_or_a_year_of_labels():
    tables = series_tables()
    assert YEAR in history_baselines(monthly(), tables)
    # a year's window has no season; a weekly task whose labels span six weeks none a year back
    year = monthly("1y", pd.Timestamp("2019-06-01"), pd.Timestamp("2020-06-01"))
    assert not {YEAR, CHANGE} & set(history_baselines(year, tables))
    assert not {YEAR, CHANGE} & set(history_baselines(make_task(), shop_tables()))


def test_the_trees_see_last_year_s_change_for_a_calendar_window():
    task, tables = monthly(), series_tables()
    history = task.history(tables)
    X = entity_features(task, series_db(), tables["test"], history)
    change = (year_before(task, tables["test"], history)
              - year_before(task, tables["test"], history, later=-1))[:, 0]
    np.testing.assert_array_equal(X["history.year_change"].to_numpy(), change)
    assert change[0] == 1.0 and np.isnan(change[1:]).all()
    # classes: the label a year before itself
    binary = monthly(kind="binary_classification")
    labels = {s: df.assign(y=(df["y"] % 2).astype(float)) for s, df in tables.items()}
    X = entity_features(binary, series_db(), labels["test"], binary.history(labels))
    assert X["history.year_before"].tolist()[0] == 0.0 and "history.year_change" not in X
    # a weekly task's trees are as before (its week of the year left out too)
    weekly = make_task()
    shops = Database({"shop": Table(pd.DataFrame({"shop_id": range(4)}), "shop_id")})
    X = entity_features(weekly, shops, shop_tables()["test"], weekly.history(shop_tables()))
    assert "history.year_before" not in X and "seed.month" not in X


def test_the_trees_boost_from_last_year_s_change_where_it_is_nearer_the_train_labels():
    task, tables = monthly(), series_tables()
    history = task.history(tables)
    assert seasonal_base(task, tables["train"], history)
    base = boost_base(task, tables["test"], history, tables["train"])
    assert base[0] == 108.0 and base[1] == 61.0   # series 0 moved; series 1 its last label
    # a random walk: last year's change is noise added to the last label
    rng = np.random.default_rng(0)
    months = pd.date_range("2016-01-01", "2019-06-01", freq="MS")
    walk = pd.DataFrame({"timestamp": months, "series_id": 0,
                         "y": 1000 + rng.normal(0, 10, len(months)).cumsum()})
    walked = {**tables, "train": walk}
    assert not seasonal_base(task, walk, task.history(walked))
    base = boost_base(task, tables["test"], task.history(walked), walk)
    assert base[0] == tables["val"]["y"].iloc[0]   # the last label: val's, closed at test
    # a weekly task: the last label, as measured
    weekly = make_task()
    assert not seasonal_base(weekly, shop_tables()["train"], weekly.history(shop_tables()))
