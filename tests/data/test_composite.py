"""Composite keys: a table keyed by several columns, and foreign keys to it, as the schema
declares them (rdl.data.composite), read from files that write their values differently."""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.data.composite import ids
from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.graph.build import make_graph

SCHEMA = """\
tables:
  weather: {pkey: [origin, time_hour], time: time_hour, stypes: {origin: categorical}}
  flights: {pkey: flight, time: dep, fkeys: {"origin, time_hour": weather},
            stypes: {origin: categorical}}
"""


def write(folder, schema: str = SCHEMA, weather=None, flights=None) -> None:
    """Weather as a CSV (text times, one with an offset, a CHAR-padded origin) and flights
    as parquet (parsed times): each file writes the key's values its own way."""
    w = pd.DataFrame({"origin": ["JFK", "LGA  ", "JFK", "EWR"],
                      "time_hour": ["2013-01-01 05:00:00", "2013-01-01 05:00:00",
                                    "2013-01-01T01:00:00-05:00", "2013-01-01 06:00:00"],
                      "temp": [1.0, 2.0, 3.0, 4.0]})
    f = pd.DataFrame({"flight": [1, 2, 3, 4, 5],
                      "origin": ["JFK", "LGA", "JFK", "EWR", None],
                      "time_hour": pd.to_datetime(["2013-01-01 05:00", "2013-01-01 05:00",
                                                   "2013-01-01 06:00", "2013-01-01 07:00",
                                                   "2013-01-01 05:00"]),
                      "dep": pd.to_datetime(["2013-01-01 05:10", "2013-01-01 05:20",
                                             "2013-01-01 06:10", "2013-01-01 07:30",
                                             "2013-01-01 05:40"])})
    (weather or (lambda d: d))(w).to_csv(folder / "weather.csv", index=False)
    (flights or (lambda d: d))(f).to_parquet(folder / "flights.parquet", index=False)
    (folder / "schema.yaml").write_text(schema)


def fails(folder, *parts: str) -> None:
    with pytest.raises(DataError) as e:
        load_folder(folder)
    for part in parts:
        assert part in str(e.value), (part, str(e.value))


def test_a_foreign_key_matches_every_column_of_the_key_it_references(tmp_path, caplog):
    write(tmp_path)
    db = load_folder(tmp_path)
    weather, flights = db["weather"].df, db["flights"].df
    key = "origin, time_hour"
    assert db["weather"].pkey == key and db["flights"].fkeys == {key: "weather"}
    # each flight points at its airport's weather of that hour, however each file wrote it
    assert list(db.keys["weather"]) == ["JFK|2013-01-01 05:00:00", "LGA|2013-01-01 05:00:00",
                                        "JFK|2013-01-01 06:00:00", "EWR|2013-01-01 06:00:00"]
    flights = flights.assign(id=db.keys["flights"]).set_index("id").sort_index()
    matched = flights[flights[key].notna()]
    pointed = weather.loc[matched[key].astype(int)]
    assert matched.index.tolist() == [1, 2, 3]
    assert (pointed["time_hour"].to_numpy() == matched["time_hour"].to_numpy()).all()
    assert (pointed["origin"].str.strip().to_numpy() == matched["origin"].to_numpy()).all()
    # EWR at 07:00 has no weather row (dangling: missing, warned of); a flight without an
    # origin has no key at all (missing, not dangling)
    assert flights[key].isna().tolist() == [False, False, False, True, True]
    assert "1 of 5 rows" in caplog.text and "'EWR|2013-01-01 07:00:00'" in caplog.text
    # the key's columns stay features, and the graph links the rows the key matched
    assert {"origin", "time_hour", "temp"} <= set(weather.columns)
    data, _ = make_graph(db, db.stypes)
    edges = data["flights", f"f2p_{key}", "weather"].edge_index
    assert sorted(map(tuple, edges.t().tolist())) == [(0, 0), (1, 1), (3, 2)]


def test_a_key_s_values_are_written_one_way_whatever_the_file():
    df = pd.DataFrame({"n": [7, 8, None], "f": [7.0, 2.5, 1.0], "s": [" a ", "b", "c"],
                       "t": pd.to_datetime(["2024-01-31", "2024-01-31 10:00:00.5", None],
                                           format="ISO8601")})
    df["n"] = df["n"].astype("Int64")
    assert ids(df, ["n", "f", "s", "t"]).tolist()[:2] == ["7|7|a|2024-01-31",
                                                          "8|2.5|b|2024-01-31 10:00:00.500000"]
    assert ids(df, ["n", "s"]).isna().tolist() == [False, False, True]
    # a value's text depends on it alone, not on its column's other values
    assert ids(df.iloc[:1], ["t", "f"]).tolist() == ids(df, ["t", "f"]).tolist()[:1]


def test_keys_written_as_numbers_in_one_file_and_floats_in_the_other(tmp_path):
    schema = """\
tables:
  lines: {pkey: [order_id, line]}
  returns: {pkey: rid, fkeys: {"order_id,line": lines}}
"""
    (tmp_path / "schema.yaml").write_text(schema)
    pd.DataFrame({"order_id": [1, 1, 2], "line": [1, 2, 1], "qty": [3, 4, 5]}).to_csv(
        tmp_path / "lines.csv", index=False)
    pd.DataFrame({"rid": ["r1", "r2"], "order_id": [1.0, 2.0], "line": [2.0, 1.0]}).to_parquet(
        tmp_path / "returns.parquet")
    db = load_folder(tmp_path)
    assert db["returns"].df["order_id, line"].tolist() == [1, 2]
    assert list(db.keys["lines"]) == ["1|1", "1|2", "2|1"]


def test_composite_key_errors_name_the_table_the_columns_and_the_rows(tmp_path):
    write(tmp_path, weather=lambda d: pd.concat([d, d.iloc[[0]]], ignore_index=True))
    fails(tmp_path, "weather.csv (table 'weather', column 'origin, time_hour')",
          "primary key duplicated: 2 rows share 1 values", "'JFK|2013-01-01 05:00:00' (rows 0, 4)",
          "agree in every column of the key: add the column that tells them apart")
    write(tmp_path, weather=lambda d: d.assign(origin=[None, "LGA", "JFK", "EWR"]))
    fails(tmp_path, "column 'origin, time_hour'", "primary key missing in 1 of 4 rows")
    write(tmp_path, weather=lambda d: d.drop(columns="origin"))
    fails(tmp_path, "weather.csv (table 'weather')",
          "column of the primary key 'origin, time_hour' 'origin' missing")
    write(tmp_path, SCHEMA.replace('"origin, time_hour"', "origin"))
    fails(tmp_path, "table 'flights': foreign key 'origin' has 1 column(s), the primary key "
          "'origin, time_hour' of table 'weather' 2")
    write(tmp_path, SCHEMA.replace("[origin, time_hour]", "[origin]"))
    fails(tmp_path, "table 'weather'", "a composite key names two or more different columns")
    write(tmp_path, SCHEMA.replace("[origin, time_hour]", "[origin, origin]"))
    fails(tmp_path, "a composite key names two or more different columns")
    write(tmp_path, weather=lambda d: d.assign(**{"origin, time_hour": 1}))
    fails(tmp_path, "the file has a column named as the composite key 'origin, time_hour'")


def test_a_task_s_sql_sees_a_composite_key_as_its_ids(tmp_path):
    import duckdb

    from rdl.tasks.ids import register, to_rows
    write(tmp_path)
    db = load_folder(tmp_path)
    con = duckdb.connect()
    register(con, db)
    got = con.execute('SELECT f.flight, w.temp, f."origin, time_hour" AS id FROM flights f '
                      'JOIN weather w USING ("origin, time_hour") ORDER BY f.flight').df()
    assert got[["flight", "temp"]].values.tolist() == [[1, 1.0], [2, 2.0], [3, 3.0]]
    assert got["id"].tolist()[2] == "JFK|2013-01-01 06:00:00"
    rows = to_rows(got["id"], db, "weather", "a task")
    assert db["weather"].df.loc[rows, "temp"].tolist() == [1.0, 2.0, 3.0]
