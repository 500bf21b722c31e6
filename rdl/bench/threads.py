"""Fair use of the cores a run was given: ``python -m rdl.bench threads``.

``python -m rdl.bench threads [--task user-churn] [--variant dynamic] [--workers 0]
[--epochs 3] [--batches 20] [--policies before after] [--set OVERRIDE ...] [--timeout S]
[--out DIR]``

Default trainings, each a row of ``python -m rdl.bench e2e`` (:func:`rdl.bench.e2e.measure`:
whole epochs, seeds/s over all but the first, cold compile caches), run three ways:

- ``alone``: one training with the machine's cores;
- ``together``: two trainings started together, their timed epochs begun together
  (each waits at its :class:`~rdl.bench.turns.Gate` until both are ready); ``seeds_per_s``
  is each one's, ``vs_alone`` their mean over ``alone``'s (a fair share of the cores is
  0.5), ``overlap`` the part of their timed spans they ran together;
- ``pinned``: one training under ``taskset -c 0`` (one core), ``vs_alone`` over ``alone``.

each under the thread policies asked for (:mod:`rdl.threads`), in one run so that the
ratios compare on one machine: ``after``, rdl's (``threads=auto`` with the wait policy
:data:`rdl.threads.WAIT_ENV`), ``before``, torch's and OpenMP's defaults (``threads=off``,
no wait policy), and ``passive``, ``threads=auto`` with a user's ``OMP_WAIT_POLICY=PASSIVE``
(every idle thread sleeps at once: the policy rdl set before the spin count). The cases
alternate between the policies, so that a machine that slows down meanwhile slows all.
``threads``: the threads each training ran with. Measure on an otherwise idle machine
(the header gives the load average before and after).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rdl import threads as policy
from rdl.bench.e2e import RESULT, VARIANTS
from rdl.bench.report import load_average, report, run_dir
from rdl.bench.train.runner import cold_env, error_line, kill_group, result_of
from rdl.bench.turns import Gate
from rdl.caching import write_atomic

#: case: (trainings at once, command prefix)
CASES = {"alone": (1, []), "together": (2, []), "pinned": (1, ["taskset", "-c", "0"])}
#: policy: (overrides, environment the user gives the training)
POLICIES = {"before": (["threads=off"], {}), "after": (["threads=auto"], {}),
            "passive": (["threads=auto"], {"OMP_WAIT_POLICY": "PASSIVE"})}


def child_env(off: bool, tmp: str, user: dict) -> dict:
    """A training's environment under a policy: rdl's wait policy (none with ``off``),
    or ``user``'s variables in its place, as a user who set them would start it."""
    return {**policy.environment(cold_env(tmp), off=off or bool(user)), **user}


def start(spec: dict, prefix: list[str], off: bool, tmp: str, log: Path, user: dict):
    """One training (``rdl.bench.e2e``'s child), started with the policy's environment
    (:func:`child_env`), its output (the result line too) written to ``log``."""
    env = child_env(off, tmp, user)
    cmd = [*prefix, sys.executable, "-m", "rdl.bench.e2e", "--worker", json.dumps(spec)]
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        wait = " ".join(f"{n}={env.get(n, 'unset')}" for n in policy.USER_WAIT)
        out.write(f"$ {' '.join(cmd)}\n({wait})\n\n")
        out.flush()
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def run_case(specs: list[dict], prefix: list[str], off: bool, timeout: float,
             logs: list[Path], user: dict | None = None) -> list[dict]:
    """The trainings of ``specs`` at once; their timed epochs begin together. Each one's
    :func:`~rdl.bench.e2e.measure` result, or ``{"error": ...}``."""
    with tempfile.TemporaryDirectory(prefix="rdl-bench-threads-",
                                     ignore_cleanup_errors=True) as tmp:
        gates = [os.path.join(tmp, f"gate{i}") for i in range(len(specs))]
        procs = []
        for i, (spec, log) in enumerate(zip(specs, logs)):
            os.makedirs(os.path.join(tmp, str(i)))
            procs.append(start({**spec, "gate": gates[i]}, prefix, off,
                               os.path.join(tmp, str(i)), log, user or {}))
        deadline, went = time.monotonic() + timeout, False
        try:
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                if not went and all(Gate(g)._file("ready").exists() for g in gates):
                    for g in gates:          # every training at its timed epochs: all go
                        Gate(g)._file("go").touch()
                    went = True
                if not went and any(p.poll() is not None for p in procs):
                    break                    # one failed before its timed epochs
                time.sleep(0.01)
        finally:
            for p in procs:
                if p.poll() is None:
                    kill_group(p)
                p.wait()
        results = []
        for p, log in zip(procs, logs):
            text = log.read_text()
            found = result_of(text, RESULT)
            results.append(found if found is not None else {
                "error": error_line(text) or f"exit code {p.returncode}"})
        return results


def overlap(turns: list[list[float]]) -> float | None:
    """The part of two timed spans ``[start, end]`` that ran at once (over their union)."""
    if len(turns) != 2 or any(len(t) != 2 for t in turns):
        return None
    (a0, a1), (b0, b1) = turns
    union = max(a1, b1) - min(a0, b0)
    return max(0.0, min(a1, b1) - max(a0, b0)) / union if union > 0 else None


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(prog="python -m rdl.bench threads",
                                description=__doc__.split("\n")[0])
    p.add_argument("--task", default="user-churn")
    p.add_argument("--variant", default="dynamic", choices=list(VARIANTS),
                   help="a variant of rdl.bench e2e")
    p.add_argument("--workers", type=int, default=0, help="data.num_workers")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batches", type=int, default=20, help="training batches per epoch")
    p.add_argument("--policies", nargs="+", default=["before", "after"],
                   choices=list(POLICIES))
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--set", nargs="*", default=[], dest="sets", metavar="OVERRIDE")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a case may take")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.epochs < 2:
        p.error("--epochs must be at least 2 (the first epoch is not timed)")
    if "pinned" in args.cases and not shutil.which("taskset"):
        p.error("the pinned case needs taskset (util-linux); leave it out with --cases")

    from rdl.bench.train.variants import _task_models
    (task, model), = _task_models([args.task], args.sets)
    out = Path(args.out) if args.out else run_dir("threads")
    load_before, rows, alone = load_average(), [], {}
    for case in args.cases:
        n, prefix = CASES[case]
        for name in args.policies:
            overrides, user = POLICIES[name]
            spec = dict(task=task, model=model, variant=args.variant, workers=args.workers,
                        overrides=[*args.sets, *overrides], epochs=args.epochs,
                        batches=args.batches, device="cpu", alone=False)
            print(f"{case}, {name} ...", flush=True)
            t = time.perf_counter()
            logs = [out / "logs" / f"{len(rows):02d}-{i}.log" for i in range(n)]
            res = run_case([spec] * n, prefix, name == "before", args.timeout, logs, user)
            speeds = [r.get("seeds_per_s") for r in res]
            ok = all(speeds)
            mean = sum(speeds) / n if ok else None
            if case == "alone" and ok:
                alone[name] = mean
            rows.append({"case": case, "policy": name,
                         "threads": "/".join(str(r.get("threads", "?")) for r in res),
                         "seeds_per_s": mean,
                         "each": " / ".join(f"{s:.0f}" for s in speeds) if ok else "",
                         "vs_alone": mean / alone[name] if ok and alone.get(name) else None,
                         "overlap": overlap([r.get("turn") or [] for r in res]),
                         "graphs_timed": "/".join(str(r.get("graphs_timed")) for r in res),
                         "note": "; ".join(r["error"] for r in res if "error" in r)})
            print(f"    {mean or 0:.0f} seeds/s ({time.perf_counter() - t:.0f} s)", flush=True)
    write_atomic(out / "threads.json", json.dumps(rows, indent=1))
    report("threads", rows, out, header=(
        f"Default trainings alone, two at once and pinned to one core (taskset -c 0), "
        f"before and after rdl's thread policy: {task}:{model} {args.variant}, "
        f"{args.epochs} epochs of {args.batches} batches (seeds/s over all but the first), "
        f"{len(os.sched_getaffinity(0))} usable cores; load average {load_before} before, "
        f"{load_average()} after\n\n`python -m rdl.bench threads {' '.join(argv)}`"))


if __name__ == "__main__":
    main(sys.argv[1:])
