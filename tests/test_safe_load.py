"""Checkpoints and the prepared data shared between processes are read with torch's
weights-only unpickler (issue 38, point 10): a file carrying code is refused, naming what it
holds, and the code does not run; ``trust_checkpoint=true`` reads a file you trust."""
from __future__ import annotations

import builtins
import os
import sys

import numpy as np
import pandas as pd
import pytest

from tests.zygote import command
import torch

from rdl.checkpoints import CONFIG_KEY, read_checkpoint
from rdl.preparation import _load_shared, _save_shared
from rdl.safe_load import UntrustedFile, check_targets


class Payload:
    """Unpickled by the full unpickler, it creates ``path`` (what a real payload would do
    with a shell command)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return builtins.open, (self.path, "w")


def checkpoint(path, config: dict, extra=None) -> None:
    """A file laid out as rdl's checkpoints are, ``extra`` beside its config."""
    torch.save({"state_dict": {"w": torch.zeros(2)}, "extra": extra,
                "hyper_parameters": {CONFIG_KEY: config}}, path)


def test_a_checkpoint_carrying_code_is_refused_and_the_code_does_not_run(tmp_path):
    marker, ckpt = tmp_path / "payload-ran", tmp_path / "evil.ckpt"
    checkpoint(ckpt, {"task": {"name": "user-churn"}}, Payload(marker))
    with pytest.raises(UntrustedFile) as e:
        read_checkpoint(ckpt)
    assert not marker.exists()
    message = str(e.value)
    assert f"ckpt_path {ckpt}: holds io.open" in message
    assert "nothing of it was run" in message and "trust_checkpoint=true" in message
    config, _ = read_checkpoint(ckpt, trust=True)   # the opt-in: the full unpickler
    assert config == {"task": {"name": "user-churn"}} and marker.exists()


def test_rdl_predict_refuses_it_with_one_message(tmp_path, rdl_cache):
    marker, ckpt = tmp_path / "payload-ran", tmp_path / "evil.ckpt"
    checkpoint(ckpt, {"task": {"name": "user-churn"}}, Payload(marker))
    out = command([sys.executable, "-m", "rdl.predict", f"ckpt_path={ckpt}",
                   f"hydra.run.dir={tmp_path / 'predict'}"],
                  env={**os.environ, "RDL_CACHE": str(rdl_cache)}, timeout=300)
    assert out.returncode == 1 and not marker.exists()
    assert out.stderr.startswith(f"error: ckpt_path {ckpt}: holds io.open"), out.stderr
    assert "Traceback" not in out.stderr


def test_a_checkpoint_config_building_foreign_code_is_refused():
    """A checkpoint's config is built by Hydra: a ``_target_`` outside rdl's, PyTorch's and
    Lightning's is code too."""
    config = {"data": {"db": {"_target_": "os.system", "command": "touch x"}},
              "model": {"_target_": "rdl.nn.NodeModel"},
              "optimizer": {"_target_": "torch.optim.Adam"}}
    with pytest.raises(UntrustedFile, match=r"builds 'os.system' \(at data.db\), which is not "
                       "rdl's, PyTorch's or Lightning's.*trust_checkpoint=true"):
        check_targets(config, "ckpt_path x.ckpt")
    check_targets(config, "ckpt_path x.ckpt", trust=True)
    del config["data"]
    check_targets(config, "ckpt_path x.ckpt")


@pytest.mark.parametrize("task", ["user-churn", "user-item-purchase"])
def test_the_prepared_data_round_trips_through_a_weights_only_read(tiny_cfg, task, tmp_path,
                                                                   monkeypatch):
    """What the first process of a machine writes, the others read back equal (tables with
    lists of ids, history, prior, seed features) with no pickle of any class in it."""
    from rdl import api
    from tests.conftest import task_overrides
    cfg = tiny_cfg(*task_overrides(task))
    prepared = api.prepare(cfg).prepared
    path = tmp_path / "prepared.pt"
    shared = getattr(prepared, "SHARED", ("tables",))   # a node task's, or a link task's
    _save_shared({k: getattr(prepared, k) for k in shared}, str(path))
    assert torch.serialization.get_unsafe_globals_in_checkpoint(str(path)) == []
    monkeypatch.setenv("LOCAL_RANK", "1")
    back = _load_shared(str(path))
    for split, df in prepared.tables.items():
        pd.testing.assert_frame_equal(back["tables"][split], df)
        assert type(back["tables"][split].iloc[0, -1]) is type(df.iloc[0, -1])
    if getattr(prepared, "history", None) is not None:
        pd.testing.assert_frame_equal(back["history"], prepared.history)
    for split, p in (getattr(prepared, "prior", None) or {}).items():
        np.testing.assert_array_equal(back["prior"][split], p)
    for split, x in (getattr(prepared, "seed_x", None) or {}).items():
        assert torch.equal(back["seed_x"][split], x)
    if "seed_feature_names" in shared:
        assert tuple(back["seed_feature_names"]) == prepared.seed_feature_names


def test_planted_prepared_data_is_refused(tmp_path, monkeypatch):
    marker, path = tmp_path / "payload-ran", tmp_path / "prepared.pt"
    torch.save({"tables": Payload(marker)}, path)
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(UntrustedFile, match="the prepared data .*holds io.open.*delete it"):
        _load_shared(str(path))
    assert not marker.exists()
