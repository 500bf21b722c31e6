"""``rdl-relbench DATASET_DIR``: a RelBench dataset's whole workflow in one command.

Each task of the dataset (``DATASET_DIR/tasks/<task>``, either of RelBench's layouts) is
trained by ``rdl.train`` with its kind's default model (``task=relbench``: a node model, or
a link model for a recommendation task), its test predictions are written by
``rdl.predict`` into one folder as RelBench's leaderboard takes a submission (RelBench
3's ``relbench.submit``: one ``<dataset>__<task>.csv`` per task, nothing else in the
folder), and a table per task shows the model beside the baselines, val and test, as
``rdl.train`` reports them::

    rdl-relbench ~/.cache/relbench/rel-f1 --out rel-f1-rdl trainer.max_epochs=5
    python -m relbench.submit rel-f1-rdl/submission       # RelBench's own check

Arguments after the folder are ``rdl.train`` overrides, given to every task. RelBench's
submission takes binary classification, regression and recommendation tasks: a task of
another kind (multiclass) is trained and reported, its predictions left in its run folder.
Runs go to ``OUT/runs/<task>``; the command exits 1 if a task failed (the others still run).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

#: the kinds RelBench 3's submission tooling scores (``relbench.submit._supported``)
SUBMITTED = ("binary_classification", "regression", "link_prediction")


def dataset_name(dataset: Path) -> str:
    """The dataset's name as RelBench's submission files carry it: its 3.x manifest's
    ``name``, else its folder's (``~/.cache/relbench/rel-f1``: ``rel-f1``)."""
    from rdl.data.relbench import dataset_folder, manifest
    folder, _ = dataset_folder(dataset)
    return str((manifest(folder) or {}).get("name") or folder.resolve().name)


def task_folders(dataset: Path) -> list[Path]:
    """The dataset's task folders (a 3.x manifest, or 1.x/2.x label files), by name."""
    tasks = Path(dataset) / "tasks"
    return sorted(p for p in tasks.iterdir() if p.is_dir() and (
        (p / "manifest.yaml").is_file() or (p / "train.parquet").is_file())) \
        if tasks.is_dir() else []


def run(cmd: list[str], log: Path) -> tuple[bool, str]:
    """``cmd`` in a subprocess, its output in ``log``; whether it succeeded, and its
    error line if not."""
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log.write_text(proc.stdout + proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return proc.returncode == 0, (lines[-1] if lines else f"exit {proc.returncode}")


def one_task(dataset: Path, folder: Path, out: Path, name: str, overrides: list[str]) -> str:
    """Trains, predicts and reports one task; returns its report (or its error)."""
    from rdl.report import task_report
    from rdl.tasks.relbench import relbench_task
    task = relbench_task(folder, dataset=dataset)
    run_dir = out / "runs" / task.name
    ok, err = run([sys.executable, "-m", "rdl.train", "data=relbench",
                   f"data.db.path={dataset}", "task=relbench", f"task.path={folder}",
                   f"hydra.run.dir={run_dir}", *overrides], run_dir / "train.out")
    if not ok:
        raise RuntimeError(f"training failed: {err} (see {run_dir / 'train.out'})")
    results = json.loads((run_dir / "metrics.json").read_text())
    results.pop("task", None)
    ckpt = run_dir / "checkpoints" / "best.ckpt"
    if task.kind.name in SUBMITTED:
        file = out / "submission" / f"{name}__{task.name}.csv"
        where = f"predictions: {file}"
    else:
        file = run_dir / "predictions_test.csv"
        where = (f"predictions: {file} (RelBench's submission takes no {task.kind} task: "
                 "left out of it)")
    ok, err = run([sys.executable, "-m", "rdl.predict", f"ckpt_path={ckpt}", "split=test",
                   "format=csv", f"output={file}", f"hydra.run.dir={run_dir / 'predict'}"],
                  run_dir / "predict.out")
    if not ok:
        raise RuntimeError(f"predicting failed: {err} (see {run_dir / 'predict.out'})")
    return f"{task_report(task, results)}\n{where}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rdl-relbench", description=__doc__.split("\n")[0])
    p.add_argument("dataset", type=Path, help="a RelBench dataset folder (holding db/ and "
                   "tasks/), as RelBench caches or writes it")
    p.add_argument("overrides", nargs="*", help="rdl.train overrides for every task "
                   "(trainer.max_epochs=5)")
    p.add_argument("--out", type=Path, default=None,
                   help="where runs and submission/ go (default: <dataset name>-rdl)")
    p.add_argument("--tasks", default=None, help="these tasks only (names, comma-separated)")
    args = p.parse_intermixed_args(sys.argv[1:] if argv is None else argv)
    dataset = args.dataset.expanduser().resolve()
    folders = task_folders(dataset)
    if args.tasks:
        args.tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
        unknown = sorted(set(args.tasks) - {f.name for f in folders})
        if unknown:
            p.error(f"no task {unknown} in {dataset / 'tasks'}; it has "
                    f"{[f.name for f in folders]}")
        folders = [f for f in folders if f.name in args.tasks]
    if not folders:
        p.error(f"{dataset}: no RelBench task folders in {dataset / 'tasks'}")
    name = dataset_name(dataset)
    out = (args.out or Path(f"{name}-rdl")).resolve()
    (out / "submission").mkdir(parents=True, exist_ok=True)
    failed = []
    for folder in folders:
        print(f"== {name}/{folder.name}", flush=True)
        try:
            print(one_task(dataset, folder, out, name, args.overrides), "\n", flush=True)
        except Exception as e:   # one task's failure leaves the others to run
            failed.append(folder.name)
            print(f"error: {folder.name}: {e}\n", file=sys.stderr, flush=True)
    print(f"submission: {out / 'submission'} ({len(os.listdir(out / 'submission'))} files; "
          f"check it with: python -m relbench.submit {out / 'submission'})")
    if failed:
        print(f"error: {len(failed)} of {len(folders)} tasks failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
