"""Tables in a lake's format, a folder of parquet files and a log of which hold the table
now: **Delta Lake** (Databricks, delta-rs: ``_delta_log/``), **Apache Iceberg**
(``metadata/*.metadata.json``) and **Apache Hudi** (``.hoodie/``).

Such a folder keeps the files a later write replaced (an update, a delete, an overwrite
rewrites whole files and logs the old ones removed) until it is vacuumed: read as a folder
of parts, its rows would be read with their older versions, and its deleted rows too. A
Delta table's files are therefore the ones its log holds now (:func:`delta_files`): its
JSON commits replayed (``add`` and ``remove``), from its newest classic checkpoint where
the earlier commits are gone. The log is plain JSON and the checkpoint parquet, so rdl
reads them itself (``deltalake``, which reads them too, is a 50 MB wheel, for a list of
file names). What it cannot apply stops the load naming it: rows deleted by deletion
vectors, columns renamed by column mapping, files outside the folder. Iceberg's manifests
and Hudi's timeline are not read: such a folder stops the load, asking for a snapshot
exported as parquet.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq

from rdl.data.database import DataError

_COMMIT = re.compile(r"(\d{20})\.json")
_CHECKPOINT = re.compile(r"(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet")


def kind(folder: Path) -> str | None:
    """The lake format of a table's folder (``delta``, ``iceberg``, ``hudi``), or None."""
    if (folder / "_delta_log").is_dir():
        return "delta"
    if (folder / ".hoodie").is_dir():
        return "hudi"
    if any((folder / "metadata").glob("*.metadata.json")):
        return "iceberg"
    return None


def files(folder: Path) -> list[Path]:
    """The parquet files that hold a lake table's rows now, in name order.

    Raises:
        DataError: an Iceberg or Hudi table, or a Delta log rdl cannot apply.
    """
    found = kind(folder)
    if found == "delta":
        return delta_files(folder)
    log, says = ("metadata/", "manifests") if found == "iceberg" else (".hoodie/", "timeline")
    raise DataError(f"{folder}: an Apache {found.capitalize()} table ({log}): which of its "
                    f"files hold its rows now its {says} say, and rdl reads them not (its "
                    "folder also holds the files later writes replaced); export a snapshot of "
                    "it as parquet (Spark: spark.table(...).write.parquet(...); Trino or "
                    "DuckDB: COPY ... TO 't.parquet')")


def delta_files(folder: Path) -> list[Path]:
    """A Delta table's live files: its log replayed (see the module's docstring)."""
    log_dir, where = folder / "_delta_log", f"{folder} (a Delta Lake table)"
    commits = {int(m.group(1)): p for p in log_dir.iterdir() if (m := _COMMIT.fullmatch(p.name))}
    if not commits:
        raise DataError(f"{where}: _delta_log/ holds no commit (00000000000000000000.json, "
                        "...): copy the table's whole folder")
    latest, start, live = max(commits), 0, {}
    if any(v not in commits for v in range(0, latest + 1)):   # (early commits cleaned up)
        start = _checkpoint(log_dir, commits, latest, where, live)
    config: dict = {}
    for version in range(start, latest + 1):
        for line in commits[version].read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
            elif "metaData" in action:
                config = action["metaData"].get("configuration") or {}
    return _checked(folder, where, live, config)


def _checkpoint(log_dir: Path, commits: dict, latest: int, where: str, live: dict) -> int:
    """Fills ``live`` from the newest classic checkpoint (one parquet file, or its parts)
    after which every commit is kept; returns the first commit to replay after it."""
    parts: dict[int, list[Path]] = {}
    for p in log_dir.iterdir():
        if (m := _CHECKPOINT.fullmatch(p.name)):
            parts.setdefault(int(m.group(1)), []).append(p)
    usable = [v for v in parts if all(c in commits for c in range(v + 1, latest + 1))]
    if not usable:
        raise DataError(f"{where}: its first commits are gone from _delta_log/ and no "
                        "checkpoint (NNN.checkpoint.parquet) stands in for them: copy the "
                        "table's whole folder, or export it as parquet")
    version = max(usable)
    for p in sorted(parts[version]):
        for row in pq.read_table(p, columns=["add"]).column("add").to_pylist():
            if row is not None:
                live[row["path"]] = row
    return version + 1


def _checked(folder: Path, where: str, live: dict, config: dict) -> list[Path]:
    mode = config.get("delta.columnMapping.mode", "none")
    if mode != "none":
        raise DataError(f"{where}: its columns are mapped (delta.columnMapping.mode: {mode}): "
                        "its files name them otherwise than the table does; export it as "
                        "parquet")
    deleted = [p for p, a in live.items() if a.get("deletionVector")]
    if deleted:
        raise DataError(f"{where}: {len(deleted)} of its {len(live)} files have rows deleted "
                        f"by deletion vectors (e.g. {unquote(deleted[0])}), which rdl does not "
                        "apply: rewrite them (REORG TABLE ... APPLY (PURGE)), or export the "
                        "table as parquet")
    out = []
    for path in live:
        if urlparse(path).scheme:
            raise DataError(f"{where}: its log names a file outside its folder ({path}): a "
                            "shallow clone? export the table as parquet")
        out.append(folder / unquote(path))
    missing = [p for p in out if not p.is_file()]
    if missing:
        raise DataError(f"{where}: {len(missing)} of the {len(out)} files its log holds are "
                        f"missing (e.g. {missing[0].relative_to(folder)}): copy the table's "
                        "whole folder")
    return sorted(out)
