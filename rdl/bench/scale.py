"""The cost curve: ``python -m rdl.bench scale [--scale 0.25 0.5 1] [--task user-churn]
[--stages write read ...] [--set OVERRIDE ...] [--timeout S] [--max-gib G] [--work DIR]
[--out DIR]``.

Per scale of the synthetic H&M database (1 = RelBench's rel-hm, 15M transactions; 2 and 4
are the slow ones: about 30M and 60M transactions, several GiB of files, and each
stage's time grows with them), each stage of a user's first run on their files, then a
restart, each in a fresh process so that each reports its own seconds and its own peak
resident memory (:mod:`rdl.bench.scale_stages` says what each stage times, and how):

``write`` (the chunked writer of the Kaggle CSV files), ``read`` (``data=hm-kaggle`` from
an empty cache), ``checks``, ``tables`` (the task's SQL), ``depth2`` (the depth-2
synthesis), ``trees`` (LightGBM and the prior), ``graph`` (its build), ``epoch`` (the first
training epoch) and ``restart`` (a fresh process to its first step, every cache warm).

Each scale has a work folder of its own (``--work``: where; a temporary folder, removed
when the scale is done, unless ``--keep``): the files, rdl's cache (``RDL_CACHE``) and
the compile caches (``TORCHINDUCTOR_CACHE_DIR``), empty at the start, filled by the
stages as a user's run fills them. ``--files DIR`` times the stages on Kaggle files
already there (the real ones, or the writer's) instead of writing them (one ``--scale``,
then only a label). ``--keep`` keeps the work folder; ``--in DIR`` runs stages in one kept
before, its files and caches as its stages left them (a restart measured again after a
change). ``--set`` adds config overrides to every stage (``model.channels=64``,
``trainer.limit_train_batches=20``). ``--max-gib`` stops a stage whose resident memory
passes it, before the machine runs out (its row says where it stopped).

Written: ``scale.md``/``.csv`` (a row per scale and stage: seconds, peak GiB, seconds
against the same stage at scale 1 where scale 1 is in the run, setup, rdl's progress
stages inside it), ``scale-curve.md``/``.csv`` (stage by scale) and ``scale.json`` (every
row, with the inner stages), each stage's log under ``logs/``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from rdl.bench.report import load_average, report, run_dir
from rdl.bench.scale_stages import STAGES, WHAT
from rdl.caching import write_atomic

RESULT = "RDL_BENCH_SCALE_RESULT "
#: what the sum row adds: the stages of a first run from an empty cache to its first epoch
#: (depth2 is part of trees)
FIRST_RUN = ("read", "checks", "tables", "trees", "graph", "epoch")
SUM = "sum: " + " + ".join(FIRST_RUN)


def measure(stage: str, max_gib: float | None = None, **spec) -> dict:
    """One stage in this (fresh) process: its result row. ``max_gib``: the process stops
    (its row says so) once its resident memory passes it."""
    from rdl import progress
    from rdl.bench import scale_stages

    if max_gib:
        threading.Thread(target=_watch, args=(max_gib,), daemon=True).start()
    meter = scale_stages.Meter()
    progress.listeners.append(meter)
    clock = scale_stages.Clock(meter)
    extra = getattr(scale_stages, stage)(spec, clock)
    own, setup = clock.result or {}, clock.setup or {}
    return {"seconds": own.get("seconds"), "peak_gib": own.get("peak_gib"),
            "peak_anon_gib": own.get("peak_anon_gib"), "setup_s": setup.get("seconds"), "setup_peak_gib": setup.get("peak_gib"), **extra,
            "inner": [d for d in meter.done if d["name"] not in ("setup", "stage")]}


def _watch(max_gib: float, every_s: float = 0.2) -> None:
    """Ends this process once its resident memory passes ``max_gib`` (before the machine
    runs out: a stage of a large scale may need more than it has), its result an error."""
    from rdl.bench.report import step_peak_rss_gib

    while True:
        status = Path("/proc/self/status").read_text()
        gib = int(status.split("VmRSS:")[1].split()[0]) / 2**20
        if gib > max_gib:
            print(RESULT + json.dumps({"error": f"stopped: resident memory passed {max_gib:g} "
                                                f"GiB (--max-gib)",
                                       "stopped_at_gib": max(gib, step_peak_rss_gib())}),
                  flush=True)
            os._exit(3)
        time.sleep(every_s)


def curve(rows: list[dict]) -> list[dict]:
    """``rows`` with each stage's seconds against the same stage at scale 1 (where scale
    1 is there), and per scale the sum row (:data:`SUM`) where all its stages ran."""
    out = []
    for scale in dict.fromkeys(r["scale"] for r in rows):
        mine = [r for r in rows if r["scale"] == scale]
        out += mine
        got = {r["stage"]: r for r in mine if r.get("seconds") is not None}
        if all(s in got for s in FIRST_RUN):
            out.append({"scale": scale, "stage": SUM,
                        "seconds": sum(got[s]["seconds"] for s in FIRST_RUN),
                        "peak_gib": max(got[s]["peak_gib"] for s in FIRST_RUN),
                        "peak_anon_gib": max((got[s].get("peak_anon_gib") or 0.0
                                              for s in FIRST_RUN), default=None) or None})
    one = {r["stage"]: r["seconds"] for r in out if r["scale"] == 1.0 and r.get("seconds")}
    for r in out:
        base = one.get(r["stage"])
        r["vs_scale_1"] = r["seconds"] / base if base and r.get("seconds") is not None else None
    return out


def pivot(rows: list[dict]) -> list[dict]:
    """Stage by scale: ``<seconds> s, <peak> GiB`` (and ``x<ratio>`` to scale 1)."""
    scales = list(dict.fromkeys(r["scale"] for r in rows))
    table = {}
    for r in rows:
        cell = ((r.get("note") or "failed") if r.get("seconds") is None else
                f"{r['seconds']:.1f} s, {r['peak_gib']:.2f} GiB"
                + (f" ({r['peak_anon_gib']:.2f} anon)" if r.get("peak_anon_gib") else "")
                + (f", x{r['vs_scale_1']:.2f}" if r.get("vs_scale_1") else ""))
        table.setdefault(r["stage"], {"stage": r["stage"]})[f"scale {r['scale']:g}"] = cell
    return [{"stage": s["stage"], **{f"scale {x:g}": s.get(f"scale {x:g}", "") for x in scales}}
            for s in table.values()]


def run_scale(scale: float, args, out: Path, measured=lambda rows: None) -> list[dict]:
    """The stages at one scale, each in a fresh process, in a work folder of its own;
    ``measured(rows)`` after each stage (the report so far: a curve of hours that stops
    keeps what it measured)."""
    from rdl.bench.train.runner import _run_child

    work = (Path(args.within) if args.within else
            Path(tempfile.mkdtemp(prefix=f"rdl-bench-scale-{scale:g}-", dir=args.work)))
    files = Path(args.files) if args.files else work / "files"
    env = {"RDL_CACHE": str(work / "cache"), "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
           "TORCHINDUCTOR_AUTOGRAD_CACHE": "1", "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor"),
           "TRITON_CACHE_DIR": str(work / "triton")}
    rows = []
    try:
        for stage in [s for s in STAGES if s in args.stages]:
            spec = dict(stage=stage, scale=scale, seed=args.seed, files=str(files),
                        task=args.task, overrides=args.sets, run_dir=str(work / "run"),
                        max_gib=args.max_gib, spawned=time.time())
            print(f"scale {scale:g} {stage} ...", flush=True)
            res = _run_child(spec, args.timeout, out / "logs" / f"scale-{scale:g}-{stage}.log",
                             module="rdl.bench.scale", result=RESULT, env=env)
            rows.append({"scale": scale, "stage": stage, "seconds": res.get("seconds"),
                         "peak_gib": res.get("peak_gib"), "peak_anon_gib": res.get("peak_anon_gib"),
                         **{k: v for k, v in res.items()
                            if k not in ("seconds", "peak_gib", "peak_anon_gib")}})
            measured(rows)
            if res.get("seconds") is not None:
                print(f"    {res['seconds']:.1f} s, peak {res['peak_gib']:.2f} GiB", flush=True)
            if stage == "write" and "error" in res:
                break   # nothing to read
    finally:
        if not args.keep and not args.within:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder kept: {work}")
    return rows


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:
        from rdl.threads import at_start
        at_start()   # as rdl's command lines start: before torch is imported
        print(RESULT + json.dumps(measure(**json.loads(argv[1]))), flush=True)
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench scale",
                                description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, nargs="+", default=[0.25, 0.5, 1.0],
                   help="synthetic H&M scales (1 = rel-hm's size; 2 and 4 are slow)")
    p.add_argument("--task", default="user-churn")
    p.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    p.add_argument("--set", nargs="*", default=[], dest="sets", metavar="OVERRIDE",
                   help="config overrides for every stage")
    p.add_argument("--seed", type=int, default=0, help="the generator's seed")
    p.add_argument("--files", default=None, metavar="DIR",
                   help="Kaggle CSV files already written (instead of the write stage)")
    p.add_argument("--timeout", type=float, default=7200, help="seconds a stage may take")
    p.add_argument("--max-gib", type=float, default=None,
                   help="stop a stage whose resident memory passes this (its row says so)")
    p.add_argument("--work", default=None, metavar="DIR",
                   help="where the work folders go (default: the system's temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the work folders")
    p.add_argument("--in", dest="within", default=None, metavar="DIR",
                   help="a work folder kept by --keep, at one --scale: its files and caches "
                        "as its stages left them (a later stage, restart, measured again)")
    p.add_argument("--out", default=None, help="report folder (default outputs/bench/<time>-scale)")
    args = p.parse_args(argv)
    if args.files and ("write" in args.stages or len(args.scale) > 1):
        p.error("--files replaces the write stage, at one --scale: leave write out of --stages")
    if args.within and (len(args.scale) > 1 or not (
            args.files or (Path(args.within) / "files").is_dir())):
        p.error("--in DIR: a work folder kept by --keep (DIR/files, or --files), at one --scale")
    if not args.files and not args.within and "write" not in args.stages:
        p.error("without the write stage, --files DIR must name the Kaggle files to read")

    out = Path(args.out) if args.out else run_dir("scale")
    done: list[dict] = []
    for scale in args.scale:
        done += run_scale(scale, args, out, lambda rows: _report(argv, args, out, done + rows))


def _report(argv: list[str], args, out: Path, rows: list[dict]) -> None:
    """The report of the stages measured so far (rewritten whole after each)."""
    rows = curve(rows)
    header = (f"The cost curve: `python -m rdl.bench scale {' '.join(argv)}`, task {args.task}, "
              f"{_machine()}, load average {load_average()} at the end. Each stage in a "
              "fresh process; "
              "seconds and peak resident memory are its own (peak_anon_gib: its anonymous "
              "memory alone, without the pages of the caches it maps).\n\n"
              + "\n".join(f"- {s}: {WHAT[s]}" for s in STAGES if s in args.stages)
              + f"\n- {SUM}: a first run from an empty cache to its first epoch")
    columns = ("scale", "stage", "seconds", "peak_gib", "peak_anon_gib", "vs_scale_1", "setup_s",
               "setup_peak_gib", "rows", "note", "error", "stopped_at_gib")
    report("scale", [{**{k: "" if r.get(k) is None else r[k] for k in columns},
                      "inner": _inner(r)} for r in rows], out, header=header)
    report("scale-curve", pivot(rows), out, header=header)
    write_atomic(out / "scale.json", json.dumps(
        {"command": f"python -m rdl.bench scale {' '.join(argv)}", "rows": rows}, indent=1))


def _machine() -> str:
    """This machine's cores and memory, for the report's header."""
    try:
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        memory = f", {kib / 2**20:.0f} GiB"
    except (OSError, IndexError, ValueError):
        memory = ""
    return f"{os.cpu_count()} cores{memory}"


def _inner(row: dict) -> str:
    """rdl's progress stages inside a stage (not its setup's), in a line."""
    return "; ".join(f"{d['name']} {d['seconds']:.1f} s {d['peak_gib']:.2f} GiB"
                     + (f" ({d['peak_anon_gib']:.2f} anon)" if d.get("peak_anon_gib") else "")
                     for d in row.get("inner") or [] if d["in"] == "stage")


if __name__ == "__main__":
    main(sys.argv[1:])
