"""Kernels per compiled training step, read from Inductor's generated code:
``python -m rdl.bench kernels``.

``python -m rdl.bench kernels [--tasks user-churn item-sales user-item-purchase:contextgnn]
[--variants per-type fused stacked] [--device cpu|cuda] [--set HYDRA_OVERRIDE ...]
[--timeout S] [--out DIR]``

A step's kernels are what bounds a GPU step by its host: each one a launch
(docs/performance.md). Each row compiles one task's model (``torch.compile(dynamic=True)``,
as ``rdl.train`` does), runs its training loss and backward on one training batch of the
configured size, and counts the calls of every compiled graph's wrapper (forward and
backward): ``generated`` kernels (Inductor's own: ``cpp_fused_*`` on a CPU, ``triton_*``
on a GPU), ``library`` calls (``extern_kernels.*``: matmuls) and ``fallback`` ATen ops
(scatters and other ops Inductor leaves to ATen); ``cpu_rng`` counts apart the random
seeds of CPU dropout (one ``randint`` per dropout, rdl's ``hash_dropout``), which a GPU
graph draws inside its kernels. ``kernels`` is their sum without ``cpu_rng``: on a CPU a
loose proxy for the GPU's count, whose fusion differs (Triton splits some reductions
Inductor's C++ keeps whole); the GPU check's profile counts the GPU's own.
``--codegen triton`` (``--device cpu``) counts instead the Triton code Inductor generates
for a GPU, generated on the CPU and not run (:mod:`rdl.bench.gpu_codegen`; needs the
``triton`` package): the proxy to follow where no GPU is lent (``cpu_rng`` is then the
graph's one seed kernel, counted).

``outside`` counts the ATen ops of one more step that make data outside every compiled
graph, each a kernel on a GPU (the backward's seed, the loss's own ops, autograd's glue);
``outside_top`` names the most frequent. Of them, ``grad_copies`` counts the copies
autograd makes as it writes each gradient into ``.grad``: one for every parameter whose
gradient arrives in strides not its own. The optimiser and the batch's copy to the
device are not part of the counted step. Each row runs in a fresh process with cold
compile caches.
Reads the generated code with ``torch._inductor.utils.run_and_get_code`` (private: a
torch without it fails the row, naming it).

Variants: ``per-type`` (``model.fused=false``: PyG's HeteroConv per edge type, a norm per
type; the CPU's default), ``fused`` (:mod:`rdl.nn.fused`), ``stacked`` (``fused`` and
``model.stacked_encoders=true``: ``experiment=gpu``'s), ``chunked`` (the stacked encoders
over chunks of 1,024 rows: ``model.stacked_encoders=1024``).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

import torch

from rdl.bench.report import report, run_dir

VARIANTS = {"per-type": ["model.fused=false", "model.stacked_encoders=false"],
            "fused": ["model.fused=true", "model.stacked_encoders=false"],
            "stacked": ["model.fused=true", "model.stacked_encoders=true"],
            "chunked": ["model.fused=true", "model.stacked_encoders=1024"]}
RESULT = "RDL_BENCH_KERNELS_RESULT "
#: one call of a compiled graph's wrapper: ``buf = name(...)`` or ``name(...)``
CALL = re.compile(r"^\s+(?:\w+ = )?((?:cpp_fused|triton)\w*(?:\.run)?|extern_kernels\.\w+|"
                  r"aten\.\w+(?:\.\w+)?|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(", re.M)


def count_calls(code: str) -> Counter:
    """The calls of a generated module's ``call`` function, by kind: ``generated``,
    ``library``, ``fallback`` and ``cpu_rng`` (see the module's docstring)."""
    body = code.split("def call(", 1)[-1]
    body = body.split("\ndef ", 1)[0]       # the wrapper alone, not the benchmark harness
    out = Counter()
    for name in CALL.findall(body):
        if name.startswith(("cpp_fused", "triton")):
            out["generated"] += 1
        elif name.startswith("extern_kernels."):
            out["library"] += 1
        elif "randint" in name:
            out["cpu_rng"] += 1
        else:
            out["fallback"] += 1
    return out


def measure(task: str, variant: str, overrides: list[str], device: str,
            codegen: str = "device") -> dict:
    """Compile the task's model, run one training step's loss and backward, count.
    ``codegen="triton"``: a GPU's code generated on the CPU, not run
    (:mod:`rdl.bench.gpu_codegen`)."""
    stopped = ()    # (the exceptions that end a step: none but on a GPU's code, not run)
    if codegen == "triton":
        from rdl.bench.gpu_codegen import Stopped, triton_codegen
        triton_codegen()
        stopped = Stopped
    try:
        from torch._inductor.utils import run_and_get_code
    except ImportError as e:
        raise SystemExit(f"torch {torch.__version__} has no "
                         f"torch._inductor.utils.run_and_get_code: {e}") from None
    import rdl
    from rdl.api import build

    task, _, model = task.partition(":")     # TASK[:MODEL] (a link task names its model)
    cfg = rdl.config(f"task={task}", *([f"model={model}"] if model else []),
                     "compile.enabled=true", "compile.kwargs.dynamic=true",
                     *overrides, *VARIANTS[variant])
    torch.manual_seed(cfg.seed)
    _, dm, module = build(cfg)
    dev = torch.device(device)
    module.to(dev).train()
    dm.setup("fit")
    batch = dm.transfer_batch_to_device(next(iter(dm.train_dataloader())), dev, 0)

    def step():
        module.zero_grad(set_to_none=True)      # as Lightning's optimiser loop does
        try:
            loss, _ = module.step_loss(batch)
            loss.backward()
        except stopped:
            pass

    start = time.perf_counter()
    _, codes = run_and_get_code(step)
    seconds = time.perf_counter() - start
    # (a GPU's code is not run: what it does outside its graphs is the device row's)
    grad_copies, outside = outside_graphs(step) if codegen == "device" else (None, Counter())
    dm.teardown()
    counts = [count_calls(c) for c in codes]
    total = sum(counts, Counter())
    # a GPU's graph draws its dropout's seeds in one kernel (the CPU's draws them apart)
    kinds = ("generated", "library", "fallback", *(("cpu_rng",) if codegen == "triton" else ()))

    def kernels(c: Counter) -> int:
        return sum(c[k] for k in kinds)

    return {"graphs": len(codes), "kernels": kernels(total),
            "per_graph": " + ".join(str(kernels(c)) for c in counts),
            **{k: total[k] for k in ("generated", "library", "fallback", "cpu_rng")},
            "grad_copies": grad_copies, "outside": sum(outside.values()),
            "outside_ops": dict(outside.most_common()), "compile_s": seconds}


#: ATen ops that make no data (views, metadata, allocation): no kernel on a GPU
NO_KERNEL = {"view", "_unsafe_view", "as_strided", "reshape", "_reshape_alias", "t",
             "transpose", "permute", "expand", "unsqueeze", "squeeze", "select", "slice",
             "narrow", "split", "split_with_sizes", "unbind", "alias", "detach", "empty",
             "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_",
             "view_as", "lift_fresh", "_local_scalar_dense", "item", "is_nonzero", "set_",
             "sym_size", "sym_stride", "sym_numel", "resolve_conj", "resolve_neg",
             "contiguous", "unfold", "expand_as", "flatten", "unflatten", "movedim"}


def outside_graphs(step) -> tuple[int, Counter]:
    """One more ``step`` under the profiler: ``(grad_copies, outside)``. ``outside``: the
    ATen ops that make data outside every compiled graph, by name (the innermost of each
    call chain, views and allocations left out), each a kernel on a GPU; ``grad_copies``:
    of them, the copies autograd makes of gradients as it writes ``.grad`` (one for each
    parameter whose gradient arrives in strides not its own, or shared)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = prof.events()
    # an op calling another op that makes data is counted as that one
    calls_kernel = {id(e.cpu_parent) for e in events if e.cpu_parent is not None
                    and e.name.startswith("aten::") and e.name[6:] not in NO_KERNEL}
    grad_copies, outside = 0, Counter()
    for e in events:
        if not e.name.startswith("aten::") or id(e) in calls_kernel \
                or e.name[6:] in NO_KERNEL:
            continue
        chain, p = [], e.cpu_parent
        while p is not None:
            chain.append(p.name)
            p = p.cpu_parent
        if any(n.startswith(("## Call CompiledFxGraph", "CompiledFunction")) for n in chain):
            continue
        outside[e.name[6:]] += 1
        grad_copies += e.name == "aten::copy_" and any("AccumulateGrad" in n for n in chain)
    return grad_copies, outside


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:
        print(RESULT + json.dumps(measure(**json.loads(argv[1]))), flush=True)
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench kernels",
                                description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=["user-churn", "item-sales",
                                                  "user-item-purchase:contextgnn"],
                   help="TASK or TASK:MODEL (default model: the config's)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--codegen", choices=["device", "triton"], default="device",
                   help="triton: the code Inductor generates for a GPU (an H100's "
                   "properties), generated on the CPU and counted, not run "
                   "(rdl/bench/gpu_codegen.py; needs the triton package)")
    p.add_argument("--set", nargs="*", default=[], dest="sets", metavar="OVERRIDE")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.codegen == "triton" and args.device != "cpu":
        p.error("--codegen triton generates a GPU's code on the CPU: --device cpu")

    from rdl.bench.train.runner import _run_child

    out = Path(args.out) if args.out else run_dir("kernels")
    rows = []
    for task in args.tasks:
        base = None
        for variant in args.variants:
            print(f"{task} {variant} ...", flush=True)
            spec = dict(task=task, variant=variant, overrides=args.sets, device=args.device,
                        codegen=args.codegen)
            res = _run_child(spec, args.timeout, out / "logs" / f"{len(rows):02d}.log",
                             module="rdl.bench.kernels", result=RESULT)
            row = {"task": task, "variant": variant,
                   **{k: res.get(k) for k in ("kernels", "per_graph", "generated", "library",
                                              "fallback", "cpu_rng", "grad_copies", "outside",
                                              "graphs", "compile_s")},
                   "outside_top": ", ".join(f"{op} {n}" for op, n in
                                            list(res.get("outside_ops", {}).items())[:5]),
                   "note": res.get("error", "")}
            if variant == "per-type":
                base = res.get("kernels")
            row["vs_per_type"] = (res["kernels"] / base if base and res.get("kernels")
                                  else None)
            rows.append(row)
    report("kernels", rows, out, header=(
        f"Kernels per compiled training step (forward + backward graphs), device "
        f"{args.device}" + (", code generated as for a GPU (Triton, an H100's properties)"
                            if args.codegen == "triton" else "") +
        f", torch {torch.__version__}\n\n"
        f"`python -m rdl.bench kernels {' '.join(argv)}`"))


if __name__ == "__main__":
    main(sys.argv[1:])
