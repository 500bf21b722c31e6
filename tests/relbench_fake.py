"""RelBench's fake database (rel-amazon-shaped: a list-of-strings column, a text column,
foreign keys matching no row, a table of keys only) and its tasks, written by RelBench's own
code in both of its on-disk layouts; no schema, SQL or label of rdl's in them.

* :func:`write_v1`: RelBench 1.1.0 (the ``relbench`` test extra): ``FakeDataset`` saved as
  RelBench caches a dataset (``db/<table>.parquet`` with key metadata), and its task classes
  (``relbench.tasks.amazon``: churn, lifetime value, purchases) writing their tables
  (``tasks/<task>/{train,val,test}.parquet``), node tasks with several val and test times
  (RelBench's recommendation tasks allow one).
* :data:`V3_SCRIPT`, run by :func:`write_v3` in a subprocess on RelBench 3.0.2 (pip-installed
  with ``--no-deps --target`` into a folder: it cannot be installed beside 1.1.0, and it
  ships no ``FakeDataset``): the same database as a 3.x dataset (plain parquet,
  ``manifest.yaml`` written by ``relbench.manifest``), tasks as ``TaskManifest`` s, the way
  RelBench 3's own tests serialise ``FakeDataset`` (forecast tasks with their SQL, an
  autocomplete task), and each task's labels as RelBench 3 makes them
  (``load_dataset(...).load_task(..., regenerate=True).get_table``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: several evaluation times per val and test split (RelBench's rel-f1 tasks have 40)
NUM_EVAL = 3
WINDOW_DAYS = 30


def write_v1(root: Path) -> Path:
    """RelBench 1.1.0's fake dataset and three tasks under ``root``; returns ``root``."""
    import random

    import numpy as np
    import pandas as pd
    from relbench.datasets.fake import FakeDataset
    from relbench.tasks import amazon

    random.seed(0)
    np.random.seed(0)
    ds = FakeDataset()
    ds.cache_dir = str(root)  # get_db saves the re-indexed database to <root>/db
    ds.get_db(upto_test_timestamp=False)
    settings = {"timedelta": pd.Timedelta(days=WINDOW_DAYS), "num_eval_timestamps": NUM_EVAL}
    for name, cls in TASKS_V1.items():
        # (RelBench's recommendation tasks take one evaluation time only)
        n = {"num_eval_timestamps": 1} if name == "user-item-purchase" else {}
        task = type(cls, (getattr(amazon, cls),), {**settings, **n})(
            ds, cache_dir=str(root / "tasks" / name))
        for split in ("train", "val", "test"):
            task.get_table(split, mask_input_cols=False)  # written to <task>/<split>.parquet
    return root


TASKS_V1 = {"user-churn": "UserChurnTask", "user-ltv": "UserLTVTask",
            "user-item-purchase": "UserItemPurchaseTask"}

#: The 3.x dataset, written by RelBench 3's manifest module: argv = v1 folder, v3 folder.
V3_SCRIPT = textwrap.dedent('''
    import json, sys, types
    from pathlib import Path
    import pyarrow.parquet as pq
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:  # RelBench 3 asks it only where its Hub cache is: offline, nowhere
        hub = types.ModuleType("huggingface_hub")
        hub.constants = types.SimpleNamespace(HF_HUB_CACHE=str(Path(sys.argv[2]) / ".no-hub"))
        sys.modules.update({"huggingface_hub": hub, "huggingface_hub.constants": hub.constants})
    from relbench.load import load_dataset
    from relbench.manifest import DatasetManifest, TableSpec, TaskManifest

    src, root = Path(sys.argv[1]), Path(sys.argv[2])
    tables = {}
    for f in sorted((src / "db").glob("*.parquet")):
        t = pq.read_table(f)
        meta = {k.decode(): json.loads(v) for k, v in t.schema.metadata.items()
                if k.decode() in ("pkey_col", "fkey_col_to_pkey_table", "time_col")}
        (root / "db").mkdir(parents=True, exist_ok=True)
        t.to_pandas().to_parquet(root / "db" / f.name, index=False)  # plain parquet
        tables[f.stem] = TableSpec(pkey=meta["pkey_col"], time_col=meta["time_col"],
                                   fkeys=meta["fkey_col_to_pkey_table"])
    v1 = pq.read_table(src / "tasks" / "user-churn" / "val.parquet").to_pandas()
    # FakeDataset's split times (RelBench 1.1.0 wrote them as the first val time)
    val = str(v1["timestamp"].min())
    test = str(pq.read_table(src / "tasks" / "user-churn" / "test.parquet")
               .to_pandas()["timestamp"].min())
    DatasetManifest(name="rel-fake", val_timestamp=val, test_timestamp=test,
                    tables=tables).save(root / "manifest.yaml")
    active = """EXISTS (SELECT 1 FROM review r WHERE r.customer_id = customer.customer_id
        AND r.review_time > t.timestamp - INTERVAL '{timedelta}' AND r.review_time <= t.timestamp)"""
    future = """r.customer_id = customer.customer_id AND r.review_time > t.timestamp
        AND r.review_time <= t.timestamp + INTERVAL '{timedelta}'"""
    W, N = "%(window)s", %(num_eval)d
    node = dict(kind="forecast", entity_table="customer", entity_col="customer_id",
                time_col="timestamp", timedelta=W, num_eval_timestamps=N)
    manifests = [
        TaskManifest(name="user-churn", task_type="binary_classification", target_col="churn",
                     sql=f"""SELECT t.timestamp, customer.customer_id, CAST(NOT EXISTS (SELECT 1
                     FROM review r WHERE {future}) AS INTEGER) AS churn FROM timestamps t,
                     customer WHERE {active}""", **node),
        TaskManifest(name="user-ltv", task_type="regression", target_col="ltv",
                     sql=f"""SELECT t.timestamp, customer.customer_id, (SELECT
                     COALESCE(SUM(p.price), 0) FROM review r, product p WHERE {future} AND
                     r.product_id = p.product_id) AS ltv FROM timestamps t, customer
                     WHERE {active}""", **node),
        TaskManifest(name="user-reviews", task_type="multiclass_classification",
                     target_col="reviews",
                     sql=f"""SELECT t.timestamp, customer.customer_id, LEAST((SELECT COUNT(*)
                     FROM review r WHERE {future}), 2) AS reviews FROM timestamps t, customer
                     WHERE {active}""", **node),
        TaskManifest(name="user-item-purchase", kind="forecast", task_type="recommendation",
                     src_entity_table="customer", src_entity_col="customer_id",
                     dst_entity_table="product", dst_entity_col="product_id",
                     time_col="timestamp", eval_k=10, timedelta=W, num_eval_timestamps=1,
                     sql="""SELECT t.timestamp, r.customer_id, LIST(DISTINCT r.product_id)
                     AS product_id FROM timestamps t JOIN review r ON r.review_time >
                     t.timestamp AND r.review_time <= t.timestamp + INTERVAL '{timedelta}'
                     WHERE r.customer_id IS NOT NULL AND r.product_id IS NOT NULL
                     GROUP BY t.timestamp, r.customer_id"""),
        TaskManifest(name="review-rating", kind="autocomplete", task_type="regression",
                     entity_table="review", target_col="rating"),
    ]
    for m in manifests:
        m.validate()
        m.save(root / "tasks" / m.name / "manifest.yaml")
    ds = load_dataset(root)
    for m in manifests:  # the labels, as RelBench 3 makes them
        task = ds.load_task(m.name, regenerate=True)
        for split in ("train", "val", "test"):
            df = task.get_table(split, mask_input_cols=False).df
            df.to_parquet(root / "tasks" / m.name / f"{split}.parquet", index=False)
    print("ok")
''') % {"window": f"{WINDOW_DAYS} days", "num_eval": NUM_EVAL}

V3_TASKS = ("user-churn", "user-ltv", "user-reviews", "user-item-purchase", "review-rating")


def relbench3(target: Path) -> Path | None:
    """RelBench 3.0.2 pip-installed (no dependencies: they are rdl's and the test extra's)
    into ``target``; None if pip cannot get it (no index reachable)."""
    if (target / "relbench" / "manifest.py").exists():
        return target
    wheel = os.environ.get("RDL_RELBENCH3", "relbench==3.0.2")  # a local wheel works too
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--target", str(target), wheel], capture_output=True, text=True)
    return target if proc.returncode == 0 else None


def run_relbench3(target: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    """``code`` run by Python on RelBench 3 (``target`` first on its path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *filter(None, [
        os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=600)


def write_v3(v1: Path, root: Path, target: Path) -> Path:
    """The 3.x dataset of :data:`V3_SCRIPT` under ``root``."""
    proc = run_relbench3(target, V3_SCRIPT, str(v1), str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def write_rel_hm(db, root: Path) -> Path:
    """rdl's synthetic H&M database written by RelBench 1.1.0 as RelBench caches rel-hm
    (``<root>/db/<table>.parquet``); returns ``root``."""
    from relbench.base import Database, Table
    Database({n: Table(t.df, dict(t.fkeys), t.pkey, t.time_col) for n, t in db}).save(root / "db")
    return root


def rel_hm_tasks(root: Path) -> dict:
    """RelBench 1.1.0's rel-hm task classes on the database in ``root`` (rel-hm's times)."""
    import pandas as pd
    from relbench.base import Database, Dataset
    from relbench.tasks import hm

    class RelHM(Dataset):
        val_timestamp, test_timestamp = pd.Timestamp("2020-09-07"), pd.Timestamp("2020-09-14")

        def make_db(self):
            return Database.load(root / "db")

    ds = RelHM()
    return {"user-churn": hm.UserChurnTask(ds), "item-sales": hm.ItemSalesTask(ds),
            "user-item-purchase": hm.UserItemPurchaseTask(ds)}


def assert_same(mine, theirs, entity_col: str, target_col: str, time_col: str = "timestamp",
                lists: bool = False) -> None:
    """rdl's split table ``mine`` equals RelBench's ``theirs`` row for row: seed time,
    entity, label (``lists``, a link task's: the same set of ids)."""
    import numpy as np
    import pandas as pd
    theirs = theirs.rename(columns={time_col: "timestamp"})
    theirs = theirs.sort_values(["timestamp", entity_col], kind="stable").reset_index(drop=True)
    assert len(mine) == len(theirs) > 0
    assert (mine["timestamp"].to_numpy() == pd.to_datetime(theirs["timestamp"]).astype(
        "datetime64[s]").to_numpy()).all()
    assert (mine[entity_col].to_numpy() == theirs[entity_col].astype("int64")).all()
    if not lists:
        np.testing.assert_allclose(mine[target_col].astype(float),
                                   theirs[target_col].astype(float))
    else:
        for a, b in zip(mine[target_col], theirs[target_col]):
            assert sorted(a) == sorted(b)
