"""The host profile of a GPU check row (rdl/bench/host_profile.py): time by area."""
import cProfile
import pstats

import torch

from rdl.bench.host_profile import area, summarize_host


def test_functions_fall_in_their_areas():
    assert area("~") == "builtins"
    assert area("/x/site-packages/pytorch_lightning/loops/fit_loop.py") == "lightning"
    assert area("/x/site-packages/torch/_dynamo/eval_frame.py") == "dynamo/inductor runtime"
    assert area("/tmp/torchinductor_root/ab/cabc.py") == "dynamo/inductor runtime"
    assert area("/x/site-packages/torch/optim/adam.py") == "optimiser"
    assert area("/x/site-packages/torch/nn/modules/linear.py") == "torch (other python)"
    assert area("/work/main/rdl/nn/fused.py") == "rdl"
    assert area("/usr/lib/python3.11/json/encoder.py") == "other"


def test_a_profile_is_summed_per_step_by_area():
    def work():
        torch.nn.functional.linear(torch.randn(64, 8), torch.randn(4, 8)).sum()

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(4):
        work()
    prof.disable()
    out = summarize_host(pstats.Stats(prof), steps=4, top=5)
    assert out["host_profiled_ms"] > 0 and out["host_areas"]["builtins"] > 0
    assert abs(sum(out["host_areas"].values()) - out["host_profiled_ms"]) < 1e-9
    assert len(out["host_top"]) == 5
    calls = {t["where"]: t["calls"] for t in out["host_top"]}
    assert max(calls.values()) >= 1.0      # per step: each function ran at least once a step
