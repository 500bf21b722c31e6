"""Real exports through ``python -m rdl.train data=folder`` (issue 30): a bad folder stops
before any heavy work (no graph cached, no LightGBM, no training) with the loader's message;
a table name PyTorch refuses as a module name trains."""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.data.forum import write_forum
from tests.test_forum import SMALL, check


@pytest.fixture
def forum(tmp_path):
    return write_forum(tmp_path / "forum", scale=0.001)


def test_a_bad_folder_stops_before_training(tmp_path, run_train, forum):
    users = pd.read_csv(forum / "users.csv")
    users.loc[[3, 7], "age"] = float("inf")   # written "inf": an overflow of an export
    users.to_csv(forum / "users.csv", index=False)
    before = sorted(p.name for p in forum.iterdir())
    cache = tmp_path / "cache"
    out = run_train(tmp_path / "run", "task=forum-user-active", "data=folder",
                    f"data.db.path={forum}", *SMALL, tiny=False, env={"RDL_CACHE": str(cache)})
    assert out.returncode == 1, out.stderr[-3000:]
    assert (f"error: {forum / 'users.csv'} (table 'users', column 'age'): 2 of {len(users)} "
            "values are infinite or beyond float32 (±3.4e38), e.g. inf (rows 3, 7)") in out.stderr
    assert "Traceback" not in out.stderr
    logs = out.stdout + out.stderr
    assert "LightGBM" not in logs and "label history" not in logs
    assert not (tmp_path / "run" / "metrics.json").exists()
    assert not list((tmp_path / "run").rglob("*.ckpt"))
    assert not cache.exists() or not list(cache.rglob("graph-*"))   # no cache entry
    assert sorted(p.name for p in forum.iterdir()) == before


def test_a_table_name_pytorch_refuses_trains(tmp_path, run_train, forum):
    """``dim.tags`` (a schema-qualified name, as a warehouse exports it) has a ``.``."""
    schema = forum / "schema.yaml"
    schema.write_text(schema.read_text().replace("\n  tags:", '\n  "dim.tags":')
                      .replace("tag_id: tags}", 'tag_id: "dim.tags"}'))
    assert schema.read_text().count("dim.tags") == 2
    out = run_train(tmp_path, "task=forum-user-active", "data=folder", f"data.db.path={forum}",
                    *SMALL, tiny=False)
    check(out, tmp_path, "forum-user-active", {"auroc", "average_precision", "accuracy", "f1"})
