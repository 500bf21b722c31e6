"""RelBench datasets in the shapes of its real ones (tests/relbench_shapes.py, written by
RelBench's own code), through rdl's RelBench reader and tasks: the corners issue 38 found."""
from __future__ import annotations

import json

import pytest

from test_relbench_train import TINY_RUN


@pytest.fixture(scope="module")
def rel_stack(tmp_path_factory):
    """rel-stack with its post-post-related, user-engagement and post-votes tasks."""
    pytest.importorskip("relbench.tasks.stack", reason="the relbench test extra")
    from relbench_shapes import write_rel_stack
    return write_rel_stack(tmp_path_factory.mktemp("rel-stack"),
                           tasks=("post-post-related", "user-engagement", "post-votes"))


@pytest.mark.parametrize("model", [None, "idgnn"])  # a listwise and a per-node loss
def test_a_link_task_from_a_table_to_itself_trains(rel_stack, run_train, tmp_path, model):
    """post-post-related (posts -> posts): the seeds' true posts and the candidates' marks
    are both on ``posts``; one overwrote the other and the sanity check crashed. With no
    model named, the link kind's default trains (point 8: the node default failed)."""
    run = tmp_path / "run"
    out = run_train(run, "data=relbench", f"data.db.path={rel_stack}", "task=relbench",
                    f"task.path={rel_stack / 'tasks' / 'post-post-related'}",
                    *([f"model={model}"] if model else []), *TINY_RUN, tiny=False)
    assert out.returncode == 0, out.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    assert 0 <= metrics["model"]["test"]["map"] <= 1
    if model is None:   # the checkpoint carries the model it trained: rdl.predict rebuilds it
        from rdl.checkpoints import load_config
        config = load_config(run / "checkpoints" / "best.ckpt")
        assert config["model"]["_target_"] == "rdl.nn.ContextGNN"
        assert config["model"]["channels"] == 16    # TINY_RUN's model.channels, carried over


def test_an_autocomplete_task_outside_its_dataset_hides_its_label(rel_stack, tmp_path,
                                                                 tiny_cfg):
    """Label files of an autocomplete task (users' own Reputation) in a folder that is not
    ``<dataset>/tasks/<task>``: with its dataset (``data.db.path``) the column is hidden;
    without, rdl cannot tell and stops (it kept the label as a feature of the row)."""
    from hydra.utils import instantiate

    from rdl.data import DataError
    from rdl.data.relbench import load_relbench
    from rdl.families import relbench_task
    from relbench_shapes import write_autocomplete_files
    folder = write_autocomplete_files(rel_stack, tmp_path / "my-tasks" / "user-reputation")
    with pytest.raises(DataError, match=r"user-reputation: its dataset is not at .* label "
                       r"'Reputation' is a column of table 'users' .* task.dataset="):
        relbench_task(folder)
    cfg = tiny_cfg("data=relbench", f"data.db.path={rel_stack}", "task=relbench",
                   f"task.path={folder}")
    task = instantiate(cfg.task, _convert_="all")
    assert task.autocomplete and task.target_col == "Reputation"
    db = task.database(load_relbench(rel_stack))
    assert "Reputation" in db["users"].df and "Reputation" not in task.inputs(db)["users"].df


def relabel(rel_stack, tmp_path, name, labels):
    """user-engagement's label files, re-saved by RelBench's ``Table.save`` in
    ``tmp_path/<name>`` with ``labels(df)`` as the label column."""
    from relbench.base import Table
    folder = tmp_path / name
    for split in ("train", "val", "test"):
        t = Table.load(rel_stack / "tasks" / "user-engagement" / f"{split}.parquet")
        t.df = t.df.assign(contribution=labels(t.df))
        t.save(folder / f"{split}.parquet")
    return folder


def test_class_labels_in_label_files_are_not_silently_regression(rel_stack, tmp_path, caplog):
    """1.x/2.x files do not say their kind: whole numbers of several values are read as
    regression with a warning naming the override, which gives classes; text stops."""
    import logging

    from rdl.data import DataError
    from rdl.families import relbench_task
    ints = relabel(rel_stack, tmp_path, "user-level", lambda df: df["OwnerUserId"] % 3)
    with caplog.at_level(logging.WARNING, logger="rdl.tasks.relbench"):
        assert relbench_task(ints, dataset=rel_stack).kind.name == "regression"
    assert ("user-level/train.parquet: label column 'contribution' holds whole numbers (3 "
            "values, 0 to 2): read as regression; if they are classes, give "
            "task.kind=multiclass_classification") in caplog.text
    task = relbench_task(ints, kind="multiclass_classification", dataset=rel_stack)
    assert (task.kind.name, task.kind.num_classes) == ("multiclass_classification", 3)
    text = relabel(rel_stack, tmp_path, "user-tier",
                   lambda df: df["OwnerUserId"].map(lambda u: ["bronze", "silver"][u % 2]))
    with pytest.raises(DataError, match=r"user-tier/train.parquet: label column 'contribution' "
                       r"holds text in \d+ rows \(2 values, e.g. \['bronze', 'silver'\]\): rdl "
                       "reads class labels as numbers 0..C-1"):
        relbench_task(text, dataset=rel_stack)
    assert relbench_task(rel_stack / "tasks" / "user-engagement").kind.name == \
        "binary_classification"


def test_rows_without_a_time_are_dropped_and_counted(tmp_path, caplog):
    """RelBench drops the rows of a timed table that have no time (``Database.upto``;
    rel-event's loader makes bad times missing): rdl drops them too, says how many, and
    keeps RelBench's ids, so the task's labels and predictions are RelBench's rows."""
    import logging

    import pandas as pd
    pytest.importorskip("relbench.tasks.stack", reason="the relbench test extra")
    from relbench_shapes import stack_tables, write_rel_stack

    from rdl.data.relbench import load_relbench
    from rdl.families import relbench_task
    frames = stack_tables()
    users = frames["users"]
    users.loc[[3, 17, 30], "CreationDate"] = pd.NaT
    root = write_rel_stack(tmp_path / "rel-stack", frames,
                           tasks=("user-engagement", "post-post-related"))
    with caplog.at_level(logging.WARNING, logger="rdl.data.relbench"):
        db = load_relbench(root)
    assert "table 'users', column 'CreationDate'): 3 of 40 rows have no time: dropped" \
        in caplog.text
    assert len(db["users"]) == 37 and db["users"].df["Id"].tolist() == list(range(37))
    theirs = pd.read_parquet(root / "db" / "users.parquet")   # RelBench's ids
    kept = theirs["CreationDate"].notna().to_numpy()
    assert list(db.keys["users"]) == list(theirs["Id"][kept])
    posts = pd.read_parquet(root / "db" / "posts.parquet")
    owner = db["posts"].df["OwnerUserId"]
    gone = ~posts["OwnerUserId"].isin(theirs["Id"][kept])
    assert owner[gone.to_numpy()].isna().all() and gone.any()
    assert (db.keys["users"][owner[~gone.to_numpy()].astype(int)] ==
            posts["OwnerUserId"][~gone]).all()
    for name, col in (("user-engagement", "OwnerUserId"), ("post-post-related", "PostId")):
        task = relbench_task(root / "tasks" / name)
        mine = task.split_table("val", db)
        want = pd.read_parquet(root / "tasks" / name / "val.parquet")
        ids = db.keys.get(task.entity_table)
        got = mine[col] if ids is None else ids[mine[col]]
        assert sorted(got) == sorted(want[col])
