"""Depth-2 feature names (rdl/features/names.py) whatever the schema and the values: every
node task of the RelBench-written rel-stack and rel-f1 shapes (self-references, several
keys to one table, a table reached by two paths) and a folder whose category values hold
newlines, quotes, separators and long Unicode go through the synthesis and the trees;
every name is distinct, LightGBM's are safe, and the readable ones stay in the fit."""
from __future__ import annotations

import re

import lightgbm
import numpy as np
import pandas as pd
import pytest

from rdl.baselines.trees import DEPTH1, DEPTH2, fit_tree_baselines
from rdl.features.deep import DeepSettings
from rdl.features.names import Columns, distinct, lightgbm_names, side_by_side

#: what a LightGBM name may hold (rdl.features.names: no whitespace, none of ",:[]{}")
SAFE = re.compile(r"[A-Za-z0-9!#$%&'()*+\-./;<=>?@^_`|~]{1,100}")


def check_fits(fits: dict, feats: dict) -> None:
    """Distinct readable names; LightGBM's safe, distinct and mapped back to them; the
    model text read back; finite predictions on val and test."""
    for name, fit in fits.items():
        readable = list(feats[name]["train"].columns)
        assert len(set(readable)) == len(readable), name
        stored = fit.booster.feature_name()
        assert [fit.names[n] for n in stored] == readable
        assert all(SAFE.fullmatch(n) for n in stored), [n for n in stored if not SAFE.fullmatch(n)]
        again = lightgbm.Booster(model_str=fit.booster.model_to_string())
        assert again.feature_name() == stored
        assert list(fit.importance().index) == readable
        for split in ("val", "test"):
            assert np.isfinite(fit.raw(split)).all(), (name, split)


# -- RelBench's shapes ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    pytest.importorskip("relbench.tasks.stack", reason="the relbench test extra")
    from relbench_shapes import STACK_TASKS, write_rel_f1, write_rel_stack
    return {"rel-stack": write_rel_stack(tmp_path_factory.mktemp("rel-stack"), tasks=STACK_TASKS),
            "rel-f1": write_rel_f1(tmp_path_factory.mktemp("rel-f1"))}


def node_tasks():
    from relbench_shapes import F1_TASKS, STACK_TASKS
    links = ("post-post-related", "user-post-comment")   # the link family has no trees
    return [("rel-stack", t) for t in STACK_TASKS if t not in links] + [
        ("rel-f1", t) for t in F1_TASKS]


@pytest.mark.parametrize("dataset,name", node_tasks())
def test_every_relbench_shape_task_through_depth_2(shapes, dataset, name):
    """rel-stack's posts refer to posts twice (ParentId, AcceptedAnswerId), postLinks to
    posts twice: post-votes crashed on two depth-2 columns of one name. The depth-2 trees
    keep the features chosen on val (by their readable names)."""
    from rdl.data.relbench import load_relbench
    from rdl.families import relbench_task
    from rdl.features.deep import deep_features

    root = shapes[dataset]
    task = relbench_task(root / "tasks" / name)
    db = task.database(load_relbench(root))
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    fits, feats = fit_tree_baselines(task, db, tables, deep=DeepSettings(select=(0, 10)))
    assert set(fits) == {DEPTH1, DEPTH2}
    check_fits(fits, feats)
    if name == "post-votes":   # each key to posts its own parent, each link its own child
        cols = set(deep_features(task, db.upto(task.test_time), tables["val"],
                                 task.history(tables)).columns)
        assert {"posts.ParentId>posts.PostTypeId", "posts.AcceptedAnswerId>posts.PostTypeId",
                "posts>users.Reputation", "postLinks.PostId.trend_1_4",
                "postLinks.RelatedPostId.trend_1_4", "posts.ParentId<posts.ParentId.count_12",
                "posts.ParentId>posts<postLinks.RelatedPostId.count_4"} <= cols


# -- any value -----------------------------------------------------------------------------
#: category values a real export holds: a newline inside quotes, quotes and separators,
#: long Unicode, and two that LightGBM's characters alone would make one name
VALUES = ["Thanks!\n", 'He said "yes", then: no', "a=b [c] {d}; e", "tab\there",
          "Grüße, 日本語 🙂 " * 30, "a b", "a_b"]


@pytest.fixture(scope="module")
def odd_forum(tmp_path_factory):
    """The generated forum as files, posts as a CSV with a column of :data:`VALUES`, and
    users (the entity) with one too."""
    from rdl.data.forum import write_forum
    folder = write_forum(tmp_path_factory.mktemp("forum"), scale=0.001)
    rng = np.random.default_rng(0)
    posts = pd.read_parquet(folder / "posts.parquet")
    posts["reply"] = rng.choice(VALUES, len(posts))
    (folder / "posts.parquet").unlink()
    posts.to_csv(folder / "posts.csv", index=False)   # quoted where a value needs it
    users = pd.read_csv(folder / "users.csv")
    users.assign(motto=rng.choice(VALUES, len(users))).to_csv(folder / "users.csv", index=False)
    schema = folder / "schema.yaml"
    text = schema.read_text().replace("stypes: {kind:", "stypes: {reply: categorical, kind:")
    schema.write_text(text.replace("stypes: {country:", "stypes: {motto: categorical, country:"))
    assert "reply: categorical" in schema.read_text() and "motto:" in schema.read_text()
    return folder


def test_category_values_of_any_characters_through_depth_2(odd_forum):
    """A CSV's quoted values with newlines, quotes, separators, long Unicode: the readable
    names hold them (in the fit's name map), LightGBM's none (its model text broke on a
    newline: "Wrong line at model file")."""
    from rdl.api import config, load_database, load_task

    cfg = config("task=forum-user-active", "data=folder", f"data.db.path={odd_forum}")
    db, task = load_database(cfg), load_task(cfg)
    for table, col in (("posts", "reply"), ("users", "motto")):   # read back as written
        assert set(db[table].df[col].dropna()) == set(VALUES)
    db = task.database(db)
    tables = {s: task.split_table(s, db) for s in ("train", "val", "test")}
    fits, feats = fit_tree_baselines(task, db, tables, deep=DeepSettings(top_k=len(VALUES)))
    check_fits(fits, feats)
    readable = set(fits[DEPTH2].names.values())
    assert {"users.motto", "group[motto].label_last"} <= readable   # the entity's own
    for value in VALUES:   # the authors' posts, and the posts voted on
        assert f"posts.reply={value}.count_12" in readable
        assert f"votes>posts.reply={value}.count_12" in readable
    stored = set(fits[DEPTH2].names)
    assert "posts.reply=Thanks!_.count_12" in stored
    assert not any("日本語" in n or "\n" in n for n in stored)


def test_names_are_distinct_and_safe_whatever_they_hold():
    """The rule itself: repeats get ``#2``; LightGBM's names are safe, distinct (also where
    cleaning alone would make two one) and at most 100 characters, the rest kept as is."""
    assert distinct(["a", "a", "a#2", "b", "a"]) == ["a", "a#2", "a#2#2", "b", "a#3"]
    cols = Columns()
    cols["x"], cols["x"] = 1, 2
    cols.update({"x": 3})
    assert cols == {"x": 1, "x#2": 2, "x#3": 3}
    parts = [pd.DataFrame({"a": [1.0], "b": [2.0]}), pd.DataFrame({"a": [3.0]})]
    assert list(side_by_side(parts).columns) == ["a", "b", "a#2"]
    names = ["sale.amount.avg_4", "group[kind].label_last", *VALUES, "x" * 300, "a:b", "a,b"]
    mapped = lightgbm_names(names)
    assert list(mapped.values()) == names and len(mapped) == len(names)
    assert all(SAFE.fullmatch(n) for n in mapped)
    assert list(mapped)[:2] == ["sale.amount.avg_4", "group_kind_.label_last"]
    assert list(mapped)[2] == "Thanks!_"   # cleaned, no other name like it: no hash
    # "a b" and "a_b", "a:b" and "a,b": one name once cleaned, so each ends in its hash
    shared = [n for n, r in mapped.items() if r in ("a b", "a_b", "a:b", "a,b")]
    assert len(set(shared)) == 4 and all(re.fullmatch(r"a_b~[0-9a-f]{12}", n) for n in shared)
    X = pd.DataFrame(np.random.default_rng(0).random((50, len(names))), columns=names)
    booster = lightgbm.train({"verbosity": -1}, lightgbm.Dataset(
        X.set_axis(list(mapped), axis=1), X.iloc[:, 0]), num_boost_round=2)
    assert lightgbm.Booster(model_str=booster.model_to_string()).feature_name() == list(mapped)
