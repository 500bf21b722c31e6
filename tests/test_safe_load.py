"""Checkpoints and the prepared data shared between processes are read with torch's
weights-only unpickler (issue 38, point 10): a file carrying code is refused, naming what it
holds, and the code does not run; ``trust_checkpoint=true`` reads a file you trust."""
from __future__ import annotations

import builtins
import os
import sys

import pytest

from tests.zygote import command
import torch

from rdl.checkpoints import CONFIG_KEY, read_checkpoint
from rdl import caching
from rdl.prepared_cache import DATA, _read, _wait
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


def test_the_prepared_data_holds_no_pickled_class(tiny_cfg, tmp_path):
    """The prepared data's cache entry holds tensors, numbers, strings and containers only:
    the weights-only unpickler reads it (tests/test_prepared_cache.py: read back equal)."""
    from rdl import api
    db = api.load_database(tiny_cfg())   # the session's cached database
    api.prepare(tiny_cfg(f"data.cache_dir={tmp_path}"), db)
    (entry,) = (tmp_path / "prepared").iterdir()
    assert torch.serialization.get_unsafe_globals_in_checkpoint(str(entry / DATA)) == []


@pytest.mark.parametrize("where", ["cache", "run folder"])
def test_planted_prepared_data_is_refused(tmp_path, where):
    marker, entry = tmp_path / "payload-ran", tmp_path / "entry"
    entry.mkdir()
    path = entry / DATA if where == "cache" else tmp_path / ".prepared-x.pt"
    torch.save({"tables": Payload(marker)}, path)
    caching.finish(entry)   # a complete entry, as far as its marker says
    with pytest.raises(UntrustedFile, match="the prepared data .*holds io.open.*delete it"):
        _read(entry) if where == "cache" else _wait(None, str(path), timeout=5)
    assert not marker.exists()