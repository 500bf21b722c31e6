"""``rdl-relbench DATASET_DIR``: a RelBench dataset's whole workflow in one command.

Each task of the dataset (``DATASET_DIR/tasks/<task>``, either of RelBench's layouts) is
trained as ``rdl.train`` trains it, with its kind's default model (``task=relbench``: a
node model, or a link model for a recommendation task), one after the other in this
process; its test predictions are written as ``rdl.predict`` writes them into one folder
as RelBench's leaderboard takes a submission (RelBench 3's ``relbench.submit``: one
``<dataset>__<task>.csv`` per task, nothing else in the folder), and a table per task
shows the model beside the baselines, val and test, as ``rdl.train`` reports them::

    rdl-relbench ~/.cache/relbench/rel-f1 --out rel-f1-rdl trainer.max_epochs=5
    python -m relbench.submit rel-f1-rdl/submission       # RelBench's own check

Arguments after the folder are ``rdl.train`` overrides, given to every task. RelBench's
submission takes binary classification, regression and recommendation tasks: a task of
another kind (multiclass) is trained and reported, its predictions left in its run folder.
Runs go to ``OUT/runs/<task>``; the command exits 1 if a task failed (the others still run).
"""
from __future__ import annotations

if __name__ == "__main__":   # python -m rdl.leaderboard: before torch is imported (rdl/threads.py)
    from rdl.threads import at_start
    at_start()

import argparse
import os
import sys
import traceback
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


def one_task(dataset: Path, folder: Path, out: Path, name: str, overrides: list[str]) -> str:
    """Trains one task (its table printed as ``rdl.train`` prints it) and writes its test
    predictions; returns where they are."""
    from omegaconf import OmegaConf

    from rdl.api import config, fit
    from rdl.predict import predict
    from rdl.families import relbench_task
    from rdl.training.process import configured
    task = relbench_task(folder, dataset=dataset)
    run_dir = out / "runs" / task.name
    fit(config("data=relbench", f"data.db.path={dataset}", "task=relbench",
               f"task.path={folder}", f"output_dir={run_dir}", *overrides))
    if task.kind.name in SUBMITTED:
        file, note = out / "submission" / f"{name}__{task.name}.csv", ""
    else:
        file = run_dir / "predictions_test.csv"
        note = f" (RelBench's submission takes no {task.kind} task: left out of it)"
    with configured(verbose=False):   # as rdl.predict: none of Lightning's lines
        predict(OmegaConf.create({"ckpt_path": str(run_dir / "checkpoints" / "best.ckpt"),
                                  "split": "test", "format": "csv", "output": str(file),
                                  "accelerator": "auto", "run": {}}))
    return f"predictions: {file}{note}"


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
    from rdl.api import user_error
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
            if user_error(e) is None:   # a bug: its traceback
                traceback.print_exc()
            else:
                print(f"error: {folder.name}: {user_error(e)}\n", file=sys.stderr, flush=True)
    print(f"submission: {out / 'submission'} ({len(os.listdir(out / 'submission'))} files; "
          f"check it with: python -m relbench.submit {out / 'submission'})")
    if failed:
        print(f"error: {len(failed)} of {len(folders)} tasks failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
