"""Composite keys: a table keyed by several columns, and foreign keys to it, as the schema
declares them (rdl.data.composite), read from files that write their values differently."""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.data.composite import ids
from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.graph.build import make_graph
from tests.data.test_implied import regression_task

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
    # a | in a value cannot make two pairs one id
    pairs = pd.DataFrame({"a": ["x|y", "x"], "b": ["z", "y|z"]})
    assert ids(pairs, ["a", "b"]).tolist() == ["x\\|y|z", "x|y\\|z"]
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
    write(tmp_path, weather=lambda d: pd.concat([d, d.iloc[[0]].assign(temp=9.0)],
                                                 ignore_index=True))   # (an exact repeat: once)
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


STOCK_TASK = regression_task("stock-units", "stock", "store, product", "units", "2024-03-04",
                             "2024-03-18")
STOCK_SQL = """\
SELECT s.timestamp, st."store, product",
  COALESCE((SELECT SUM(x.units) FROM sales x WHERE x."store, product" = st."store, product"
            AND x.sold_at > s.timestamp AND x.sold_at <= s.timestamp + $window), 0) AS units
FROM timestamps s, stock st
"""


def test_a_task_on_entities_keyed_by_two_columns_trains_and_predicts(tmp_path, run_train,
                                                                     rdl_cache):
    """Units sold per (store, product) next week: the task's SQL selects the composite key,
    the sales point at it with products written as floats, and predictions name each
    entity by its id (``S0|1``)."""
    import json

    import numpy as np
    folder, conf = tmp_path / "shop", tmp_path / "conf" / "task"
    folder.mkdir()
    conf.mkdir(parents=True)
    rng = np.random.default_rng(0)
    stock = pd.DataFrame([(s, p) for s in ("S0", "S1", "S2") for p in range(1, 11)],
                         columns=["store", "product"]).assign(shelf=lambda d: d.index % 3)
    pick = rng.integers(0, len(stock), 3000)
    pd.DataFrame({"sale_id": range(3000), "store": stock["store"].to_numpy()[pick],
                  "product": stock["product"].to_numpy()[pick].astype(float),
                  "sold_at": pd.Timestamp("2024-01-01") + pd.to_timedelta(
                      rng.integers(0, 100 * 24, 3000), unit="h"),
                  "units": rng.integers(1, 5, 3000)}).to_parquet(folder / "sales.parquet")
    stock.to_csv(folder / "stock.csv", index=False)
    pd.DataFrame({"store": ["S2", "S0", "S1"], "city": ["a", "b", "a"]}).to_csv(
        folder / "stores.csv", index=False)
    (folder / "schema.yaml").write_text(   # a part of the key is a foreign key too
        "tables:\n  stores: {pkey: store}\n  stock: {pkey: [store, product], "
        "fkeys: {store: stores}}\n"
        '  sales: {pkey: sale_id, time: sold_at, fkeys: {"store, product": stock}}\n')
    (conf / "stock-units.yaml").write_text(STOCK_TASK)
    (conf / "stock-units.sql").write_text(STOCK_SQL)
    run = tmp_path / "run"
    out = run_train(run, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=stock-units",
                    "data=folder", f"data.db.path={folder}", "data.batch_size=16",
                    "data.num_neighbors=[8,4]", "model.channels=8", "model.encoder_layers=1",
                    "trainer.max_epochs=1", "trainer.limit_train_batches=2",
                    "trainer.limit_val_batches=1", "compile.enabled=false", tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert np.isfinite(json.loads((run / "metrics.json").read_text())["model"]["test"]["mae"])
    import os
    import sys

    from tests.zygote import command
    done = command([sys.executable, "-m", "rdl.predict",
                    f"ckpt_path={run / 'checkpoints' / 'best.ckpt'}", "split=test"],
                   env={**os.environ, "RDL_CACHE": str(rdl_cache)}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = pd.read_parquet(run / "predictions_test.parquet")
    assert sorted(got["store, product"]) == sorted(f"{s}|{p}" for s in ("S0", "S1", "S2")
                                                   for p in range(1, 11))
    # and a column per part, as the entity's table holds it (the store's id, not the
    # position of its stores row)
    assert (got["store"] + "|" + got["product"].astype(str)).tolist() == got[
        "store, product"].tolist()
