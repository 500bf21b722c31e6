"""Every command the README shows works, so that the README cannot rot.

The commands are those of the README's ```bash blocks (``\\`` continuations joined,
comments dropped, ``&&`` chains split). Each is checked by what it is:

* ``python -m rdl.train ...``: run as written, through ``bash`` in a scratch project folder,
  with the overrides of ``data=hm-tiny`` and a few batches appended (the last value of a key
  wins, so every key the command sets must still exist and every choice must still compose).
  It must exit 0 and write ``metrics.json`` (every job of a ``-m`` sweep); ``--cfg`` only
  prints. The README's ```yaml and ```sql blocks whose first line names a file are written
  into that folder first, after a tiny generated forum's files in ``forum/`` (the
  ``data=folder`` example's). ``$HOME`` is a scratch folder holding a tiny fake RelBench rel-hm
  database where RelBench puts it (``$HOME/.cache/relbench/rel-hm/db``, the path the README
  shows) and RelBench's fake dataset with its tasks, written by RelBench (tests/relbench_fake.py)
  where RelBench 1.x caches rel-amazon, and in RelBench 3's layout in the project folder
  (``rel-amazon``; without the relbench test extra, or pip for RelBench 3, those commands are
  only composed); a ``data=hm-kaggle`` command gets the path of tiny fake Kaggle files appended.
  A command that needs more GPUs than there are is only composed, its Trainer built on the
  CPU, and then skipped.
* ``python -m rdl.bench <name> ...``: its ``--help`` exits 0 and lists every option used.
* A command that names a finished run (``outputs/<date>/<time>``, ``ckpt_path=...``) gets
  the folder, or the best checkpoint, of a tiny run made first; ``python -m rdl.predict``
  must exit 0 and write its predictions there; ``python -m rdl.backtest`` gets that
  run's folder for the sweep folder it names (``multirun/<date>/<time>``), and must print
  the table it writes there.
* venv / activate / ``pip install``: not run. The extras a ``pip install`` names exist in
  pyproject.toml, and a pinned torch is the one ``.ci/run`` installs; the README's test
  command is exactly the one ``.ci/run`` runs.

The runs share one cache (``RDL_CACHE``) and run a few at a time.
"""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import rdl
from tests.zygote import command as zygote_run

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
TRAIN = ["python", "-m", "rdl.train"]
BENCH = ["python", "-m", "rdl.bench"]
PREDICT = ["python", "-m", "rdl.predict"]
BACKTEST = ["python", "-m", "rdl.backtest"]
SUGGEST = ["python", "-m", "rdl.tasks.suggest"]
#: rdl's RelBench workflow (pyproject's console script; run as python -m rdl.leaderboard)
RELBENCH = ["rdl-relbench"]
#: how the README names the folder of a finished run, a checkpoint in it, and a sweep's folder
#: the README's main command: its run is the finished one the resume and predict commands name
MAIN = "python -m rdl.train task=user-churn"
RUN_DIR, SOME_CKPT, SWEEP_DIR = "outputs/<date>/<time>", "ckpt_path=...", "multirun/<date>/<time>"
#: commands run at once: this test worker's share of the cores (pytest -n), at most four
WORKERS = max(1, min(4, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT",
                                                                      "1"))))
TINY_DATA = OmegaConf.load(rdl.CONF_DIR / "data" / "hm-tiny.yaml")
TIMEOUT = 600
#: PyTorch's index of CPU wheels (https://pytorch.org/get-started/locally/)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


# -- reading the README -------------------------------------------------------------------------
def _outside_quotes(text: str):
    """``(index, char)`` of every character of ``text`` outside shell quotes."""
    quote = None
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        else:
            yield i, ch


def strip_comment(line: str) -> str:
    for i, ch in _outside_quotes(line):
        if ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def split_chain(command: str) -> list[str]:
    """The parts of an ``a && b && c`` chain."""
    cuts = [i for i, ch in _outside_quotes(command) if command.startswith("&&", i)]
    cuts = [c for j, c in enumerate(cuts) if j == 0 or c != cuts[j - 1] + 1]
    bounds = [0, *(c for cut in cuts for c in (cut, cut + 2)), len(command)]
    return [command[a:b].strip() for a, b in zip(bounds[::2], bounds[1::2])]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def shell_commands(text: str) -> list[str]:
    """Every command of the ```bash blocks: continuations joined, comments and blanks dropped."""
    commands = []
    for block in blocks(text, "bash"):
        for line in re.sub(r"\\\n", " ", block).splitlines():
            line = strip_comment(line).strip()
            if line:
                commands.append(line)
    return commands


def readme_files(text: str) -> dict[str, str]:
    """The ```yaml / ```sql blocks whose first line is a comment naming their file."""
    files = {}
    for lang in ("yaml", "sql"):
        for block in blocks(text, lang):
            m = re.match(r"(?:#|--)\s*([\w./-]+\.(?:yaml|yml|sql))\b", block)
            if m:
                files[m.group(1)] = block
    return files


TEXT = README.read_text()
COMMANDS = shell_commands(TEXT)
PARTS = [part for c in COMMANDS for part in split_chain(c)]
RUNNABLE = [p for p in PARTS if shlex.split(p)[:3] in (TRAIN, BENCH, PREDICT, BACKTEST, SUGGEST)
            or shlex.split(p)[:1] == RELBENCH]


def ci_command() -> str:
    return next(line.strip() for line in CI.read_text().splitlines()
                if line.startswith("python3 -m venv"))


def test_reading_the_readme():
    text = ("```bash\npython -m rdl.train a=1 \\\n  b=2   # a comment\n# only a comment\n\n"
            "x 'y # z' && . v && p \"q && r\"\n```\n```yaml\n# dir/f.yaml\nk: 1\n```\n")
    assert shell_commands(text) == ["python -m rdl.train a=1    b=2",
                                    "x 'y # z' && . v && p \"q && r\""]
    assert split_chain(shell_commands(text)[1]) == ["x 'y # z'", ". v", 'p "q && r"']
    assert readme_files(text) == {"dir/f.yaml": "# dir/f.yaml\nk: 1\n"}
    # the README has what this file checks
    assert ci_command() in COMMANDS
    assert len(RUNNABLE) >= 10, RUNNABLE


def test_links():
    """The files the README and docs/ link to exist."""
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


# -- install commands ---------------------------------------------------------------------------
def _extras() -> set[str]:
    try:
        import tomllib
    except ImportError:                      # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def test_install_commands():
    """Nothing is installed: each venv / activate / pip step is one the README may show, the
    extras exist, a pinned torch is CI's, and every test command is exactly CI's."""
    ci = ci_command()
    pin = re.search(r"torch==(\S+)", ci).group(1)
    extras = _extras()
    checked = 0
    for command in COMMANDS:
        parts = split_chain(command)
        if any(shlex.split(p)[:3] == ["python", "-m", "pytest"] for p in parts):
            assert command == ci, f"README's test command is not .ci/run's:\n{command}\n{ci}"
        for part in parts:
            argv = shlex.split(part)
            if argv[:2] == ["pip", "install"]:
                checked += 1
                args = argv[2:]
                if "--index-url" in args:     # PyTorch's CPU wheels, for torch alone
                    i = args.index("--index-url")
                    assert args[i + 1] == CPU_INDEX and args[:i] == [f"torch=={pin}"], part
                    args = args[:i] + args[i + 2:]
                for arg in args:
                    target = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", arg)
                    if target:
                        missing = set((target.group(1) or "").split(",")) - {""} - extras
                        assert not missing, f"{part}: no extra {sorted(missing)} in pyproject.toml"
                    elif arg.startswith("torch=="):
                        assert arg == f"torch=={pin}", f"{part}: .ci/run installs torch=={pin}"
                    else:
                        assert arg in ("-e", "--editable", "torch"), f"{part}: unexpected {arg!r}"
            else:
                assert (argv in (["python3", "-m", "venv", ".venv"], [".", ".venv/bin/activate"])
                        or argv[:3] in (TRAIN, BENCH, PREDICT, BACKTEST, SUGGEST,
                                        ["python", "-m", "pytest"]) or argv[:1] == RELBENCH), \
                    f"test_readme.py does not know how to check {part!r}"
    assert checked >= 3


# -- running commands ---------------------------------------------------------------------------
def tiny_overrides() -> list[str]:
    """``data=hm-tiny``'s sizes as value overrides (a command's own ``data=`` choice stays),
    one epoch of two batches, a small model, eager."""
    return [f"data.db.scale={TINY_DATA.db.scale}", f"data.batch_size={TINY_DATA.batch_size}",
            f"data.num_neighbors=[{','.join(map(str, TINY_DATA.num_neighbors))}]",
            "trainer.max_epochs=1", "trainer.limit_train_batches=2", "trainer.limit_val_batches=1",
            "trainer.limit_test_batches=1", "model.channels=16", "model.encoder_layers=1",
            "compile.enabled=false"]


def multirun(argv: list[str]) -> bool:
    return bool({"-m", "--multirun"} & set(argv[3:]))


def overrides(argv: list[str]) -> list[str]:
    return [a for a in argv[3:] if "=" in a and not a.startswith("-")]


def compose(argv: list[str], root: Path):
    from hydra import compose as hydra_compose, initialize_config_dir
    with initialize_config_dir(config_dir=str(rdl.CONF_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=[*overrides(argv),
                                                  f"trainer.default_root_dir={root}"])


def gpus_missing(argv: list[str], root: Path) -> str | None:
    """Why a command cannot run here (it wants more GPUs than there are), else None."""
    if not any(a.startswith(("trainer=", "experiment=")) for a in overrides(argv)):
        return None  # a trainer or an experiment (experiment=gpu) chooses the accelerator
    trainer = compose(argv, root).trainer
    if trainer.accelerator not in ("gpu", "cuda"):
        return None
    import torch
    want, have = int(trainer.devices), torch.cuda.device_count()
    return None if have >= want else f"needs {want} CUDA device(s), {have} here"


def write_relbench(db, folder: Path) -> None:
    """``db`` as RelBench's ``Table.save`` writes it: parquet with its keys in the metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    folder.mkdir(parents=True)
    for name, tab in db:
        table = pa.Table.from_pandas(tab.df, preserve_index=False)
        meta = {"fkey_col_to_pkey_table": tab.fkeys, "pkey_col": tab.pkey,
                "time_col": tab.time_col}
        pq.write_table(table.replace_schema_metadata({**table.schema.metadata, **{
            k: json.dumps(v).encode() for k, v in meta.items()}}), folder / f"{name}.parquet")


class Project:
    """A user's scratch folder (with the README's files), a fake ``$HOME`` holding RelBench's
    rel-hm files, a Kaggle folder, one rdl cache, and the runs of the selected commands."""

    def __init__(self, root: Path, commands: list[str]):
        from rdl.data import synthetic_hm
        from rdl.data.hm import synthetic_hm_db
        from rdl.data.kaggle import write_kaggle
        from rdl.data.forum import write_forum
        self.root, self.cwd, self.home = root, root / "project", root / "home"
        self.cwd.mkdir()
        # The files of the README's data=folder example (a tiny generated forum, with the
        # schema docs/data.md shows: tests/test_forum.py)
        write_forum(self.cwd / "forum", scale=TINY_DATA.db.scale)
        for name, text in readme_files(TEXT).items():
            (self.cwd / name).parent.mkdir(parents=True, exist_ok=True)
            (self.cwd / name).write_text(text)
        scale = TINY_DATA.db.scale
        self.kaggle = write_kaggle(synthetic_hm.generate(seed=0, scale=scale), root / "kaggle")
        # Also fills the cache before the runs start, so that none of them writes it.
        db = synthetic_hm_db(seed=0, scale=scale, cache_dir=root / "cache")
        write_relbench(db, self.home / ".cache" / "relbench" / "rel-hm" / "db")
        relbench_missing = self.relbench_datasets()
        self.env = {**os.environ, "HOME": str(self.home), "RDL_CACHE": str(root / "cache"),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                    "HYDRA_FULL_ERROR": "1", "OMP_NUM_THREADS": "1"}
        self.skipped = {c: why for c in commands
                        if (why := gpus_missing(shlex.split(c), root)) is not None}
        self.skipped.update({c: relbench_missing for c in commands
                             if relbench_missing and ("data=relbench" in c
                                                      or shlex.split(c)[:1] == RELBENCH)})
        todo = [c for c in commands if c not in self.skipped]
        self.pool = ThreadPoolExecutor(WORKERS)
        # The finished run the README's resume and predict commands name: started first.
        self.finished = self.root / "finished"
        # It is the README's main command's run too, where that is selected (one run, not two).
        self.runs = {}
        if any(RUN_DIR in c or SOME_CKPT in c or SWEEP_DIR in c for c in todo):
            self.base = self.pool.submit(self.run, -1, MAIN)
            if MAIN in todo:
                self.runs[MAIN] = self.base
        # (The graph cache is written file by file through a rename: runs may race on it.)
        self.runs.update({c: self.pool.submit(self.run, i, c) for i, c in enumerate(todo)
                          if c not in self.runs})

    def relbench_datasets(self) -> str | None:
        """RelBench's fake dataset where the README's RelBench commands look (1.x layout in
        RelBench's cache, 3.x in the project folder); why not, if it cannot be written."""
        try:
            from relbench_fake import relbench3, write_v1, write_v3
            v1 = write_v1(self.home / ".cache" / "relbench" / "rel-amazon")
        except ImportError:
            return "needs the relbench test extra"
        target = relbench3(self.root / "relbench-3")
        if target is None:
            return "needs relbench==3.0.2 from pip"
        write_v3(v1, self.cwd / "rel-amazon", target)
        return None

    def command_line(self, i: int, command: str) -> tuple[str, Path]:
        out = self.finished if i < 0 else self.root / "runs" / str(i)
        if RUN_DIR in command or SOME_CKPT in command or SWEEP_DIR in command:
            _, _, proc = self.base.result()
            assert proc.returncode == 0, proc.stderr[-3000:]
            # a sweep's folder: the finished run's (rdl.backtest compares whatever runs a
            # folder holds; the README's sweep itself runs under -m slow)
            command = command.replace(RUN_DIR, str(self.finished)).replace(
                SOME_CKPT, f"ckpt_path={self.finished / 'checkpoints' / 'best.ckpt'}").replace(
                SWEEP_DIR, str(self.finished))
        argv = shlex.split(command)
        if argv[:3] == BENCH:
            return f"{command} --help", out
        if argv[:3] in (BACKTEST, SUGGEST):
            return command, self.finished
        if argv[:3] == PREDICT:
            return f"{command} hydra.run.dir={out}", out
        if argv[:1] == RELBENCH:   # every task trained tiny, its runs and files in out
            extra = [o for o in tiny_overrides() if not o.startswith("data.db.scale=")]
            line = shlex.join(["python", "-m", "rdl.leaderboard", *argv[1:], "--out", str(out),
                               *extra])
            return line, out
        extra = tiny_overrides()
        if "data=folder" in argv or "data=relbench" in argv:  # files: their size is theirs
            extra = [o for o in extra if not o.startswith("data.db.scale=")]
        extra.append(f"hydra.{'sweep' if multirun(argv) else 'run'}.dir={out}")
        if "data=hm-kaggle" in argv:
            extra.append(f"data.db.path={self.kaggle}")
        return f"{command} {' '.join(map(shlex.quote, extra))}", out

    def run(self, i: int, command: str):
        line, out = self.command_line(i, command)
        plain = line.replace("$PWD", str(self.cwd)).replace("$HOME", self.env["HOME"])
        argv = None if set(plain) & set("$|;&<>`*~") else shlex.split(plain)
        if argv and argv[0] == "python":     # no shell needed: the zygote's fork, if it can
            proc = zygote_run([sys.executable, *argv[1:]], env=self.env, cwd=self.cwd,
                              timeout=TIMEOUT)
        else:
            proc = subprocess.run(["bash", "-c", line], cwd=self.cwd, env=self.env,
                                  capture_output=True, text=True, timeout=TIMEOUT)
        return line, out, proc


@pytest.fixture(scope="module")
def project(request, tmp_path_factory):
    """Starts every selected command at once (a few at a time); each test waits for its own."""
    selected = [item.callspec.params["command"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_readme_command"]
    p = Project(tmp_path_factory.mktemp("readme"), list(dict.fromkeys(selected)))
    yield p
    p.pool.shutdown(wait=True, cancel_futures=True)


def check_metrics(path: Path) -> None:
    results = json.loads(path.read_text())
    for split in ("val", "test"):
        values = results["model"][split].values()
        assert values and all(math.isfinite(v) for v in values), (path, results)


#: README commands whose settings other CI tests train with already (test_train.py: the
#: graph transformer, no tree prior; plain value overrides): run with ``pytest -m slow``,
#: to keep CI under 15 minutes on 2 cores
SLOW_COMMANDS = {
    "python -m rdl.train task=user-churn model=graph-transformer",
    "python -m rdl.train task=item-sales data.tree_prior=false",
    # tests/training/test_tree_prior.py starts item-sales' model from it
    "python -m rdl.train task=item-sales data.prior_from=trees",
    "python -m rdl.train task=user-churn model.channels=64 trainer.max_epochs=2 lr=0.001",
    "python -m rdl.train compile.cpu_patches=false keep_freed_memory=false",
    # test_train.py's and test_predict.py's short runs train these three already
    "python -m rdl.train task=item-sales",
    "python -m rdl.train task=user-item-purchase model=idgnn",
    "python -m rdl.train task=user-item-purchase",
    # tests/test_correction.py trains with one factor; the default scales every CI run
    "python -m rdl.train task=item-sales evaluation.correction_scales=[1.0]",
    # sweeps: test_search.py runs rdl.train -m end to end (Hydra's launcher, a sweeper,
    # resumed); moved splits end to end: test_report.py
    "python -m rdl.train -m task=user-churn backtest=0,2,4,6,8",
    "python -m rdl.train -m task=user-churn,item-sales lr=0.001,0.005",
    # tests/test_relbench_train.py trains rel-hm through RelBench's files in CI
    "python -m rdl.train data=hm-relbench data.db.path=$HOME/.cache/relbench/rel-hm",
    # tests/test_events_tasks.py trains the command rdl.tasks.suggest prints for the forum
    "python -m rdl.train data=folder data.db.path=forum task=events task.entity_table=users "
    "task.val_timestamp=2024-06-16 task.test_timestamp=2024-06-23",
    # every task of the fake dataset: tests/test_relbench_workflow.py runs it in CI
    "rdl-relbench rel-amazon --out rel-amazon-rdl trainer.max_epochs=2",
}


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=pytest.mark.slow) if c in SLOW_COMMANDS else c for c in RUNNABLE])
def test_readme_command(project, command):
    argv = shlex.split(command)
    if command in project.skipped:
        # Not runnable here: the config composes and its Trainer is built on the CPU.
        import pytorch_lightning as pl
        from hydra.utils import instantiate
        trainer = instantiate(compose(argv, project.root).trainer, accelerator="cpu",
                              logger=False, enable_checkpointing=False)
        assert isinstance(trainer, pl.Trainer)
        pytest.skip("composed and built its Trainer on the CPU; running it "
                    + project.skipped[command])
    line, out, proc = project.runs[command].result()
    log = f"$ {line}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-5000:]}"
    assert proc.returncode == 0, log
    if argv[:3] == BENCH:
        missing = [a for a in argv if a.startswith("--") and a not in proc.stdout]
        assert not missing, f"options not in --help: {missing}\n{log}"
    elif argv[:1] == RELBENCH:
        assert list((out / "submission").glob("*__*.csv")), log
    elif argv[:3] == PREDICT:
        written = re.search(r"\d+ predictions written to (\S+)", proc.stdout)
        assert written and Path(written.group(1)).exists(), log
    elif argv[:3] == SUGGEST:   # it prints the README's command of task=events, dates and all
        shown = next(shlex.split(c) for c in RUNNABLE if " task=events " in f"{c} "
                     and shlex.split(c)[:3] == TRAIN)
        printed = [shlex.split(line) for line in proc.stdout.splitlines()
                   if line.startswith(" ".join(TRAIN))]
        assert any(set(shown) <= set(p) for p in printed), log
    elif argv[:3] == BACKTEST:
        assert re.search(r"^\| LightGBM +\|", proc.stdout, re.M), log  # the lead table's row
        assert (out / "backtest.md").read_text() in proc.stdout, log
    elif {"--cfg", "-c"} & set(argv[3:]):
        assert "_target_" in proc.stdout, log
    elif multirun(argv):
        jobs = int(re.search(r"Launching (\d+) jobs", proc.stdout + proc.stderr).group(1))
        written = sorted(out.glob("*/metrics.json"))
        assert len(written) == jobs > 1, log
        for path in written:
            check_metrics(path)
    else:
        assert (out / "metrics.json").exists(), log
        check_metrics(out / "metrics.json")
