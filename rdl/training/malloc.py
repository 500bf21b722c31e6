"""Keep memory that a CPU train step frees, for the next step, instead of handing it back
to the operating system (``keep_freed_memory`` in the config).

Written here because glibc's ``malloc`` (Linux) gives freed memory back to the system
whenever more than a few MiB lie free at the top of its heap, and serves blocks of more than
a few MiB with fresh ``mmap``s: every step of a CPU training loop then allocates its
activations in pages it has never touched, and each first touch is a page fault. On the
2-core machine rdl is developed on, a process running only compiled user-churn steps took
414 ms a step with glibc's defaults and 315 ms with these thresholds (set as environment
variables; one-off script); ``python -m rdl.bench train --variants eager-malloc`` measures
it against the ``eager`` row. PyTorch's CPU allocator has no cache of its
own (the CUDA one does); ``mallopt`` is glibc's documented way to set the two thresholds
(as the ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` environment variables
do, which must be set before the process starts). The cost: up to 2 GiB of freed heap
stays resident, so the process's memory does not shrink after its largest step.
"""
from __future__ import annotations

import ctypes
import logging
import platform

log = logging.getLogger(__name__)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3       # glibc's malloc.h
MMAP_THRESHOLD = 32 * 2**20     # the largest glibc accepts on 64-bit: bigger blocks are mmapped
TRIM_THRESHOLD = 2**31 - 1      # mallopt's largest (an int): up to 2 GiB of free heap kept


#: glibc's documented initial values of both thresholds (128 KiB)
DEFAULT_THRESHOLD = 128 * 1024


def _mallopt():
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def keep_freed_memory(enabled: bool = True) -> bool:
    """Set glibc ``malloc`` to keep freed memory (see the module docstring); returns whether
    it was set. Does nothing when ``enabled`` is false or the C library is not glibc."""
    mallopt = _mallopt() if enabled else None
    if mallopt is None:
        return False
    ok = (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
          and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
    if not ok:
        log.warning("mallopt refused the thresholds; malloc keeps its defaults")
    return ok


def release_freed_memory() -> None:
    """Undo :func:`keep_freed_memory`: both thresholds back to glibc's initial values.
    (glibc then keeps them fixed: its own raising of the mmap threshold as it sees large
    blocks freed has no call that switches it back on.)"""
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, DEFAULT_THRESHOLD)
        mallopt(M_TRIM_THRESHOLD, DEFAULT_THRESHOLD)
