"""task=relbench: RelBench's tasks read from disk (3.x manifests, 1.x/2.x label files) give
rdl's split tables equal to RelBench's row for row, several seed times per val and test
split, hidden columns, the kind's metrics; nothing of rdl's written by hand."""
import pandas as pd
import pytest

from rdl.data import DataError
from rdl.data.relbench import load_relbench
from rdl.tasks import SPLITS
from rdl.families import relbench_task
from rdl.families.link import LinkTask
from relbench_fake import NUM_EVAL, TASKS_V1, V3_TASKS
from relbench_fake import assert_same as same

KINDS = {"user-churn": "binary_classification", "user-ltv": "regression",
         "user-reviews": "multiclass_classification", "user-item-purchase": "link_prediction",
         "review-rating": "regression"}


def task_of(root, folder, **kw):
    return relbench_task(root / "tasks" / folder, **kw)


def assert_same(mine, theirs, task) -> None:
    same(mine, theirs, task.entity_col, task.target_col, task.time_col,
         lists=isinstance(task, LinkTask))


@pytest.mark.parametrize("name", V3_TASKS)
def test_v3_tables_equal_relbench3s(relbench_v3, name):
    """rdl runs the manifest's SQL (or reads the autocomplete column) itself; RelBench 3.0.2
    regenerated the same tables from the same manifest."""
    db = load_relbench(relbench_v3)
    task = task_of(relbench_v3, name)
    assert task.kind.name == KINDS[name]
    assert task.labels is None  # made by rdl, not read
    for split in SPLITS:
        assert_same(task.split_table(split, db), pd.read_parquet(
            relbench_v3 / "tasks" / name / f"{split}.parquet"), task)


@pytest.mark.parametrize("name", list(TASKS_V1))
def test_v1_files_and_relbench1s_task_classes(relbench_v1, relbench_v3, name):
    """1.x files: kind, window and times read from them; their rows are RelBench 1.1.0's
    task classes', which the 3.x manifests' SQL, run by rdl, reproduces."""
    task = task_of(relbench_v1, name)
    assert task.kind.name == KINDS[name]
    assert task.delta == pd.Timedelta(days=30)
    assert task.val_time == pd.Timestamp("1972-08-16 09:36")
    assert task.num_eval_timestamps == (1 if name == "user-item-purchase" else NUM_EVAL)
    db1, db3 = load_relbench(relbench_v1), load_relbench(relbench_v3)
    sql = task_of(relbench_v3, name)
    for split in SPLITS:
        theirs = pd.read_parquet(relbench_v1 / "tasks" / name / f"{split}.parquet")
        assert_same(task.split_table(split, db1), theirs, task)
        assert_same(sql.split_table(split, db3), theirs, sql)


def test_several_seed_times_per_split_for_every_kind(relbench_v3):
    db = load_relbench(relbench_v3)
    for name in ("user-churn", "user-ltv", "user-reviews", "user-item-purchase"):
        task = task_of(relbench_v3, name, num_eval_timestamps=NUM_EVAL)
        for split, first in (("val", task.val_time), ("test", task.test_time)):
            times = sorted(task.split_table(split, db)["timestamp"].unique())
            assert len(times) == NUM_EVAL, (name, split)
            assert times[0] == first and pd.Timestamp(times[1]) - pd.Timestamp(times[0]) == task.delta
            if split == "val":  # val's windows close by the test time
                assert pd.Timestamp(times[-1]) + task.delta <= task.test_time


def test_autocomplete_hides_its_column_and_seeds_at_row_times(relbench_v3):
    db = load_relbench(relbench_v3)
    task = task_of(relbench_v3, "review-rating")
    assert (task.autocomplete, task.entity_col, task.time_col) == (True, "primary_key",
                                                                  "review_time")
    db = task.database(db)
    assert db["review"].pkey == "primary_key"
    seen = task.inputs(db)
    assert "rating" in db["review"].df and "rating" not in seen["review"].df
    test = task.split_table("test", db)
    review = db["review"].df
    assert (test["timestamp"].to_numpy() == review["review_time"].to_numpy()[
        test["primary_key"]].astype("datetime64[s]")).all()
    assert (test["timestamp"] > task.dataset_test).all()
    # the graph is cut after the last test row: every test seed is a node of it
    assert task.test_time >= review["review_time"].max()


def test_settings_read_and_overridden(relbench_v3, relbench_v1):
    task = task_of(relbench_v3, "user-item-purchase")
    assert (task.entity_table, task.target_table, task.target_col, task.eval_k) == (
        "customer", "product", "product_id", 10)
    assert task.monitor == "map" and set(task.metrics) == {"map", "precision", "recall"}
    assert task.metrics["map"].k == 10
    churn = task_of(relbench_v3, "user-churn", name="mine", window="60 days")
    assert churn.name == "mine" and churn.delta == pd.Timedelta(days=60)
    assert churn.monitor == "auroc" and churn.monitor_mode == "max"
    assert task_of(relbench_v1, "user-ltv").monitor_mode == "min"
    back = task_of(relbench_v3, "user-churn", backtest=2)
    assert back.test_time == task_of(relbench_v3, "user-churn").test_time - 2 * back.delta
    with pytest.raises(ValueError, match="backtest=1 needs the task's SQL"):
        task_of(relbench_v1, "user-churn", backtest=1)
    # a multiclass task's classes, counted in RelBench's label files beside its manifest
    assert relbench_task(relbench_v3 / "tasks" / "user-reviews").kind.num_classes == 3
    with pytest.raises(DataError, match="not a RelBench task folder"):
        relbench_task(relbench_v3 / "db")


def test_label_files_of_another_database_are_refused(relbench_v1, tmp_path):
    folder = tmp_path / "tasks" / "user-churn"
    folder.mkdir(parents=True)
    for split in SPLITS:
        (folder / f"{split}.parquet").write_bytes(
            (relbench_v1 / "tasks" / "user-churn" / f"{split}.parquet").read_bytes())
    task = relbench_task(folder, dataset=relbench_v1)  # (not two folders above it)
    db = load_relbench(relbench_v1)
    small = type(db)({**db.tables, "customer": db["customer"]._with(db["customer"].df.iloc[:10])})
    with pytest.raises(DataError, match=r"train\.parquet: \d+ of \d+ rows have a customer_id "
                                        r"that is no row of table 'customer'"):
        task.split_table("train", small)


def test_no_val_seed_sees_an_earlier_val_seeds_label(relbench_v3):
    """With several val seed times, val labels join the label history at the test time:
    val is scored as test is (no test seed sees a test label); train labels at their
    window's close."""
    db = load_relbench(relbench_v3)
    task = task_of(relbench_v3, "user-churn")
    tables = {s: task.split_table(s, db) for s in SPLITS}
    history = task.history(tables)
    val_times = set(tables["val"]["timestamp"])
    from_val = history["timestamp"].isin(val_times)
    assert from_val.sum() == len(tables["val"]) and len(val_times) == NUM_EVAL
    assert (history.loc[from_val, "available"] >= task.test_time).all()
    assert (history.loc[~from_val, "available"] == history.loc[~from_val, "timestamp"]
            + task.delta).all()
    assert (history.loc[~from_val, "available"] <= task.val_time).all()
