"""What a leak in an export is worth, on data with no signal: ``python benchmarks/leaks.py
[--case seen-in|totals|events] [--dir D] [--epochs E]``. Each case trains one task twice with
``python -m rdl.train``, the schema as rdl drafts or asks for it and with the leak left
in, and prints the test AUROC of the model and of LightGBM: about 0.5 where nothing
leaks. docs/data.md.

* ``seen-in``: an Olist-shaped folder (tests/data/olist_like.py, 20,000 random orders),
  the persons behind its customers implied (``customer_unique_id``); a repeat-purchase
  task (will a person order in the next 28 days?); customers timed by their order
  (``time: {seen_in: orders}``, as drafted) or static.
* ``totals``: a shop's export (tests/data/test_leaks.py's ``shop``: 3,000 customers,
  20,000 random orders over 90 days) whose customers hold the ``Total Orders`` and
  ``Total Spent`` it computed when exporting; will a customer order in the next 14 days?
  Totals dropped (``stypes: {...: drop}``) or kept (declared ``numerical``).
* ``events``: a Sakila-shaped rental export (tests/data/sakila_like.py: 2,000 customers,
  20,000 rentals over 90 days, each returned 1-9 days later); will a customer return a
  rental in the next 7 days? The rentals' ``return_date`` dropped, a table of its own
  (``events: [return_date]``: a seed sees a return once it happened), or kept as a
  feature (``timestamp``: every seed sees when its rentals will come back). Here the
  data has a signal no leak is needed for: a rental out is returned within 9 days.
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


TOTALS_TASK = TASK.replace("person-buys", "customer-buys").replace(
    "entity_table: persons", "entity_table: customers").replace(
    "entity_col: customer_unique_id", "entity_col: customer_id").replace(
    "window: 28d", "window: 14d").replace('"2017-09-01"', '"2024-03-01"').replace(
    '"2017-09-29"', '"2024-03-15"')
TOTALS_SQL = """
SELECT s.timestamp, c.customer_id,
       CAST(EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id
                      AND o.created_at > s.timestamp
                      AND o.created_at <= s.timestamp + $window) AS INTEGER) AS buys
FROM timestamps s, customers c
"""


def seen_in(root: Path, conf: Path) -> list:
    from rdl.data.draft import draft
    from tests.data.olist_like import write_olist
    (conf / "person-buys.yaml").write_text(TASK)
    (conf / "person-buys.sql").write_text(SQL)
    timed = write_olist(root / "timed", orders=20_000)
    spec = yaml.safe_load(draft(timed))
    spec["tables"]["persons"] = {"pkey": "customer_unique_id", "implied": True}
    spec["tables"]["olist_customers_dataset"]["fkeys"] = {"customer_unique_id": "persons"}
    (timed / "schema.yaml").write_text(yaml.safe_dump(spec))
    static = root / "static"
    shutil.copytree(timed, static, dirs_exist_ok=True)
    del spec["tables"]["olist_customers_dataset"]["time"]
    (static / "schema.yaml").write_text(yaml.safe_dump(spec))
    return [("person-buys", "customers seen in their orders", timed),
            ("person-buys", "customers static", static)]


def totals(root: Path, conf: Path) -> list:
    from tests.data.test_leaks import shop
    (conf / "customer-buys.yaml").write_text(TOTALS_TASK)
    (conf / "customer-buys.sql").write_text(TOTALS_SQL)
    out = []
    for name, stype in (("dropped", "drop"), ("kept", "numerical")):
        spec = shop(root / name, orders=20_000, customers=3_000)
        spec["tables"]["customers"]["stypes"] = {"Total Orders": stype, "Total Spent": stype}
        (root / name / "schema.yaml").write_text(yaml.safe_dump(spec))
        out.append(("customer-buys", f"totals {name}", root / name))
    return out


EVENTS_TASK = TOTALS_TASK.replace("customer-buys", "customer-returns").replace(
    "entity_table: customers", "entity_table: customer").replace(
    "target_col: buys", "target_col: returns").replace("window: 14d", "window: 7d").replace(
    '"2024-03-01"', '"2005-08-01"').replace('"2024-03-15"', '"2005-08-08"')
EVENTS_SQL = """
SELECT s.timestamp, c.customer_id,
       CAST(EXISTS (SELECT 1 FROM rental r WHERE r.customer_id = c.customer_id
                      AND r.return_date > s.timestamp
                      AND r.return_date <= s.timestamp + $window) AS INTEGER) AS returns
FROM timestamps s, customer c
WHERE EXISTS (SELECT 1 FROM rental r WHERE r.customer_id = c.customer_id
              AND r.rental_date <= s.timestamp)
"""


def events(root: Path, conf: Path) -> list:
    from tests.data.sakila_like import write_sakila
    from tests.data.test_leaks import STATIC, schema
    (conf / "customer-returns.yaml").write_text(EVENTS_TASK)
    (conf / "customer-returns.sql").write_text(EVENTS_SQL)
    out = []
    for name, rental in (("dropped", {"stypes": {"last_update": "drop", "return_date": "drop"}}),
                         ("events", {"events": ["return_date"]}),
                         ("kept", {"stypes": {"last_update": "drop",
                                              "return_date": "timestamp"}})):
        folder = write_sakila(root / name, customers=2_000, films=400, rentals=20_000)
        (folder / "schema.yaml").write_text(yaml.safe_dump(schema(rental=rental,
                                                                  customer=STATIC)))
        out.append(("customer-returns", f"return_date {name}", folder))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--case", choices=("seen-in", "totals", "events"), default="seen-in")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--dir", default=None)
    args = p.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="rdl-leaks-"))
    conf = root / "conf" / "task"
    conf.mkdir(parents=True, exist_ok=True)
    runs = {"seen-in": seen_in, "totals": totals, "events": events}[args.case](root, conf)
    print("| schema | model test AUROC | LightGBM test AUROC |\n|---|---|---|")
    for task, name, folder in runs:
        run = root / f"run-{folder.name}"
        subprocess.run([sys.executable, "-m", "rdl.train",
                        f"hydra.searchpath=[file://{root / 'conf'}]", f"task={task}",
                        "data=folder", f"data.db.path={folder}",
                        f"trainer.max_epochs={args.epochs}", f"hydra.run.dir={run}"],
                       check=True, capture_output=True)
        m = json.loads((run / "metrics.json").read_text())
        print(f"| {name} | {m['model']['test']['auroc']:.4f} | "
              f"{m['LightGBM']['test']['auroc']:.4f} |")


if __name__ == "__main__":
    main()
