"""A database not shaped like H&M (the generated forum) through rdl: graph, tasks, training.

The forum has a self-referencing foreign key (posts.parent_id), a static table (tags), a
timed entity table (users) and two fact tables (posts, votes)."""
from __future__ import annotations

import json
import math

import pytest
import torch
from hydra.utils import instantiate

from rdl.data.forum import forum_db, write_forum
from rdl.graph.build import make_graph

#: small and short: a run takes seconds (``debug=tiny`` is H&M's tiny database)
SMALL = ("data.batch_size=64", "data.num_neighbors=[16,8]", "model.channels=16",
         "model.encoder_layers=1", "trainer.max_epochs=1", "trainer.limit_train_batches=3",
         "trainer.limit_val_batches=2", "compile.enabled=false")
SCALE = 0.001   # 100 users, about 800 posts and 2,000 votes


@pytest.fixture(scope="module")
def forum(tmp_path_factory):
    return write_forum(tmp_path_factory.mktemp("forum"), scale=SCALE)


def test_the_graph_has_the_forum_s_shape(rdl_cache):
    db = forum_db(scale=SCALE, cache_dir=rdl_cache)
    data, _ = make_graph(db, db.stypes)
    assert set(data.node_types) == {"users", "tags", "posts", "votes"}
    assert "time" not in data["tags"] and "time" in data["users"]
    parent = data["posts", "f2p_parent_id", "posts"].edge_index
    answers = db["posts"].df["parent_id"].notna()
    assert parent.shape[1] == answers.sum() > 0
    # an answer's edge points at its question, written before it
    t = data["posts"].time
    assert (t[parent[0]] > t[parent[1]]).all()
    assert torch.equal(data["posts", "rev_f2p_parent_id", "posts"].edge_index, parent.flip(0))
    for edge in [("votes", "f2p_user_id", "users"), ("votes", "f2p_post_id", "posts"),
                 ("posts", "f2p_author_id", "users"), ("posts", "f2p_tag_id", "tags")]:
        assert data[edge].edge_index.shape[1] > 0, edge


def test_the_tasks_label_every_split(tiny_cfg, rdl_cache):
    db = forum_db(scale=SCALE, cache_dir=rdl_cache)
    for name in ("forum-user-active", "forum-user-vote"):
        task = instantiate(tiny_cfg(f"task={name}").task, _convert_="all")
        for split in ("train", "val", "test"):
            df = task.split_table(split, db)
            assert len(df) > 0, (name, split)
            if name == "forum-user-active":
                assert 0 < df["active"].mean() < 1, split   # both classes: something to learn


def check(out, run_dir, task: str, metrics: set) -> dict:
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run_dir / "metrics.json").read_text())
    assert results["task"] == task
    who = [k for k in results if k != "task"]
    assert who[0] == "model" and len(who) >= 2, "the baselines are reported beside the model"
    for name in who:
        for split in ("val", "test"):
            extra = {"candidate_recall"} if name == "LightGBM ranker" else set()
            assert set(results[name][split]) == metrics | extra, (name, split)
            assert all(math.isfinite(v) for v in results[name][split].values())
    return results


@pytest.mark.slow   # CI trains the forum's folder through test_events_tasks.py's suggested task
def test_node_task_trains_on_a_folder(tmp_path, run_train, forum):
    out = run_train(tmp_path, "task=forum-user-active", "data=folder", f"data.db.path={forum}",
                    f"data.db.schema={forum / 'schema.yaml'}", *SMALL, tiny=False)
    results = check(out, tmp_path, "forum-user-active", {"auroc", "average_precision",
                                                         "accuracy", "f1"})
    assert "LightGBM" in results and "last label" in results
    logs = out.stdout + out.stderr
    for feature in ("label history:", "seed features:", "prior: "):
        assert feature in logs, feature


@pytest.mark.slow   # CI trains a link task on it through test_events_tasks.py's events-links
def test_link_task_trains_on_the_generated_forum(tmp_path, run_train):
    out = run_train(tmp_path, "experiment=forum-user-vote", f"data.db.scale={SCALE}", *SMALL,
                    tiny=False)
    results = check(out, tmp_path, "forum-user-vote", {"map", "precision", "recall"})
    assert {"popularity (last window)", "past links"} <= set(results)


def test_the_docs_show_the_forum_s_schema():
    """docs/data.md's schema example is the generator's schema (the README's data=folder
    command reads the generated forum, test_readme.py runs it)."""
    import re

    import yaml

    import rdl
    from rdl.data.forum import SCHEMA
    page = (rdl.CONF_DIR.parents[1] / "docs" / "data.md").read_text()
    shown = re.search(r"^```yaml\n(# forum/schema.yaml.*?)^```", page, re.M | re.S)
    assert shown and yaml.safe_load(shown.group(1)) == yaml.safe_load(SCHEMA)


def test_the_command_line_writes_the_forum(tmp_path, capsys):
    from rdl.data.folder import load_folder
    from rdl.data.forum import main
    main([str(tmp_path / "forum"), "--scale", "0.0005", "--seed", "2"])
    assert "forum written to" in capsys.readouterr().out
    db = load_folder(tmp_path / "forum")
    assert len(db["users"]) == 50 and len(db["votes"]) > 0


def test_the_generator_is_deterministic_and_consistent():
    import pandas as pd

    from rdl.data.forum import generate
    a, b = generate(seed=3, scale=SCALE), generate(seed=3, scale=SCALE)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
    users, posts, votes = (a[n].set_index(k) for n, k in
                           (("users", "user_id"), ("posts", "post_id"), ("votes", "user_id")))
    assert (posts["created"] > users.loc[posts["author_id"], "signup"].to_numpy()).all()
    answers = posts[posts["parent_id"].notna()]
    questions = posts.loc[answers["parent_id"].astype(int)]
    assert (answers["created"] > questions["created"].to_numpy()).all()
    assert (questions["kind"] == "question").all()
    assert (votes["created"] > posts.loc[votes["post_id"], "created"].to_numpy()).all()
    assert (votes["created"] > users.loc[votes.index, "signup"].to_numpy()).all()
    # activity decays and churns: fewer users act in the last month than in the busiest one
    months = pd.concat([posts.reset_index()[["author_id", "created"]].set_axis(["u", "t"], axis=1),
                        votes.reset_index()[["user_id", "created"]].set_axis(["u", "t"], axis=1)])
    active = months.groupby(months["t"].dt.to_period("M"))["u"].nunique()
    assert active.iloc[-1] < active.max()


def test_data_folder_without_a_path_says_so(tiny_cfg):
    """A DataError (rdl.train prints it in one line, tests/test_train.py), not Hydra's
    MissingMandatoryValue traceback."""
    from hydra.errors import InstantiationException

    from rdl.data.database import DataError
    cfg = tiny_cfg("task=forum-user-active", "data=folder")
    with pytest.raises(InstantiationException) as e:
        instantiate(cfg.data.db)
    assert isinstance(e.value.__cause__, DataError)
    assert "data=folder needs data.db.path=" in str(e.value.__cause__)


def test_link_seeds_exist_at_their_time_and_targets_by_the_test_time(tiny_cfg, rdl_cache):
    """forum-user-vote three weeks back, against pandas on the forum's tables: a seed is a
    user who votes in the window and has signed up by the seed time (the sampler gives a
    seed its own row: a later signup would be a row from its future); a test target is a
    post created by the test time (the graph ends there: a later post cannot be ranked),
    and a seed left without a target is left out, as RelBench does."""
    db = forum_db(scale=SCALE, cache_dir=rdl_cache)
    task = instantiate(tiny_cfg("experiment=forum-user-vote", "backtest=3").task,
                       _convert_="all", backtest=3)
    users, posts, votes = (db[t].df for t in ("users", "posts", "votes"))
    late_post = posts["created"] > task.test_time
    for split in ("train", "val", "test"):
        got = task.split_table(split, db)
        times = task.timestamps(split, db)
        want = []
        for t in times:
            v = votes[(votes["created"] > t) & (votes["created"] <= t + task.delta)]
            v = v[users["signup"].to_numpy()[v["user_id"].to_numpy()] <= t]
            if split == "test":
                v = v[~late_post.to_numpy()[v["post_id"].to_numpy()]]
            for user, group in v.groupby("user_id"):
                want.append((t, int(user), sorted(set(group["post_id"].astype(int)))))
        rows = sorted((t, u, sorted(map(int, p))) for t, u, p in
                      zip(got["timestamp"], got["user_id"], got["post_id"]))
        assert rows == sorted(want), split
    # without the rules the test split would name a user and posts from after its time
    v = votes[(votes["created"] > task.test_time)
              & (votes["created"] <= task.test_time + task.delta)]
    assert (users["signup"].to_numpy()[v["user_id"].to_numpy()] > task.test_time).any()
    assert late_post.to_numpy()[v["post_id"].to_numpy()].any()


def test_a_table_of_no_row_by_the_test_time_is_left_out_of_the_graph(tiny_cfg, rdl_cache):
    """A log that begins after the test time (bans), referenced by a table the graph keeps
    (users.ban_id): no node type of no rows (whose padding broke every batch) and no edge
    to one, in the graph of the test split and in the graph "now", which has its rows."""
    import numpy as np
    import pandas as pd

    import rdl
    from rdl.data.database import Database, Table
    db = forum_db(scale=SCALE, cache_dir=rdl_cache)
    def cfg(*more):
        return rdl.config("experiment=forum-user-active", f"data.db.scale={SCALE}",
                          f"data.cache_dir={rdl_cache}", *SMALL[:4], *more)
    task = instantiate(cfg().task, _convert_="all")
    n = len(db["users"])
    bans = pd.DataFrame({"ban_id": np.arange(3), "reason": ["spam", "abuse", "spam"],
                         "at": task.test_time + pd.to_timedelta([1, 2, 3], unit="D")})
    users = db["users"].df.assign(ban_id=pd.array([0, 1, 2] + [None] * (n - 3), "Int64"))
    db = Database({**db.tables, "bans": Table(bans, "ban_id", {}, "at"),
                   "users": Table(users, "user_id", {"ban_id": "bans"}, db["users"].time_col)},
                  keys=db.keys, stypes={**db.stypes, "bans": {"reason": "categorical"}})
    for now in (False, True):
        data = rdl.prepare(cfg(f"++data.now={str(now).lower()}"), db, task)
        assert "bans" not in data.data.node_types
        assert not any("bans" in edge for edge in data.data.edge_types)
        batch = next(iter(data.train_dataloader()))
        assert batch["users"].n_id.numel() > 0
