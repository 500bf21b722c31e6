"""One variant of ``python -m rdl.bench train``, timed in the (fresh) process that runs it.

What is measured:

1. The config is composed from ``conf/`` as ``python -m rdl.train`` composes it
   (``task=TASK model=MODEL``, then the ``--set`` overrides, then the variant's own), and
   :func:`rdl.api.build` makes the task, the set-up datamodule and the LightningModule
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
"""
from __future__ import annotations

import statistics
import time
from itertools import islice

import torch

from rdl.bench.report import peak_rss_gib
from rdl.bench.train.variants import VARIANTS, _compose
from rdl.training.process import for_process

PROFILE_COLUMNS = ("prof_matmul_ms", "prof_rng_ms", "prof_other_ms", "prof_kernel_ms",
                   "prof_kernels")


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

    from rdl.api import build
    from rdl.training import compile as rdl_compile

    if threads:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    _, _, bf16, _ = VARIANTS[variant]
    cfg = _compose([f"task={task}", f"model={model}", *overrides])
    # This process runs one variant: set up as rdl.train's main() sets up a run's, for the
    # process's lifetime.
    for_process(keep_freed_memory=cfg.get("keep_freed_memory", True) and dev.type == "cpu",
                compile_log=cfg.compile.log)
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
    compiled_fn, compiled_train = module.forward_fn, module.train_fn

    def eager_step(b) -> float:   # the same batch through the uncompiled model
        module.set_forward(module.model)
        try:
            return timed(lambda: b)[0]
        finally:
            object.__setattr__(module, "forward_fn", compiled_fn)
            object.__setattr__(module, "train_fn", compiled_train)

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
