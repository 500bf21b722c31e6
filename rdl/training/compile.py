"""``torch.compile`` for rdl's models and optimiser steps, and a count of what it did.

The compiled path promises: one graph per model and mode (train, and eval where it is
compiled: ``compile.eval``), no graph breaks, no recompiles when batch shapes or the
learning rate change. Dynamic shapes are on from the first call, equal sizes are not
tied, and no size reaching the model is 0 or 1, so a batch with an empty node type, one
node, or two node types of the same size reuses the graph.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import types
from dataclasses import dataclass, field
from typing import Callable

import torch

from rdl.nn.encoder import Dropout
from rdl.progress import stage
from rdl.training.cpu_patches import CpuPatches, prepare

# Shape settings while tracing: two sizes that happen to be equal at the first call
# ("duck shaping") must not be assumed equal for ever, or a later batch recompiles.
# Dynamo bakes a size of 0 or 1 into the graph as a constant (and Inductor cannot compile
# this model with unbacked sizes), so a batch with an empty node type or a single node
# would recompile; every node type therefore gets ``PAD`` extra rows and every edge type ``PAD``
# extra edges between them (``InputRows``, :func:`~rdl.training.shapes.pad_inputs`), and loaders never make a
# batch of one seed, or a much smaller one than the rest (``rdl.training.batches``).
log = logging.getLogger(__name__)
SHAPE_SETTINGS = dict(use_duck_shape=False)
#: Dynamo's settings while tracing, by default (``compile.dynamo``; the opt-out
#: ``compile.dynamo.specialize_float=false`` is torch's own). ``specialize_float``: a
#: model's floats (dropout rates, norm epsilons, ``nn.Embedding.norm_type``) are constants
#: of its graph, as in torch up to 2.5. Since then ``dynamic=True`` traces each as a
#: symbol and turns it into a tensor input; ``F.embedding``'s ``norm_type`` (PyTorch
#: Frame's categorical encoders) cannot be, so Dynamo restarted its whole analysis and
#: traced the model twice at every compile, cold or warm: user-churn's warm compile for
#: evaluation took 82.7 s, 41.5 s with this (docs/compile.md). Sizes stay dynamic.
DYNAMO_SETTINGS = dict(specialize_float=True)
#: graphs a model compiled with ``dynamic=False`` may have before Dynamo gives up and runs
#: it eagerly (Dynamo's own limit, 8, is below one graph per static-shape bucket, split and
#: mode: :mod:`rdl.training.buckets`)
STATIC_GRAPHS = 64

#: ``compile.eval=auto`` compiles evaluation where a run evaluates this many batches or
#: more: about a cold compile's break-even, user-churn's default model on a 2-core CPU
#: (``python -m rdl.bench evaluation``: 30.7 s cold, 6.1 s from Inductor's cache, against
#: 32 ms a batch saved: even at 947 and 168 batches); its default run evaluates about 40
#: (docs/compile.md, "Evaluation eager where it is short").
EVAL_BATCHES = 1000


def planned_eval_batches(trainer) -> float:
    """The batches the Lightning ``trainer`` evaluates in its current call: a prediction's
    or a test's, or for a fit each validation's times the validations it plans (one an
    epoch, or as ``check_val_every_n_epoch`` and ``val_check_interval`` say) and one
    more, the best checkpoint's. ``inf`` where a loader's length is unknown."""
    fn = trainer.state.fn
    if fn in ("predict", "test"):
        return float(sum(trainer.num_predict_batches if fn == "predict" else
                         trainer.num_test_batches))
    each = float(sum(trainer.num_val_batches))
    if fn != "fit":
        return each
    epochs = trainer.max_epochs
    if epochs is None or epochs < 0:   # (a run bounded by its steps, or by nothing)
        steps = trainer.max_steps
        epochs = steps / max(trainer.num_training_batches, 1) if steps > 0 else float("inf")
    interval = trainer.val_check_interval
    if trainer.check_val_every_n_epoch is None:   # every `interval` steps
        times = epochs * trainer.num_training_batches / interval
    else:
        times = epochs / trainer.check_val_every_n_epoch
        if isinstance(interval, float):   # (a share of an epoch)
            times /= interval
    return each * (times + 1)


@dataclass
class CompileOptions:
    """What to compile and how (``compile.*`` in the config).

    Args:
        enabled: compile the model (off: eager).
        eval: compile it for evaluation and prediction too: ``True``, ``False`` (those
            run the eager model; training stays compiled) or ``"auto"``: compiled where
            the run evaluates :data:`EVAL_BATCHES` batches or more
            (:func:`planned_eval_batches`). Evaluation's graph is a compile of its own.
        optimizer: compile the optimiser step too (the default Adam is fused: one kernel
            already).
        log: report every recompile and graph break as it happens, with its reason (like
            ``TORCH_LOGS=recompiles,graph_breaks``); set up by the run
            (:mod:`rdl.training.process`).
        kwargs: passed to ``torch.compile`` for the model (``dynamic``, ``mode``,
            ``fullgraph``, ``backend``).
        cpu_patches: :class:`~rdl.training.cpu_patches.CpuPatches` (or a dict of them, or
            a bool for all): rdl's speed-ups of the compiled model on the CPU.
        dynamo: ``torch._dynamo.config`` settings applied only while rdl's compiled model
            traces and runs (default :data:`DYNAMO_SETTINGS`; ``{}``: torch's own). A
            setting this torch lacks is skipped with a warning.
    """
    enabled: bool = True
    eval: bool | str = "auto"
    optimizer: bool = False
    log: bool = False
    kwargs: dict = field(default_factory=lambda: {"dynamic": True})
    cpu_patches: CpuPatches | dict | bool = field(default_factory=CpuPatches)
    dynamo: dict = field(default_factory=lambda: dict(DYNAMO_SETTINGS))

    def __post_init__(self):
        if not (isinstance(self.eval, bool) or self.eval == "auto"):   # (1 == True)
            raise ValueError(f"compile.eval={self.eval!r}: true, false or auto")
        self.cpu_patches = CpuPatches.of(self.cpu_patches)
        self.dynamo = dict(self.dynamo or {})

    @classmethod
    def of(cls, value) -> "CompileOptions":
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls(enabled=value)
        return cls(**(value or {}))


def compile_model(model: torch.nn.Module, cpu_patches: CpuPatches | dict | bool = True,
                  dynamo: dict | None = None, **kwargs) -> Callable:
    """``torch.compile(model, dynamic=True, **kwargs)``, traced without duck shaping
    (:data:`SHAPE_SETTINGS`). Call it with padded inputs
    (:class:`~rdl.training.shapes.Padded`).

    Compiled at the first call, when the device is known. On the CPU, random ops call
    PyTorch's kernels instead of Inductor's generated random-number code, which was no
    faster there, and the :mod:`~rdl.training.cpu_patches` that are on apply (their
    Inductor options for this model only). On CUDA, Inductor's own random numbers are the
    faster ones and no CPU patch applies.
    """
    compiled = None
    # Made once: entered around every call (a later call may trace: evaluation's first
    # batch, a bucket's new shape), where building them took ~60 us a step on the CPU.
    settings = _Entered(_trace_settings(dynamo), _graph_limit(kwargs))
    # The modes (model.training) not called yet: the first call of each compiles its graph
    # (a pause of up to a minute that would look like a hang), said and timed in the log;
    # later calls take the plain path (no clock, no sync).
    first = {True: "training", False: "evaluation"}

    @functools.wraps(model.forward)
    def forward(*args, **kw):
        nonlocal compiled
        if compiled is None:
            compiled = _compile_for(model, args[-1].device, cpu_patches, kwargs)  # seed_time
        with settings:
            if first and model.training in first:
                with compiling(first.pop(model.training)):
                    return compiled(*args, **kw)
            return compiled(*args, **kw)

    forward.first_calls = first  # rdl.training.buckets.warm says its own
    return forward


def compiling(mode: str, what: str = "first batch") -> stage:
    """The stage (:mod:`rdl.progress`) in which the model compiles for ``mode`` (training,
    evaluation): said when it starts, and how long it took (the host's time: no device
    sync)."""
    return stage(f"compiling the model for {mode} (torch.compile, {what})", log)


def _compile_for(model, device: torch.device, cpu_patches, kwargs: dict) -> Callable:
    kwargs = {"dynamic": True, **kwargs}
    if device.type == "cpu" and kwargs.get("backend", "inductor") == "inductor":
        options, applied = prepare(CpuPatches.of(cpu_patches))
        options = {"fallback_random": True, **options}
        if "mode" in kwargs:    # torch.compile takes a mode or options, not both
            from torch._inductor import list_mode_options
            options = {**list_mode_options(kwargs.pop("mode"), kwargs["dynamic"]), **options}
        kwargs["options"] = {**options, **kwargs.get("options", {})}
        for m in model.modules():
            if isinstance(m, Dropout):
                m.hash_when_compiled = "hash_dropout" in applied
    return torch.compile(model, **kwargs)


def _trace_settings(dynamo: dict | None = None) -> "_Entered":
    """Dynamo's shape and float settings while tracing (:data:`SHAPE_SETTINGS`, and
    ``dynamo``: None for :data:`DYNAMO_SETTINGS`), where this torch has them; a single
    warning where it does not. A context manager that may be entered again and again."""
    from rdl.training.cpu_patches import warn_once
    patches = []
    try:
        import torch.fx.experimental._config as fx_config
        patch = fx_config.patch(**SHAPE_SETTINGS)
        with patch:  # a torch without the setting says so here, once
            pass
        patches.append(patch)
    except (ImportError, AttributeError, KeyError) as e:
        warn_once(f"torch {torch.__version__} has no Dynamo setting {SHAPE_SETTINGS} ({e}): "
                  "two sizes equal at the first batch may be assumed equal, and a later batch "
                  "recompile")
    wanted = DYNAMO_SETTINGS if dynamo is None else dynamo
    config = torch._dynamo.config
    missing = [k for k in wanted if not hasattr(config, k)]
    if missing:
        warn_once(f"compile.dynamo: torch {torch.__version__} has no Dynamo setting "
                  f"{missing}; it is left out (without specialize_float a model's floats may "
                  "be traced as symbols, and a compile trace the model twice)")
    patches.append(config.patch(**{k: v for k, v in wanted.items() if k not in missing}))
    return _Entered(*patches)


class _Entered:
    """Context managers entered in order and left in reverse, each object reused at every
    entry (torch's config patches may be: each keeps what it replaced until it exits)."""

    def __init__(self, *managers):
        self.managers = managers

    def __enter__(self):
        with contextlib.ExitStack() as stack:
            for m in self.managers:
                stack.enter_context(m)
            stack.pop_all()

    def __exit__(self, *exc):
        for m in reversed(self.managers):
            m.__exit__(*exc)


def _graph_limit(kwargs: dict):
    """With ``dynamic=False``, room for :data:`STATIC_GRAPHS` graphs (one per bucket)."""
    if kwargs.get("dynamic", True) is not False:
        return contextlib.nullcontext()
    config = torch._dynamo.config
    name = next((n for n in ("recompile_limit", "cache_size_limit") if hasattr(config, n)), None)
    if name is None:  # a torch that names it otherwise: its own limit holds
        from rdl.training.cpu_patches import warn_once
        warn_once(f"torch {torch.__version__} has no Dynamo graph limit setting: past its own "
                  "limit, a model compiled with dynamic=False runs eagerly")
        return contextlib.nullcontext()
    return config.patch(**{name: max(STATIC_GRAPHS, getattr(config, name))})


def compile_optimizer_step(optimizer: torch.optim.Optimizer, **kwargs) -> None:
    """Compile ``optimizer.step`` in place (call before creating its LR scheduler).

    The closure that Lightning passes (forward and backward, already compiled) runs
    outside; the update itself is one compiled graph that reads the LR tensor, so a
    scheduler changing it needs no recompile. PyTorch breaks the graph once, on purpose,
    where the optimiser creates its state. A fused optimiser (``fused=True``) is one
    kernel already and is left as it is.
    """
    if optimizer.defaults.get("fused"):
        log.info("optimizer is fused (one kernel already): its step is not compiled")
        return
    step = torch.compile(optimizer.step, **kwargs)

    @functools.wraps(optimizer.step)
    def compiled_step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        step()
        return loss

    # A bound method, as LR schedulers expect (they wrap ``step.__func__``).
    optimizer.step = types.MethodType(compiled_step, optimizer)


def stats() -> dict[str, int]:
    """What Dynamo did in this process so far: graphs compiled, graph breaks, frames traced."""
    from torch._dynamo.utils import counters
    return {
        "graphs": int(counters["stats"]["unique_graphs"]),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "frames": int(counters["frames"]["total"]),
    }


#: compile's phases as Dynamo's own timers name them (``torch._dynamo.utils.compile_times``:
#: diagnostics, read only): where a wide schema's minutes go (docs/compile.md, "Where the
#: compile time goes"); each counted where this torch times it
PHASES = {"Dynamo's trace": "bytecode_tracing", "AOTAutograd's joint graph":
          "aot_trace_joint_graph", "Inductor's lowering": "GraphLowering.run",
          "its code generation": "GraphLowering.codegen", "the C++ compiler": "compile_file",
          "waiting on compile workers": "async_compile.wait"}


def phases() -> dict[str, float]:
    """Seconds this process spent so far in each of :data:`PHASES` that this torch times
    (``{}`` where it times none, or has no such record)."""
    try:
        from torch._dynamo.utils import compile_times
        names, values = compile_times(repr="csv", aggregate=True)
    except (ImportError, TypeError, ValueError):   # (a torch without it, or of another form)
        return {}
    got = dict(zip(names, values))
    return {label: float(got[key]) for label, key in PHASES.items() if key in got}
