"""A flat export's entities with their own columns (``attributes:`` on an ``implied: true``
table): a movie's title and genres repeated in each of its ratings become the movie's,
once, at its first appearance; a column that changes within a key stops the load, and the
draft proposes only the columns that hold one value per key."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder

SCHEMA = """\
tables:
  ratings:
    time: at
    fkeys: {movie_id: movies, user_id: users}
    stypes: {genres: multicategorical}
  movies: {pkey: movie_id, implied: true, attributes: [title, year, genres]}
  users: {pkey: user_id, implied: true}
"""


def ratings(**changed) -> pd.DataFrame:
    """Two ratings of each of twelve movies (movie 10 + k in rows 2k, 2k + 1) by three
    users, each movie's own columns in each row; the last's year is missing."""
    movies = [10 + k for k in range(12)]
    df = pd.DataFrame({
        "rating_id": range(1, 25),
        "user_id": [1, 2, 3] * 8,
        "movie_id": [m for m in movies for _ in range(2)],
        "title": [f"Film {m}" for m in movies for _ in range(2)],
        "year": [1990.0 + k for k in range(11) for _ in range(2)] + [None, None],
        "genres": [["Action|Crime", "Animation", "Horror"][m % 3] for m in movies
                   for _ in range(2)],
        "rating": [1.0 + (i % 9) / 2 for i in range(24)],
        "at": pd.date_range("2016-01-01", periods=24, freq="D").astype(str)})
    for col, (row, value) in changed.items():
        df.loc[row, col] = value
    return df


def write(folder, schema: str = SCHEMA, df: pd.DataFrame | None = None) -> None:
    (ratings() if df is None else df).to_csv(folder / "ratings.csv", index=False)
    (folder / "schema.yaml").write_text(schema)


def test_the_entity_takes_its_attributes_once_and_the_rows_keep_their_own(tmp_path):
    write(tmp_path)
    db = load_folder(tmp_path)
    movies = db["movies"].df.set_index(db.keys["movies"].to_numpy()[db["movies"].df["movie_id"]])
    assert movies.loc[[10, 11, 21], "title"].tolist() == ["Film 10", "Film 11", "Film 21"]
    assert movies.loc[[10, 11], "year"].tolist() == [1990, 1991] and pd.isna(movies.loc[21, "year"])
    # each movie at its first rating, with the values that rating holds
    assert movies.loc[[10, 11, 21], "first_seen"].dt.day.tolist() == [1, 3, 23]
    assert set(db["ratings"].df.columns) == {"rating_id", "user_id", "movie_id", "rating", "at"}
    assert db.stypes == {"movies": {"genres": "multicategorical"}}   # moved with its column
    assert list(db["users"].df.columns) == ["user_id", "first_seen"]


def test_an_attribute_that_changes_within_a_key_stops_the_load(tmp_path):
    """A retitled movie, or a year filled in later: the movie's row is its first rating,
    where the later value would be seen early."""
    for change, shown in (({"title": (3, "Film 11 (2)")}, "'Film 11' and 'Film 11 (2)'"),
                          ({"year": (23, 1979)}, "nan and 1979.0")):
        write(tmp_path, df=ratings(**change))
        with pytest.raises(DataError) as e:
            load_folder(tmp_path)
        col = next(iter(change))
        assert f"ratings.csv (table 'ratings', column '{col}'): attributes of table 'movies': " \
               f"1 of 12 keys hold more than one '{col}'" in str(e.value)
        assert shown in str(e.value) and f"Leave '{col}' out of attributes" in str(e.value)


@pytest.mark.parametrize("change,message", [
    (("attributes: [title, year, genres]", "attributes: [titel]"),
     "attributes: 'titel' is a column of none of the tables referencing it (ratings) "
     "(did you mean 'title'?)"),
    (("attributes: [title, year, genres]", "attributes: [title, user_id]"),
     "(table 'ratings', column 'user_id'): a key or time of its own, so no attribute"),
    (("attributes: [title, year, genres]", "attributes: [title, at]"),
     "(table 'ratings', column 'at'): a key or time of its own"),
    (("users: {pkey: user_id, implied: true}",
      "users: {pkey: user_id, implied: true, attributes: [rating]}"),
     None),   # (loads: rating holds two values for a user, below)
    (("attributes: [title, year, genres]", "attributes: {title: text}"),
     "attributes: {'title': 'text'}: a list of the columns"),
    (("attributes: [title, year, genres]", "attributes: [{title: last}]"),
     "attributes: [{'title': 'last'}]: a list of the columns"),
])
def test_bad_attributes(tmp_path, change, message):
    write(tmp_path, SCHEMA.replace(*change))
    with pytest.raises(DataError) as e:
        load_folder(tmp_path)
    assert (message or "keys hold more than one 'rating'") in str(e.value)


def test_attributes_only_on_a_table_without_a_file(tmp_path):
    write(tmp_path)
    pd.DataFrame({"movie_id": [10, 11], "title": ["Heat", "Up"]}).to_csv(
        tmp_path / "movies.csv", index=False)
    with pytest.raises(DataError, match="attributes: only for a table implied: true without "
                                        "a file"):
        load_folder(tmp_path)


def test_the_draft_proposes_the_columns_of_one_value_per_key(tmp_path):
    """A flat file's repeated keys are drafted as tables implied: true, each with the columns
    of one value per key: not the rating (it varies), the user (a key), the time, a release
    date (a time: one computed on export would be seen at the first rating), nor a column
    of one value. Before, the draft left them to a person in comments, without columns."""
    df = ratings().assign(source="web", released=lambda d: d["year"].map(
        lambda y: None if pd.isna(y) else f"{int(y)}-06-01"))
    df.to_csv(tmp_path / "ratings.csv", index=False)
    text = draft(tmp_path)
    tables = yaml.safe_load(text)["tables"]
    assert tables["ratings"]["fkeys"] == {"movie_id": "movies", "user_id": "users"}
    assert tables["movies"] == {"pkey": "movie_id", "implied": True,
                                "attributes": ["title", "year", "genres"]}
    assert tables["users"] == {"pkey": "user_id", "implied": True}
    # the draft, as written, loads: each movie with its own columns
    db = load_folder(tmp_path, yaml.safe_load(text))
    assert {"title", "year", "genres"} <= set(db["movies"].df.columns)
    assert not {"title", "year", "genres"} & set(db["ratings"].df.columns)
    # three movies rated twice: too few to tell a column of one value per key by chance
    df.head(6).to_csv(tmp_path / "ratings.csv", index=False)
    assert yaml.safe_load(draft(tmp_path))["tables"]["movies"] == {"pkey": "movie_id",
                                                                  "implied": True}


def test_a_total_computed_on_export_is_no_attribute(tmp_path):
    """A movie's number of ratings and their sum, written on each rating when the file was
    exported: one value per movie, but what is still to come at every rating. The draft
    drops them from the rows (they would be seen there too) and from the attributes; given
    as attributes, the load stops, saying where the stype goes."""
    df = ratings().drop(index=[1, 3])   # movies 10 and 11 rated once
    df["total_ratings"] = df.groupby("movie_id")["rating_id"].transform("count")
    df["total_stars"] = df.groupby("movie_id")["rating"].transform("sum")
    df.to_csv(tmp_path / "ratings.csv", index=False)
    tables = yaml.safe_load(draft(tmp_path))["tables"]
    assert tables["movies"]["attributes"] == ["title", "year", "genres"]
    assert tables["ratings"]["stypes"] == {"total_ratings": "drop", "total_stars": "drop"}
    write(tmp_path, SCHEMA.replace("[title, year, genres]", "[title, total_stars]"), df)
    with pytest.raises(DataError) as e:
        load_folder(tmp_path)
    assert str(e.value).startswith(
        "table 'movies' (implied: true, no file; its attribute 'total_stars'): in 12 of the "
        "12 rows that ratings rows reference, it equals the sum of ratings.rating")
    assert "leave it out of attributes; stypes: {total_stars: drop} in table 'ratings'" in \
        str(e.value)
    # declared as known then, in the table whose column it is: it moves, with its stype
    write(tmp_path, SCHEMA.replace("[title, year, genres]", "[title, total_stars]").replace(
        "{genres: multicategorical}", "{genres: multicategorical, total_stars: numerical}"), df)
    assert load_folder(tmp_path).stypes["movies"] == {"total_stars": "numerical"}


def test_a_flat_file_trains_with_no_edit(tmp_path, run_train, capsys):
    """One file of ratings, each with its movie's title, genre and year: drafted, suggested
    and trained as printed, with nothing written by hand (before, suggest stopped: no table
    holds recurring events)."""
    import json
    import shlex

    import numpy as np

    from rdl.data.draft import main as draft_main
    from rdl.tasks.suggest import main as suggest
    from tests.test_forum import SMALL

    rng = np.random.default_rng(0)
    n = 3000
    movie = rng.integers(0, 40, n)
    pd.DataFrame({
        "userId": rng.integers(0, 30, n), "movieId": 100 + movie,
        "title": [f"Film number {m}" for m in movie], "genre": np.array(list("ABCD"))[movie % 4],
        "year": 1980 + movie, "rating": rng.integers(1, 11, n) / 2,
        "timestamp": (pd.Timestamp("2024-01-01") + pd.to_timedelta(
            rng.integers(0, 280 * 24, n), "h")).strftime("%Y-%m-%d %H:%M:%S")}).to_csv(
        tmp_path / "ratings.csv", index=False)
    draft_main([str(tmp_path), "--write"])
    schema = yaml.safe_load((tmp_path / "schema.yaml").read_text())
    assert schema["tables"]["movies"]["attributes"] == ["title", "genre", "year"]
    capsys.readouterr()
    suggest([str(tmp_path)])
    lines = [line for line in capsys.readouterr().out.splitlines()
             if "task=events " in line and "entity_table=movies" in line
             and "task.label" not in line]
    assert len(lines) == 1, lines
    run = tmp_path / "run"
    out = run_train(run, *shlex.split(lines[0])[3:], *SMALL, tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run / "metrics.json").read_text())
    assert results["task"] == "movies-active" and "LightGBM" in results
    assert "with their attributes ['title', 'genre', 'year']" in out.stdout + out.stderr


def test_a_column_of_lists_is_an_attribute_too(tmp_path):
    """A parquet file's column of lists (a movie's tags on each rating): the draft compared
    its values as they are and stopped (unhashable); one list per movie is an attribute."""
    df = ratings().drop(columns=["genres", "at"]).assign(
        tags=lambda d: [["drama", "crime"][: 1 + m % 2] for m in d["movie_id"]],
        at=pd.date_range("2016-01-01", periods=24, freq="D"))
    df.to_parquet(tmp_path / "ratings.parquet", index=False)
    schema = yaml.safe_load(draft(tmp_path))
    assert schema["tables"]["movies"]["attributes"] == ["title", "year", "tags"]
    movies = load_folder(tmp_path, schema)["movies"].df
    assert sorted(map(len, movies["tags"])) == [1] * 6 + [2] * 6
    # two lists for one movie: a value that changes, named
    df.at[1, "tags"] = ["drama", "crime", "war"]
    df.to_parquet(tmp_path / "ratings.parquet", index=False)
    with pytest.raises(DataError, match="1 of 12 keys hold more than one 'tags'"):
        load_folder(tmp_path, schema)


def test_a_column_that_changes_for_a_few_keys_takes_each_key_s_first(tmp_path, caplog):
    """``{title: first}``: a movie retitled later keeps the title of its first rating (what
    was known then; the file's order is not the rows' order), and the ratings keep theirs.
    Before, such a column could only stay on the rows (or stop the load)."""
    df = ratings(title=(3, "Film 11 (2)"))   # movie 11: rows 2 (day 3) and 3 (day 4)
    df.loc[[2, 3]] = df.loc[[3, 2]].to_numpy()   # the later rating written first
    write(tmp_path, SCHEMA.replace("[title, year, genres]", "[{title: first}, year, genres]"),
          df)
    with caplog.at_level("INFO", logger="rdl.data.folder"):
        db = load_folder(tmp_path)
    movies = db["movies"].df.set_index(db.keys["movies"].to_numpy()[db["movies"].df["movie_id"]])
    assert movies.loc[11, "title"] == "Film 11" and movies.loc[12, "title"] == "Film 12"
    assert sorted(db["ratings"].df["title"].unique())[:3] == ["Film 10", "Film 11",
                                                              "Film 11 (2)"]
    assert "each key's first 'title': 1 of 12 keys hold another later (e.g. movie_id 11: " \
           "'Film 11', then 'Film 11 (2)')" in caplog.text
    # strict, the error says so
    write(tmp_path, df=df)
    with pytest.raises(DataError, match=r"or take each key's first value \({title: first}"):
        load_folder(tmp_path)


def test_a_foreign_key_is_no_first_value(tmp_path):
    write(tmp_path, SCHEMA.replace("[title, year, genres]}", "[{user_id: first}], fkeys: "
                                   "{user_id: users}}").replace("user_id: users}", "}", 1))
    with pytest.raises(DataError, match=r"attributes: \['user_id'\]: a foreign key's first "
                                        "value only"):
        load_folder(tmp_path)


def test_the_draft_takes_the_first_of_a_text_that_changes_for_few_keys(tmp_path):
    """A movie retitled once among 24 (5 % may): drafted ``{title: first}``; text that
    changes for six of them (a cut) is the rows' own; so is a number that changes for one
    (a price), as a row's number may."""
    more = ratings().assign(movie_id=lambda d: d["movie_id"] + 100,
                            title=lambda d: "Film " + d["movie_id"].astype(str),
                            rating_id=lambda d: d["rating_id"] + 24,
                            at=pd.date_range("2016-02-01", periods=24, freq="D").astype(str))
    df = pd.concat([ratings(title=(3, "Film 11 (2)")), more], ignore_index=True).assign(
        cut=lambda d: [f"v{i % 2}" if i < 12 else "v0" for i in range(len(d))],
        price=lambda d: [9.0 + (i == 1) if i < 2 else 9.0 + i // 2 for i in range(len(d))])
    df.to_csv(tmp_path / "ratings.csv", index=False)
    text = draft(tmp_path)
    assert yaml.safe_load(text)["tables"]["movies"]["attributes"] == [
        {"title": "first"}, "year", "genres"]
    assert "{column: first}: one value per key but for a few keys" in text
    db = load_folder(tmp_path, yaml.safe_load(text))
    assert "title" in db["movies"].df.columns and "title" in db["ratings"].df.columns
