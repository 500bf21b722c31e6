"""What a run changes in its process, set up in ``main()`` and undone after: nothing else in
rdl changes process state (importing rdl, building a run, or ``rdl.predict``).

- ``keep_freed_memory`` (training on the CPU): glibc ``malloc`` keeps freed memory between
  steps (:mod:`rdl.training.malloc`);
- ``compile.log``: Dynamo reports each recompile and graph break with its reason;
- the CPU patches' Inductor fixes (:mod:`rdl.training.inductor`), which a compile that asks
  for them installs: put back after the run.
"""
from __future__ import annotations

import contextlib
import sys

import torch


@contextlib.contextmanager
def configured(keep_freed_memory: bool = False, compile_log: bool = False):
    """The process set up for one run, as the config says; everything undone on exit."""
    from rdl.training import malloc
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
