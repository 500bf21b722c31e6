"""A table keyed by a year (a team's season, ``pkey: [yearID, teamID]``, as the Lahman
databank's files are) and the tables referencing that key are drafted timed by it, each row
at its year's end; before, the draft only commented the declaration, the tables loaded
static, every seed saw every season's rows, and ``suggest`` offered no task on players."""
from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import yaml

from rdl.data.draft import draft
from rdl.data.folder import load_folder

TEAMS = ["BOS", "NYA", "CHN", "LAN", "SFN", "ATL"]


def databank(folder):
    rng = np.random.default_rng(0)
    pd.DataFrame([(y, t, int(rng.integers(50, 100))) for y in range(2015, 2021) for t in TEAMS],
                 columns=["yearID", "teamID", "W"]).to_csv(folder / "teams.csv", index=False)
    pd.DataFrame({"playerID": [f"p{i:03d}" for i in range(60)],
                  "debut": (pd.Timestamp("2010-04-01") + pd.to_timedelta(
                      np.sort(rng.integers(0, 1800, 60)), "D")).strftime("%Y-%m-%d")}
                 ).to_csv(folder / "players.csv", index=False)
    stints = pd.DataFrame([(f"p{i:03d}", y, rng.choice(TEAMS), int(rng.integers(1, 160)))
                           for i in range(60) for y in range(2015, 2021) if rng.random() < 0.6],
                          columns=["playerID", "yearID", "teamID", "G"])
    stints.to_csv(folder / "batting.csv", index=False)
    # years at school, several rows a player and year and no key: a year may be a feature
    college = pd.DataFrame({"playerID": [f"p{i % 30:03d}" for i in range(90)],
                            "yearID": [2005 + i % 4 for i in range(90)],
                            "credits": np.arange(90) % 7})
    college.to_csv(folder / "college.csv", index=False)
    # a hall of fame's ballots, after the players' seasons: no key, a year after a debut
    pd.DataFrame({"playerID": [f"p{i:03d}" for i in range(0, 60, 2)],
                  "yearID": [2021 + i % 3 for i in range(30)],
                  "votes": np.arange(30) * 3}).to_csv(folder / "ballots.csv", index=False)
    return stints


def test_a_season_keyed_table_and_its_references_are_timed_at_the_year_end(tmp_path):
    stints = databank(tmp_path)
    text = draft(tmp_path)
    tables = yaml.safe_load(text)["tables"]
    season = {"column": "yearID", "unit": "year", "origin": datetime.date(2015, 1, 1),
              "first": 2015}
    assert tables["teams"]["time"] == season and tables["batting"]["time"] == season
    assert tables["teams"]["pkey"] == ["yearID", "teamID"]
    assert tables["batting"]["fkeys"]["yearID, teamID"] == "teams"
    assert "yearID is a year in its key" in text
    assert "time" not in tables["college"]   # (years before a debut: no rule times them)
    assert tables["ballots"]["time"] == season | {"origin": datetime.date(2021, 1, 1),
                                                  "first": 2021}
    assert "yearID: a year after its players row began, in most rows" in text
    assert tables["players"]["time"] == "debut"
    assert "# yearID: period numbers? if they are the rows' time: time: {column: yearID" in text
    db = load_folder(tmp_path, {"tables": tables})
    got = db["batting"].df
    assert (got["yearID"] == pd.to_datetime((stints["yearID"] + 1).astype(str) + "-01-01")).all()
    # the composite reference still finds its team season, by its year as a time
    teams = db["teams"].df
    linked = teams.iloc[got["yearID, teamID"].to_numpy()]
    assert (linked["teamID"].to_numpy() == stints["teamID"].to_numpy()).all()
    assert (linked["yearID"].to_numpy() == got["yearID"].to_numpy()).all()
