"""Calendar windows (``task.window=1mo``, ``3mo``, ``1y``: rdl/tasks/window.py): a series of
monthly values (the US Bureau of Labor Statistics' employment series, as R's fpp3 ships
them: a row per series per month, dated its first day, empty before a series began)
labelled month by month, each label's window closing a calendar month after its seed; and
what suggest prints for such data."""
from __future__ import annotations

import logging
import shlex

import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate

from rdl.data.database import Database, DataError, Table
from rdl.features.table import WINDOWS, child_features
from rdl.tasks.suggest import split_dates, suggestions, window_for
from rdl.tasks.window import back_from, calendar_day, split_times

MONTHS = pd.date_range("2012-01-01", "2019-09-01", freq="MS")


def employment(months=MONTHS, day_shift=None) -> Database:
    """Four series' monthly values; series 3 empty (NaN) before 2015, as the BLS series
    that began later are in fpp3's ``us_employment``; R's row numbers (``rownames``)."""
    rng = np.random.default_rng(0)
    rows = []
    for s in range(4):
        level = 1000.0 * (s + 1)
        for m in months:
            level += rng.normal(0, 10)
            value = np.nan if s == 3 and m.year < 2015 else round(level, 1)
            rows.append((s, m if day_shift is None else day_shift(m), value))
    df = pd.DataFrame(rows, columns=["series_id", "month", "employed"])
    df.insert(0, "rownames", np.arange(1, len(df) + 1))
    return Database({"series": Table(pd.DataFrame({"series_id": range(4)}), "series_id", {}),
                     "employment": Table(df, None, {"series_id": "series"}, "month")})


def task(tiny_cfg, *overrides):
    return instantiate(tiny_cfg(*overrides).task, _convert_="all")


SUM = ("task=events", "task.entity_table=series", "task.label=sum", "task.value=employed",
       "task.val_timestamp=2019-07-01", "task.test_timestamp=2019-08-01")


def test_a_month_s_window_holds_the_next_month_s_value(tiny_cfg, caplog):
    db = employment()
    df = db["employment"].df
    value = df.set_index(["series_id", "month"])["employed"]
    t = task(tiny_cfg, *SUM, "task.window=1mo")
    with caplog.at_level(logging.WARNING):
        tables = {s: t.split_table(s, db) for s in ("train", "val", "test")}
    # the seed times: the first of each month, back from val's month to the data's first
    assert list(tables["train"]["timestamp"].drop_duplicates()) == \
        sorted(MONTHS[MONTHS < "2019-07-01"], reverse=False)
    for split, table in tables.items():
        for row in table.itertuples():
            assert row.sum == value[(row.series_id, row.timestamp + pd.DateOffset(months=1))]
    # series 3's empty months are no labels (not 0), and the warning counts them
    empty = int(((df["series_id"] == 3) & df["employed"].isna()).sum())
    train = tables["train"]
    assert not ((train["series_id"] == 3) & (train["timestamp"] < "2014-12-01")).any()
    assert (train["sum"] > 0).all()
    assert f"{empty - 1} of the train split's" in caplog.text   # (Dec 2011 is no seed)

    # 30 days from the first of a month: twice a month's value around February, none
    # after some 31-day months: the labels a calendar month avoids
    fixed = task(tiny_cfg, *SUM, "task.window=30d").split_table("train", db)
    want = [value.get((r.series_id, pd.Timestamp(r.timestamp).replace(day=1)
                       + pd.DateOffset(months=1))) for r in fixed.itertuples()]
    assert (fixed["sum"].to_numpy() != np.array(want, dtype=float)).mean() > 0.01


def test_a_month_s_label_is_history_when_its_month_closes(tiny_cfg):
    """A seed on March 1st sees the label of February 1st (March's value): its window
    closed on March 1st, not 30 or 31 days after."""
    db = employment()
    t = task(tiny_cfg, *SUM, "task.window=1mo")
    tables = {s: t.split_table(s, db) for s in ("train", "val", "test")}
    h = t.history(tables)
    assert (h["available"] == h["timestamp"] + pd.DateOffset(months=1)).all()
    assert (pd.DatetimeIndex(h["available"]).day == 1).all()
    closes = t.closes(np.array(["2019-02-01", "2019-01-15"], dtype="datetime64[ns]"))
    assert list(closes) == list(np.array(["2019-03-01", "2019-02-15"], dtype="datetime64[ns]"))


def test_calendar_split_times(tiny_cfg):
    assert split_times("2019-07-01", "2019-08-01", "1mo", backtest=3) == \
        (pd.Timestamp("2019-04-01"), pd.Timestamp("2019-05-01"))
    assert split_times("2019-07-01", "2019-10-01", "3mo", backtest=1) == \
        (pd.Timestamp("2019-04-01"), pd.Timestamp("2019-07-01"))
    assert back_from("2019-03-15", "2018-12-01", "1mo") == \
        [pd.Timestamp(f"{d}-15") for d in ("2019-03", "2019-02", "2019-01", "2018-12")]
    # a day a month may not have: windows would end on different days
    with pytest.raises(Exception, match="val_timestamp 2019-01-31 with window '1mo'"):
        task(tiny_cfg, *SUM[:4], "task.window=1mo", "task.val_timestamp=2019-01-31",
             "task.test_timestamp=2019-02-28")
    with pytest.raises(Exception, match="nor calendar months"):
        task(tiny_cfg, *SUM, "task.window=1 fortnight")


@pytest.mark.parametrize("dated, day", [
    (lambda m: m, 1),                                       # the month's first day
    (lambda m: m + pd.offsets.MonthEnd(0), 1),              # its last: seeds on the 1st
    (lambda m: m + pd.Timedelta(days=14), 15),              # its 15th
])
def test_suggest_takes_calendar_months_for_monthly_values(dated, day):
    db = employment(day_shift=dated)
    rows = db["employment"].df   # the date's parts beside it (a year, its month): no values
    rows.insert(2, "year", rows["month"].dt.year)
    rows.insert(3, "month_of_year", rows["month"].dt.month)
    times = db["employment"].df["month"].to_numpy()
    assert calendar_day(times) == day and window_for(times) == "1mo"
    lines = suggestions(db, ["data=x"])
    commands = [shlex.split(line) for line in lines if line.startswith("python")]
    # one row a month: a count is one value; the values' sum (a name of no amount, not
    # the row numbers) it is
    [c] = commands
    args = dict(a.split("=", 1) for a in c if a.startswith("task."))
    assert args["task.label"] == "sum" and args["task.value"] == "employed"
    assert args["task.window"] == "1mo"
    for split in ("task.val_timestamp", "task.test_timestamp"):
        assert pd.Timestamp(args[split]).day == day
    month = db["employment"].df["month"]
    test = pd.Timestamp(args["task.test_timestamp"])
    inside = (month > test) & (month <= test + pd.DateOffset(months=1))
    assert inside.sum() == 4 and month.max() <= test + pd.DateOffset(months=2)


def test_quarters_and_years_keep_their_windows():
    quarters = pd.date_range("1981-01-01", "2012-04-01", freq="QS").to_numpy()
    assert calendar_day(quarters) == 1 and window_for(quarters) == "3mo"
    assert split_dates(quarters[0], quarters[-1], "3mo", 1) == ("2011-10-01", "2012-01-01")
    # a season's rows on December 31st: a fixed year moves a day in four years, no row
    # across a window's edge; unchanged
    seasons = pd.to_datetime([f"{y}-12-31" for y in range(1871, 2021)]).to_numpy()
    assert calendar_day(seasons) is None and window_for(seasons) == "365d"
    days = pd.date_range("2020-01-01", "2020-12-31", freq="D").to_numpy()
    assert calendar_day(days) is None


def test_a_sql_s_null_label_is_left_out(tiny_cfg, caplog):
    t = task(tiny_cfg, *SUM, "task.window=1mo")

    def val(series):   # August's values of ``series`` empty
        db = employment()
        df = db["employment"].df
        df.loc[(df["month"] == "2019-08-01") & df["series_id"].isin(series), "employed"] = None
        return t.split_table("val", db)

    with caplog.at_level(logging.WARNING):
        assert len(val([])) == 4 and "no label" not in caplog.text
        assert list(val([0, 1])["series_id"]) == [2, 3]
    assert "2 of the val split's 4 rows have no label" in caplog.text
    with pytest.raises(DataError, match="the val split is empty: every label"):
        val([0, 1, 2, 3])


@pytest.mark.parametrize("strict", [False, True])
def test_the_trees_last_months_hold_whole_months(strict):
    """LightGBM's features of the last 1, 4 and 12 windows of a monthly series: at a seed
    on March 1st, the last month holds March's row alone (a mean month, 30.4 days, would
    reach back to February 1st), the last 12 a year of rows."""
    db = employment()
    table = db["employment"]
    seeds = pd.DatetimeIndex(["2019-03-01", "2016-03-01", "2019-08-01", "2019-08-15"])
    ids = np.array([0, 1, 2, 3])
    got = child_features("c", table, "series_id", ids,
                         seeds.to_numpy().astype("datetime64[ns]").astype(np.int64), "1mo",
                         strict)
    df = table.df
    for i, (s, t) in enumerate(zip(ids, seeds)):
        for n in WINDOWS:
            rows = df[(df["series_id"] == s) & (df["month"] > t - pd.DateOffset(months=n))
                      & ((df["month"] < t) if strict else (df["month"] <= t))]
            assert got[f"c.count_{n}"][i] == len(rows) == n - (strict and t.day == 1)
            assert got[f"c.employed.sum_{n}"][i] == pytest.approx(rows["employed"].sum())


def test_the_depth_2_windows_hold_whole_months(tiny_cfg):
    """Depth 2's statistics over a monthly series' last 1 and 4 windows: at any seed on a
    month's first day, one row and four (a trend of 0 between them), their values' mean."""
    from rdl.features.deep import deep_features
    db = employment()
    t = task(tiny_cfg, *SUM, "task.window=1mo")
    tables = {s: t.split_table(s, db) for s in ("train", "val", "test")}
    df = tables["train"][tables["train"]["timestamp"] >= "2017-01-01"].reset_index(drop=True)
    got = deep_features(t, db, df, t.history(tables))
    trend = [c for c in got if c.endswith("trend_1_4")]
    assert trend and (got[trend[0]] == 0).all()
    [avg] = [c for c in got if c.endswith("employed.avg_4")]
    rows = db["employment"].df.set_index(["series_id", "month"])["employed"]
    for r, v in zip(df.itertuples(), got[avg]):
        want = np.mean([rows[(r.series_id, r.timestamp - pd.DateOffset(months=k))]
                        for k in range(4)])
        assert v == pytest.approx(want)


def test_a_calendar_window_s_trees_see_the_seed_s_month(tiny_cfg):
    """Monthly figures have seasons (the employment series are not seasonally adjusted):
    the trees see each seed's month of the year where the window is calendar months."""
    from rdl.features.table import entity_features
    db = employment()
    for window, has in (("1mo", True), ("30d", False)):
        t = task(tiny_cfg, *SUM, f"task.window={window}")
        tables = {s: t.split_table(s, db) for s in ("train", "val", "test")}
        df = tables["train"]
        got = entity_features(t, db, df, t.history(tables))
        assert ("seed.month" in got) == has
        if has:
            assert (got["seed.month"] == pd.DatetimeIndex(df["timestamp"]).month).all()
