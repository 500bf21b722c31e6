"""rdl as an installed package: the wheel ships every config and task SQL file, and from
any directory ``python -m rdl.train`` composes its config from the installed copy."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import rdl

SOURCE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """rdl built as a wheel and installed (without dependencies) into a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp),
                    str(SOURCE)], check=True, capture_output=True, text=True, timeout=600)
    wheel = next(tmp.glob("rdl-*.whl"))
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=600)
    return wheel, target


def test_the_wheel_ships_configs_and_task_sql(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    package = Path(rdl.__file__).parent
    for f in [*package.glob("conf/**/*.yaml"), *package.glob("tasks/**/*.sql")]:
        assert f"rdl/{f.relative_to(package).as_posix()}" in names
    # rdl's Optuna sweeper: Hydra finds sweepers in the hydra_plugins package only
    assert "hydra_plugins/rdl_search/optuna_search.py" in names


def test_the_wheel_declares_its_license(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        assert "License-Expression: MIT" in z.read(meta).decode().splitlines()
        assert any(n.endswith("licenses/LICENSE") for n in z.namelist())


def test_installed_rdl_composes_from_any_directory(installed, tmp_path):
    _, target = installed
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-m", "rdl.train", "task=item-sales", "--cfg", "job"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "name: item-sales" in out.stdout and "sql: hm/item-sales.sql" in out.stdout
    # the task's SQL and the installed copy of rdl are what it found
    check = ("import rdl; from rdl.families.node import NodeTask; "
             "t = NodeTask('x', 'hm/item-sales.sql', 'regression', 'article', 'article_id', 'y', "
             "'7d', '2020-09-07', '2020-09-14'); "
             "print(rdl.__file__, t.sql_path)")
    out = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == [str(target / "rdl" / "__init__.py"),
                                  str(target / "rdl" / "tasks" / "hm" / "item-sales.sql")]


def test_a_users_own_task_sql_in_the_working_directory(tmp_path, monkeypatch):
    from rdl.families.node import NodeTask
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "x.sql").write_text("select 1")
    monkeypatch.chdir(tmp_path)
    dates = ("7d", "2020-09-07", "2020-09-14")
    task = NodeTask("x", "mine/x.sql", "regression", "article", "article_id", "y", *dates)
    # found from the working directory, kept whole (a run's config then works from anywhere)
    assert task.sql_path.is_absolute()
    assert task.sql_path.resolve() == (tmp_path / "mine" / "x.sql").resolve()
    with pytest.raises(FileNotFoundError, match="nope.sql"):
        NodeTask("x", "mine/nope.sql", "regression", "article", "article_id", "y", *dates)


def test_console_scripts_run_the_commands(installed, tmp_path):
    """``rdl-train``, ``rdl-predict`` and ``rdl-backtest`` beside ``python -m``: the same
    command lines."""
    _, target = installed
    env = {**os.environ, "PYTHONPATH": str(target)}
    bin_dir = target / "bin"
    out = subprocess.run([str(bin_dir / "rdl-train"), "task=item-sales", "--cfg", "job"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "name: item-sales" in out.stdout
    out = subprocess.run([str(bin_dir / "rdl-predict"), "--cfg", "job"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ckpt_path: ???" in out.stdout, out.stderr[-2000:]
    out = subprocess.run([str(bin_dir / "rdl-backtest"), "--help"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "usage: rdl-backtest" in out.stdout, out.stderr[-2000:]
