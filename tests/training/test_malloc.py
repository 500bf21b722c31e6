"""``keep_freed_memory``: freed activations stay for the next step instead of going back to
the system (to be faulted in again)."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest
import torch

SCRIPT = """
import os, sys, torch
from rdl.training.malloc import keep_freed_memory
assert keep_freed_memory(sys.argv[1] == "keep") == (sys.argv[1] == "keep")
def resident_mib():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
xs = [torch.ones(1024, 1024) for _ in range(10)]   # a step's activations, written
alive = resident_mib()
del xs                                              # and freed at the step's end
print(alive - resident_mib())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_freed_activations_stay_for_the_next_step():
    def released_mib(mode: str) -> float:
        out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True,
                             text=True, check=True)
        return float(out.stdout.split()[-1])

    # 40 MiB freed: with glibc's defaults these blocks are mmapped and handed back to the
    # system when freed (to be faulted in again by the next step; glibc raises its
    # thresholds only as it sees the sizes freed); kept, they stay resident
    assert released_mib("default") > 24
    assert released_mib("keep") < 8


def test_set_only_when_training_on_the_cpu():
    """The setting was measured for CPU steps; a GPU run (CUDA's caching allocator keeps
    its memory anyway) leaves the process's malloc alone."""
    from omegaconf import OmegaConf

    from rdl.settings import _on_cpu
    on = lambda acc: _on_cpu(OmegaConf.create({"trainer": {"accelerator": acc}}))  # noqa: E731
    assert on("cpu") and not on("gpu") and not on("cuda")
    assert on("auto") == (not torch.cuda.is_available())
