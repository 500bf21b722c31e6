"""Tables in a lake's format, a folder of parquet files and a log of which hold the table
now: **Delta Lake** (Databricks, delta-rs: ``_delta_log/``), **Apache Iceberg** (Snowflake,
Athena, Trino, pyiceberg: ``metadata/*.metadata.json``) and **Apache Hudi** (``.hoodie/``).

Such a folder keeps the files a later write replaced (an update, a delete, an overwrite
rewrites whole files and logs the old ones removed) until it is vacuumed: read as a folder
of parts, its rows would be read with their older versions, and its deleted rows too. A
Delta table's files are therefore the ones its log holds now (:func:`delta_files`): its
JSON commits replayed (``add`` and ``remove``), from its newest classic checkpoint where
the earlier commits are gone. An Iceberg table's are those its current snapshot lists
(:func:`iceberg_files`): its newest metadata, its manifest list, its manifests' entries
not deleted. The logs are JSON, parquet and Avro, so rdl reads them itself (``deltalake``
and ``pyiceberg``, which read them too, are large packages, for a list of file names).
What it cannot apply stops the load naming it: rows deleted by deletion vectors or
delete files, columns renamed by column mapping, files outside the folder. Hudi's
timeline is not read: such a folder stops the load, asking for a snapshot exported as
parquet.
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
        DataError: a Hudi table, or a Delta or Iceberg log rdl cannot apply.
    """
    found = kind(folder)
    if found == "delta":
        return delta_files(folder)
    if found == "iceberg":
        return iceberg_files(folder)
    raise DataError(f"{folder}: an Apache Hudi table (.hoodie/): which of its files hold its "
                    "rows now its timeline says, and rdl reads it not (its folder also holds "
                    "the files later writes replaced); export a snapshot of it as parquet "
                    "(Spark: spark.table(...).write.parquet(...))")


def delta_files(folder: Path) -> list[Path]:
    """A Delta table's live files: its log replayed (see the module's docstring)."""
    log_dir, where = folder / "_delta_log", f"{folder} (a Delta Lake table)"
    commits = {int(m.group(1)): p for p in log_dir.iterdir() if (m := _COMMIT.fullmatch(p.name))}
    if not commits:
        raise DataError(f"{where}: _delta_log/ holds no commit (00000000000000000000.json, "
                        "...): copy the table's whole folder")
    latest, start, live, meta = max(commits), 0, {}, {}
    if any(v not in commits for v in range(0, latest + 1)):   # (early commits cleaned up)
        start = _checkpoint(log_dir, commits, latest, where, live, meta)
    for version in range(start, latest + 1):
        for line in commits[version].read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
            elif "metaData" in action:
                meta.update(action["metaData"])
    return _checked(folder, where, live, meta)


def iceberg_files(folder: Path) -> list[Path]:
    """An Iceberg table's live data files: its newest metadata's current snapshot, its
    manifest list, and the entries of its manifests not deleted (Avro, read by fastavro;
    paths written under the table's location read below ``folder``, wherever it was
    copied to)."""
    where, meta_dir = f"{folder} (an Apache Iceberg table)", folder / "metadata"
    hint = meta_dir / "version-hint.text"   # (a Hadoop catalog's pointer to its newest)
    named = meta_dir / f"v{hint.read_text().strip()}.metadata.json" if hint.is_file() else None
    found = sorted((int(m.group(1)), p.name) for p in meta_dir.glob("*.metadata.json")
                   if (m := re.match(r"v?(\d+)", p.name)))
    if named is None or not named.is_file():
        if not found:
            raise DataError(f"{where}: no metadata/NNNNN-....metadata.json names its files")
        named = meta_dir / found[-1][1]
    meta = json.loads(named.read_text())
    snapshot = next((s for s in meta.get("snapshots") or []
                     if s.get("snapshot-id") == meta.get("current-snapshot-id")), None)
    if snapshot is None:
        raise DataError(f"{where}: {named.name} has no current snapshot: the table holds no "
                        "rows")
    local = _relocated(folder, meta.get("location", ""), where)
    live = []
    for manifest in _avro(local(snapshot["manifest-list"])):
        for entry in _avro(local(manifest["manifest_path"])):
            file = entry["data_file"]
            if entry["status"] == 2:   # (deleted by this snapshot)
                continue
            if manifest.get("content") or file.get("content"):
                raise DataError(f"{where}: its snapshot deletes rows with delete files "
                                f"({local(file['file_path']).name}: merge-on-read), which rdl "
                                "does not apply: rewrite its data files (Spark: CALL "
                                "system.rewrite_data_files), or export it as parquet")
            if str(file.get("file_format", "PARQUET")).upper() != "PARQUET":
                raise DataError(f"{where}: its data files are {file['file_format']}, not "
                                "parquet: export it as parquet")
            live.append(local(file["file_path"]))
    return _present(folder, where, live)


def _relocated(folder: Path, location: str, where: str):
    """A function from a path the metadata writes (under the table's ``location``, as
    ``s3://bucket/db/orders/data/x.parquet``) to that file below ``folder``."""
    root = location.rstrip("/") + "/"

    def local(path: str) -> Path:
        if not path.startswith(root):
            raise DataError(f"{where}: its metadata names a file outside its location "
                            f"{location} ({path}): export it as parquet")
        return folder / unquote(path[len(root):])
    return local


def _avro(path: Path) -> list[dict]:
    import fastavro   # (only an Iceberg table's manifests need it)
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


def _present(folder: Path, where: str, files: list[Path]) -> list[Path]:
    """``files``, sorted, or an error where any is missing."""
    missing = [p for p in files if not p.is_file()]
    if missing:
        raise DataError(f"{where}: {len(missing)} of the {len(files)} files its log holds are "
                        f"missing (e.g. {missing[0].relative_to(folder)}): copy the table's "
                        "whole folder")
    return sorted(files)


def _checkpoint(log_dir: Path, commits: dict, latest: int, where: str, live: dict,
                meta: dict) -> int:
    """Fills ``live`` (and ``meta``, the table's metadata) from the newest classic
    checkpoint (one parquet file, or its parts) after which every commit is kept; returns
    the first commit to replay after it."""
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
        table = pq.read_table(p)
        for row in table.column("add").to_pylist():
            if row is not None:
                live[row["path"]] = row
        for row in (table.column("metaData").to_pylist() if "metaData" in table.column_names
                    else []):
            if row is not None:   # (a map is a list of pairs in parquet)
                config = row.get("configuration") or {}
                meta.update({**row, "configuration": dict(config) if isinstance(
                    config, list) else config})
    return version + 1


def _checked(folder: Path, where: str, live: dict, meta: dict) -> list[Path]:
    mode = (meta.get("configuration") or {}).get("delta.columnMapping.mode", "none")
    hidden = [p for p in live for c in meta.get("partitionColumns") or []
              if f"{c}=" not in unquote(p)]
    if hidden:   # (partition values live in the log, not in the files: kept in their paths)
        raise DataError(f"{where}: its partition columns {meta['partitionColumns']} are not "
                        f"in the paths of {len(hidden)} of its files (e.g. {hidden[0]}), and "
                        "rdl reads them from paths only: export it as parquet")
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
    return _present(folder, where, out)
