"""A RelBench task folder read as rdl's task, with no SQL or YAML to write: ``task=relbench
task.path=<dataset>/tasks/<task>``.

Two layouts, as RelBench writes them:

* **3.x**: ``tasks/<task>/manifest.yaml`` (RelBench's ``TaskManifest``): its ``task_type``
  (``recommendation`` is rdl's link prediction), entity or source/destination tables and
  columns, window (``timedelta``), number of evaluation times, the columns to hide, and a
  ``forecast`` task's SQL, which rdl runs itself (so backtests and ``split=now`` work); the
  split times are the dataset manifest's (``<dataset>/manifest.yaml``).
* **1.x/2.x**: ``tasks/<task>/{train,val,test}.parquet`` with RelBench's key metadata in
  the parquet schema: the entity is the foreign key, the time its ``time_col``; the target
  is the one other column; the kind follows from it (lists: link prediction; 0/1: binary
  classification; else regression, with a warning where whole numbers may be classes; text
  stops; ``task.kind`` overrides); the window is the step between
  the train times, the split times the first val and test times. A label column that is
  also a column of the entity table marks an autocomplete task (that column is hidden).

Every value read can be set instead (``task.kind=``, ``task.window=``, ...). Metrics are the
kind's (:meth:`~rdl.tasks.kinds.Kind.default_metrics`), unless ``metrics`` names others.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from rdl.data.database import DataError
from rdl.data.relbench import MANIFEST, META_KEYS, dataset_folder, dataset_times, table_specs
from rdl.graph.columns import LIST_TYPES
from rdl.tasks.relbench_task import AUTO_KEY

log = logging.getLogger(__name__)

SPLIT_FILES = ("train", "val", "test")


def task_spec(path, given: dict, dataset=None) -> tuple[Path, dict]:
    """The task folder ``path`` and what it says of its task (see the module's docstring),
    each value of ``given`` that is not None instead. Its ``kind`` is rdl's name of a
    kind or RelBench's ``task_type`` (a 3.x manifest's): :func:`rdl.families.relbench_task`
    finds the family that trains it and makes the task. ``dataset``: its dataset's folder
    (``task=relbench`` passes ``data.db.path``); None: the folder two above ``path``
    (``<dataset>/tasks/<task>``)."""
    if path is None or str(path) in ("", "???"):
        raise DataError("no task folder given: task=relbench needs task.path=<dataset>/tasks/<task>")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (task.path: a RelBench task folder, "
                        "<dataset>/tasks/<task>)")
    dataset = (folder.parent.parent if dataset in (None, "", "???")
               else dataset_folder(dataset)[0])
    if (folder / MANIFEST).is_file():
        spec = _from_manifest(folder, dataset)
    elif all((folder / f"{s}.parquet").is_file() for s in SPLIT_FILES):
        spec = _from_files(folder, dataset, given.get("kind"))
    else:
        raise DataError(f"{folder}: not a RelBench task folder: neither {MANIFEST} (3.x) nor "
                        "train.parquet, val.parquet and test.parquet (1.x/2.x)")
    spec.update({k: v for k, v in given.items() if v is not None})
    spec.setdefault("name", folder.name)
    return folder, spec


def count_classes(folder: Path, spec: dict) -> int:
    """A multiclass task's number of classes: one more than the largest label RelBench's
    label files beside its manifest hold (classes are ``0..C-1``)."""
    files = [folder / f"{s}.parquet" for s in SPLIT_FILES]
    if not all(f.is_file() for f in files):
        raise DataError(f"task {spec['name']!r}: a multiclass task needs task.num_classes= "
                        f"({folder} has no label files to count its classes in)")
    top = max(pq.read_table(f, columns=[spec["target_col"]]).column(0).to_pandas().max()
              for f in files)
    return int(top) + 1


def _from_manifest(folder: Path, dataset: Path) -> dict:
    """What a 3.x task manifest says (and its dataset's split times)."""
    file = folder / MANIFEST
    try:
        m = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        raise DataError(f"{file}: not valid YAML: {e}") from None
    if not isinstance(m, dict) or "task_type" not in m:
        raise DataError(f"{file}: not a RelBench task manifest (no task_type)")
    times = dataset_times(dataset) if (dataset / MANIFEST).is_file() else None
    if times is None:
        raise DataError(f"{dataset / MANIFEST}: missing; a 3.x task's split times are its "
                        "dataset's (or give task.val_timestamp= and task.test_timestamp=)")
    val, test = (str(t) for t in times)
    # a recommendation task names a source and a destination (its kind: the family's)
    link = "src_entity_table" in m
    spec = dict(kind=m["task_type"], window=m.get("timedelta") or "1s", val_timestamp=val,
                test_timestamp=test, num_eval_timestamps=int(m.get("num_eval_timestamps") or 1),
                remove_columns=[list(p) for p in m.get("remove_columns") or []])
    if link:
        spec.update(entity_table=m["src_entity_table"], entity_col=m["src_entity_col"],
                    target_table=m["dst_entity_table"], target_col=m["dst_entity_col"],
                    eval_k=int(m.get("eval_k") or 12))
    else:
        spec.update(entity_table=m["entity_table"], entity_col=m.get("entity_col"),
                    target_col=m["target_col"])
    spec["time_col"] = m.get("time_col") or "timestamp"
    how = m.get("kind", "forecast")
    if how == "forecast":
        if not m.get("sql"):
            raise DataError(f"{file}: a forecast task without sql")
        spec.update(sql=None, query=m["sql"])
    elif how == "autocomplete":
        spec.update(_autocomplete(dataset, spec["entity_table"], val, test),
                    sql=None, window="1s")
    else:  # external: labels served as files
        spec.update(sql=None, labels=str(folder))
    return spec


def _autocomplete(dataset: Path, table: str, val: str, test: str) -> dict:
    """An autocomplete task's entity key and time column, from its table's metadata, and
    the end of its rows (the graph holds the test rows: each is a seed at its own time)."""
    ds, db_dir = dataset_folder(dataset)
    specs = table_specs(ds, db_dir)
    if table not in specs:
        raise DataError(f"{dataset}: no table {table!r} for the autocomplete task")
    t = specs[table]
    if t.time_col is None:
        raise DataError(f"{t.where()}: an autocomplete task's table needs a time column")
    end = pq.read_table(t.file, columns=[t.time_col]).column(0).to_pandas().max()
    return dict(autocomplete=True, entity_col=t.pkey or AUTO_KEY, time_col=t.time_col,
                dataset_val=val, dataset_test=test,
                test_timestamp=str(max(pd.Timestamp(end), pd.Timestamp(test))))


def _from_files(folder: Path, dataset: Path, kind: str | None = None) -> dict:
    """What 1.x/2.x label files say, read from their metadata and their values (``kind``:
    the one given, else read from the labels)."""
    tables = {}
    for split in SPLIT_FILES:
        file = folder / f"{split}.parquet"
        try:
            t = pq.read_table(file)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{file}: not a readable parquet file: {e}") from None
        raw = t.schema.metadata or {}
        if not all(k.encode() in raw for k in META_KEYS):
            raise DataError(f"{file}: its parquet schema lacks RelBench's metadata "
                            f"{list(META_KEYS)}; not a RelBench task file")
        meta = {k: json.loads(raw[k.encode()].decode()) for k in META_KEYS}
        tables[split] = (t.to_pandas(), meta)
    df, meta = tables["train"]
    fkeys, time_col = meta["fkey_col_to_pkey_table"], meta["time_col"]
    rest = [c for c in df.columns if c not in (time_col, *fkeys)]
    where = f"{folder / 'train.parquet'}"
    if time_col is None or time_col not in df.columns:
        raise DataError(f"{where}: no time column in its metadata")
    lists = [c for c in fkeys if len(df) and isinstance(df[c].iloc[0], LIST_TYPES)]
    spec = dict(sql=None, labels=str(folder), time_col=time_col)
    if lists:  # recommendation: a source key and a list of destination keys
        dst = lists[0]
        src = [c for c in fkeys if c != dst]
        if len(src) != 1:
            raise DataError(f"{where}: a link task needs one source key and one list of "
                            f"destinations; its keys are {fkeys}")
        spec.update(kind="link_prediction", entity_table=fkeys[src[0]], entity_col=src[0],
                    target_table=fkeys[dst], target_col=dst,
                    eval_k=12)
    else:
        if len(fkeys) != 1 or len(rest) != 1:
            raise DataError(f"{where}: expected one entity key and one target column; it has "
                            f"keys {fkeys} and columns {rest}")
        (col, table), target = next(iter(fkeys.items())), rest[0]
        spec.update(kind=kind or _label_kind(df[target], where, target),
                    entity_table=table, entity_col=col, target_col=target)
        auto = _autocomplete_of_files(dataset, table, target, time_col, folder)
        if auto:
            spec.update(auto)
    times = {s: pd.to_datetime(tables[s][0][time_col]) for s in SPLIT_FILES}
    train_times = times["train"].drop_duplicates().sort_values()
    if spec.get("autocomplete"):
        spec.update(window="1s", val_timestamp=str(times["train"].max()),
                    dataset_val=str(times["train"].max()), dataset_test=str(times["val"].max()))
        spec.setdefault("test_timestamp", str(times["test"].max()))
        return spec
    if len(train_times) < 2:
        raise DataError(f"{where}: one train time only; the window cannot be read from it "
                        "(give task.window=)")
    spec.update(window=str(train_times.diff().dropna().min()),
                val_timestamp=str(times["val"].min()), test_timestamp=str(times["test"].min()),
                num_eval_timestamps=int(max(times["val"].nunique(), times["test"].nunique())))
    return spec


def _label_kind(labels: pd.Series, where: str, target: str) -> str:
    """A 1.x/2.x node task's kind, read from its labels (the files do not say it): 0/1 is
    binary classification, other numbers regression; whole numbers of several values may be
    classes, which a warning says; text labels stop (rdl's classes are numbers)."""
    y = labels.dropna()
    if not (pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y)):
        values = sorted(map(str, y.unique()))
        raise DataError(
            f"{where}: label column {target!r} holds text in {len(y)} rows ({len(values)} "
            f"values, e.g. {values[:5]}): rdl reads class labels as numbers 0..C-1; write "
            "each class as its number (and give task.kind=multiclass_classification)")
    if y.isin([0, 1]).all() and y.nunique() == 2:
        return "binary_classification"
    whole = np.isfinite(y.to_numpy(dtype="float64")).all() and (y % 1 == 0).all()
    if whole and y.nunique() > 2:
        log.warning("%s: label column %r holds whole numbers (%d values, %s to %s): read as "
                    "regression; if they are classes, give task.kind=multiclass_classification",
                    where, target, y.nunique(), y.min(), y.max())
    return "regression"


def _autocomplete_of_files(dataset: Path, table: str, target: str, time_col: str,
                           folder: Path) -> dict:
    """An autocomplete task's settings if ``target`` is a column of its entity table and the
    label times are that table's times, else {}. Without its dataset this cannot be told,
    and an autocomplete task read as another would keep its label a feature of the very
    row it predicts: that stops."""
    try:
        ds, db_dir = dataset_folder(dataset)
        specs = table_specs(ds, db_dir)
    except DataError as e:
        raise DataError(
            f"{folder}: its dataset is not at {dataset} ({e}), so rdl cannot tell whether "
            f"label {target!r} is a column of table {table!r} (an autocomplete task, whose "
            "column must be hidden from the model); give the dataset: task.dataset=<dataset> "
            "(data=relbench passes data.db.path)") from None
    t = specs.get(table)
    if t is None or t.time_col != time_col or target not in pq.read_schema(t.file).names:
        return {}
    end = pq.read_table(t.file, columns=[t.time_col]).column(0).to_pandas().max()
    return dict(autocomplete=True, test_timestamp=str(pd.Timestamp(end)))
