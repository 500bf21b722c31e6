"""PostgreSQL's ``pg_dump`` archives: the custom format (``pg_dump -Fc``, ``PGDMP`` its first
bytes: ``.dump``, ``.backup``), the tar format (``-Ft``: the ``dvdrental.tar`` of
tutorials) and the directory format (``-Fd``: ``toc.dat`` and a file per table). Each is
read as the plain script ``pg_restore -f`` writes of it, which needs no server, and that
script as any (:mod:`rdl.data.sqlscript`).

Written by hand around PostgreSQL's own reader: the archive's layout is pg_dump's
private format, and pg_restore is the one program that reads every version of it.
"""
from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from rdl.data.database import DataError


def is_archive(path) -> bool:
    """Whether ``path`` is a pg_dump archive (custom, tar or directory format)."""
    path = Path(path)
    if path.is_dir():
        return (path / "toc.dat").is_file()
    if not path.is_file():
        return False
    with open(path, "rb") as f:
        head = f.read(512)
    if head[:5] == b"PGDMP":
        return True
    if head[257:262] != b"ustar":   # (a tar archive's mark)
        return False
    try:
        with tarfile.open(path) as tar:
            return tar.next().name == "toc.dat"
    except (tarfile.TarError, OSError, AttributeError):
        return False


def to_script(path, target) -> Path:
    """pg_dump archive ``path`` as the plain SQL script ``target`` (``pg_restore -f``).

    Raises:
        DataError: pg_restore is not on the PATH, or cannot read the archive (a newer
            pg_dump's than it reads, a damaged file): what to do instead.
    """
    path, target = Path(path), Path(target)
    program = shutil.which("pg_restore")
    convert = f"pg_restore --no-owner --no-privileges -f {path.with_suffix('.sql').name} {path}"
    if program is None:
        raise DataError(f"{path}: a pg_dump archive; rdl reads it through PostgreSQL's "
                        "pg_restore, which is not on the PATH: install PostgreSQL's client "
                        "(apt install postgresql-client; brew install libpq), or, where it is, "
                        f"write its script and give rdl that: {convert}")
    done = subprocess.run([program, "--no-owner", "--no-privileges", "-f", str(target),
                           str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no message"
        raise DataError(f"{path}: pg_restore ({program}) cannot read this pg_dump archive: "
                        f"{why} (an archive of a newer PostgreSQL needs its pg_restore: write "
                        f"the script with it and give rdl that: {convert})")
    return target
