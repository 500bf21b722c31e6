"""Time rdl's training step, eager and compiled: ``python -m rdl.bench train``.

``python -m rdl.bench train [--tasks user-churn | all | TASK[:MODEL] ...]
[--variants eager dynamic ...] [--steps 20] [--warmup 3] [--threads N] [--device cuda|cpu]
[--set HYDRA_OVERRIDE ...] [--timeout S] [--profile] [--out DIR]``

What is measured, for each (task, model) and each variant, each in a fresh subprocess (so
compiled code held in memory, peak memory and Dynamo's counters do not mix between rows):

1. The config is composed from ``conf/`` as ``python -m rdl.train`` composes it
   (``task=TASK model=MODEL``, then the ``--set`` overrides, then the variant's own), and
   :func:`rdl.train.build` makes the task, the set-up datamodule and the LightningModule
   (seeded with ``seed`` as training seeds). The module is moved to ``--device`` and put
   in train mode; the optimiser is made as ``configure_optimizers`` makes it
   (``optimizer_fn(model.parameters(), lr=tensor(lr))``, ``capturable=True`` on CUDA; the
   default Adam is fused), its step compiled when the variant says ``compile.optimizer``.
   No Lightning ``Trainer``, no LR schedule, no logging.
2. A train step is what Lightning runs per batch: ``batch.to(device)`` (nothing on the
   CPU), ``loss, _ = module.step_loss(batch)`` (the model's forward through the compiled
   wrapper, if any, and the loss), ``loss.backward()``, ``opt.step()``,
   ``opt.zero_grad(set_to_none=True)``. bf16 variants run ``step_loss`` under
   ``torch.autocast(device, torch.bfloat16)`` (what ``precision="bf16-mixed"`` does);
   backward and the optimiser step run outside it. Each step is timed alone with
   ``time.perf_counter``, between two ``torch.cuda.synchronize()`` on CUDA.
3. ``--warmup + --steps`` batches of ``dm.train_dataloader()`` are drawn first and kept in
   host memory (the loader starts again when an epoch ends). ``--warmup`` warm-up steps
   run on the first of them: the first step's time is reported (``first_step_s``), and
   ``compile_s`` is that minus the median step (what compiling cost the first step). Then
   ``--steps`` timed steps on the rest: the median is ``ms/step`` ("sampler excluded").
   Then ``--steps`` more steps, each drawing its batch from a fresh iterator of the loader
   inside the timed region (sampling, feature slicing, labels, pad rows, collation):
   the median is ``ms/step+sampler`` ("sampler included").
4. With ``--profile``, the timed pre-sampled steps run once more under ``torch.profiler``
   (:func:`profile_steps`): the host's time in matrix products, dropout's random numbers
   and all other ops, and on CUDA the device's kernel time and the kernels launched, per
   step. A step much longer than its kernel time is bound by the host.
5. After all steps: Dynamo's graph count and graph-break count in the process
   (:func:`rdl.training.compile.stats`; each recompile is one more graph, so a model
   that recompiles shows graphs > 1; a compiled optimiser adds its own graphs), the peak
   memory (CUDA: ``torch.cuda.max_memory_allocated``; CPU: the process's peak resident
   memory, which includes the datamodule's graph), and the loss of the last step
   (``last_loss``, to check it is finite).

Compilation is cold in every process: the child runs with ``TORCHINDUCTOR_FX_GRAPH_CACHE=0``,
``TORCHINDUCTOR_AUTOGRAD_CACHE=0`` and its own empty ``TORCHINDUCTOR_CACHE_DIR`` and
``TRITON_CACHE_DIR``, so no compiled kernel is reused from an earlier run.

Variants (``--variants``, by slug or by name; default: all):

====================  ===============================  ==========================================
slug                  name                             overrides
====================  ===============================  ==========================================
eager                 eager                            ``compile.enabled=false``
dynamic               compile dynamic=True             ``compile.enabled=true`` (the default)
static                compile dynamic=False            ``compile.kwargs.dynamic=false``
dynamic-none          compile dynamic=None             ``compile.kwargs.dynamic=null``
max-autotune          max-autotune-no-cudagraphs       ``+compile.kwargs.mode=max-autotune-no-cudagraphs``
reduce-overhead       reduce-overhead                  ``+compile.kwargs.mode=reduce-overhead`` (CUDA only)
compiled-optimizer    compile + compiled optimizer     ``compile.optimizer=true optimizer.fused=false``
eager-bf16            eager bf16-mixed                 ``compile.enabled=false`` + autocast bf16
bf16                  compile bf16-mixed               ``compile.enabled=true`` + autocast bf16
eager-malloc          eager, malloc defaults           ``compile.enabled=false keep_freed_memory=false``
dynamic-malloc        compile, malloc defaults         ``compile.enabled=true keep_freed_memory=false``
interleaved           compile dynamic=True, eager      ``compile.enabled=true``; its timed steps
                      interleaved                      alternate with eager steps on the same
                                                       batches, in the same process
====================  ===============================  ==========================================

``speedup_vs_eager`` is the eager row's ``ms/step`` over the row's (same task and model, same
run; blank without an eager row). The ``interleaved`` row's is the eager median of its own
process (``eager_ms``) over its compiled median: each timed compiled step is paired with an
eager step (the same module, its uncompiled model) on the same batch, the eager one second
and first by turns (ABBA, so that neither mode always finds the caches the other warmed),
the first eager step being its warm-up, so a machine whose speed drifts from minute to
minute (a shared one) slows both alike. A variant that fails (an exception, a crash, the
``--timeout``) leaves a row with the last line of its error in ``note``; reduce-overhead
(CUDA graphs) is listed as skipped on the CPU.

The table is printed and written (``train.md``, ``train.csv``) into the run folder (default
``outputs/bench/<time>-train``), with a bar chart ``train.png`` when matplotlib is installed
(``pip install -e '.[bench]'``), and each child's output in ``logs/`` there
(``--set compile.log=true`` puts the reason of every recompile and graph break in them).
On a shared machine, run it when the load is low: with every core in use by OpenMP, a busy
core stalls each parallel region (``--threads 1`` is less sensitive to it).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import torch

from rdl.bench.report import peak_rss_gib, report, run_dir

ALL_TASKS = ("user-churn:sage", "item-sales:sage", "user-item-purchase:contextgnn",
             "user-item-purchase:idgnn", "user-item-purchase:two-tower")
COMPILED = ["compile.enabled=true"]
# slug: (name, overrides, autocast bf16, CUDA only)
VARIANTS = {
    "eager": ("eager", ["compile.enabled=false"], False, False),
    "dynamic": ("compile dynamic=True", COMPILED + ["compile.kwargs.dynamic=true"], False, False),
    "static": ("compile dynamic=False", COMPILED + ["compile.kwargs.dynamic=false"], False, False),
    "dynamic-none": ("compile dynamic=None", COMPILED + ["compile.kwargs.dynamic=null"],
                     False, False),
    "max-autotune": ("max-autotune-no-cudagraphs",
                     COMPILED + ["+compile.kwargs.mode=max-autotune-no-cudagraphs"], False, False),
    "reduce-overhead": ("reduce-overhead", COMPILED + ["+compile.kwargs.mode=reduce-overhead"],
                        False, True),
    "compiled-optimizer": ("compile + compiled optimizer",
                           COMPILED + ["compile.optimizer=true", "optimizer.fused=false"],
                           False, False),
    "eager-bf16": ("eager bf16-mixed", ["compile.enabled=false"], True, False),
    "bf16": ("compile bf16-mixed", COMPILED, True, False),
    "eager-malloc": ("eager, malloc defaults", ["compile.enabled=false", "keep_freed_memory=false"],
                     False, False),
    "dynamic-malloc": ("compile, malloc defaults", COMPILED + ["keep_freed_memory=false"],
                       False, False),
    "interleaved": ("compile dynamic=True, eager interleaved", COMPILED, False, False),
}
PROFILE_COLUMNS = ("prof_matmul_ms", "prof_rng_ms", "prof_other_ms", "prof_kernel_ms",
                   "prof_kernels")
RESULT = "RDL_BENCH_TRAIN_RESULT "  # the child's result line on stdout


# --------------------------------------------------------------------------- #
# One variant (fresh process)
# --------------------------------------------------------------------------- #
def _compose(overrides: list[str], hydra_config: bool = False):
    from hydra import compose, initialize_config_dir

    import rdl
    with initialize_config_dir(str(rdl.ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides, return_hydra_config=hydra_config)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _cycle(loader):
    """Batches of ``loader``, starting a new epoch (a new iterator) when one ends."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise RuntimeError("the train loader yields no batch")


MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def profile_steps(step, batches: list, dev: torch.device) -> dict:
    """Where a step's time goes, from ``torch.profiler`` over one step per batch.

    Per step: the host's time in matrix products, in random numbers (dropout's mask) and in
    everything else (operators' self time); on CUDA also the time the device spends in
    kernels and how many kernels the step launches. A step much longer than its kernel
    time is bound by the host (Python, dispatch, launches), not by the device.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for b in batches:
            step(b)
        _sync(dev)
    n = len(batches)
    ms = {"matmul": 0.0, "rng": 0.0, "other": 0.0}
    for e in prof.key_averages():
        name = e.key
        rng = any(k in name for k in ("bernoulli", "rand", "uniform", "native_dropout"))
        kind = ("matmul" if name in MATMUL_OPS or "mkldnn" in name else
                "rng" if rng else "other")
        ms[kind] += e.self_cpu_time_total / 1000 / n
    out = {f"prof_{k}_ms": v for k, v in ms.items()}
    if dev.type == "cuda":
        kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
        out["prof_kernel_ms"] = sum(e.self_device_time_total for e in kernels) / 1000 / n
        out["prof_kernels"] = len(kernels) / n
    return out


def measure(task: str, model: str, variant: str, overrides: list[str], steps: int,
            warmup: int, threads: int | None, device: str, profile: bool = False) -> dict:
    """Time one variant in this process; returns the numbers of its report row
    (with ``profile``, also :func:`profile_steps` over the timed batches)."""
    import pytorch_lightning as pl

    from rdl.train import build
    from rdl.training import compile as rdl_compile

    if threads:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    _, _, bf16, _ = VARIANTS[variant]
    cfg = _compose([f"task={task}", f"model={model}", *overrides])
    pl.seed_everything(cfg.seed, workers=True, verbose=False)
    _, dm, module = build(cfg)
    module.to(dev)
    module.train()
    lr = torch.tensor(float(cfg.lr), dtype=torch.float, device=dev)
    extra = {"capturable": True} if dev.type == "cuda" else {}   # as configure_optimizers
    opt = module.optimizer_fn(module.model.parameters(), lr=lr, **extra)
    if module.compile_options.enabled and module.compile_options.optimizer:
        rdl_compile.compile_optimizer_step(opt)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    def step(batch) -> torch.Tensor:
        batch = batch.to(dev)
        if bf16:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss, _ = module.step_loss(batch)
        else:
            loss, _ = module.step_loss(batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    def timed(batch_fn) -> tuple[float, torch.Tensor]:
        _sync(dev)
        t = time.perf_counter()
        loss = step(batch_fn())
        _sync(dev)
        return time.perf_counter() - t, loss

    loader = dm.train_dataloader()
    t = time.perf_counter()
    batches = list(islice(_cycle(loader), warmup + steps))
    sample_s = time.perf_counter() - t

    warm = [timed(lambda b=b: b)[0] for b in batches[:warmup]]
    excluded, eager = [], []
    compiled_fn = module.forward_fn

    def eager_step(b) -> float:   # the same batch through the uncompiled model
        object.__setattr__(module, "forward_fn", module.model)
        try:
            return timed(lambda: b)[0]
        finally:
            object.__setattr__(module, "forward_fn", compiled_fn)

    for i, b in enumerate(batches[warmup:]):
        # interleaved: the eager step comes first every other batch (ABBA order), so that
        # neither mode always runs second, on the caches the other left warm
        if variant == "interleaved" and i % 2:
            eager.append(eager_step(b))
        s, loss = timed(lambda b=b: b)
        excluded.append(s)
        if variant == "interleaved" and not i % 2:
            eager.append(eager_step(b))
    prof = profile_steps(step, batches[warmup:], dev) if profile else {}
    del batches
    stream = _cycle(dm.train_dataloader())  # a fresh iterator: sampling inside the timing
    included = []
    for _ in range(steps):
        s, loss = timed(lambda: next(stream))
        included.append(s)
    stream.close()

    med = statistics.median(excluded)
    first = warm[0] if warm else float("nan")
    c = rdl_compile.stats()
    if dev.type == "cuda":
        peak = torch.cuda.max_memory_allocated(dev) / 2**30
        name = torch.cuda.get_device_name(dev)
    else:
        peak, name = peak_rss_gib(), "cpu"
    return {
        "ms/step": 1000 * med,
        "ms/step+sampler": 1000 * statistics.median(included),
        "first_step_s": first, "compile_s": first - med,
        "graphs": c["graphs"], "graph_breaks": c["graph_breaks"],
        "peak_mem_gib": peak, "last_loss": float(loss),
        # for the header
        "threads": torch.get_num_threads(), "device_name": name, "torch": torch.__version__,
        "presample_s": sample_s, "batch_size": int(cfg.data.batch_size),
        **({"eager_ms": 1000 * statistics.median(eager[1:])} if len(eager) > 1 else {}),
        **prof,
    }


# --------------------------------------------------------------------------- #
# The run: one subprocess per (task, model, variant)
# --------------------------------------------------------------------------- #
def _error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _run_child(spec: dict, timeout: float | None, log: Path) -> dict:
    """``measure(**spec)`` in a fresh process with cold compile caches, its output written to
    ``log``; ``{"error": ...}`` if it fails."""
    cmd = [sys.executable, "-m", "rdl.bench.train", "--worker", json.dumps(spec)]
    # ignore_cleanup_errors: a killed child's compile workers may still be writing there.
    with tempfile.TemporaryDirectory(prefix="rdl-bench-train-", ignore_cleanup_errors=True) as tmp:
        env = {**os.environ, "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
               "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
               "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor"),
               "TRITON_CACHE_DIR": os.path.join(tmp, "triton")}
        # A session of its own: on a timeout (or Ctrl-C here) the child goes with the
        # compile workers it started.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
        error = None
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException as e:
            _kill_group(proc)
            stdout, stderr = proc.communicate()
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            error = f"timed out after {timeout:g} s"
        finally:
            _kill_group(proc)   # compile workers the child left behind
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {' '.join(cmd)}\n\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")
    for line in reversed(stdout.splitlines()):
        if error is None and line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    error = error or _error_line(stderr) or _error_line(stdout) or f"exit code {proc.returncode}"
    print(f"    failed ({error}); end of its stderr (all in {log}):\n"
          + "\n".join("    | " + ln for ln in stderr.strip().splitlines()[-15:]),
          file=sys.stderr, flush=True)
    return {"error": error}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _variant_slugs(names: list[str]) -> list[str]:
    by_name = {v[0].lower(): k for k, v in VARIANTS.items()}
    chosen = set()
    for n in names:
        key = n.strip().lower()
        if key == "all":
            chosen.update(VARIANTS)
        elif key in VARIANTS:
            chosen.add(key)
        elif key in by_name:
            chosen.add(by_name[key])
        else:
            raise SystemExit(f"unknown variant {n!r}; choose from: "
                             + ", ".join(f"{k} ({v[0]})" for k, v in VARIANTS.items()))
    return [k for k in VARIANTS if k in chosen]   # eager first: the ratios need it


def _task_models(items: list[str], sets: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        if item == "all":
            out += [tuple(x.split(":")) for x in ALL_TASKS]
            continue
        task, _, model = item.partition(":")
        if not model:   # the task's default model (a link task chooses its own)
            try:
                cfg = _compose([f"task={task}", *sets], hydra_config=True)
            except Exception as e:  # noqa: BLE001 - Hydra's errors name the bad override
                raise SystemExit(f"--tasks {item}: {e}") from None
            model = cfg.hydra.runtime.choices.model
        out.append((task, model))
    return list(dict.fromkeys(out))


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return "?"


def _fmt(x, nd: int = 2):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return round(x, nd) + 0  # + 0: no "-0"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:  # one variant, in this (fresh) process
        res = measure(**json.loads(argv[1]))
        print(RESULT + json.dumps(res), flush=True)
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench train",
                                description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="variants: " + ", ".join(
                                    f"{k} ({v[0]})" for k, v in VARIANTS.items()))
    p.add_argument("--tasks", nargs="+", default=["user-churn"],
                   help="TASK[:MODEL] items, or 'all' (" + " ".join(ALL_TASKS) + ")")
    p.add_argument("--variants", nargs="+", default=["all"], help="slugs or names (default all)")
    p.add_argument("--steps", type=int, default=20, help="timed steps (each of the two timings)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up steps (compilation)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads of each run (default: torch's default)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--set", nargs="+", default=[], metavar="OVERRIDE", dest="sets",
                   help="Hydra overrides for every variant, e.g. data=hm-tiny model.channels=16")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds a variant may take (default: no limit)")
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-train)")
    p.add_argument("--profile", action="store_true",
                   help="also profile the timed steps: host ms in matmul / RNG / other ops, "
                        "and on CUDA kernel ms and kernels per step")
    args = p.parse_args(argv)
    if args.steps < 1 or args.warmup < 1:
        p.error("--steps and --warmup must be at least 1")
    variants = _variant_slugs(args.variants)
    pairs = _task_models(args.tasks, args.sets)
    out = Path(args.out) if args.out else run_dir("train")
    out.mkdir(parents=True, exist_ok=True)
    cuda = torch.device(args.device).type == "cuda"

    load_start, date = _load(), f"{dt.datetime.now():%Y-%m-%d %H:%M}"
    rows, info = [], {}
    for task, model in pairs:
        eager_ms = None
        for slug in variants:
            name, overrides, _, cuda_only = VARIANTS[slug]
            row = {"task": task, "model": model, "variant": name}
            if cuda_only and not cuda:
                res = {"note": "skipped: CUDA graphs need a CUDA device"}
            else:
                print(f"{task}:{model} {name} ...", flush=True)
                spec = {"task": task, "model": model, "variant": slug,
                        "overrides": [*args.sets, *overrides], "steps": args.steps,
                        "warmup": args.warmup, "threads": args.threads, "device": args.device,
                        "profile": args.profile}
                t = time.perf_counter()
                res = _run_child(spec, args.timeout, out / "logs" / f"{task}_{model}_{slug}.log")
                if "error" in res:
                    res = {"note": "failed: " + res["error"]}
                else:
                    info = info or res
                    loss = res["last_loss"]
                    res["note"] = "" if math.isfinite(loss) else "loss not finite"
                    print(f"    {res['ms/step']:.1f} ms/step ({res['ms/step+sampler']:.1f} with "
                          f"the sampler), compile {res['compile_s']:.1f} s, {res['graphs']} "
                          f"graphs, {res['graph_breaks']} breaks ({time.perf_counter() - t:.0f} s)",
                          flush=True)
            if slug == "eager" and "ms/step" in res:
                eager_ms = res["ms/step"]
            ms = res.get("ms/step")
            base = res.get("eager_ms", eager_ms)   # interleaved: its own eager steps
            row.update({
                "ms/step": _fmt(ms), "ms/step+sampler": _fmt(res.get("ms/step+sampler")),
                "speedup_vs_eager": _fmt(base / ms, 3) if base and ms else "",
                "eager_ms": _fmt(res.get("eager_ms")),
                "first_step_s": _fmt(res.get("first_step_s")),
                "compile_s": _fmt(res.get("compile_s")),
                "graphs": res.get("graphs", ""), "graph_breaks": res.get("graph_breaks", ""),
                "peak_mem_gib": _fmt(res.get("peak_mem_gib"), 3),
                "last_loss": _fmt(res.get("last_loss"), 5),
            })
            if args.profile:
                row.update({k: _fmt(res.get(k)) for k in PROFILE_COLUMNS
                            if cuda or "kernel" not in k})
            row["note"] = res.get("note", "")
            rows.append(row)

    threads = info.get("threads", args.threads or torch.get_num_threads())
    device = args.device + (f" ({info['device_name']})" if cuda and info else "")
    mem = "torch.cuda.max_memory_allocated" if cuda else "peak RSS of the process"
    header = (
        f"rdl train step, {date}: device {device}, torch {info.get('torch', torch.__version__)}, "
        f"{threads} thread(s), {os.cpu_count()} CPUs; overrides {args.sets or 'none'}"
        + (f", batch size {info['batch_size']}" if info else "")
        + f". Each row a fresh process with cold compile caches: {args.warmup} warm-up "
        f"step(s) (compile_s = first step - median), then medians over {args.steps} steps "
        "on pre-sampled batches (ms/step, sampler excluded) and over "
        f"{args.steps} steps drawing from the loader (ms/step+sampler). A step: batch to "
        "the device, forward + loss, backward, optimizer step. speedup_vs_eager = eager "
        "ms/step / row ms/step; graphs and graph_breaks are Dynamo's counts after all "
        f"steps; peak_mem_gib: {mem}. Load average (1/5/15 min) before: {load_start}, "
        f"after: {_load()}."
        + (" prof_*: torch.profiler over the timed pre-sampled steps, per step: the host's "
           "self time in matrix products, random numbers (dropout) and all other ops"
           + ("; kernel time on the device and kernels launched" if cuda else "")
           + " (profiling slows the steps it sees; ms/step is timed without it)."
           if args.profile else ""))
    report("train", rows, out, header=header)
    plot(rows, out / "train.png", title=f"rdl train step, {device}, {threads} thread(s)")


def plot(rows: list[dict], path: Path, title: str = "") -> None:
    """Bar chart of ms/step per variant, one panel per task:model (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no train.png (pip install -e '.[bench]')")
        return
    groups = {}
    for r in rows:
        if r["ms/step"] != "":
            groups.setdefault(f"{r['task']}:{r['model']}", []).append(r)
    if not groups:
        return
    n = max(len(g) for g in groups.values())
    fig, axes = plt.subplots(1, len(groups), figsize=(max(7.0, 4.5 * len(groups)), 1.8 + 0.45 * n),
                             squeeze=False)
    for i, (ax, (key, g)) in enumerate(zip(axes[0], groups.items())):
        y = list(range(len(g)))[::-1]
        h = 0.4
        ax.barh([v + h / 2 for v in y], [r["ms/step"] for r in g], h,
                label="sampler excluded" if i == 0 else None)
        ax.barh([v - h / 2 for v in y], [r["ms/step+sampler"] or 0 for r in g], h,
                label="sampler included" if i == 0 else None, alpha=0.6)
        ax.set_yticks(y, [r["variant"] for r in g])
        ax.set_xlabel("ms / train step (median)")
        ax.set_title(key)
    fig.legend(loc="lower center", ncol=2, fontsize="small")
    if title:
        fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"bar chart written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
