"""``python -m rdl.<command> ...`` for the tests, in a fork of one process that imported
rdl's commands already.

Importing torch, Lightning, Hydra, PyG and PyTorch Frame takes about 7 s of CPU on this
project's 2-core machines, and the suite starts well over a hundred command lines: a third
of CI's time went to imports. A :class:`Zygote` (one per pytest worker) imports them once;
each command line then runs in a fork of it, as ``python -m`` would run it: its own
process (and process group), working directory, environment, ``sys.argv`` and exit code,
its output in files. PyTorch's own DataLoader forks worker processes the same way.

What a fork cannot give is what a process reads while it imports: OpenMP's and MKL's
environment and rdl's thread policy (``rdl.threads.at_start``, run by the zygote before it
imports torch). A command line whose environment differs there from the zygote's, or that
sets ``threads=off``, runs in a fresh interpreter instead (:func:`Zygote.can_run`); so does
any module but :data:`MODULES`, and every command line on a machine with CUDA: importing
Lightning asks ``torch.cuda.is_available()``, which initialises the CUDA driver in the
zygote, and a fork of such a process cannot initialise CUDA again (``CUDA error:
initialization error`` in every ``trainer=gpu`` command line, the H200 of 2026-12-04).

Why by hand: ``multiprocessing``'s forkserver preloads modules, but runs functions, not
``python -m`` command lines with their own output files, working directory and process
group; pytest-xdist runs tests, not command lines.
"""
from __future__ import annotations

import functools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the command lines a zygote runs (``python -m <module>``), imported before it forks
MODULES = ("rdl.train", "rdl.predict", "rdl.backtest", "rdl.leaderboard", "rdl.bench")
#: environment variables read while torch and its OpenMP runtime load: a command line
#: that sets them differently from the zygote gets a fresh interpreter
AT_IMPORT = ("OMP_", "MKL_", "KMP_", "GOMP_", "RDL_THREADS", "CUDA_", "PYTORCH_", "TORCH",
             "LD_", "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONOPTIMIZE", "PYTHONDEVMODE",
             "PYTHONMALLOC")
#: where the test scripts a zygote runs (``python <script.py>``) live
SCRIPTS = Path(__file__).resolve().parent


def _import_time_env(env: dict) -> dict:
    """What of ``env`` a process reads while it imports, once rdl's thread policy is in it
    (as ``python -m rdl.<command>`` puts it first)."""
    from rdl.threads import environment
    return {k: v for k, v in environment(env).items() if k.startswith(AT_IMPORT)}


@functools.cache
def _cuda_machine() -> bool:
    """Whether this machine has CUDA (module docstring: no fork there)."""
    import torch
    return torch.cuda.is_available()


class Zygote:
    """A process that imported :data:`MODULES`; :meth:`run` forks it per command line."""

    def __init__(self, root: Path, env: dict | None = None):
        self.env = dict(os.environ if env is None else env)
        self.dir = Path(tempfile.mkdtemp(prefix="rdl-zygote-"))
        self.address = str(self.dir / "socket")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"import tests.zygote as z; z.serve({self.address!r})"],
            cwd=root, env=self.env, stdin=subprocess.DEVNULL)

    def can_run(self, cmd: list[str], env: dict) -> bool:
        """Whether ``cmd`` (``python -m <module> ...``) runs the same in a fork as in a fresh
        interpreter (module docstring)."""
        said = [a.lstrip("+")[len("threads="):] for a in cmd[3:]
                if a.lstrip("+").startswith("threads=")]
        module = len(cmd) >= 3 and cmd[1] == "-m" and cmd[2] in MODULES
        script = (len(cmd) >= 2 and cmd[1].endswith(".py")
                  and Path(cmd[1]).resolve().is_relative_to(SCRIPTS))
        return (cmd[0] == sys.executable and (module or script) and not _cuda_machine()
                and said[-1:] != ["off"]   # off: no wait policy
                and _import_time_env(env) == _import_time_env(self.env)
                and self.proc.poll() is None)

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + 300
        while True:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.address)
                return s
            except OSError:
                s.close()
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the zygote did not start (exit code "
                                       f"{self.proc.poll()})")
                time.sleep(0.05)

    def run(self, cmd: list[str], env: dict, cwd=None, timeout: float | None = None
            ) -> subprocess.CompletedProcess:
        """``subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
        timeout=timeout)``, in a fork where :meth:`can_run`, else as written."""
        if not self.can_run(cmd, env):
            return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                                  timeout=timeout)
        with tempfile.TemporaryDirectory(dir=self.dir) as tmp:
            out, err = Path(tmp) / "out", Path(tmp) / "err"
            with self._connect() as s:
                s.sendall(json.dumps(dict(argv=cmd[1:], env=dict(env), out=str(out),
                                          err=str(err), cwd=str(cwd or os.getcwd()))
                                     ).encode() + b"\n")
                reply = s.makefile("r")
                pid = json.loads(reply.readline())["pid"]
                s.settimeout(timeout)
                try:
                    code = json.loads(reply.readline())["returncode"]
                except (TimeoutError, socket.timeout):
                    os.killpg(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(cmd, timeout, out.read_text(),
                                                    err.read_text())
            return subprocess.CompletedProcess(cmd, code, out.read_text(errors="replace"),
                                               err.read_text(errors="replace"))

    def close(self) -> None:
        import shutil
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)   # its socket and output files


_shared: Zygote | None = None


def command(cmd: list[str], env: dict, cwd=None, timeout: float | None = None
            ) -> subprocess.CompletedProcess:
    """:meth:`Zygote.run` on this process's zygote, started on first use."""
    global _shared
    if _shared is None:
        import atexit
        _shared = Zygote(Path(__file__).resolve().parents[1])
        atexit.register(_shared.close)
    return _shared.run(cmd, env=env, cwd=cwd, timeout=timeout)


def serve(address: str) -> None:
    """The zygote: imports :data:`MODULES` (after rdl's thread policy, as ``python -m
    rdl.train`` does), then forks a child per request on ``address`` and answers its pid,
    then its exit code. One thread: nothing else runs while it forks."""
    from rdl.threads import at_start
    at_start([])
    import importlib
    for name in MODULES:
        importlib.import_module(name)
    server = socket.socket(socket.AF_UNIX)
    server.bind(address + ".tmp")
    os.rename(address + ".tmp", address)      # clients connect once it listens
    server.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    while True:
        for key, _ in sel.select(timeout=0.05):
            conn, _ = server.accept()
            request = json.loads(conn.makefile("r").readline())
            pid = os.fork()
            if pid == 0:
                sel.close()
                server.close()
                conn.close()
                _child(**request)             # never returns
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            children[pid] = conn
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}
                                            ).encode() + b"\n")
                except OSError:
                    pass                      # the client gave up (its timeout)
                conn.close()


def _child(argv: list[str], env: dict, out: str, err: str, cwd: str) -> None:
    """Runs ``python argv`` (``-m module ...`` or ``script.py ...``) in this fork, as a
    fresh interpreter would, and exits with its code."""
    import atexit
    import runpy
    import traceback
    code = 1
    try:
        os.setsid()                           # a process group: a timeout kills it all
        for fd, path in ((1, out), (2, err)):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.chdir(cwd)
        from rdl.threads import environment
        os.environ.clear()
        os.environ.update(environment(env))   # as rdl.threads.at_start puts it
        # sys.path as the fresh interpreter's: PYTHONPATH, then the working directory
        # (python -m) or the script's folder
        script = argv[0] != "-m"
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:1] = [str(Path(argv[0]).resolve().parent) if script else cwd, *extra]
        try:
            if script:
                sys.argv = list(argv)
                runpy.run_path(argv[0], run_name="__main__")
            else:
                sys.argv = list(argv[1:])
                # run as __main__ afresh, as python -m does (runpy warns of a module
                # imported already; what it imports stays imported)
                sys.modules.pop(argv[1], None)
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        try:
            atexit._run_exitfuncs()
        except BaseException:
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)
