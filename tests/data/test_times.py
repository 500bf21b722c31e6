"""Times as databases, warehouses and spreadsheets write them (rdl.data.times): each form
read as it means, a day never taken for a month, and one clear error where a column could
be read two ways."""
from __future__ import annotations

import logging

import pandas as pd
import pytest

from rdl.data.database import DataError
from rdl.data.times import TIME_FORMATS, looks_like_times, parse_times


def read(*values, **kw) -> list[str]:
    return [str(t) for t in parse_times(pd.Series(list(values), dtype=object), "t", **kw)]


@pytest.mark.parametrize("written, expected", [
    # BigQuery writes TIMESTAMP so, fractions included
    (["2023-01-05 13:45:00 UTC", "2023-01-07 10:00:00.123456 UTC"],
     ["2023-01-05 13:45:00", "2023-01-07 10:00:00.123456"]),
    # PostgreSQL's timestamptz with an hour-only offset; SQL Server's datetimeoffset
    (["2023-01-05 13:45:00+01", "2023-01-07 10:00:00.5+01"],
     ["2023-01-05 12:45:00", "2023-01-07 09:00:00.500000"]),
    (["2023-01-05 13:45:00.0000000 +01:00"], ["2023-01-05 12:45:00"]),
    # a dotted date is day first, with a clock without seconds too (German exports)
    (["01.02.2023 00:00", "01.03.2023 00:00"], ["2023-02-01 00:00:00", "2023-03-01 00:00:00"]),
    (["05.01.23", "17.01.23"], ["2023-01-05 00:00:00", "2023-01-17 00:00:00"]),
    # day-first with a dash, once a day past the 12th says so; month-first alike
    (["05-01-2023", "17-01-2023"], ["2023-01-05 00:00:00", "2023-01-17 00:00:00"]),
    (["02-13-2023", "03-01-2023"], ["2023-02-13 00:00:00", "2023-03-01 00:00:00"]),
    # a 12-hour clock, with the day first where a day says so (13/04)
    (["01/02/2023 10:00 PM", "13/04/2023 10:00 AM"],
     ["2023-02-01 22:00:00", "2023-04-13 10:00:00"]),
    (["1/5/2023 1:45:00 PM", "1/17/2023 12:00:00 AM"],
     ["2023-01-05 13:45:00", "2023-01-17 00:00:00"]),
    # Excel's short form, and forms with month names, which pandas infers
    (["1/5/23 13:45", "1/17/23 0:00"], ["2023-01-05 13:45:00", "2023-01-17 00:00:00"]),
    (["Jan 5, 2023", "Feb 17, 2023"], ["2023-01-05 00:00:00", "2023-02-17 00:00:00"]),
    (["Thu, 05 Jan 2023 13:45:00 +0000"], ["2023-01-05 13:45:00"]),
    (["2023-01-05 13:45:00,123"], ["2023-01-05 13:45:00.123000"]),
    # Db2's TIMESTAMP, SAS's DATETIME20., SQL Server's 12-hour clock with milliseconds
    (["2023-01-05-13.45.00.000000", "2023-01-17-00.00.00.500000"],
     ["2023-01-05 13:45:00", "2023-01-17 00:00:00.500000"]),
    (["05JAN2023:13:45:00", "17JAN2023:00:00:00"], ["2023-01-05 13:45:00", "2023-01-17 00:00:00"]),
    (["01/05/2023 01:45:00.000 PM", "01/17/2023 12:00:00.000 AM"],
     ["2023-01-05 13:45:00", "2023-01-17 00:00:00"]),
    # dotted clocks, as Finnish, Danish or Italian exports write them
    (["05/01/2023 13.45", "17/01/2023 00.00"], ["2023-01-05 13:45:00", "2023-01-17 00:00:00"]),
    (["2023-01-05 13.45.00"], ["2023-01-05 13:45:00"]),
    # a 12-hour clock without its blank, or dotted (US exports, a CRM's)
    (["1/5/2023 1:45PM", "1/17/2023 12:00am"], ["2023-01-05 13:45:00", "2023-01-17 00:00:00"]),
    (["1/5/2023 1:45 p.m.", "1/17/2023 9:00 a.m."],
     ["2023-01-05 13:45:00", "2023-01-17 09:00:00"]),
    # Go's time.String() (its zone's name after the offset; m=, a clock's reading, after)
    (["2023-01-05 13:45:00 +0100 CET", "2023-01-17 00:00:00.5 +0000 UTC m=+0.000123"],
     ["2023-01-05 12:45:00", "2023-01-17 00:00:00.500000"]),
    # JavaScript's Date.toString()
    (["Thu Jan 05 2023 13:45:00 GMT+0100 (Central European Standard Time)",
      "Tue Jan 17 2023 00:00:00 GMT-0500 (Eastern Standard Time)"],
     ["2023-01-05 12:45:00", "2023-01-17 05:00:00"]),
    # months named in French, German, Spanish, Italian, Portuguese, Dutch (reports)
    (["31 janv. 2023", "1er février 2023"], ["2023-01-31 00:00:00", "2023-02-01 00:00:00"]),
    (["31.Dez.2023 23:59", "01.Jan.2024 00:00"], ["2023-12-31 23:59:00", "2024-01-01 00:00:00"]),
    (["31 de enero de 2023", "5-dic-2023"], ["2023-01-31 00:00:00", "2023-12-05 00:00:00"]),
    (["2 ott 2023", "9 de setembro de 2023", "6 mei 2023"],
     ["2023-10-02 00:00:00", "2023-09-09 00:00:00", "2023-05-06 00:00:00"]),
    # an ISO week's day (%G-W%V-%u): 2023-W01-1 is Monday January 2nd
    (["2023-W01-1", "2023W527", "2023-W05-3T10:00:00"],
     ["2023-01-02 00:00:00", "2023-12-31 00:00:00", "2023-02-01 10:00:00"]),
])
def test_a_form_reads_as_it_means(written, expected):
    assert read(*written) == expected
    assert looks_like_times(pd.Series(written * 3, dtype=object))   # (undeclared, too)


def test_numbers_of_a_date_and_its_clock_are_times():
    assert read(20230105134500, 20230106000000) == ["2023-01-05 13:45:00", "2023-01-06 00:00:00"]
    assert read(202301051345) == ["2023-01-05 13:45:00"]
    assert read(20230105) == ["2023-01-05 00:00:00"]
    assert read("20230105134500") == ["2023-01-05 13:45:00"]
    # epoch milliseconds (13 digits, or 12 before 2001) are no date keys: the error says so
    for ms in (1672926300000, 978307200000):
        with pytest.raises(DataError, match="epoch seconds"):
            read(ms)


@pytest.mark.parametrize("written", [["01-02-2023", "02-03-2023"],
                                     ["01-02-2023 10:00", "02-03-2023 11:00"],
                                     ["01/02/2023 10:00 AM", "03/04/2023 11:00 PM"]])
def test_a_column_that_reads_both_day_first_and_month_first_stops(written):
    with pytest.raises(DataError, match="read both as month/day/year and as day/month/year"):
        read(*written)


def test_a_day_and_month_pandas_would_guess_are_not_guessed():
    """A form outside TIME_FORMATS with a day and a month as numbers: pandas would infer it
    month first from the first value; it stops instead."""
    assert not any(f.startswith("%m/%d/%YT") for f in TIME_FORMATS)
    with pytest.raises(DataError, match="2 of 2 times do not parse"):
        read("01/02/2023T10:00", "03/04/2023T10:00")


def test_a_zone_s_name_is_no_offset():
    with pytest.raises(DataError, match=r"a zone's name \(EST or EDT\?"):
        read("2023-01-05 13:45:00 EST", "2023-01-06 00:00:00 EST")


def test_a_long_column_is_read_in_the_form_of_all_its_values(caplog):
    """The form is chosen on the first values and checked on all: a column whose days
    past the 12th come late is read day first, and a bad value late in a column is named."""
    early = [f"{d:02d}.01.2023 10:00" for d in range(1, 13)] * 100
    assert read(*early, "13.01.2023 10:00")[-1] == "2023-01-13 10:00:00"
    assert read(*early)[1] == "2023-01-02 10:00:00"   # dotted: day first
    slashed = [f"{d:02d}/01/2023" for d in range(1, 13)] * 100
    assert read(*slashed, "13/01/2023")[1] == "2023-01-02 00:00:00"   # 13/01: day first
    with pytest.raises(DataError, match=r"1 of 1201 times do not parse .* 'soon' \(row 1200\)"):
        read(*slashed, "soon")
    with caplog.at_level(logging.WARNING):
        assert read(*["2023-01-05 00:00 UTC"] * 1000, "2023-01-05 01:00")[-1] == \
            "2023-01-05 01:00:00"
    assert "1 of 1001 times have no UTC offset" in caplog.text


def test_a_schema_s_dayfirst_says_the_order_of_dates_that_read_both_ways(tmp_path):
    assert read("01/02/2023", "03/04/2023", dayfirst=True) == ["2023-02-01 00:00:00",
                                                               "2023-04-03 00:00:00"]
    assert read("01-02-2023 10:00", dayfirst=False) == ["2023-01-02 10:00:00"]
    # where only one order reads every value, the values say it, whatever the schema
    assert read("01/02/2023", "13/04/2023", dayfirst=False)[0] == "2023-02-01 00:00:00"
    from rdl.data.folder import load_folder
    pd.DataFrame({"id": [1, 2], "month": ["01/02/2023", "01/03/2023"]}).to_csv(
        tmp_path / "snapshots.csv", index=False)
    schema = {"tables": {"snapshots": {"pkey": "id", "time": "month"}}}
    with pytest.raises(DataError, match=r"say which at the top of the schema \(dayfirst: true"):
        load_folder(tmp_path, schema)
    got = load_folder(tmp_path, {**schema, "dayfirst": True})["snapshots"].df["month"]
    assert got.dt.month.tolist() == [2, 3]
    with pytest.raises(DataError, match="dayfirst 'yes': true"):
        load_folder(tmp_path, {**schema, "dayfirst": "yes"})


def test_mysql_s_zero_date_is_missing_and_postgresql_s_infinity_is_named(caplog):
    """MySQL writes 0000-00-00 for a date not known (its drivers read it as missing);
    PostgreSQL's 'infinity' is no number, though Python's float() reads it as one."""
    with caplog.at_level(logging.INFO, logger="rdl.data.checks"):
        assert read("2023-01-05 13:45:00", "0000-00-00 00:00:00", required=False) == \
            ["2023-01-05 13:45:00", "NaT"]
    assert "1 of 2 values are MySQL's zero date '0000-00-00 00:00:00'" in caplog.text
    assert read("2023-01-05", "0000-00-00", required=False)[1] in ("NaT", "nan")
    with pytest.raises(DataError, match="time missing in 1 of 2 rows"):
        read("2023-01-05", "0000-00-00")   # a table's own time
    for word in ("infinity", "-infinity"):
        with pytest.raises(DataError, match=f"1 of 2 values are '{word}' \\(row 1\\), a "
                                            "placeholder for 'never'"):
            read("2023-01-05", word, required=False)


@pytest.mark.parametrize("form,written,ends", [
    ("%Y-%m", ["2023-01", "2023-02"], ["2023-02-01", "2023-03-01"]),
    ("%b %Y", ["Jan 2023", "Dec 2023"], ["2023-02-01", "2024-01-01"]),
    ("%Y年%m月", ["2023年1月", "2023年2月"], ["2023-02-01", "2023-03-01"]),
    ("FY%Y", ["FY2022", "FY2023"], ["2023-01-01", "2024-01-01"])])
def test_a_declared_form_without_a_day_is_read_at_its_periods_end(tmp_path, form, written,
                                                                   ends):
    """A month's (or a year's) rows are known once it is over: a seed in January never
    sees the row about January (pandas reads '2023-01' as its first instant)."""
    from rdl.data.folder import load_folder
    pd.DataFrame({"id": [1, 2], "month": written, "sales": [5, 7]}).to_csv(
        tmp_path / "sales.csv", index=False)
    schema = {"tables": {"sales": {"pkey": "id", "time": "month",
                                   "formats": {"month": form}}}}
    db = load_folder(tmp_path, schema)
    assert db["sales"].df["month"].dt.strftime("%F").tolist() == ends
    assert len(db["sales"].upto(pd.Timestamp(ends[0]) - pd.Timedelta("1s")).df) == 0


def test_a_declared_week_without_its_weekday_stops(tmp_path):
    from rdl.data.folder import load_folder
    pd.DataFrame({"id": [1, 2], "week": ["2023-W05", "2023-W06"]}).to_csv(
        tmp_path / "sales.csv", index=False)
    schema = {"tables": {"sales": {"pkey": "id", "time": "week",
                                   "formats": {"week": "%Y-W%W"}}}}
    with pytest.raises(DataError, match="writes a week without its weekday, which no day "
                                        "can be read from"):
        load_folder(tmp_path, schema)


def test_a_schema_s_formats_read_times_in_the_form_they_declare(tmp_path):
    """``formats: {column: strftime form}`` reads what no guess does (a Japanese date; a
    date key in another order), the table's own time included; values not in the form,
    and declarations that cannot hold, stop naming the column."""
    from rdl.data.folder import load_folder
    pd.DataFrame({"id": [1, 2, 3], "day": ["2023年1月5日", "2023年1月17日", "2023年2月1日"],
                  "due": ["05012023", "17012023", None]}).to_csv(tmp_path / "orders.csv", index=False)
    formats = {"day": "%Y年%m月%d日", "due": "%d%m%Y"}
    schema = {"tables": {"orders": {"pkey": "id", "time": "day", "formats": formats}}}
    df = load_folder(tmp_path, schema)["orders"].df
    assert df["day"].astype(str).tolist() == ["2023-01-05", "2023-01-17", "2023-02-01"]
    assert df["due"].dt.strftime("%F").tolist()[:2] == ["2023-01-05", "2023-01-17"]
    assert df["due"].isna().tolist() == [False, False, True]
    with pytest.raises(DataError, match="table 'orders', column 'day'\\): 3 of 3 values are "
                                        "not in the form the schema declares \\('%d/%m/%Y'\\)"):
        load_folder(tmp_path, {"tables": {"orders": {"pkey": "id", "time": "day",
                                                     "formats": {"day": "%d/%m/%Y"}}}})
    without = {"tables": {"orders": {"pkey": "id", "time": "day"}}}
    with pytest.raises(DataError, match="declare the form they are in \\(formats: {day:"):
        load_folder(tmp_path, without)
    for bad, message in [({"day": "ymd"}, "is no form of times"),
                         ({"day": "%Q"}, "does not read back the times it writes"),
                         ({"id": "%Y"}, "the column is a key"),
                         ({"due": "%d%m%Y", "x": "%Y"}, "'x' missing")]:
        table = {**without["tables"]["orders"], "formats": bad}
        with pytest.raises(DataError, match=message):
            load_folder(tmp_path, {"tables": {"orders": table}})
    with pytest.raises(DataError, match="declared categorical in stypes"):
        load_folder(tmp_path, {"tables": {"orders": {
            **without["tables"]["orders"], "formats": {"due": "%d%m%Y"},
            "stypes": {"due": "categorical"}}}})


def test_numbers_declared_as_times_read_in_their_unit(tmp_path):
    """``formats: {col: epoch_ms}`` (or s, us, ns) and ``excel`` for a column of numbers,
    ``time: {column: c, epoch: excel}`` for the table's time: Excel's serial days count
    from 1899-12-30, a fraction the time of day."""
    from rdl.data.folder import load_folder
    pd.DataFrame({"id": [1, 2], "day": [44931, 44932.75],
                  "shipped": [1672963200000, None]}).to_csv(tmp_path / "orders.csv",
                                                            index=False)
    spec = {"pkey": "id", "time": {"column": "day", "epoch": "excel"},
            "formats": {"shipped": "epoch_ms"}, "stypes": {"shipped": "timestamp"}}
    df = load_folder(tmp_path, {"tables": {"orders": spec}})["orders"].df
    assert df["day"].astype(str).tolist() == ["2023-01-05 00:00:00", "2023-01-06 18:00:00"]
    assert str(df["shipped"][0]) == "2023-01-06 00:00:00" and df["shipped"].isna()[1]
    excel = {"pkey": "id", "time": "shipped", "formats": {"day": "excel", "shipped": "epoch_ms"}}
    with pytest.raises(DataError, match="time missing in 1 of 2 rows"):
        load_folder(tmp_path, {"tables": {"orders": excel}})
    with pytest.raises(DataError, match=r"formats: {day: epoch_s}, or excel"):
        load_folder(tmp_path, {"tables": {"orders": {"pkey": "id", "time": "day"}}})
    with pytest.raises(DataError, match="as s since 1970 .* beyond the years"):
        load_folder(tmp_path, {"tables": {"orders": {
            "pkey": "id", "time": {"column": "day", "epoch": "excel"},
            "formats": {"shipped": "epoch_s"}}}})


def test_text_no_form_reads_is_tried_on_its_first_values_only(monkeypatch):
    """A text column of a name and a number (``Track 7``) is no time without a form tried;
    one that no form reads is tried on its first values, not on the whole column once a
    form (a real export's dozens of text columns each cost seconds so)."""
    from rdl.data import times

    calls = []
    real = times.parse
    monkeypatch.setattr(times, "parse", lambda text, form: calls.append(len(text)) or real(
        text, form))
    assert not times.looks_like_times(pd.Series([f"Track {i}" for i in range(5000)]))
    assert calls == []
    assert not times.looks_like_times(pd.Series([f"{i}x{i % 97}-b" for i in range(5000)]))
    assert calls == []   # (no year, no day and month: no date, no form tried)
    codes = pd.Series([f"{1000 + i}x{i % 97}-b" for i in range(5000)])   # no time either
    assert not times.looks_like_times(codes)
    assert calls and max(calls) <= times._HEAD
    assert times._read_times(codes)[0].isna().all()
    assert max(calls) <= times._HEAD
    assert times.looks_like_times(pd.Series(["Jan 2023", "May 5, 2023", "2023Q1"] * 10))


@pytest.mark.parametrize("written", [["10:30Z", "11:45Z"], ["10:30+02:00", "11:45+02:00"],
                                     ["10:30 UTC", "11:45 UTC"], ["10:30:00+00", "9:00:00+00"]])
def test_times_of_day_with_their_zone_are_no_times(written):
    """PostgreSQL's ``timetz`` and zoned clocks: before, read as that time on the day of the
    run; undeclared they are no times, declared they stop naming the join."""
    assert not looks_like_times(pd.Series(written * 5, dtype=object))
    with pytest.raises(DataError, match="times of day without their date"):
        read(*written)


def test_spans_of_times_of_day_are_no_times(tmp_path):
    """A shop's opening hours or a shift (``09:00-17:00``): before, read as 09:00 on the day
    of the run at the offset -17:00, a table that moved with the calendar."""
    from rdl.data.folder import load_folder
    pd.DataFrame({"id": [1, 2, 3], "day": ["2024-01-02", "2024-01-03", "2024-01-04"],
                  "hours": ["09:00-17:00", "10:00-18:30", "8:00 - 12:00"]}).to_csv(
        tmp_path / "shifts.csv", index=False)
    df = load_folder(tmp_path, {"tables": {"shifts": {"pkey": "id", "time": "day"}}})[
        "shifts"].df
    assert df["hours"].tolist() == ["09:00-17:00", "10:00-18:30", "8:00 - 12:00"]
    with pytest.raises(DataError, match="spans of times of day \\(e.g. '09:00-17:00'\\)"):
        load_folder(tmp_path, {"tables": {"shifts": {"pkey": "id", "time": "hours"}}})


def test_a_column_of_dates_in_two_forms_reads_each_in_its_own(caplog):
    """A spreadsheet's dates, some typed as text (ISO beside day-first): before, the second
    form stopped the load as no times. Ambiguous ones still need dayfirst; garbage stops."""
    with caplog.at_level(logging.WARNING):
        assert read("2024-01-05", "05/02/2024", "2024-03-07", "13/02/2024") == [
            "2024-01-05 00:00:00", "2024-02-05 00:00:00", "2024-03-07 00:00:00",
            "2024-02-13 00:00:00"]
    assert "2 of 4 times are written in a second form (e.g. '05/02/2024'" in caplog.text
    with pytest.raises(DataError, match="read both as month/day/year and as day/month"):
        read("2024-01-05", "05/02/2024")
    assert parse_times(pd.Series(["2024-01-05", "05/02/2024"]), "x", dayfirst=False
                       ).tolist() == [pd.Timestamp("2024-01-05"), pd.Timestamp("2024-05-02")]
    for other in ("xx", "Jan 5"):   # no form of rdl's reads it (nor a year for Jan 5)
        with pytest.raises(DataError, match="do not parse as dates"):
            read("2024-01-05", "13/02/2024", other)
