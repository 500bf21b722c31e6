"""A run's changes to its process are made by ``rdl.fit`` (``rdl.train``'s ``main()``) only,
and undone when the run ends (:mod:`rdl.training.process`): building a run (what ``rdl.predict``, the
notebooks and the benchmarks do) leaves the process as it was."""
from __future__ import annotations

import pytest

from rdl.api import build
from rdl.settings import process_settings
from rdl.training import malloc
from rdl.training.process import configured


@pytest.fixture
def calls(monkeypatch):
    """Calls of the malloc settings, recorded instead of made."""
    seen = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda on=True: seen.append(("keep", on))
                        or on)
    monkeypatch.setattr(malloc, "release_freed_memory", lambda: seen.append(("release",)))
    return seen


def test_building_a_run_leaves_the_process_alone(tiny_cfg, calls):
    cfg = tiny_cfg("task=user-churn", "trainer.accelerator=cpu", "keep_freed_memory=true")
    assert process_settings(cfg)["keep_freed_memory"]
    build(cfg)
    assert calls == []


def test_a_run_sets_up_its_process_and_undoes_it(calls):
    from torch._logging._internal import log_state

    with configured(keep_freed_memory=True, compile_log=True):
        assert calls == [("keep", True)]
        assert log_state.is_artifact_enabled("recompiles")
    assert calls == [("keep", True), ("release",)]
    assert not log_state.is_artifact_enabled("recompiles")


def test_a_run_sets_its_threads_and_puts_them_back():
    import torch

    before = torch.get_num_threads()
    want = 1 if before > 1 else 2
    with configured(threads=want):
        assert torch.get_num_threads() == want
    assert torch.get_num_threads() == before
    with configured():                          # no setting: torch's count untouched
        assert torch.get_num_threads() == before


def test_the_inductor_fixes_are_put_back_after_a_run():
    from torch._inductor.codegen import cpp

    from rdl.training import inductor

    own = cpp.CppKernel.__dict__["need_use_acc_helper"]
    with configured():
        inductor.no_size_guard_in_cpu_sums()   # what a compile with the CPU patches does
        assert cpp.CppKernel.__dict__["need_use_acc_helper"] is not own
    assert cpp.CppKernel.__dict__["need_use_acc_helper"] is own


def test_settings_of_a_run():
    from omegaconf import OmegaConf
    cfg = OmegaConf.create({"keep_freed_memory": True, "compile": {"log": True},
                            "trainer": {"accelerator": "gpu"}})
    assert process_settings(cfg) == {"keep_freed_memory": False, "compile_log": True,
                                     "verbose": False, "threads": "auto", "processes": 1,
                                     "duckdb": {"memory_limit": "auto", "spill_dir": None,
                                                "label_pairs": 25_000_000},
                                     "matmul_precision": None, "sharing_strategy": None}
    cfg.duckdb = {"memory_limit": "2GB"}
    assert process_settings(cfg)["duckdb"] == {"memory_limit": "2GB", "spill_dir": None,
                                                "label_pairs": 25_000_000}
    cfg.threads, cfg.trainer.devices = 3, 4
    assert (process_settings(cfg)["threads"], process_settings(cfg)["processes"]) == (3, 4)
    cfg.trainer.accelerator = "cpu"
    assert process_settings(cfg)["keep_freed_memory"] is True
    cfg.matmul_precision = "high"
    assert process_settings(cfg)["matmul_precision"] == "high"
    cfg.sharing_strategy = "file_system"
    assert process_settings(cfg)["sharing_strategy"] == "file_system"


def test_a_benchmark_child_keeps_its_run_settings_for_the_rest_of_the_process():
    """``for_process`` (a benchmark's child measuring one row) keeps what it set up after
    the call returns and garbage is collected; a stack nobody holds would undo it at once."""
    import os
    import subprocess
    import sys

    code = ("import gc, torch\n"
            "from rdl import duck\n"
            "from rdl.training.process import for_process\n"
            "def row():\n"
            "    for_process(threads=1, duckdb={'memory_limit': '1GB'})\n"
            "row(); gc.collect()\n"
            "print(duck.SETTINGS['memory_limit'], torch.get_num_threads())\n")
    env = {k: v for k, v in os.environ.items()   # no thread count of the user's to win
           if not k.startswith(("OMP_", "MKL_", "RDL_THREADS"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.split()[-2:] == ["1GB", "1"]



@pytest.mark.parametrize("name,get,values,bad", [
    ("matmul_precision", "torch.get_float32_matmul_precision",
     ("highest", "high", "medium"), "tf32"),
    ("sharing_strategy", "torch.multiprocessing.get_sharing_strategy",
     ("file_descriptor", "file_system"), "shm")])
def test_a_run_sets_a_torch_setting_and_puts_it_back(name, get, values, bad):
    import importlib

    module, _, attr = get.rpartition(".")
    read = getattr(importlib.import_module(module), attr)
    before = read()
    want = next(v for v in values if v != before)
    with configured(**{name: want}):
        assert read() == want
    assert read() == before
    with pytest.raises(ValueError, match=rf"{name}='{bad}': expected null or one of"):
        with configured(**{name: bad}):
            pass
    assert read() == before
