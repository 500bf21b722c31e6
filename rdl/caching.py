"""Files and cache entries that never lie: written beside, renamed into place when whole.

A file rdl writes whole (metrics, predictions, reports, exports) goes through
:func:`atomic_file`: a temporary file beside it, renamed over it only once the write
completed, removed if the write raised; a reader sees the old file or the new one, never
half of one.

A cache entry (a synthetic database, a materialised graph under :func:`rdl.cache_dir`)
is a folder written the same way: into a temporary folder beside it, named
``.<entry>.tmp-<host>-<pid>-<random>`` (as the temporary files are), and renamed into
place only when complete; a graph entry carries a marker (:data:`MARKER`, written last)
listing its files and their sizes, and is trusted only if they all match. A process
killed while writing leaves its temporary behind: :func:`remove_stale` removes those of
dead processes on this host (and any older than a day, e.g. from another machine sharing
the cache), never a live one's: the processes of a multi-process run (DDP) may build the
same entry at once. A cache folder that cannot be written is not an error: rdl runs
without caching and warns once.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the file of a complete cache entry, written last: ``{file name: size in bytes}``
MARKER = "complete.json"
_TMP = ".tmp-"
_TMP_NAME = re.compile(r"^\..*\.tmp-(?P<host>.+)-(?P<pid>\d+)-[A-Za-z0-9_]+$")
#: a temporary this old is stale whoever wrote it (a build takes minutes, not a day)
MAX_AGE_S = 24 * 3600
_warned: set[Path] = set()


class CacheWarning(UserWarning):
    """rdl runs without its cache (it cannot write there)."""


def _host() -> str:
    return socket.gethostname().replace("/", "_") or "host"


def temp_dir(parent: Path, name: str) -> Path:
    """A new temporary folder in ``parent`` for the entry ``name``, recognisable by
    :func:`remove_stale` (it names this host and process)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}{_TMP}{_host()}-{os.getpid()}-", dir=parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; a cache is for every user
    return tmp


def _temp_name(name: str) -> str:
    """A temporary's name for ``name``, recognisable by :func:`remove_stale`."""
    return f".{name}{_TMP}{_host()}-{os.getpid()}-{secrets.token_hex(4)}"


@contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a new empty temporary file beside ``path`` for the block to write; renames it
    to ``path`` (replacing the old file) when the block completes, removes it if the block
    raises. Made with the permissions of a file opened for writing (``0o666`` less the
    umask)."""
    path = Path(path)
    while True:
        tmp = path.with_name(_temp_name(path.name))
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:  # pragma: no cover (a random name taken)
            continue
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_dir(path: str | os.PathLike, keep_first: bool = False) -> Iterator[Path]:
    """Yields a new temporary folder beside ``path`` (:func:`temp_dir`) for the block to
    fill; when the block completes it becomes ``path``, replacing an existing one, or with
    ``keep_first`` dropped if another process made ``path`` meanwhile. Removed if the block
    raises."""
    path = Path(path)
    tmp = temp_dir(path.parent, path.name)
    try:
        yield tmp
        if not keep_first and path.exists():
            shutil.rmtree(path)
        try:
            os.rename(tmp, path)
        except OSError:
            if not (keep_first and path.exists()):
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process's is in place
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def without_checksums() -> Iterator[None]:
    """``torch.save`` inside the block writes no CRC-32 of its zip records (torch's
    ``torch.utils.serialization.config.save.compute_crc32``, torch >= 2.6). Computing it
    is most of the time of writing a large cache file here (about 130 MB/s: 40 s for the
    4.8 GB of a graph's edges at four times rel-hm's size), and rdl reads its caches
    mapped, where torch checks none (an entry's marker checks every file's size). An
    older torch without the setting saves as before."""
    try:
        from torch.utils.serialization import config
        before = config.save.compute_crc32
    except (ImportError, AttributeError):
        yield
        return
    config.save.compute_crc32 = False
    try:
        yield
    finally:
        config.save.compute_crc32 = before


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """``Path(path).write_text(text)``, through :func:`atomic_file`."""
    with atomic_file(path) as tmp:
        tmp.write_text(text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale(parent: Path, max_age_s: float = MAX_AGE_S) -> list[Path]:
    """Removes the temporaries in ``parent`` left by processes that died (on this host) or
    older than ``max_age_s``; returns them. A live process's temporary is kept."""
    removed = []
    if not parent.is_dir():
        return removed
    for p in parent.iterdir():
        m = _TMP_NAME.match(p.name)
        if m is None:
            continue
        try:
            old = time.time() - p.lstat().st_mtime > max_age_s
        except FileNotFoundError:  # its owner just renamed it into place
            continue
        dead = m["host"] == _host() and not _alive(int(m["pid"]))
        if dead or old:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def finish(tmp: Path) -> None:
    """Writes the marker of the entry being built in ``tmp``: its files and their sizes."""
    files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.name != MARKER}
    (tmp / MARKER).write_text(json.dumps(files, indent=1))


def complete(entry: Path) -> bool:
    """Whether ``entry`` has its marker and every file the marker lists, at its size."""
    try:
        files = json.loads((entry / MARKER).read_text())
        return all((entry / f).stat().st_size == size for f, size in files.items())
    except (OSError, ValueError, AttributeError):
        return False


def publish(tmp: Path, entry: Path) -> None:
    """Renames the finished ``tmp`` to ``entry``. If another process published the entry
    first, ``tmp`` is dropped; an incomplete ``entry`` (an older rdl's, or a damaged one)
    is replaced."""
    for _ in range(3):
        try:
            os.rename(tmp, entry)
            return
        except OSError:
            if not entry.exists():
                raise
        if complete(entry):
            shutil.rmtree(tmp, ignore_errors=True)
            return
        aside = temp_dir(entry.parent, entry.name)
        try:
            os.replace(entry, aside / entry.name)  # atomic: it can never be half-removed
        except FileNotFoundError:
            pass  # another process moved it away
        shutil.rmtree(aside, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)  # lost every race: the entry is someone else's


def writable(folder: Path) -> bool:
    """Whether rdl can write cache entries in ``folder`` (created if needed). If not, warns
    once per folder that rdl runs without caching, and says how to point it elsewhere."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError as e:
        warn_uncached(folder, e)
        return False


def warn_uncached(folder: Path, error: OSError) -> None:
    """The one warning that the cache in ``folder`` is not written."""
    # name the first folder that exists: the cache root when its sub-folders cannot be made
    here = folder
    while not here.exists() and here.parent != here:
        here = here.parent
    # one warning for a cache root and its sub-folders (databases, graphs/)
    if any(here == w or w in here.parents for w in _warned):
        return
    _warned.add(here)
    reason = error.strerror or type(error).__name__
    warnings.warn(f"cannot write the rdl cache in {here} ({reason}): running without caching "
                  "(databases and graphs are built again every run); set RDL_CACHE or "
                  "data.cache_dir to a writable folder", CacheWarning, stacklevel=3)
