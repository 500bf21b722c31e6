"""A task's SQL (issue 38, point 7): its ``sql:`` path is read from the task YAML's own
folder, so a config folder on Hydra's search path ships its SQL beside its YAML, and the
run's checkpoint finds it from anywhere."""
from __future__ import annotations

import os
import subprocess
import sys

from rdl import TASKS_DIR


def test_sql_beside_its_yaml_on_the_search_path(tmp_path, run_train, rdl_cache):
    conf = tmp_path / "my_conf" / "task"
    conf.mkdir(parents=True)
    (conf / "quiet.yaml").write_text("defaults:\n  - user-churn\n  - _self_\nname: quiet\n"
                                     "sql: quiet.sql   # beside this file\n")
    (conf / "quiet.sql").write_text((TASKS_DIR / "hm" / "user-churn.sql").read_text())
    run = tmp_path / "run"
    out = run_train(run, f"hydra.searchpath=[file://{tmp_path / 'my_conf'}]", "task=quiet",
                    "compile.enabled=false")
    assert out.returncode == 0, out.stderr[-3000:]
    assert (run / "metrics.json").exists()
    # rdl.predict from another folder: the checkpoint holds where the SQL was found
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pred = subprocess.run([sys.executable, "-m", "rdl.predict",
                           f"ckpt_path={run / 'checkpoints' / 'best.ckpt'}",
                           f"hydra.run.dir={elsewhere / 'p'}"], cwd=elsewhere,
                          env={**os.environ, "RDL_CACHE": str(rdl_cache),
                               "PYTHONPATH": os.pathsep.join(sys.path)},
                          capture_output=True, text=True, timeout=600)
    assert pred.returncode == 0, pred.stderr[-3000:]


def shop(folder):
    """A folder database keyed by text codes (products) and user names, read by
    load_folder: rows re-indexed, the files' ids kept in ``db.keys``."""
    import pandas as pd

    from rdl.data.folder import load_folder
    (folder / "schema.yaml").write_text(
        "tables:\n  products: {pkey: code}\n  users: {pkey: name}\n"
        "  orders: {time: day, fkeys: {product: products, user: users}}\n")
    (folder / "products.csv").write_text("code,price\nXYZ,3\nABC,5\nQRS,7\n")
    (folder / "users.csv").write_text("name,age\nzoe,30\namy,40\n")
    days = pd.date_range("2024-01-01", periods=40, freq="D").strftime("%Y-%m-%d")
    rows = [f"{['ABC', 'XYZ', 'QRS'][i % 3]},{['zoe', 'amy'][i % 2]},{d}"
            for i, d in enumerate(days)]
    (folder / "orders.csv").write_text("product,user,day\n" + "\n".join(rows) + "\n")
    return load_folder(folder)


def test_task_sql_sees_the_files_ids(tmp_path):
    """``WHERE o.product = 'ABC'``: the SQL filters by the files' own ids (it failed:
    "Could not convert string 'ABC' to INT64"); the rows it returns are mapped to rows,
    node and link tasks alike."""
    from rdl.families.node import NodeTask
    from rdl.families.link import LinkTask
    db = shop(tmp_path)
    (tmp_path / "abc.sql").write_text(
        "SELECT s.timestamp, u.name, COUNT(o.product) FILTER (WHERE o.product = 'ABC' AND "
        "o.day > s.timestamp AND o.day <= s.timestamp + $window) AS abc "
        "FROM timestamps s, users u LEFT JOIN orders o ON o.user = u.name "
        "WHERE u.name IN ('zoe', 'amy') GROUP BY s.timestamp, u.name")
    task = NodeTask(name="abc", sql=str(tmp_path / "abc.sql"), kind="regression",
                    entity_table="users", entity_col="name", target_col="abc", window="6d",
                    val_timestamp="2024-01-25", test_timestamp="2024-02-01")
    df = task.split_table("val", db)
    names = list(db.keys["users"][df["name"]])
    # order i (Jan 1 + i) is of ABC where i % 3 == 0, by zoe where i is even: in
    # (Jan 25, Jan 31], i = 25..30, ABC orders are i = 27 (amy) and 30 (zoe)
    want = {"zoe": 1, "amy": 1}
    assert dict(zip(names, df["abc"])) == want
    (tmp_path / "bought.sql").write_text(
        "SELECT s.timestamp, o.user, LIST(DISTINCT o.product) AS product FROM timestamps s "
        "JOIN orders o ON o.day > s.timestamp AND o.day <= s.timestamp + $window "
        "WHERE o.product <> 'QRS' GROUP BY s.timestamp, o.user")
    link = LinkTask(name="bought", sql=str(tmp_path / "bought.sql"), kind="link_prediction",
                    entity_table="users", entity_col="user", target_col="product",
                    target_table="products", window="6d", val_timestamp="2024-01-25",
                    test_timestamp="2024-02-01")
    df = link.split_table("val", db)
    got = {db.keys["users"][u]: sorted(db.keys["products"][list(p)])
           for u, p in zip(df["user"], df["product"])}
    assert got == {"zoe": ["ABC", "XYZ"], "amy": ["ABC", "XYZ"]}
