"""What a run changes in its process, set up by :func:`rdl.fit` (``rdl.train``'s run) and
``rdl.predict``'s ``main()`` and undone after: nothing else in rdl changes process state
(importing rdl, or building a run), but for the OpenMP wait policy that rdl's command lines
put in their environment before torch starts (:func:`rdl.threads.at_start`).

- ``threads``: the count of threads torch's ops use, from the cores the process may use,
  and one line saying it with the wait policy (:func:`rdl.threads.used`);
- ``keep_freed_memory`` (training on the CPU): glibc ``malloc`` keeps freed memory between
  steps (:mod:`rdl.training.malloc`);
- ``duckdb``: DuckDB's memory limit and spill folder (:mod:`rdl.duck`);
- ``compile.log``: Dynamo reports each recompile and graph break with its reason;
- the CPU patches' Inductor fixes (:mod:`rdl.training.inductor`), which a compile that asks
  for them installs: put back after the run;
- ``verbose=false`` (the default): Lightning's warnings that a run of rdl cannot act on
  (:data:`HARMLESS_WARNINGS`) and its lines about the machine and its tips
  (:data:`LIGHTNING_CHATTER`) are left out; ``verbose=true`` shows them as Lightning does.
"""
from __future__ import annotations

import contextlib
import logging
import re
import sys
import warnings

import torch

from rdl import threads as thread_policy

#: ``(message, category, module)`` of each warning that ``verbose=false`` leaves out, as
#: :func:`warnings.filterwarnings` takes them (message and module: regular expressions
#: matched at the start), and why it is harmless.
HARMLESS_WARNINGS = (
    # Lightning 2.6 makes the leaf specs of its pytrees with torch's LeafSpec class, which
    # torch 2.13 deprecates for treespec_leaf(): the same leaf spec, until a torch without
    # the class (Lightning's to change; shown 4 times a run).
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning,
     r"pytorch_lightning\.utilities\._pytree"),
    # LearningRateMonitor copies each learning rate with torch.tensor(lr). rdl's learning
    # rate is a tensor (a scheduler changes it without a recompile), and torch would rather
    # a tensor were copied with lr.detach().clone(): the same copy.
    (r"To copy construct from a tensor", UserWarning, r"pytorch_lightning\.callbacks\.lr_monitor"),
    # Lightning counts an epoch's batches and warns where they are fewer than the logging
    # interval (trainer.log_every_n_steps): no step of the epoch would be logged. rdl's
    # TaskModule then lowers the interval to the epoch's batches before the first step, as
    # the warning advises (its category, PossibleUserWarning, is a UserWarning).
    (r"The number of training batches \(\d+\) is smaller than the logging interval",
     UserWarning, r"pytorch_lightning\.loops\.fit_loop"),
)

#: Lightning's info lines that ``verbose=false`` leaves out: which accelerators the
#: machine has (the trainer's settings say what a run uses), its advertisements of its
#: cloud services (printed at every run unless its own logger is used: no setting turns
#: them off), the data loader read before training to count the steps (for the
#: learning-rate schedule), and that it keeps the model summary a config chose
#: (``callbacks=rich``'s RichModelSummary) instead of its own.
LIGHTNING_CHATTER = re.compile(r"(GPU|TPU|HPU|IPU) available: |💡 Tip: |Loading `train_dataloader` "
                               r"to estimate number of stepping batches|Trainer already "
                               r"configured with model summary callbacks")


def _not_chatter(record: logging.LogRecord) -> bool:
    return not LIGHTNING_CHATTER.match(record.getMessage())


@contextlib.contextmanager
def quiet():
    """:data:`HARMLESS_WARNINGS` and :data:`LIGHTNING_CHATTER` left out; all back on exit."""
    # Lightning's info lines go through the logger that lightning_utilities' rank-zero
    # functions hold (pytorch_lightning.utilities.rank_zero): a filter there, not a
    # level, so that hydra.verbose still shows that logger's debug lines.
    from lightning_utilities.core import rank_zero
    logger = rank_zero.log
    with warnings.catch_warnings():
        for message, category, module in HARMLESS_WARNINGS:
            warnings.filterwarnings("ignore", message, category, module)
        logger.addFilter(_not_chatter)
        try:
            yield
        finally:
            logger.removeFilter(_not_chatter)


#: what :func:`for_process` set up, held here until the process exits: a context entered
#: on a stack nothing holds is undone at once, when the stack is collected
_PROCESS = contextlib.ExitStack()


def for_process(**settings) -> None:
    """:func:`configured` for the rest of this process's life (a benchmark's child process,
    which measures one row as ``rdl.train`` would run it)."""
    _PROCESS.enter_context(configured(**settings))


MATMUL_PRECISIONS = ("highest", "high", "medium")


def _torch_settings() -> dict:
    """Process-wide torch settings a run may set: name -> (values it takes, getter, setter)."""
    import torch.multiprocessing as tmp
    return {"matmul_precision": (MATMUL_PRECISIONS, torch.get_float32_matmul_precision,
                                 torch.set_float32_matmul_precision),
            "sharing_strategy": (sorted(tmp.get_all_sharing_strategies()),
                                 tmp.get_sharing_strategy, tmp.set_sharing_strategy)}


@contextlib.contextmanager
def torch_setting(name: str, value: str):
    """The torch setting ``name`` (:func:`_torch_settings`) at ``value`` inside, the one
    before after (loader workers forked inside inherit it); a value torch does not take
    stops here, naming the setting."""
    known, get, put = _torch_settings()[name]
    if value not in known:
        raise ValueError(f"{name}={value!r}: expected null or one of {', '.join(known)}")
    before = get()
    put(value)
    try:
        yield
    finally:
        put(before)


@contextlib.contextmanager
def configured(keep_freed_memory: bool = False, compile_log: bool = False,
               verbose: bool = True, threads=None, processes: int = 1,
               duckdb: dict | None = None, matmul_precision: str | None = None,
               sharing_strategy: str | None = None):
    """The process set up for one run, as the config says; everything undone on exit.
    ``threads``: the ``threads`` setting (None: torch's count left as it is), for
    ``processes`` training processes on this machine. ``duckdb``: ``duckdb.*``
    (:func:`rdl.duck.configured`; None: its defaults). ``matmul_precision``: torch's
    float32 matmul precision for the run, ``sharing_strategy`` torch.multiprocessing's
    (None: each left as it is)."""
    from rdl import duck
    from rdl.training import malloc
    with contextlib.ExitStack() as undo:
        undo.enter_context(duck.configured(**(duckdb or {})))
        for name, value in (("matmul_precision", matmul_precision),
                            ("sharing_strategy", sharing_strategy)):
            if value is not None:
                undo.enter_context(torch_setting(name, value))
        if not verbose:
            undo.enter_context(quiet())
        if threads is not None:
            undo.enter_context(thread_policy.used(threads, processes))
        kept = malloc.keep_freed_memory(keep_freed_memory)
        if compile_log:
            torch._logging.set_logs(recompiles=True, graph_breaks=True)
        try:
            yield
        finally:
            if kept:
                malloc.release_freed_memory()
            if compile_log:
                torch._logging.set_logs()   # every log back to its default
            if "rdl.training.inductor" in sys.modules:   # imported only when a fix was asked for
                sys.modules["rdl.training.inductor"].uninstall()
