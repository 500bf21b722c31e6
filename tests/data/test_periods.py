"""Times written as period numbers (issue 50): declared, they are converted to the period's
end (or start) before any check, and a seed sees a period's rows only once it is over;
undeclared, a static table whose column looks like one is warned about."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.families.node import NodeTask
from rdl.features.table import entity_features

ORIGIN = pd.Timestamp("2024-01-01")   # a Monday: week 1 is 2024-01-01 .. 2024-01-07
PRODUCTS = "  products: {pkey: product_id}\n"


def promotions(seed: int = 0, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"product_id": rng.integers(1, 9, n), "WEEK_NO": rng.integers(1, 11, n),
                         "display": rng.integers(0, 2, n), "price": rng.exponential(2.0, n)})


def write(folder, time: str | None, promos: pd.DataFrame, csv: bool = True, extra: str = ""):
    """Products and a promotions table whose time is ``time`` (a schema's ``time:`` value,
    or none)."""
    pd.DataFrame({"product_id": range(1, 9)}).to_parquet(folder / "products.parquet")
    if csv:
        promos.to_csv(folder / "promotions.csv", index=False)
    else:
        promos.to_parquet(folder / "promotions.parquet", index=False)
    spec = f"time: {time}, " if time else ""
    (folder / "schema.yaml").write_text(
        f"tables:\n{PRODUCTS}  promotions: {{{spec}fkeys: {{product_id: products}}}}\n" + extra)


def times(folder, time: str, values, csv: bool = True) -> list[pd.Timestamp]:
    """The times ``values`` of the promotions' period column become."""
    write(folder, time, pd.DataFrame({"product_id": 1, "WEEK_NO": values}), csv)
    return load_folder(folder)["promotions"].df["WEEK_NO"].tolist()


@pytest.mark.parametrize("csv", [True, False], ids=["csv", "parquet"])
def test_week_numbers_count_from_their_origin_to_the_week_s_end(tmp_path, csv):
    got = times(tmp_path, "{column: WEEK_NO, unit: week, origin: 2024-01-01}", [1, 2, 10], csv)
    assert got == [ORIGIN + pd.Timedelta(days=7 * w) for w in (1, 2, 10)]   # the weeks' ends
    got = times(tmp_path, "{column: WEEK_NO, unit: week, origin: 2024-01-01, at: start}",
                [1, 2, 10], csv)
    assert got == [ORIGIN + pd.Timedelta(days=7 * (w - 1)) for w in (1, 2, 10)]


@pytest.mark.parametrize("spec,values,want", [
    ("unit: day, origin: 2024-01-01, first: 0", [0, 1, 59], ["2024-01-02", "2024-01-03",
                                                             "2024-03-01"]),
    ("unit: month, origin: 2023-11-01", [1, 2, 3], ["2023-12-01", "2024-01-01", "2024-02-01"]),
    ("unit: quarter, origin: 2024-01-01, at: start", [1, 4], ["2024-01-01", "2024-10-01"]),
    ("unit: year, origin: 2020-07-01", [1, 5], ["2021-07-01", "2025-07-01"]),
    ("format: yyyymm", [202401, 202412], ["2024-02-01", "2025-01-01"]),
    ("format: yyyymm, at: start", [202401, 202412], ["2024-01-01", "2024-12-01"]),
    # ISO weeks: 2024's week 1 starts on Monday 2024-01-01, 2020's week 53 on 2020-12-28
    ("format: yyyyww", [202401, 202053], ["2024-01-08", "2021-01-04"]),
    ("format: yyyyww, at: start", [202401, 202053], ["2024-01-01", "2020-12-28"]),
])
def test_units_and_formats(tmp_path, spec, values, want):
    assert times(tmp_path, f"{{column: WEEK_NO, {spec}}}", values) == list(map(pd.Timestamp,
                                                                              want))


@pytest.mark.parametrize("csv", [True, False], ids=["csv", "parquet"])
def test_epoch_times(tmp_path, caplog, csv):
    """An event log's times as numbers since 1970 (UTC), their unit declared: the instants
    they are (no period end), missing ones missing; text or another unit's magnitude stop
    the load naming the rows."""
    got = times(tmp_path, "{column: WEEK_NO, epoch: ms}", [1704067200000, 1704067200500], csv)
    assert got == [ORIGIN, ORIGIN + pd.Timedelta(milliseconds=500)]
    assert times(tmp_path, "{column: WEEK_NO, epoch: s}", [1704067200], csv) == [ORIGIN]
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        times(tmp_path, "{column: WEEK_NO, epoch: ms}", [1704067200], csv)   # seconds
    assert "every time, as ms since 1970 (epoch: ms), is in 1970" in caplog.text
    for values, message in (([1704067200, "soon"], "1 of 2 values are not numbers of s since "
                             "1970 (epoch: s), e.g. 'soon' (row 1)"),
                            ([1704067200000], "as s since 1970 (epoch: s), lie beyond the "
                             "years 1678 to 2261 that rdl's times hold, e.g. 1704067200000 "
                             "(row 0): another unit?")):
        write(tmp_path, "{column: WEEK_NO, epoch: s}",
              pd.DataFrame({"product_id": 1, "WEEK_NO": values if all(
                  isinstance(v, int) for v in values) else list(map(str, values))}), csv)
        with pytest.raises(DataError) as e:
            load_folder(tmp_path)
        assert f"promotions.{'csv' if csv else 'parquet'} (table 'promotions', column " \
               "'WEEK_NO')" in str(e.value)
        assert message in str(e.value)


@pytest.mark.parametrize("spec,values,message", [
    ("format: yyyymm", [202401, 202413], "1 of the column's 2 distinct values are not yyyymm "
     "(a year and a month 01 to 12, as 202401), e.g. 202413"),
    ("format: yyyyww", [202101, 202153], "are not yyyyww (a year and one of its ISO weeks"),
    ("unit: week, origin: 2024-01-01", ["3", "W4"], "1 of 2 values are not whole numbers, e.g. "
     "'W4' (row 1), but the schema declares the column period numbers (time: {column: WEEK_NO, "
     "unit: week, at: end})"),
    ("unit: week, origin: 2024-01-01", [3, None], "time missing in 1 of 2 rows (row 1)"),
    ("unit: day, origin: 2024-01-01", [1, 10 ** 9], "are not days that rdl's times"),
])
def test_bad_period_values(tmp_path, spec, values, message):
    write(tmp_path, f"{{column: WEEK_NO, {spec}}}", pd.DataFrame({"product_id": 1,
                                                                   "WEEK_NO": values}))
    with pytest.raises(DataError) as e:
        load_folder(tmp_path)
    assert "promotions.csv (table 'promotions', column 'WEEK_NO')" in str(e.value)
    assert message in str(e.value)


@pytest.mark.parametrize("spec,message", [
    ("{column: WEEK_NO, unit: week}", "origin None: the date period 1 starts on"),
    ("{column: WEEK_NO, unit: week, origin: soon}", "origin 'soon'"),
    ("{column: WEEK_NO, unit: fortnight, origin: 2024-01-01}", "unit 'fortnight': one of"),
    ("{column: WEEK_NO, unit: week, format: yyyymm, origin: 2024-01-01}",
     "give one of unit (with origin), format, calendar or epoch, not ['unit', 'format']"),
    ("{column: WEEK_NO, epoch: minutes}", "epoch 'minutes': one of ['s', 'ms', 'us', 'ns', 'excel']"),
    ("{column: WEEK_NO, epoch: s, at: start}", "no other key (an epoch time is an instant"),
    ("{column: WEEK_NO}", "not none"),
    ("{unit: week, origin: 2024-01-01}", "'column:' names the column"),
    ("{column: WEEK_NO, format: yyyy}", "format 'yyyy': one of ['yyyymm', 'yyyyww']"),
    ("{column: WEEK_NO, format: yyyymm, at: middle}", "at 'middle': one of ['end', 'start']"),
    ("{column: WEEK_NO, format: yyyymm, every: 2}", "unknown key(s) ['every']"),
    ("[WEEK_NO, DAY]", "time ['WEEK_NO', 'DAY']: one column, not several"),
])
def test_bad_period_declarations(tmp_path, spec, message):
    write(tmp_path, spec, promotions())
    with pytest.raises(DataError) as e:
        load_folder(tmp_path)
    assert "schema.yaml: table 'promotions'" in str(e.value) and message in str(e.value)


def test_a_fiscal_calendar(tmp_path):
    """A file of period -> start: a period ends where the next starts; an ``end`` column
    says it where given; a period missing from the calendar, a repeated one, or the last
    one without an end stop, naming the rows."""
    cal = pd.DataFrame({"period": ["P01", "P02", "P03"],
                        "start": ["2024-01-01", "2024-02-05", "2024-03-04"]})
    cal.to_csv(tmp_path / "fiscal.csv", index=False)
    spec = "{column: WEEK_NO, calendar: fiscal.csv}"
    assert times(tmp_path, spec, ["P02", "P01"]) == [pd.Timestamp("2024-03-04"),
                                                     pd.Timestamp("2024-02-05")]
    assert times(tmp_path, spec.replace("}", ", at: start}"), ["P03"]) == [
        pd.Timestamp("2024-03-04")]
    with pytest.raises(DataError, match=r"1 rows are in period 'P03' \(row 1\), the calendar's "
                       r"last, whose end is unknown"):
        times(tmp_path, spec, ["P01", "P03"])
    with pytest.raises(DataError, match="1 of 2 periods are not in the calendar .*fiscal.csv.*"
                       "e.g. 'P13' \\(row 1\\); it has 3 periods, e.g. 'P01', 'P02', 'P03'"):
        times(tmp_path, spec, ["P01", "P13"])
    cal.assign(end=["2024-02-05", "2024-03-04", "2024-04-01"]).to_csv(tmp_path / "fiscal.csv",
                                                                      index=False)
    assert times(tmp_path, spec, ["P03"]) == [pd.Timestamp("2024-04-01")]
    # other column names, numbered periods (as text in the data, numbers in the calendar)
    pd.DataFrame({"fp": [1, 2], "begins": ["2024-01-01", "2024-02-05"],
                  "ends": ["2024-02-05", "2024-03-04"]}).to_parquet(tmp_path / "cal.parquet")
    spec = "{column: WEEK_NO, calendar: {file: cal.parquet, period: fp, start: begins, end: ends}}"
    assert times(tmp_path, spec, [2, 1]) == [pd.Timestamp("2024-03-04"),
                                             pd.Timestamp("2024-02-05")]
    with pytest.raises(DataError, match=r"no column 'period' \(the period of each period\); it "
                       r"has \['fp', 'begins', 'ends'\]"):
        times(tmp_path, "{column: WEEK_NO, calendar: cal.parquet}", [1])
    with pytest.raises(DataError, match="nope.csv .*missing"):
        times(tmp_path, "{column: WEEK_NO, calendar: nope.csv}", [1])
    cal.iloc[[0, 0]].to_csv(tmp_path / "fiscal.csv", index=False)
    with pytest.raises(DataError, match="2 rows share a period, e.g. 'P01'"):
        times(tmp_path, "{column: WEEK_NO, calendar: fiscal.csv}", ["P01"])


def test_a_calendar_table_of_the_schema(tmp_path, caplog):
    """The calendar may be a table of the schema: read as it, and not warned about (its
    'period' column is no row's time)."""
    pd.DataFrame({"period": [1, 2, 3], "start": ["2024-01-01", "2024-01-29", "2024-02-26"]}
                 ).to_csv(tmp_path / "fiscal.csv", index=False)
    write(tmp_path, "{column: WEEK_NO, calendar: fiscal}",
          pd.DataFrame({"product_id": [1, 2], "WEEK_NO": [1, 2]}),
          extra="  fiscal: {file: fiscal.csv}\n")
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        db = load_folder(tmp_path)
    assert db["promotions"].df["WEEK_NO"].tolist() == [pd.Timestamp("2024-01-29"),
                                                       pd.Timestamp("2024-02-26")]
    assert len(db["fiscal"]) == 3 and "look like period numbers" not in caplog.text


def product_task() -> NodeTask:
    return NodeTask(name="product-task", sql="hm/item-sales.sql", kind="regression",
                    entity_table="products", entity_col="product_id", target_col="y",
                    window="7d", val_timestamp="2024-02-05", test_timestamp="2024-02-12",
                    monitor="mae", monitor_mode="min")


def features(db, s: pd.Timestamp) -> pd.DataFrame:
    task = product_task()
    empty = pd.DataFrame({"timestamp": pd.Series(dtype="datetime64[ns]"),
                          "product_id": pd.Series(dtype="int64"), "y": pd.Series(dtype="float64")})
    seeds = pd.DataFrame({"timestamp": s, "product_id": np.arange(len(db["products"]))})
    return entity_features(task, db, seeds, task.history({"train": empty, "val": empty}))


@pytest.mark.parametrize("at", ["end", "start"])
def test_declared_periods_are_joined_as_of_their_period(tmp_path, at):
    """Leak test: garbage in every promotion whose time (its week's end, or start) is after
    the seed time, and new promotions of those weeks, change nothing a seed sees; a seed
    sees a week's rows once it ends (with at: start, once it starts)."""
    spec = f"{{column: WEEK_NO, unit: week, origin: 2024-01-01, at: {at}}}"
    promos = promotions()
    (tmp_path / "a").mkdir()
    write(tmp_path / "a", spec, promos)
    db = load_folder(tmp_path / "a")
    shift = 0 if at == "end" else 1
    for s in (ORIGIN + pd.Timedelta("17D"), ORIGIN + pd.Timedelta("35D")):
        # weeks whose time (end or start) is at most s
        known = promos["WEEK_NO"] <= (s - ORIGIN).days // 7 + shift
        assert len(db.upto(s)["promotions"]) == int(known.sum()) > 0
        garbage = promos.copy()
        garbage.loc[~known, "display"] = 1 - garbage.loc[~known, "display"]
        garbage.loc[~known, "price"] = 1e6
        garbage = pd.concat([garbage, garbage[~known].assign(product_id=1)], ignore_index=True)
        folder = tmp_path / f"garbage-{s.date()}"
        folder.mkdir()
        write(folder, spec, garbage)
        other = load_folder(folder)
        pd.testing.assert_frame_equal(db.upto(s)["promotions"].df,
                                      other.upto(s)["promotions"].df)
        before = features(db, s)
        pd.testing.assert_frame_equal(before, features(other, s))
        assert before["promotions.count_all"].sum() == known.sum()


def test_undeclared_period_numbers_leak_and_are_warned_about(tmp_path, caplog):
    """Undeclared, the table is static: the garbage of later weeks reaches every seed (the
    leak the warning names), and the warning names file, table, column and the
    declaration to use."""
    promos = promotions()
    write(tmp_path, None, promos)
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        db = load_folder(tmp_path)
    assert db["promotions"].time_col is None
    assert ("promotions.csv (table 'promotions', column 'WEEK_NO'): the table has no time, so "
            f"every seed will see all of its {len(promos)} rows") in caplog.text
    assert ("look like period numbers. If they are the rows' time, declare it: time: {column: "
            "WEEK_NO, unit: week, origin: <the first day of week 1>}") in caplog.text
    assert "stypes: {WEEK_NO: numerical}" in caplog.text
    s = ORIGIN + pd.Timedelta("17D")
    later = promos.assign(price=promos["price"].where(promos["WEEK_NO"] <= 2, 1e6))
    (tmp_path / "b").mkdir()
    write(tmp_path / "b", None, later)
    assert not features(db, s).equals(features(load_folder(tmp_path / "b"), s))


@pytest.mark.parametrize("column,values,declare", [
    ("WEEK_NO", [1, 2, 53], "unit: week, origin: <the first day of week 1>"),
    ("fiscalPeriod", [3, 4, 12], "unit: month, origin: <the first day of month 3>, first: 3"),
    ("DAY", [1, 400, 711], "unit: day, origin: <the first day of day 1>"),
    ("ym", [202401, 202402, 202403], "format: yyyymm"),            # by its values alone
    ("yearweek", [202450, 202451, 202452], "format: yyyyww"),
    ("weekday", [1, 2, 7], None),                                 # a feature, not a period
    ("size", [1, 5, 12], None),
    ("week", [1.5, 2.0, 3.0], None),                              # not whole numbers
])
def test_which_columns_look_like_periods(tmp_path, caplog, column, values, declare):
    write(tmp_path, None, pd.DataFrame({"product_id": [1, 2, 3], column: values}))
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        load_folder(tmp_path)
    if declare is None:
        assert "look like period numbers" not in caplog.text
    else:
        assert f"(table 'promotions', column '{column}')" in caplog.text
        assert f"time: {{column: {column}, {declare}}}" in caplog.text


def test_a_declared_stype_or_a_time_silences_the_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        write(tmp_path, None, promotions())
        schema = (tmp_path / "schema.yaml").read_text().replace(
            "fkeys:", "stypes: {WEEK_NO: numerical}, fkeys:")
        (tmp_path / "schema.yaml").write_text(schema)
        load_folder(tmp_path)
        write(tmp_path, "{column: WEEK_NO, unit: week, origin: 2024-01-01}", promotions())
        load_folder(tmp_path)
    assert "look like period numbers" not in caplog.text


def test_a_date_dimension_s_last_day_ends_a_day_after_it(tmp_path):
    """A Kimball date dimension exported for the data's own range ends on its last day: a
    calendar of days (or weeks) ends its last period as long after its start as every other;
    one of months at the next month's first day; a fiscal one of uneven periods still stops
    (test_a_fiscal_calendar)."""
    days = pd.DataFrame({"date_key": [20231229, 20231230, 20231231],
                         "full_date": ["2023-12-29", "2023-12-30", "2023-12-31"]})
    days.to_csv(tmp_path / "dim_date.csv", index=False)
    spec = "{column: WEEK_NO, calendar: {file: dim_date.csv, period: date_key, start: full_date}}"
    assert times(tmp_path, spec, [20231231, 20231229]) == [pd.Timestamp("2024-01-01"),
                                                           pd.Timestamp("2023-12-30")]
    months = pd.DataFrame({"month": ["2023-11", "2023-12", "2024-01", "2024-02"],
                           "first": ["2023-11-01", "2023-12-01", "2024-01-01", "2024-02-01"]})
    months.to_csv(tmp_path / "dim_month.csv", index=False)
    spec = "{column: WEEK_NO, calendar: {file: dim_month.csv, period: month, start: first}}"
    assert times(tmp_path, spec, ["2024-02"]) == [pd.Timestamp("2024-03-01")]
