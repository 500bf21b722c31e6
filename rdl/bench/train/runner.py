"""The child process of ``python -m rdl.bench train``: one variant, cold compile caches.

Compilation is cold in every process: the child runs with ``TORCHINDUCTOR_FX_GRAPH_CACHE=0``,
``TORCHINDUCTOR_AUTOGRAD_CACHE=0`` and its own empty ``TORCHINDUCTOR_CACHE_DIR`` and
``TRITON_CACHE_DIR``, so no compiled kernel is reused from an earlier run.

The child prints its :func:`~rdl.bench.train.measure.measure` result on one line of stdout
(prefixed with ``RESULT``); its output is written to a log file.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from rdl.caching import write_atomic

RESULT = "RDL_BENCH_TRAIN_RESULT "  # the child's result line on stdout


def error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _run_child(spec: dict, timeout: float | None, log: Path, module: str = "rdl.bench.train",
               result: str = RESULT, env: dict | None = None) -> dict:
    """``measure(**spec)`` of ``module`` in a fresh process with cold compile caches (``env``:
    variables set over :func:`cold_env`'s), its output written to ``log``; ``{"error": ...}``
    if it fails. The child prints its result as JSON on a line that starts with ``result``."""
    cmd = [sys.executable, "-m", module, "--worker", json.dumps(spec)]
    # ignore_cleanup_errors: a killed child's compile workers may still be writing there.
    with tempfile.TemporaryDirectory(prefix="rdl-bench-train-", ignore_cleanup_errors=True) as tmp:
        # A session of its own: on a timeout (or Ctrl-C here) the child goes with the
        # compile workers it started.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cold_env(tmp, **(env or {})),
                                start_new_session=True)
        error = None
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException as e:
            kill_group(proc)
            stdout, stderr = proc.communicate()
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            error = f"timed out after {timeout:g} s"
        finally:
            kill_group(proc)   # compile workers the child left behind
    log.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(log, f"$ {' '.join(cmd)}\n\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")
    found = result_of(stdout, result) if error is None else None
    if found is not None:
        return found
    error = error or error_line(stderr) or error_line(stdout) or f"exit code {proc.returncode}"
    print(f"    failed ({error}); end of its stderr (all in {log}):\n"
          + "\n".join("    | " + ln for ln in stderr.strip().splitlines()[-15:]),
          file=sys.stderr, flush=True)
    return {"error": error}


def cold_env(tmp: str, **extra: str) -> dict:
    """This process's environment with compile caches off and in ``tmp`` (empty)."""
    return {**os.environ, "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor"),
            "TRITON_CACHE_DIR": os.path.join(tmp, "triton"), **extra}


def result_of(stdout: str, result: str) -> dict | None:
    """The child's result: the JSON on its last line that starts with ``result``."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(result):
            return json.loads(line[len(result):])
    return None


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
