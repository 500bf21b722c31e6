"""The model's ops compared in one process: ``python -m rdl.bench ops``.

``python -m rdl.bench ops [--tasks user-churn] [--variants per-type fused stacked]
[--eager] [--batches 8] [--rounds 8] [--set HYDRA_OVERRIDE ...] [--out DIR]``

The same model (the same parameters' values) computed per type (PyG's ``HeteroConv``, a
norm per type: ``model.fused=false``), fused (:mod:`rdl.nn.fused`) and fused with stacked
encoders (``model.stacked_encoders``): the forward, loss and backward of ``--batches`` training
batches held in memory, the variants alternated over ``--rounds`` rounds in one process
(this machine's speed drifts between processes by more than the differences measured), the
median ms a step of each. Compiled (``torch.compile(dynamic=True)``, each variant its own
module and graph, compiled before the rounds) unless ``--eager``. What the fused ops save
on a GPU is measured by the GPU check (``python -m rdl.bench gpu``); this says what they
cost where the step is bound by its arithmetic.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from rdl.bench.report import load_average, report, run_dir

#: slug: the model's settings (rdl.bench.kernels' variants)
VARIANTS = {"per-type": ["model.fused=false", "model.stacked_encoders=false"],
            "fused": ["model.fused=true", "model.stacked_encoders=false"],
            "stacked": ["model.fused=true", "model.stacked_encoders=true"],
            "chunked": ["model.fused=true", "model.stacked_encoders=1024"]}


def modules(task: str, variants: list[str], eager: bool, overrides: list[str]):
    """``(data module, {variant: module})``: the task's model once per variant, each
    holding the first one's parameter values (the stacked encoders hold theirs stacked:
    a layout of their own, loaded from the same state)."""
    import rdl
    from rdl.api import make_model, prepare, shaped, task_module

    data, state, out = None, None, {}
    for v in variants:
        cfg = rdl.config(f"task={task}", f"compile.enabled={str(not eager).lower()}",
                         *overrides, *VARIANTS[v])
        torch.manual_seed(cfg.seed)
        if data is None:
            data = prepare(cfg)
        model = make_model(cfg, data)
        if state is None:
            state, data = model.state_dict(), shaped(cfg, data, model)
        model.load_state_dict(state)
        out[v] = task_module(cfg, data, model).train()
    return data, out


def measure(task: str, variants: list[str], eager: bool, batches: int, rounds: int,
            overrides: list[str]) -> list[dict]:
    dm, mods = modules(task, variants, eager, overrides)
    dm.setup("fit")
    it = iter(dm.train_dataloader())
    kept = [next(it) for _ in range(batches)]
    dm.teardown()

    def steps(module) -> float:
        start = time.perf_counter()
        for batch in kept:
            loss, _ = module.step_loss(batch)
            loss.backward()
            module.zero_grad(set_to_none=True)
        return 1000 * (time.perf_counter() - start) / len(kept)

    for v in variants:           # compiles each variant's graph, warms the allocator
        steps(mods[v])
    times = {v: [] for v in variants}
    for _ in range(rounds):
        for v in variants:
            times[v].append(steps(mods[v]))
    base = statistics.median(times[variants[0]])
    return [{"task": task, "mode": "eager" if eager else "compiled", "variant": v,
             "ms_a_step": statistics.median(t), "fastest_ms": min(t),
             f"vs_{variants[0]}": statistics.median(t) / base, "rounds": rounds}
            for v, t in times.items()]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(prog="python -m rdl.bench ops",
                                description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=["user-churn"])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--eager", action="store_true", help="eager instead of compiled")
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--set", nargs="*", default=[], dest="sets", metavar="OVERRIDE")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    rows = []
    for task in args.tasks:
        rows += measure(task, args.variants, args.eager, args.batches, args.rounds, args.sets)
    report("ops", rows, args.out or run_dir("ops"), header=(
        f"The model's ops, alternated in one process (ms a step: forward, loss, backward), "
        f"torch {torch.__version__}, load average {load_average()}\n\n"
        f"`python -m rdl.bench ops {' '.join(argv)}`"))


if __name__ == "__main__":
    main(sys.argv[1:])
