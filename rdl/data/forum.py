"""A generated question-and-answer forum: a database whose shape is not H&M's.

Four tables, written as files plus a ``schema.yaml`` that :func:`~rdl.data.folder.load_folder`
reads (CSV and parquet both, to exercise both readers):

* ``users.csv``: ``user_id``, ``signup`` (the table's time: a user exists from signup on),
  ``country``, ``age`` (sometimes missing);
* ``tags.csv``: ``tag_id``, ``name``: a static table (no time);
* ``posts.parquet``: ``post_id``, ``author_id`` -> users, ``parent_id`` -> posts (an answer
  points at its question: a self-reference; missing for questions), ``tag_id`` -> tags,
  ``created``, ``kind``, ``length``;
* ``votes.parquet``: ``user_id`` -> users, ``post_id`` -> posts, ``created``, ``value`` (+1/-1):
  a second fact table, without a primary key.

Behaviour with signal for tasks: each user has an activity rate (log-normal: a few heavy
users, many light ones) that decays from signup with a personal time constant, and a
personal chance per week of leaving for good (churn). Users write in and vote on their
favourite tag mostly, answer recent questions, and vote for recent posts by quality, so
who votes on what next week follows from what they did before.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rdl.data.exported import exported_folder

#: bump when the generated data changes (it is part of the cache folder's name)
GENERATOR_VERSION = 1
#: a scale of 1.0 is a forum of this many users (the default config uses 0.02: 2,000)
FULL_USERS = 100_000
START, END = pd.Timestamp("2024-01-01"), pd.Timestamp("2024-07-01")
TAGS = ["python", "sql", "pandas", "graphs", "gpu", "docker", "git", "linux", "rust", "java",
        "css", "regex", "excel", "stats", "ml", "web", "json", "bash", "cloud", "android"]
COUNTRIES = ["US", "IN", "DE", "GB", "BR", "FR", "CA", "NG", "JP", "PL"]

SCHEMA = """\
# forum/schema.yaml: the forum database (rdl.data.forum), read by rdl.data.folder.load_folder
tables:
  users:
    file: users.csv
    pkey: user_id
    time: signup                # a user exists from signup on
    stypes: {country: categorical, age: numerical}
  tags:
    file: tags.csv
    pkey: tag_id                # no time: a static table
    stypes: {name: categorical}
  posts:
    pkey: post_id
    time: created
    fkeys: {author_id: users, parent_id: posts, tag_id: tags}   # parent_id: the question answered
    stypes: {kind: categorical, length: numerical}
  votes:                        # no primary key: a fact table
    time: created
    fkeys: {user_id: users, post_id: posts}
    stypes: {value: numerical}
dangling: null                  # foreign keys matching no row become missing (fail, drop, add)
"""


def generate(seed: int = 0, scale: float = 0.02) -> dict[str, pd.DataFrame]:
    """The four tables as frames (ids as the files hold them, not row positions)."""
    rng = np.random.default_rng(seed)
    n = max(40, int(round(FULL_USERS * scale)))
    days = (END - START).days
    # Users sign up from 60 days before the first activity to 30 days before the end.
    signup_day = rng.integers(-60, days - 30, n)
    rate = rng.lognormal(-0.5, 1.0, n)              # actions per day when fresh
    decay = rng.exponential(60.0, n) + 5.0          # days for activity to fall by e
    churn = rng.beta(1.0, 12.0, n)                  # chance per week of leaving for good
    leave_week = rng.geometric(np.clip(churn, 1e-3, 1.0))
    leave_day = signup_day + 7 * leave_week
    fav = rng.integers(0, len(TAGS), n)
    users = pd.DataFrame({
        "user_id": 1000 + rng.permutation(n),       # ids that are not row positions
        "signup": START + pd.to_timedelta(signup_day, "D")
                  + pd.to_timedelta(rng.integers(0, 86_400, n), "s"),
        "country": rng.choice(COUNTRIES, n, p=np.linspace(2, 1, len(COUNTRIES)) / 15),
        "age": np.where(rng.random(n) < 0.2, np.nan, rng.integers(16, 70, n).astype(float)),
    })
    tags = pd.DataFrame({"tag_id": np.arange(len(TAGS)) * 7 + 3, "name": TAGS})

    # every post so far: author, question answered (-1: none), tag, day, quality
    P = {k: np.empty(0, np.int64) for k in ("user", "parent", "tag", "day")}
    quality = np.empty(0)
    V = {k: [] for k in ("user", "post", "day")}
    for day in range(days):
        age = day - signup_day
        alive = (age >= 0) & (day < leave_day)
        r = np.where(alive, rate * np.exp(-np.maximum(age, 0) / decay), 0.0)
        r *= 1.0 if day % 7 < 5 else 0.6            # quieter weekends
        recent = np.flatnonzero(P["day"] >= day - 14)
        questions = recent[P["parent"][recent] < 0]
        # posts: an answer to a recent question (by quality, the author's tag first) or a
        # question, mostly on the author's tag
        authors = np.repeat(np.arange(n), rng.poisson(0.3 * r))
        parent = np.full(len(authors), -1)
        if len(questions):
            answer = rng.random(len(authors)) < 0.6
            parent[answer] = _pick(rng, questions, P["tag"], quality, fav[authors[answer]])
        own = np.where(rng.random(len(authors)) < 0.8, fav[authors],
                       rng.integers(0, len(TAGS), len(authors)))
        tag = np.where(parent >= 0, P["tag"][np.maximum(parent, 0)] if len(P["tag"]) else own, own)
        # votes: on recent posts (not the voter's own), the same way
        if len(recent):
            voters = np.repeat(np.arange(n), rng.poisson(0.9 * r))
            post = _pick(rng, recent, P["tag"], quality, fav[voters])
            keep = P["user"][post] != voters
            V["user"].append(voters[keep])
            V["post"].append(post[keep])
            V["day"].append(np.full(int(keep.sum()), day))
        for k, v in (("user", authors), ("parent", parent), ("tag", tag),
                     ("day", np.full(len(authors), day))):
            P[k] = np.concatenate([P[k], v])
        quality = np.concatenate([quality, rng.gamma(2.0, 1.0, len(authors))])
    V = {k: np.concatenate(v) if v else np.empty(0, np.int64) for k, v in V.items()}
    pr = np.stack([P["user"], P["parent"], P["tag"], P["day"]], axis=1)

    n_post = len(pr)
    post_ids = 50_000 + rng.permutation(n_post) * 3     # unordered, not positions
    secs = rng.integers(0, 86_400, n_post)
    posts = pd.DataFrame({
        "post_id": post_ids,
        "author_id": users["user_id"].to_numpy()[pr[:, 0]],
        "parent_id": pd.array(np.where(pr[:, 1] < 0, 0, post_ids[np.maximum(pr[:, 1], 0)]),
                              dtype="Int64"),
        "tag_id": tags["tag_id"].to_numpy()[pr[:, 2]],
        "created": START + pd.to_timedelta(pr[:, 3], "D") + pd.to_timedelta(secs, "s"),
        "kind": np.where(pr[:, 1] < 0, "question", "answer"),
        "length": rng.lognormal(4.5, 0.8, n_post).round().astype(np.int64),
    })
    posts.loc[pr[:, 1] < 0, "parent_id"] = pd.NA
    # Nobody acts before signing up, and an answer comes after its question (a same-day
    # question's time may be later; parents are earlier posts, their times already final).
    minute = np.timedelta64(60, "s")
    signup = users["signup"].to_numpy()
    posts["created"] = np.maximum(posts["created"].to_numpy(), signup[pr[:, 0]] + minute)
    parent_time = posts["created"].to_numpy()[np.maximum(pr[:, 1], 0)]
    answer = pr[:, 1] >= 0
    posts.loc[answer, "created"] = np.maximum(posts["created"].to_numpy()[answer],
                                              parent_time[answer] + minute)
    vote_time = START + pd.to_timedelta(V["day"], "D") + pd.to_timedelta(
        rng.integers(0, 86_400, len(V["day"])), "s")
    votes = pd.DataFrame({
        "user_id": users["user_id"].to_numpy()[V["user"]],
        "post_id": post_ids[V["post"]],
        "created": np.maximum(np.maximum(vote_time.to_numpy(), signup[V["user"]] + minute),
                              posts["created"].to_numpy()[V["post"]] + minute),
        "value": np.where(rng.random(len(V["day"])) < 0.9, 1, -1),
    })
    return {"users": users, "tags": tags, "posts": posts, "votes": votes}


def _pick(rng, candidates: np.ndarray, tag: np.ndarray, quality: np.ndarray,
          fav: np.ndarray) -> np.ndarray:
    """For each favourite tag in ``fav``, one of ``candidates`` by quality, those of that
    tag five times as likely."""
    out = np.empty(len(fav), np.int64)
    for f in np.unique(fav):
        sel = fav == f
        w = quality[candidates] * np.where(tag[candidates] == f, 5.0, 1.0)
        out[sel] = candidates[rng.choice(len(candidates), int(sel.sum()), p=w / w.sum())]
    return out


def write_forum(folder, seed: int = 0, scale: float = 0.02) -> Path:
    """Generate the forum and write its files and ``schema.yaml`` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    frames = generate(seed, scale)
    for name in ("users", "tags"):
        frames[name].to_csv(folder / f"{name}.csv", index=False, date_format="%Y-%m-%d %H:%M:%S")
    for name in ("posts", "votes"):
        frames[name].to_parquet(folder / f"{name}.parquet", index=False)
    (folder / "schema.yaml").write_text(SCHEMA)
    return folder


def forum_db(seed: int = 0, scale: float = 0.02, cache_dir=None):
    """The generated forum as a :class:`~rdl.data.Database`: its files are written once
    under ``cache_dir`` (default :func:`rdl.cache_dir`) and read by
    :func:`~rdl.data.folder.load_folder`, as a folder of your own would be
    (``cache_dir=False``: into a temporary folder, removed once read)."""
    return exported_folder(f"forum-v{GENERATOR_VERSION}-seed{int(seed)}-scale{float(scale):g}",
                           lambda folder: write_forum(folder, seed, scale), cache_dir)


def main(argv=None) -> None:
    """``python -m rdl.data.forum FOLDER [--scale S] [--seed N]``: write the forum there."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m rdl.data.forum", description=main.__doc__)
    p.add_argument("folder")
    p.add_argument("--scale", type=float, default=0.02, help="1.0: 100k users (default 0.02)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    folder = write_forum(args.folder, seed=args.seed, scale=args.scale)
    print(f"forum written to {folder} (schema.yaml and one file per table)")


if __name__ == "__main__":
    main()
