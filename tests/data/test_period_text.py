"""Times written as the period they name (a monthly report's ``2024-01``, a quarter's
``2024-Q1``): each row at its period's end, not its first instant, which would show a
seed inside the period what the whole period holds (rdl.data.period_text)."""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder
from rdl.data.period_text import read


def test_a_month_s_row_is_seen_once_the_month_is_over(tmp_path):
    (tmp_path / "stores.csv").write_text("store_id,name\n1,a\n2,b\n")
    (tmp_path / "monthly.csv").write_text("store_id,month,revenue\n1,2024-01,100\n"
                                          "2,2024-01,120\n1,2024-02,90\n2,2024-02,130\n")
    (tmp_path / "schema.yaml").write_text(draft(tmp_path))   # time: month
    db = load_folder(tmp_path)
    months = db["monthly"].df["month"]
    assert sorted(months.unique()) == list(pd.to_datetime(["2024-02-01", "2024-03-01"]))
    # before: 2024-01 was 2024-01-01, and a seed on January 15th saw January's revenue
    assert len(db["monthly"].upto(pd.Timestamp("2024-01-15")).df) == 0
    assert len(db["monthly"].upto(pd.Timestamp("2024-02-01")).df) == 2


@pytest.mark.parametrize("written, ends, unit", [
    (["2024-01", "2023-12"], ["2024-02-01", "2024-01-01"], "month"),
    (["01/2024", "12/2023"], ["2024-02-01", "2024-01-01"], "month"),
    (["Jan 2024", "December 2023", "Feb. 2024"], ["2024-02-01", "2024-01-01", "2024-03-01"],
     "month"),
    (["2024-Q1", "2023Q4", "Q2 2024"], None, None),   # two forms in one column: no period
    (["2024-Q1", "2023Q4"], ["2024-04-01", "2024-01-01"], "quarter"),
    (["Q1 2024", "q4-2023"], ["2024-04-01", "2024-01-01"], "quarter"),
    (["2024", "2023"], ["2025-01-01", "2024-01-01"], "year"),
    (["Jan-24", "DEC-23"], ["2024-02-01", "2024-01-01"], "month"),   # Excel's mmm-yy
    # R's tsibble (fpp3's us_employment: 1939 Jan); a word that is no month: no period
    (["1939 Jan", "2019 Sep", "2024-December"], ["1939-02-01", "2019-10-01", "2025-01-01"],
     "month"),
    (["2019 Sep", "2019 Spring"], None, None),
    # ISO weeks (%G-W%V): week 1 of 2025 begins on 2024-12-30; 2020 has a week 53, 2023 none
    (["2024-W05", "2025W01", "2020-w53"], ["2024-02-05", "2025-01-06", "2021-01-04"], "week"),
    (["2024-W05", "2023-W53"], None, None),
    (["2024-13"], None, None),
    (["2024-01-05"], None, None),
])
def test_period_forms(written, ends, unit):
    got = read(pd.Series(written))
    if ends is None:
        assert got is None
    else:
        assert got[1] == unit and got[0].tolist() == list(pd.to_datetime(ends))


def test_excel_s_months_time_a_monthly_report_as_the_draft_writes_it(tmp_path):
    (tmp_path / "monthly.csv").write_text("store,month,revenue\n1,Jan-24,100\n2,Jan-24,120\n"
                                          "1,Feb-24,90\n")
    (tmp_path / "schema.yaml").write_text(draft(tmp_path))   # time: month
    db = load_folder(tmp_path)
    assert sorted(db["monthly"].df["month"].unique()) == list(pd.to_datetime(
        ["2024-02-01", "2024-03-01"]))


def test_a_weekly_report_s_iso_weeks_time_it_as_the_draft_writes_it(tmp_path):
    """Before, ``2024-W05`` stopped the load as no time."""
    (tmp_path / "weekly.csv").write_text("store,week,revenue\n1,2024-W05,100\n"
                                         "2,2024-W05,120\n1,2024-W06,90\n")
    assert "time: week" in draft(tmp_path)
    (tmp_path / "schema.yaml").write_text(draft(tmp_path))
    db = load_folder(tmp_path)   # week 5 is Monday 2024-01-29 to Sunday 2024-02-04
    assert len(db["weekly"].upto(pd.Timestamp("2024-02-04 23:00")).df) == 0
    assert sorted(db["weekly"].df["week"].unique()) == list(pd.to_datetime(
        ["2024-02-05", "2024-02-12"]))


def test_days_without_their_year_are_no_times(tmp_path):
    """Excel's d-mmm (``31-Jan``) and ``Jan 5``: pandas dates them in the year 1 (before,
    the load stopped on a feature of them, as times outside the years rdl holds); a
    feature of them is text, a table's time of them stops naming what they lack."""
    (tmp_path / "sales.csv").write_text("id,day,due\n1,2024-01-02,31-Jan\n2,2024-01-03,1-Feb\n"
                                        "3,2024-01-04,15-Mar\n")
    df = load_folder(tmp_path, {"tables": {"sales": {"pkey": "id", "time": "day"}}})["sales"].df
    assert df["due"].tolist() == ["31-Jan", "1-Feb", "15-Mar"]
    with pytest.raises(DataError, match="dates without their year, e.g. '31-Jan'"):
        load_folder(tmp_path, {"tables": {"sales": {"pkey": "id", "time": "due"}}})
