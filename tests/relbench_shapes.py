"""Tiny databases in the shapes of RelBench's real datasets, written by RelBench 1.1.0's own
code (``Dataset.get_db`` re-indexes and saves them as RelBench caches a dataset) with its
real task classes writing the task tables; no schema, SQL or label of rdl's in them.

* :func:`write_rel_stack`: rel-stack's tables (users, posts with self-references, postLinks
  linking posts to posts, votes, comments, badges) and its tasks (:data:`STACK_TASKS`):
  ``post-post-related`` (a link task from a table to itself), ``user-post-comment`` (a
  link task), ``user-engagement`` and ``user-badge`` (binary), ``post-votes`` (regression).
* :func:`write_rel_f1`: rel-f1's tables and its driver-dnf, driver-top3 (binary) and
  driver-position (regression) tasks.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

START, END = pd.Timestamp("2018-01-01"), pd.Timestamp("2021-06-01")
VAL, TEST = pd.Timestamp("2020-06-01"), pd.Timestamp("2020-10-01")
#: rel-stack's tasks, each written by its RelBench 1.1.0 class
STACK_TASKS = ("post-post-related", "user-post-comment", "user-engagement", "user-badge",
               "post-votes")
#: rel-f1's tasks
F1_TASKS = ("driver-dnf", "driver-top3", "driver-position")


def _times(rng, n: int, after=None) -> pd.Series:
    lo = START.value if after is None else after
    span = END.value - np.asarray(lo)
    return pd.to_datetime(np.asarray(lo) + (rng.random(n) * span).astype("int64")).floor("s")


def stack_tables(seed: int = 0, users: int = 40, posts: int = 240, links: int = 700) -> dict:
    """rel-stack's tables as pandas frames, ids as written (not yet 0..N-1)."""
    rng = np.random.default_rng(seed)
    u = pd.DataFrame({"Id": np.arange(users) + 100, "CreationDate": _times(rng, users),
                      "Reputation": rng.integers(1, 500, users), "AboutMe": "about me"})
    created = _times(rng, posts).sort_values().to_numpy()
    parent = [None if i < 5 or rng.random() < 0.6 else int(rng.integers(0, i)) + 1000
              for i in range(posts)]
    p = pd.DataFrame({"Id": np.arange(posts) + 1000, "CreationDate": created,
                      "OwnerUserId": rng.integers(0, users, posts) + 100,
                      "ParentId": pd.array(parent, dtype="Int64"),
                      "AcceptedAnswerId": pd.array([None] * posts, dtype="Int64"),
                      "PostTypeId": np.where(pd.isna(pd.array(parent)), 1, 2),
                      "Title": [f"post {i}" for i in range(posts)]})
    src = rng.integers(10, posts, links)
    dst = np.array([rng.integers(0, s) for s in src])
    after = np.maximum(created[src].astype("int64"), created[dst].astype("int64"))
    pl = pd.DataFrame({"Id": np.arange(links) + 5000, "PostId": src + 1000,
                       "RelatedPostId": dst + 1000, "LinkTypeId": rng.integers(1, 3, links),
                       "CreationDate": _times(rng, links, after)})
    nv = posts * 4
    vp = rng.integers(0, posts, nv)
    votes = pd.DataFrame({"Id": np.arange(nv) + 9000, "PostId": vp + 1000,
                          "UserId": rng.integers(0, users, nv) + 100,
                          "VoteTypeId": rng.integers(1, 3, nv),
                          "CreationDate": _times(rng, nv, created[vp].astype("int64"))})
    nc = posts * 2
    cp = rng.integers(0, posts, nc)
    comments = pd.DataFrame({"Id": np.arange(nc) + 20000, "PostId": cp + 1000,
                             "UserId": rng.integers(0, users, nc) + 100, "Text": "a comment",
                             "CreationDate": _times(rng, nc, created[cp].astype("int64"))})
    rng = np.random.default_rng(seed + 1)   # the tables above as they were before badges
    nb = users * 3
    bu = rng.integers(0, users, nb)
    badges = pd.DataFrame({"Id": np.arange(nb) + 40000, "UserId": bu + 100,
                           "Class": rng.integers(1, 4, nb),
                           "Name": rng.choice(["Teacher", "Student", "Nice Answer"], nb),
                           "Date": _times(rng, nb, u["CreationDate"].to_numpy()[bu]
                                          .astype("int64"))})
    return {"users": u, "posts": p, "postLinks": pl, "votes": votes, "comments": comments,
            "badges": badges}


def write_rel_stack(root: Path, frames: dict | None = None, tasks=("post-post-related",),
                    **task_settings) -> Path:
    """rel-stack in RelBench 1.x/2.x's layout under ``root``: ``db/`` saved by RelBench's
    ``Dataset.get_db`` and ``tasks/<task>/{train,val,test}.parquet`` by its task classes
    (``task_settings`` replace class attributes, e.g. ``num_eval_timestamps``)."""
    from relbench.base import Database, Dataset, Table
    from relbench.tasks import stack

    frames = frames if frames is not None else stack_tables()
    fkeys = {"users": {}, "posts": {"OwnerUserId": "users", "ParentId": "posts",
                                    "AcceptedAnswerId": "posts"},
             "postLinks": {"PostId": "posts", "RelatedPostId": "posts"},
             "votes": {"PostId": "posts", "UserId": "users"},
             "comments": {"PostId": "posts", "UserId": "users"},
             "badges": {"UserId": "users"}}

    class RelStack(Dataset):
        val_timestamp, test_timestamp = VAL, TEST

        def make_db(self):
            return Database({n: Table(df.copy(), fkeys[n], "Id",
                                      "Date" if n == "badges" else "CreationDate")
                             for n, df in frames.items()})

    ds = RelStack(cache_dir=str(root))
    ds.get_db(upto_test_timestamp=False)   # saved to <root>/db, re-indexed as RelBench does
    classes = {"post-post-related": stack.PostPostRelatedTask,
               "user-post-comment": stack.UserPostCommentTask,
               "user-engagement": stack.UserEngagementTask, "user-badge": stack.UserBadgeTask,
               "post-votes": stack.PostVotesTask}
    for name in tasks:
        cls = type(name, (classes[name],), dict(task_settings))
        task = cls(ds, cache_dir=str(root / "tasks" / name))
        for split in ("train", "val", "test"):
            task.get_table(split, mask_input_cols=False)
    return root


def write_autocomplete_files(root: Path, folder: Path, table: str = "users",
                             target: str = "Reputation") -> Path:
    """An autocomplete task in RelBench 1.x/2.x's layout, its label files written by
    RelBench's ``Table.save`` into ``folder`` (anywhere): each row of ``table`` a seed at
    its own time, labelled with its own column ``target``; a split per dataset time."""
    from relbench.base import Database, Table

    t = Database.load(root / "db").table_dict[table]
    df = t.df.rename(columns={t.pkey_col: f"{table}_id"})[[t.time_col, f"{table}_id", target]]
    when = df[t.time_col]
    for split, rows in (("train", when <= VAL), ("val", (when > VAL) & (when <= TEST)),
                        ("test", when > TEST)):
        Table(df[rows].reset_index(drop=True), {f"{table}_id": table}, None,
              t.time_col).save(folder / f"{split}.parquet")
    return folder


def f1_tables(seed: int = 0, drivers: int = 12, start="2017-01-01", end="2022-06-01") -> dict:
    """rel-f1's tables (races every two weeks, each with every driver's result and
    qualifying), ids as written."""
    rng = np.random.default_rng(seed)
    dates = pd.date_range(start, end, freq="14D")
    races = pd.DataFrame({"raceId": np.arange(len(dates)) + 800, "date": dates,
                          "circuitId": rng.integers(0, 5, len(dates)) + 1,
                          "year": dates.year, "round": np.arange(len(dates)) % 20 + 1})
    circuits = pd.DataFrame({"circuitId": np.arange(5) + 1, "name": [f"c{i}" for i in range(5)],
                             "lat": rng.normal(size=5), "lng": rng.normal(size=5)})
    drv = pd.DataFrame({"driverId": np.arange(drivers) + 1,
                        "code": [f"D{i:02d}" for i in range(drivers)],
                        "nationality": rng.choice(["GB", "DE", "NL"], drivers)})
    cons = pd.DataFrame({"constructorId": np.arange(4) + 1, "name": list("ABCD")})
    rows = []
    skill = rng.normal(size=drivers)
    for race, date in zip(races["raceId"], dates):
        order = np.argsort(-(skill + rng.normal(size=drivers))) + 1
        for pos, d in enumerate(order, 1):
            rows.append((race, d, (d % 4) + 1, pos, int(rng.random() < 0.15) + 1, date))
    res = pd.DataFrame(rows, columns=["raceId", "driverId", "constructorId", "positionOrder",
                                      "statusId", "date"])
    res.insert(0, "resultId", np.arange(len(res)) + 30000)
    qual = res[["raceId", "driverId", "constructorId", "date"]].copy()
    qual.insert(0, "qualifyId", np.arange(len(qual)) + 60000)
    qual["position"] = res.groupby("raceId")["positionOrder"].transform(
        lambda p: rng.permutation(len(p)) + 1).to_numpy()
    return {"races": races, "circuits": circuits, "drivers": drv, "constructors": cons,
            "results": res, "qualifying": qual}


F1_VAL, F1_TEST = pd.Timestamp("2020-09-01"), pd.Timestamp("2021-06-01")


def write_rel_f1(root: Path, num_eval_timestamps: int = 3) -> Path:
    """rel-f1 in RelBench 1.x/2.x's layout under ``root`` (name it ``rel-f1``), written by
    RelBench 1.1.0's ``Dataset.get_db`` and its rel-f1 task classes (driver-dnf,
    driver-top3, driver-position), ``num_eval_timestamps`` seed times per val and test."""
    from relbench.base import Database, Dataset, Table
    from relbench.tasks import f1

    frames = f1_tables()
    keys = {"races": ("raceId", {"circuitId": "circuits"}, "date"),
            "circuits": ("circuitId", {}, None), "drivers": ("driverId", {}, None),
            "constructors": ("constructorId", {}, None),
            "results": ("resultId", {"raceId": "races", "driverId": "drivers",
                                     "constructorId": "constructors"}, "date"),
            "qualifying": ("qualifyId", {"raceId": "races", "driverId": "drivers",
                                         "constructorId": "constructors"}, "date")}

    class RelF1(Dataset):
        val_timestamp, test_timestamp = F1_VAL, F1_TEST

        def make_db(self):
            return Database({n: Table(frames[n].copy(), fk, pk, tc)
                             for n, (pk, fk, tc) in keys.items()})

    ds = RelF1(cache_dir=str(root))
    ds.get_db(upto_test_timestamp=False)
    classes = {"driver-dnf": f1.DriverDNFTask, "driver-top3": f1.DriverTop3Task,
               "driver-position": f1.DriverPositionTask}
    for name, cls in classes.items():
        task = type(name, (cls,), {"num_eval_timestamps": num_eval_timestamps})(
            ds, cache_dir=str(root / "tasks" / name))
        for split in ("train", "val", "test"):
            task.get_table(split, mask_input_cols=False)
    return root
