"""What pyarrow reads for a table's file: its name (pyarrow decompresses ``.gz``, ``.bz2``,
``.zst`` and ``.lz4`` by the suffix), or, for a zip archive (``.zip``, as R and spreadsheets
export a table), the bytes of its one file."""
from __future__ import annotations

import zipfile
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from rdl.data.database import DataError


def member(path: Path, where: str) -> str:
    """The one file of zip archive ``path`` (folders and macOS' ``__MACOSX/`` aside).

    Raises:
        DataError: not a zip archive, or it holds no file or several.
    """
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if not n.endswith("/")
                     and not n.startswith("__MACOSX/") and not Path(n).name.startswith(".")]
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"{where}: not a readable zip archive: {e}") from None
    if len(names) != 1:
        raise DataError(f"{where}: holds {len(names)} files ({', '.join(map(repr, names[:5]))})"
                        "; a table's zip archive must hold one CSV file (zip each table on "
                        "its own, or unzip it and name the CSV file)")
    return names[0]


@lru_cache(maxsize=1)
def _unzipped(path: Path, mtime: float) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(member(path, str(path)))


def source(path: Path):
    """What pyarrow reads for ``path``: its name (it decompresses by the suffix), or the
    bytes of a zip archive's one file."""
    if path.suffix.lower() != ".zip":
        return str(path)
    return pa.BufferReader(_unzipped(path, path.stat().st_mtime))


def input_stream(path: Path):
    """``path``'s bytes as a stream (decompressed)."""
    src = source(path)
    return pa.input_stream(src, compression="detect" if isinstance(src, str) else None)

