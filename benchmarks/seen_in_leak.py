"""What a static table holding a row per event leaks: ``python benchmarks/seen_in_leak.py
[--orders N] [--dir D] [--epochs E]``.

Writes an Olist-shaped folder (tests/data/olist_like.py: random orders, no signal) with
its drafted schema, the persons behind the customers implied (``customer_unique_id``),
twice: customers timed by their order (``time: {seen_in: orders}``, as drafted) and
static. Trains a repeat-purchase task (will a person order in the next 28 days?) on
each with ``python -m rdl.train`` and prints the test AUROC of the model and of
LightGBM: about 0.5 where nothing leaks. docs/data.md, "Times taken from other tables'
rows".
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.data's fixture

TASK = """\
defaults:
  - user-churn
  - _self_
name: person-buys
sql: person-buys.sql
entity_table: persons
entity_col: customer_unique_id
target_col: buys
window: 28d
val_timestamp: "2017-09-01"
test_timestamp: "2017-09-29"
data_defaults: {}
"""
SQL = """
SELECT s.timestamp, p.customer_unique_id,
       CAST(EXISTS (SELECT 1 FROM olist_orders_dataset o JOIN olist_customers_dataset c
                    ON c.customer_id = o.customer_id
                    WHERE c.customer_unique_id = p.customer_unique_id
                      AND o.order_purchase_timestamp > s.timestamp
                      AND o.order_purchase_timestamp <= s.timestamp + $window) AS INTEGER)
           AS buys
FROM timestamps s, persons p
"""


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--orders", type=int, default=20_000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--dir", default=None)
    args = p.parse_args()
    from rdl.data.draft import draft
    from tests.data.olist_like import write_olist
    root = Path(args.dir or tempfile.mkdtemp(prefix="rdl-seen-in-"))
    conf = root / "conf" / "task"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "person-buys.yaml").write_text(TASK)
    (conf / "person-buys.sql").write_text(SQL)
    timed = write_olist(root / "timed", orders=args.orders)
    spec = yaml.safe_load(draft(timed))
    spec["tables"]["persons"] = {"pkey": "customer_unique_id", "implied": True}
    spec["tables"]["olist_customers_dataset"]["fkeys"] = {"customer_unique_id": "persons"}
    (timed / "schema.yaml").write_text(yaml.safe_dump(spec))
    static = root / "static"
    shutil.copytree(timed, static, dirs_exist_ok=True)
    del spec["tables"]["olist_customers_dataset"]["time"]
    (static / "schema.yaml").write_text(yaml.safe_dump(spec))
    print("| customers | model test AUROC | LightGBM test AUROC |\n|---|---|---|")
    for name, folder in (("seen in their orders", timed), ("static", static)):
        run = root / f"run-{folder.name}"
        subprocess.run([sys.executable, "-m", "rdl.train",
                        f"hydra.searchpath=[file://{root / 'conf'}]", "task=person-buys",
                        "data=folder", f"data.db.path={folder}",
                        f"trainer.max_epochs={args.epochs}", f"hydra.run.dir={run}"],
                       check=True, capture_output=True)
        m = json.loads((run / "metrics.json").read_text())
        print(f"| {name} | {m['model']['test']['auroc']:.4f} | "
              f"{m['LightGBM']['test']['auroc']:.4f} |")


if __name__ == "__main__":
    main()
