"""load_folder: a folder of files and a schema in, a Database out, or one clear error."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.data.forum import generate, write_forum

SCHEMA = """\
tables:
  users: {pkey: user_id, time: signup, stypes: {age: numerical}}
  tags: {file: tag_list.csv, pkey: tag_id}
  posts:
    pkey: post_id
    time: created
    fkeys: {author_id: users, parent_id: posts, tag_id: tags}
  votes: {time: created, fkeys: {user_id: users, post_id: posts}}
"""


def write(folder, schema: str = SCHEMA, **edit) -> None:
    """A small valid database (users and tags as CSV, posts and votes as parquet) in
    ``folder``; ``edit``: table -> function changing its frame (or file name -> text)."""
    users = pd.DataFrame({"user_id": [10, 11, 12], "age": ["30", "", "41"],
                          "signup": ["2024-01-01", "2024-01-02", "2024-01-03 08:00:00"]})
    tags = pd.DataFrame({"tag_id": ["a", "b"], "name": ["sql", "rust"]})
    posts = pd.DataFrame({"post_id": [100, 101, 102], "author_id": [10, 11, 12],
                          "parent_id": pd.array([None, 100, 100], dtype="Int64"),
                          "tag_id": ["a", "a", "b"],
                          "created": pd.to_datetime(["2024-01-05", "2024-01-04", "2024-01-06"])})
    votes = pd.DataFrame({"user_id": [10, 12, 11, 10], "post_id": [101, 101, 102, 100],
                          "created": pd.to_datetime(["2024-01-06", "2024-01-07", "2024-01-07",
                                                     "2024-01-08"])})
    frames = {"users": users, "tags": tags, "posts": posts, "votes": votes}
    for name, change in edit.items():
        if name in frames:
            frames[name] = change(frames[name])
    frames["users"].to_csv(folder / "users.csv", index=False)
    frames["tags"].to_csv(folder / "tag_list.csv", index=False)
    frames["posts"].to_parquet(folder / "posts.parquet", index=False)
    frames["votes"].to_parquet(folder / "votes.parquet", index=False)
    (folder / "schema.yaml").write_text(schema)


def snapshot(folder) -> dict:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def fails(folder, *parts: str, schema=None, **kwargs) -> str:
    """load_folder raises one DataError whose message holds every part; nothing written."""
    before = snapshot(folder)
    with pytest.raises(DataError) as e:
        load_folder(folder, schema, **kwargs)
    message = str(e.value)
    for part in parts:
        assert part in message, message
    assert "column #" not in message   # pyarrow's column numbers never reach the user
    assert snapshot(folder) == before
    return message


def test_loads_a_folder_with_self_references_and_original_keys(tmp_path):
    write(tmp_path)
    db = load_folder(tmp_path)
    assert {n: len(t) for n, t in db} == {"users": 3, "tags": 2, "posts": 3, "votes": 4}
    posts, votes = db["posts"].df, db["votes"].df
    # timed tables with a primary key are sorted by time; keys give the files' ids back
    assert list(db.keys["posts"]) == [101, 100, 102]
    assert list(db.keys["tags"]) == ["a", "b"]
    assert list(posts["post_id"]) == [0, 1, 2]
    assert list(db.keys["posts"][posts["parent_id"].dropna().astype(int)]) == [100, 100]
    assert posts["parent_id"].isna().tolist() == [False, True, False]
    assert list(db.keys["posts"][votes["post_id"].astype(int)]) == [101, 101, 102, 100]
    assert list(db.keys["users"][votes["user_id"].astype(int)]) == [10, 12, 11, 10]
    assert db["tags"].time_col is None and db["votes"].pkey is None
    assert db["users"].df["signup"].dtype == "datetime64[ns]"
    assert db["users"].df["age"].isna().tolist() == [False, True, False]
    assert db.stypes == {"users": {"age": "numerical"}}


def test_schema_file_missing_or_invalid(tmp_path):
    write(tmp_path)
    fails(tmp_path, "nope.yaml", "schema file missing (python -m rdl.data.draft",
          schema=tmp_path / "nope.yaml")
    (tmp_path / "schema.yaml").write_text("tables: {users: [unclosed\n")
    fails(tmp_path, "schema.yaml", "not valid YAML")
    (tmp_path / "schema.yaml").write_text("- a list\n")
    fails(tmp_path, "schema.yaml", "expected a mapping with 'tables:'")


@pytest.mark.parametrize("schema,message", [
    (SCHEMA + "colour: blue\n", "unknown key(s) ['colour']"),
    (SCHEMA.replace("time: signup,", "time: signup, primary: x,"),
     "table 'users': unknown key(s) ['primary']"),
    (SCHEMA.replace("tag_id: tags}", "tag_id: labels}"),
     "table 'posts': foreign key 'tag_id' references unknown table 'labels'"),
    (SCHEMA.replace("post_id: posts}", "post_id: votes}"),
     "foreign key 'post_id' references table 'votes', which has no primary key"),
    (SCHEMA.replace("age: numerical", "age: number"), "column 'age' has unknown stype 'number'"),
])
def test_bad_schema(tmp_path, schema, message):
    write(tmp_path, schema)
    fails(tmp_path, "schema.yaml", message)


def test_a_key_that_references_another_table_s_key(tmp_path):
    """A row that extends another, one to one (a profile of its user, Django's
    ``place_ptr_id``): its primary key is a foreign key too; the foreign key becomes a copy
    of the key, named for the table it references, and matches each row's own."""
    write(tmp_path, SCHEMA + "  profiles: {pkey: user_id, fkeys: {user_id: users}}\n")
    pd.DataFrame({"user_id": [12, 10], "bio": ["x", "y"]}).to_csv(tmp_path / "profiles.csv",
                                                                  index=False)
    db = load_folder(tmp_path)
    profiles = db["profiles"]
    assert profiles.pkey == "user_id" and profiles.fkeys == {"user_id (users)": "users"}
    users = db.keys["users"].to_numpy()
    assert list(users[profiles.df["user_id (users)"].to_numpy()]) == \
        list(db.keys["profiles"].to_numpy()[profiles.df["user_id"].to_numpy()])
    write(tmp_path, SCHEMA + "  profiles: {pkey: user_id, fkeys: {user_id: users}}\n")
    pd.DataFrame({"user_id": [12], "user_id (users)": [1]}).to_csv(tmp_path / "profiles.csv",
                                                                    index=False)
    fails(tmp_path, "column 'user_id (users)' its copy would take is in the table")


def test_compressed_csv(tmp_path):
    write(tmp_path, SCHEMA.replace("file: tag_list.csv", "file: tag_list.csv.gz"))
    tags = (tmp_path / "tag_list.csv").read_bytes()
    import gzip
    (tmp_path / "tag_list.csv.gz").write_bytes(gzip.compress(tags))
    (tmp_path / "tag_list.csv").unlink()
    assert list(load_folder(tmp_path).keys["tags"]) == ["a", "b"]


def test_data_file_missing(tmp_path):
    write(tmp_path)
    (tmp_path / "votes.parquet").unlink()
    fails(tmp_path, "votes.parquet or votes.csv: missing", "table 'votes'")
    write(tmp_path)
    (tmp_path / "tag_list.csv").unlink()
    fails(tmp_path, "tag_list.csv: missing", "table 'tags'")


@pytest.mark.parametrize("table,column,role", [
    ("users", "user_id", "primary key"), ("posts", "parent_id", "foreign key"),
    ("votes", "created", "time column"), ("users", "age", "column with an stype"),
])
def test_required_column_missing(tmp_path, table, column, role):
    write(tmp_path, **{table: lambda df: df.drop(columns=[column])})
    file = {"users": "users.csv", "posts": "posts.parquet", "votes": "votes.parquet"}[table]
    fails(tmp_path, file, f"table {table!r}", f"{role} {column!r} missing")


def test_primary_key_duplicate_or_null(tmp_path):
    write(tmp_path, posts=lambda df: df.assign(post_id=[100, 100, 102]))
    fails(tmp_path, "posts.parquet", "table 'posts', column 'post_id'",
          "primary key duplicated: 2 rows share 1 values, e.g. 100")
    write(tmp_path, users=lambda df: df.assign(user_id=[10, None, None]))
    fails(tmp_path, "users.csv", "column 'user_id'", "primary key missing in 2 of 3 rows")


def test_dangling_foreign_keys(tmp_path, caplog):
    write(tmp_path, votes=lambda df: df.assign(post_id=[101, 999, 998, 100]))
    fails(tmp_path, "votes.parquet", "table 'votes', column 'post_id'",
          "2 of 4 rows (50%) have a foreign key matching no 'posts' row, e.g. 999", dangling="fail")
    with caplog.at_level(logging.WARNING, logger="rdl.data.folder"):
        db = load_folder(tmp_path)          # default: missing, as RelBench, with a log line
    assert "2 of 4 rows (50%)" in caplog.text and "set to missing" in caplog.text
    assert "'implied: true' on table 'posts'" in caplog.text and "dangling: add" in caplog.text
    assert db["votes"].df["post_id"].isna().tolist() == [False, True, True, False]
    dropped = load_folder(tmp_path, dangling="drop")
    assert list(dropped.keys["posts"][dropped["votes"].df["post_id"].astype(int)]) == [101, 100]
    # the schema can say so too
    (tmp_path / "schema.yaml").write_text(SCHEMA + "dangling: fail\n")
    fails(tmp_path, "2 of 4 rows", "(dangling: fail)")
    fails(tmp_path, "dangling 'sometimes'", dangling="sometimes")


def test_dropping_a_row_drops_the_rows_pointing_at_it(tmp_path):
    # post 102's author does not exist: dropping post 102 leaves a vote on it dangling
    write(tmp_path, posts=lambda df: df.assign(author_id=[10, 11, 99]))
    db = load_folder(tmp_path, dangling="drop")
    assert list(db.keys["posts"]) == [101, 100]
    assert len(db["votes"]) == 3


def test_unparsable_times(tmp_path):
    write(tmp_path, users=lambda df: df.assign(signup=["2024-01-01", "yesterday", "31/01/2024"]))
    fails(tmp_path, "users.csv", "table 'users', column 'signup'",
          "2 of 3 times do not parse as dates", "e.g. 'yesterday'")
    write(tmp_path, users=lambda df: df.assign(signup=["2024-01-01", "", "2024-01-03"]))
    fails(tmp_path, "column 'signup'", "time missing in 1 of 3 rows")


def test_times_with_offsets_are_utc_and_zero_padded_ids_stay_text(tmp_path):
    write(tmp_path, users=lambda df: df.assign(
        user_id=["0010", "0011", "0012"],
        signup=["2024-01-01T05:00:00+01:00", "2024-01-02T00:00:00Z", "2024-01-03 08:00:00"]),
          posts=lambda df: df.assign(author_id=["0010", "0011", "0012"]),
          votes=lambda df: df.assign(user_id=["0010", "0012", "0011", "0010"]))
    db = load_folder(tmp_path)
    assert list(db.keys["users"]) == ["0010", "0011", "0012"]
    assert db["users"].df["signup"].tolist() == [pd.Timestamp("2024-01-01 04:00"),
                                                 pd.Timestamp("2024-01-02"),
                                                 pd.Timestamp("2024-01-03 08:00")]
    assert db["votes"].df["user_id"].notna().all()


def test_unparsable_numbers(tmp_path):
    write(tmp_path, users=lambda df: df.assign(age=["30", "thirty", "41"]))
    fails(tmp_path, "users.csv", "table 'users', column 'age'",
          "1 of 3 values are not numbers, e.g. 'thirty' (row 1)")


def test_a_bad_value_deep_in_a_csv_is_named_by_its_column(tmp_path):
    # pyarrow infers types from the first block and would fail later on "CSV column #2"
    n = 200_000
    users = pd.DataFrame({"user_id": np.arange(n), "signup": "2024-01-01", "age": "30"})
    users.loc[n - 1, "age"] = "30 years"
    write(tmp_path, users=lambda df: users)
    fails(tmp_path, "column 'age'", "1 of 200000 values are not numbers, e.g. '30 years'")


def test_empty_table(tmp_path):
    write(tmp_path, tags=lambda df: df.iloc[:0])
    fails(tmp_path, "tag_list.csv", "table 'tags'", "the table is empty (0 rows)")


def test_the_forum_round_trips(tmp_path):
    """generate -> files -> load_folder: every row, key and reference kept."""
    frames = generate(seed=1, scale=0.001)
    write_forum(tmp_path, seed=1, scale=0.001)
    db = load_folder(tmp_path)
    for name, df in frames.items():
        assert len(db[name]) == len(df), name
    users, posts, votes = (db[n].df for n in ("users", "posts", "votes"))
    # keys: the generator's ids, in time order
    assert sorted(db.keys["users"]) == sorted(frames["users"]["user_id"])
    assert (users["signup"].diff().dropna() >= pd.Timedelta(0)).all()
    # every reference maps to the row of the id the file held
    original = frames["posts"].set_index("post_id")
    ids = db.keys["posts"]
    assert (db.keys["users"][posts["author_id"].astype(int)]
            == original.loc[ids, "author_id"].to_numpy()).all()
    answers = posts["parent_id"].notna().to_numpy()
    assert answers.any() and not answers.all()
    parent_ids = ids[posts.loc[answers, "parent_id"].astype(int)]   # the self-reference
    assert (parent_ids == original.loc[ids[answers], "parent_id"].astype(int).to_numpy()).all()
    assert (ids[votes["post_id"].astype(int)] == frames["votes"]["post_id"].to_numpy()).all()
    assert db.stypes["posts"] == {"kind": "categorical", "length": "numerical"}


def test_parquet_types_a_graph_can_read(tmp_path):
    """Nullable booleans (objects to pandas, which PyTorch Frame took for embeddings) and
    zoned times (UTC, without the zone) become columns the graph builds from."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rdl.graph.build import make_graph
    pq.write_table(pa.table({
        "user_id": ["u1", "u2", "u3"],
        "signup": pa.array([pd.Timestamp("2024-01-01").date()] * 3, pa.date32()),
        "vip": pa.array([True, False, None]),
        "seen": pa.array([pd.Timestamp("2024-01-01 01:00", tz="Europe/Berlin")] * 3)}),
        tmp_path / "users.parquet")
    (tmp_path / "schema.yaml").write_text("tables:\n  users: {pkey: user_id, time: signup}\n")
    db = load_folder(tmp_path)
    df = db["users"].df
    assert df["vip"].tolist()[:2] == [1.0, 0.0] and np.isnan(df["vip"].iloc[2])
    assert df["seen"].iloc[0] == pd.Timestamp("2024-01-01 00:00")
    data, _ = make_graph(db)
    assert data["users"].tf.num_rows == 3


def test_a_row_older_than_the_row_it_references(tmp_path):
    """A post dated before its author's signup: cut between the two, the post's author
    does not exist yet, and the graph of the cut builds (its reference is missing)."""
    from rdl.graph.build import make_graph
    write(tmp_path, users=lambda df: df.assign(signup=["2024-01-01", "2024-01-05", "2024-01-02"]))
    db = load_folder(tmp_path)
    cut = db.upto("2024-01-04")   # post 101 (2024-01-04) by user 11 (signup 2024-01-05)
    posts = cut["posts"].df
    assert list(cut["users"].df["user_id"]) == [0, 1] and len(posts) == 1
    assert posts["author_id"].isna().all()
    assert db["posts"].df["author_id"].notna().all()     # the whole database keeps it
    data, _ = make_graph(cut, {"tags": {"name": "categorical"}})
    assert data["posts", "f2p_author_id", "users"].edge_index.shape == (2, 0)


def test_a_csv_row_with_too_many_fields(tmp_path):
    write(tmp_path)
    with open(tmp_path / "users.csv", "a") as f:
        f.write("13,50,2024-01-04,extra\n")
    fails(tmp_path, "users.csv (table 'users')", "1 row does not have the header's 3 fields, "
          "e.g. row 5: '13,50,2024-01-04,extra' (4 fields)")
