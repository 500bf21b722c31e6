"""The GPU check: ``python -m rdl.bench gpu`` (``bash benchmarks/gpu.sh`` on a lent GPU).

One command for the few minutes a GPU is lent, within a time budget (``--budget``, 450 s
by default: the check must end inside 8 minutes with its start), writing under ``--out``:

1. ``env``: torch, CUDA, cuDNN, the driver, the GPU, the CPU and the packages.
2. ``tests.txt``: ``pytest -m cuda`` (``tests/test_cuda.py`` and the CUDA cases of the
   sampler and DDP tests), the whole output; part 1's (below), run beside the rows of 3,
   stopped while one of them is timed.
3. The end-to-end benchmark (:func:`rdl.bench.e2e.measure`: ``Trainer.fit`` with the
   loader, cold compile caches) for user-churn, item-sales and user-item-purchase
   (model contextgnn) at ``experiment=gpu`` and at the default config, variants eager,
   compiled (``dynamic=True``), CUDA graphs over static-shape buckets
   (``reduce-overhead+buckets``) and buckets alone (node tasks), user-churn at
   ``experiment=gpu`` with ``data.num_workers=0`` too, and the host-overhead rows (a
   tiny model, user-churn), in parts that each fit one check (``--part N``;
   :mod:`rdl.bench.gpu_plan` says which rows each holds and why). Each row: seeds/s and
   its ratio to eager (an option of the compiled step: also to the plain compiled row),
   the loader alone and the step alone and which bounds
   (:mod:`rdl.bench.alone`), the step, the first epoch (compiles), graphs compiled in all
   and inside the timed epochs, one profiled epoch's host time, device time (kernels,
   copies), launches and operators per step and its top kernels, and the peak GPU memory.
   Rows run ``--jobs`` at a time and take turns at their timed epochs
   (:mod:`rdl.bench.turns`: the others are stopped meanwhile), in the order above; a row
   that cannot start with ``--min-row`` seconds of the budget left is listed as not run.
4. ``matmuls.md`` (part 1, before the rows, seconds): ``python -m rdl.bench matmuls``, the
   ways to compute the stacked encoders' weight gradient, each timed on the device; and
   ``evaluation.md`` (part 2, before its rows, a minute or two): ``python -m rdl.bench
   evaluation``, the first task's evaluation compiled against eager at ``experiment=gpu``,
   after how many batches its compile pays (``compile.eval=auto``'s threshold); and
   ``kernels/`` (part 1, on the CPU beside the rows): ``python -m rdl.bench kernels
   --codegen triton``, the kernels that the proxy counts without a GPU, for the first
   task's model under this torch, beside the profiled rows' own.
5. ``gpu.md`` and ``gpu.json`` and ``logs.tgz`` (each row's output, a long one cut to its
   head and tail), all rewritten after every row, so a check stopped early leaves what it
   measured.

``--device cpu --tiny`` runs the same code on the CPU with the tiny database and model
(the test suite does, so that the check cannot rot between GPUs).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch

from rdl.bench.e2e import RESULT, TINY, VARIANTS
from rdl.bench.gpu_env import environment
from rdl.bench.gpu_plan import CONFIGS, GPU_VARIANTS, PARTS, TASKS, plan_rows, row_logs
from rdl.bench.gpu_report import label, write
from rdl.bench.train.runner import cold_env, error_line, kill_group, result_of
from rdl.bench.turns import Turns

#: a row's log kept whole up to this size; a longer one keeps its head and its tail
LOG_KEEP = 256 * 1024


def start_tests(out: Path) -> subprocess.Popen:
    """``pytest -m cuda`` in the background, its whole output in ``tests.txt``."""
    cmd = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-rfE", "-p", "no:cacheprovider",
           "-o", "addopts="]
    log = open(out / "tests.txt", "w")
    log.write(f"$ {' '.join(cmd)}\n\n")
    log.flush()
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def run_bench(name: str, out: Path, args: list[str], timeout: float) -> str:
    """``python -m rdl.bench NAME ARGS --out OUT`` alone on the device (seconds of the
    budget, before the rows), into ``NAME.md``; returns its table, or why there is none."""
    cmd = [sys.executable, "-m", "rdl.bench", name, *args, "--out", str(out)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        return f"stopped after {timeout:.0f} s"
    if done.returncode != 0:
        return "failed: " + error_line(done.stdout + done.stderr)
    return (out / f"{name}.md").read_text()


def run_matmuls(out: Path, device: str, tiny: bool, timeout: float = 120) -> str:
    """``python -m rdl.bench matmuls``: the ways to compute the stacked encoders' weight
    gradient, each timed (part 1)."""
    return run_bench("matmuls", out, ["--device", device, *(
        ["--rows", "300", "200", "50", "--repeat", "2"] if tiny else [])], timeout)


#: what ``compile.eval=auto`` weighs on this device (part 2): the first task's model at
#: ``experiment=gpu``, its first compiled evaluation call against the eager model's batches
EVALUATION = ["--batches", "5", "--repeat", "3"]


def run_evaluation(out: Path, device: str, task: str, sets: list[str],
                   timeout: float = 150) -> str:
    """``python -m rdl.bench evaluation``: after how many val batches evaluation's compile
    pays on this device (``rdl.training.compile.EVAL_BATCHES``; part 2)."""
    return run_bench("evaluation", out, ["--device", device, "--tasks", task, *EVALUATION,
                                         "--set", *sets], timeout)


def start_codegen_count(out: Path, task: str, sets: list[str]) -> subprocess.Popen:
    """``python -m rdl.bench kernels --codegen triton`` in the background, on the CPU: the
    kernels that the proxy followed without a GPU (:mod:`rdl.bench.gpu_codegen`) counts for
    the first task's model, under the same torch as the profiled rows, to set beside
    theirs (``kernel_kinds``); into ``kernels/``, its output in ``kernels/output.txt``."""
    (out / "kernels").mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "rdl.bench", "kernels", "--device", "cpu", "--codegen",
           "triton", "--tasks", task, "--variants", "stacked", "--out", str(out / "kernels"),
           "--set", *sets, "trainer.accelerator=cpu"]
    log = open(out / "kernels" / "output.txt", "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def codegen_result(out: Path, stopped: bool) -> str:
    """The proxy's table (:func:`start_codegen_count`), or why there is none."""
    table = out / "kernels" / "kernels.md"
    if table.exists():
        return table.read_text()
    text = (out / "kernels" / "output.txt").read_text(errors="replace")
    return "stopped at the budget" if stopped else "failed: " + error_line(text)


def tests_result(out: Path, stopped: bool) -> dict:
    """The summary line of ``tests.txt`` and the tests that failed."""
    text = (out / "tests.txt").read_text(errors="replace")
    summary = "stopped at the budget" if stopped else error_line(text)
    failed = [ln.split(" ", 2)[1] for ln in text.splitlines()
              if ln.startswith(("FAILED ", "ERROR "))]
    return {"summary": summary.strip("= "), "failed": failed}


def run_rows(rows: list[dict], args, deadline: float, logs: Path, write,
             background: dict | None = None) -> None:
    """Run the rows ``args.jobs`` at a time, taking turns at their timed epochs; fills each
    row's results in place and calls ``write()`` after each. ``background``: ``{name:
    (Popen, done)}``, processes that run beside the rows (stopped while a row is timed);
    ``done(stopped)`` is called when one ends, or is stopped at the deadline."""
    threads = str(max(1, (os.cpu_count() or 1) // args.jobs))
    pending = [(i, r) for i, r in enumerate(rows) if not r.get("note")]   # not applicable
    running, background = {}, dict(background or {})
    with tempfile.TemporaryDirectory(prefix="rdl-gpu-", ignore_cleanup_errors=True) as tmp:
        turns = Turns(tmp)
        try:
            for name, (proc, _) in background.items():
                turns.started(name, proc)
            while pending or running or background:
                now = time.monotonic()
                for name, (proc, done) in list(background.items()):
                    if proc.poll() is None and now < deadline:
                        continue
                    stopped = proc.poll() is None
                    turns.close({name: proc})
                    kill_group(proc)
                    proc.wait()
                    done(stopped)
                    del background[name]
                    write()
                while pending and len(running) < args.jobs and deadline - now > args.min_row:
                    i, row = pending.pop(0)
                    name = f"r{i:02d}"
                    spec = dict(task=row["task"], model=row["model"],
                                variant=row["variant"], overrides=row["overrides"],
                                workers=row["workers"], epochs=args.epochs, batches=args.batches,
                                device=args.device, profile=args.profile,
                                host_profile=args.host_profile, gate=turns.gate(name))
                    log = open(logs / f"{name}.log", "w")
                    cmd = [sys.executable, "-m", "rdl.bench.e2e", "--worker", json.dumps(spec)]
                    log.write(f"$ {' '.join(cmd)}\n")
                    log.flush()
                    env = cold_env(os.path.join(tmp, name),
                                   TORCHINDUCTOR_COMPILE_THREADS=threads, **row_logs(row))
                    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
                    running[name] = (proc, row, log, time.monotonic())
                    turns.started(name, proc)
                    print(f"{name} {label(row)}: started", flush=True)
                if pending and deadline - now <= args.min_row:
                    for _, row in pending:
                        row["note"] = "not run: budget"
                    pending = []
                for name, (proc, row, log, t0) in list(running.items()):
                    if proc.poll() is None and now < deadline:
                        continue
                    if proc.poll() is None:
                        turns.close({name: proc})
                        row["note"] = "stopped at the budget"
                    kill_group(proc)
                    proc.wait()
                    log.close()
                    _collect(row, logs / f"{name}.log", time.monotonic() - t0)
                    del running[name]
                    print(f"{name} {label(row)}: {_brief(row)}", flush=True)
                    write()
                turns.step({**{n: r[0] for n, r in running.items()},
                            **{n: b[0] for n, b in background.items()}})
                time.sleep(0.01)
        finally:
            procs = [r[0] for r in running.values()] + [b[0] for b in background.values()]
            turns.close(dict(enumerate(procs)))
            for proc in procs:
                kill_group(proc)


def _collect(row: dict, log: Path, wall: float) -> None:
    text = log.read_text(errors="replace")
    res = result_of(text, RESULT)
    row["wall_s"] = wall
    if res is None:
        row["note"] = row.get("note") or error_line(text) or "failed"
        return
    row.update(res)


def _brief(row: dict) -> str:
    if row.get("seeds_per_s"):
        return f"{row['seeds_per_s']:.0f} seeds/s ({row['wall_s']:.0f} s)"
    return row.get("note", "")


def pack_logs(logs: Path, out: Path) -> None:
    """``logs.tgz``: each row's log, one longer than :data:`LOG_KEEP` cut to its head and
    its tail; rewritten after every row, so a check stopped early leaves its logs."""
    tmp = out / "logs.tgz.tmp"
    with tarfile.open(tmp, "w:gz") as tar:
        for log in sorted(logs.glob("*.log")):
            data = log.read_bytes()
            if len(data) > LOG_KEEP:
                head, tail = data[:LOG_KEEP // 4], data[-(LOG_KEEP - LOG_KEEP // 4):]
                data = head + f"\n[... {len(data) - LOG_KEEP} bytes cut ...]\n".encode() + tail
            info = tarfile.TarInfo(f"logs/{log.name}")
            info.size, info.mtime = len(data), int(log.stat().st_mtime)
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, out / "logs.tgz")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(prog="python -m rdl.bench gpu", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda" if cuda else "cpu", choices=["cuda", "cpu"])
    p.add_argument("--tiny", action="store_true", help="the tiny database and model (a test)")
    p.add_argument("--part", nargs="+", type=int, choices=PARTS, default=None, metavar="N",
                   help="only the rows of these parts (rdl/bench/gpu_plan.py; the CUDA tests "
                   "are part 1's); default: every part, most wanted first")
    p.add_argument("--tasks", nargs="+", default=TASKS, help="TASK or TASK:MODEL")
    p.add_argument("--configs", nargs="+", default=["gpu", "default"], choices=list(CONFIGS))
    p.add_argument("--variants", nargs="+", default=GPU_VARIANTS, choices=list(VARIANTS))
    p.add_argument("--no-host-overhead", dest="host_overhead", action="store_false")
    p.add_argument("--epochs", type=int, default=3, help="epochs, the first untimed")
    p.add_argument("--batches", type=int, default=20, help="training batches per epoch")
    p.add_argument("--profile", type=int, default=3, help="steps profiled (0: none)")
    p.add_argument("--no-host-profile", dest="host_profile", action="store_false",
                   help="no epoch under cProfile (rdl.bench.host_profile)")
    p.add_argument("--jobs", type=int, default=6 if cuda else 1,
                   help="rows at once (compiling; each is timed alone)")
    p.add_argument("--budget", type=float, default=450, help="seconds for the whole check")
    p.add_argument("--min-row", type=float, default=60,
                   help="seconds of budget a row needs to be started")
    p.add_argument("--no-tests", dest="tests", action="store_false")
    p.add_argument("--set", nargs="*", default=[], dest="sets", metavar="OVERRIDE")
    p.add_argument("--out", default="outputs/gpu")
    args = p.parse_args(argv)
    if args.epochs < 2 or args.jobs < 1:
        p.error("--epochs must be at least 2 (the first is not timed), --jobs at least 1")
    if args.device == "cuda" and not cuda:
        p.error("--device cuda: this torch sees no GPU (--device cpu --tiny runs on the CPU)")
    start = time.monotonic()
    deadline = start + args.budget
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header = {"date": time.strftime("%Y-%m-%d %H:%M"), "elapsed_s": 0.0, "tests": {},
              "command": "python -m rdl.bench gpu " + " ".join(argv),
              "parts": args.part or PARTS, "env": environment(args.device)}
    print(json.dumps(header["env"]), flush=True)
    rows = plan_rows(args.tasks, args.configs, args.variants, args.host_overhead, args.device,
                     [*(["debug=tiny", *TINY] if args.tiny else []), *args.sets], args.part)
    logs = Path(tempfile.mkdtemp(prefix="rdl-gpu-logs-"))

    def save():
        header["elapsed_s"] = time.monotonic() - start
        write(out, header, rows)
        pack_logs(logs, out)

    if not args.part or 1 in args.part:    # seconds, alone on the device, before the rows
        header["matmuls"] = run_matmuls(out, args.device, args.tiny)
        print(header["matmuls"], flush=True)
    if not args.part or 2 in args.part:    # alone on the device too, before the rows
        sets = ["debug=tiny", *TINY] if args.tiny else CONFIGS["gpu"]
        left = min(150, deadline - time.monotonic() - args.min_row)
        header["evaluation"] = run_evaluation(
            out, args.device, args.tasks[0].partition(":")[0], [*sets, *args.sets],
            left) if left >= 30 else "not run: the budget holds its rows alone"
        print(header["evaluation"], flush=True)
    background = {}
    # part 1's, beside the rows: stopped while one is timed
    if args.tests and (not args.part or 1 in args.part):
        def tests_done(stopped: bool):
            header["tests"] = tests_result(out, stopped)
            print(f"pytest -m cuda: {header['tests']['summary']}", flush=True)
        background["tests"] = (start_tests(out), tests_done)
    if not args.part or 1 in args.part:
        def codegen_done(stopped: bool):
            header["kernels_codegen"] = codegen_result(out, stopped)
        background["codegen"] = (start_codegen_count(
            out, args.tasks[0], ["debug=tiny", *TINY] if args.tiny else CONFIGS["gpu"]),
            codegen_done)
    save()
    try:
        run_rows(rows, args, deadline, logs, save, background)
    finally:
        save()
        shutil.rmtree(logs, ignore_errors=True)
    print((out / "gpu.md").read_text())
    ran = [r for r in rows if not str(r.get("note", "")).startswith(("not run", "not appl"))]
    if ran and not any(r.get("seeds_per_s") for r in ran):
        # a check whose every row failed measured nothing: it must not pass as a result
        print(f"error: all {len(ran)} rows run failed ({ran[0].get('note', '')}); their logs "
              f"are in {out / 'logs.tgz'}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
