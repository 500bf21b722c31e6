"""A very small folder database trains (issue 50: 600 transactions, 30 households, val five
weeks after the start): the tree prior's train blocks with too few earlier labels for trees
have no prior (logged; LightGBM failed on a block of one row before), and the run reports
the baseline its model started from."""
from __future__ import annotations

import json
import logging

import numpy as np

import rdl
from rdl.families.node.prior import MIN_ROWS
from tests.data.test_implied import ONLY_IN_FACTS, SQL, transactions, write


#: the household task as a user's task YAML (its SQL: tests/data/test_implied.py's)
TASK = """\
_target_: rdl.families.node.NodeTask
name: household-baskets
sql: {sql}
kind: regression
entity_table: households
entity_col: household_key
target_col: baskets
window: 7d
val_timestamp: "2024-02-05"
test_timestamp: "2024-02-12"
monitor: mae
monitor_mode: min
metrics:
  mae: {{_target_: torchmetrics.MeanAbsoluteError}}
"""


def test_a_small_database_trains_from_the_tree_prior(tmp_path, caplog):
    write(tmp_path, ONLY_IN_FACTS, transactions(), demographic=0)
    (tmp_path / "baskets.sql").write_text(SQL)
    (tmp_path / "conf" / "task").mkdir(parents=True)
    (tmp_path / "conf" / "task" / "household-baskets.yaml").write_text(
        TASK.format(sql=tmp_path / "baskets.sql"))
    run = tmp_path / "run"
    cfg = rdl.config(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=household-baskets",
                     "data=folder", f"data.db.path={tmp_path}", "data.cache_dir=false",
                     "data.prior_from=trees", "compile.enabled=false", "trainer.max_epochs=1",
                     "model.channels=16", "model.encoder_layers=1", f"output_dir={run}")
    with caplog.at_level(logging.INFO):
        data = rdl.prepare(cfg)
        results = rdl.fit(cfg, data)
    task = data.task
    train = data.tables["train"]
    assert train["timestamp"].nunique() >= 3 and len(train) < 100
    # every block after the first has fewer than MIN_ROWS earlier labels here: no prior
    closed = train["timestamp"] + task.delta
    assert (closed <= train["timestamp"].max()).sum() < MIN_ROWS
    assert np.isnan(data.prior["train"]).all()
    assert "labels closed before them" in caplog.text and f"fewer than {MIN_ROWS}" in caplog.text
    assert np.isfinite(data.prior["val"]).all() and np.isfinite(data.prior["test"]).all()
    # a seed feature no train seed has a value of is left out (its val values would be
    # inputs the model never trained on)
    assert "prior" not in data.seed_feature_names
    # the run says which baseline the model corrects
    assert results["model"]["prior"] == data.prior_name
    assert data.prior_name in ("LightGBM", "LightGBM (depth 2)", "LightGBM (mean of depth 1, 2)")
    saved = json.loads((run / "metrics.json").read_text())
    assert saved["model"]["prior"] == data.prior_name and "scale" in saved["model"]["correction"]
