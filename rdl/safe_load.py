"""Files rdl reads back that someone else may have written: checkpoints (``rdl.predict``, a
resumed ``rdl.train``) and the data a machine's first process prepares for the others.

A pickle is code: torch's full unpickler runs whatever callable the file names. These files
are read with torch's weights-only unpickler instead, which builds tensors, numbers, strings
and containers, plus the few types on :func:`allowed`; a file holding anything else is
refused with the types named (:class:`UntrustedFile`). ``trust=True`` (``trust_checkpoint=
true`` on the command line) reads a file you trust with the full unpickler. What rdl writes
for itself to read back holds only such values: :func:`plain` turns tables (pandas frames: a
tensor per column of numbers or times, Arrow's IPC bytes for the others) and NumPy arrays
(as tensors) into them and :func:`unplain` back; loaded with ``mmap``, the arrays and those
columns map the file.

A checkpoint's config is code too: Hydra builds each ``_target_`` it names. Outside
:data:`TARGETS` (rdl's, PyTorch's, Lightning's, the metrics') a target is refused in the
same way (your own model's class: ``trust_checkpoint=true``).
"""
from __future__ import annotations

import pickle
import numpy as np
import pandas as pd
import pyarrow as pa
import torch

#: module prefixes a checkpoint's config may build without ``trust_checkpoint=true``
TARGETS = ("rdl.", "torch.optim.", "torch.nn.", "torchmetrics.", "pytorch_lightning.callbacks.",
           "pytorch_lightning.loggers.", "pytorch_lightning.Trainer", "torch_geometric.nn.",
           "torch_frame.nn.")
OPT_IN = "trust_checkpoint=true"


class UntrustedFile(ValueError):
    """A file holds what rdl does not read without the opt-in."""


def allowed() -> list:
    """Types beyond torch's own that rdl's files hold: the NumPy scalars and dtypes of
    column statistics and metric values."""
    multiarray = getattr(np, "_core", None) or np.core   # numpy 2 / numpy 1.26
    return [multiarray.multiarray.scalar, np.dtype,
            *(type(np.dtype(t)) for t in (np.int32, np.int64, np.float32, np.float64,
                                          np.bool_))]


def load(path, what: str, trust: bool = False, advice: str | None = None,
         mmap: bool = False):
    """``torch.load(path)`` on the CPU, weights-only unless ``trust``. ``mmap``: the
    tensors map the file instead of being read into memory (torch >= 2.1; rdl needs 2.6):
    every process that loads it shares the pages, which stay private copy-on-write (a
    write to a tensor changes this process's copy, never the file).

    Raises:
        UntrustedFile: the file holds other types (named), with ``advice`` (default: how to
            opt in).
    """
    if trust:
        return torch.load(path, map_location="cpu", weights_only=False, mmap=mmap)
    with torch.serialization.safe_globals(allowed()):
        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        except pickle.UnpicklingError:
            names = unsafe_globals(path)
            if not names:  # not a pickle of objects refused: a broken file, said as it is
                raise
    raise UntrustedFile(
        f"{what} {path}: holds {', '.join(names)} that rdl does not read from a "
        "file (torch's weights-only unpickler refused them: a file that builds other objects "
        "can run any code when read, so nothing of it was run). " + (advice or (
            "If you trust the file (you wrote it, or someone you trust did), read it with "
            f"{OPT_IN}")))


def unsafe_globals(path) -> list[str]:
    """The types and functions a pickle names beyond torch's and :func:`allowed`'s."""
    ok = {f"{t.__module__}.{t.__qualname__}" for t in allowed()}
    try:
        return [g for g in torch.serialization.get_unsafe_globals_in_checkpoint(path)
                if g not in ok]
    except Exception:  # not a zip of torch's format: the load's own failure said it
        return []


def check_targets(config, what: str, trust: bool = False) -> None:
    """Every ``_target_`` of a saved config is one of :data:`TARGETS` (unless ``trust``).

    Raises:
        UntrustedFile: naming the targets and the config keys holding them.
    """
    if trust:
        return
    bad = [(key, t) for key, t in _targets(config, "") if not str(t).startswith(TARGETS)]
    if bad:
        listed = ", ".join(f"{t!r} (at {k or 'top'})" for k, t in bad)
        raise UntrustedFile(
            f"{what}: its config builds {listed}, which is not rdl's, PyTorch's or Lightning's; "
            "building it would run that code. If you trust the file (your own model's class, "
            f"say), read it with {OPT_IN}")


def _targets(node, key: str):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "_target_":
                yield key, v
            else:
                yield from _targets(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            yield from _targets(v, f"{key}[{i}]")


FRAME, ARRAY, COLUMNS = "__arrow_ipc__", "__numpy__", "__columns__"


def plain(obj):
    """``obj`` with each pandas frame and NumPy array as tensors (:func:`_plain_frame`),
    in nested dicts, lists and tuples: values the weights-only unpickler reads, and that
    a load with ``mmap`` maps instead of copying.

    Raises:
        TypeError: another type (naming it).
    """
    if isinstance(obj, pd.DataFrame):
        return _plain_frame(obj)
    if isinstance(obj, np.ndarray):
        return _plain_array(obj)
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(plain(v) for v in obj)
    if obj is None or isinstance(obj, (str, bytes, bool, int, float, torch.Tensor)):
        return obj
    raise TypeError(f"{type(obj).__module__}.{type(obj).__qualname__}: not a value rdl writes "
                    "to a file it reads back")


def _flat(dtype) -> bool:
    """Whether a column of ``dtype`` is kept as a tensor of its bytes: NumPy's numbers,
    booleans, naive times and durations (pandas' own types, strings and lists: Arrow)."""
    return isinstance(dtype, np.dtype) and dtype.kind in "biufMm"


def _plain_array(a: np.ndarray) -> dict:
    """A NumPy array of numbers, times or durations as a tensor of the same bytes (times,
    durations and unsigned integers as signed integers, which torch stores) and its dtype."""
    a = np.array(a, order="C")   # a copy: a frame's column may be read-only (copy-on-write)
    stored = a.view(f"i{a.dtype.itemsize}") if a.dtype.kind in "uMm" else a
    return {ARRAY: torch.from_numpy(stored), "dtype": a.dtype.str}


def _plain_frame(df: pd.DataFrame) -> dict:
    """A frame as a tensor per NumPy column (:func:`_flat`) and its index (a range as its
    bounds), the other columns as Arrow's IPC bytes (a list column's lists named)."""
    index = df.index
    if isinstance(index, pd.RangeIndex):
        kept = ("range", index.start, index.stop, index.step, index.name)
    elif _flat(index.dtype) and not isinstance(index, pd.MultiIndex):
        kept = ("array", _plain_array(index.to_numpy()), index.name)
    else:
        kept = None   # in the Arrow part
    flat = [c for c in df.columns if _flat(df[c].dtype)]
    rest = df[[c for c in df.columns if c not in flat]]
    arrow = None
    if kept is None or len(rest.columns):
        sink = pa.BufferOutputStream()
        table = pa.Table.from_pandas(rest, preserve_index=kept is None)
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        arrow = sink.getvalue().to_pybytes()
    lists = [c for c in rest.columns if rest[c].dtype == object and len(rest)
             and isinstance(rest[c].iloc[0], list)]
    return {COLUMNS: list(df.columns), "flat": {c: _plain_array(df[c].to_numpy()) for c in flat},
            "index": kept, FRAME: arrow, "lists": lists}


def unplain(obj):
    """:func:`plain`'s values back: arrays and frames' NumPy columns views of the loaded
    tensors (mapped, where the file was loaded with ``mmap``), a list column's values as
    lists again."""
    if isinstance(obj, dict) and COLUMNS in obj:
        return _unplain_frame(obj)
    if isinstance(obj, dict) and ARRAY in obj:
        return obj[ARRAY].numpy().view(np.dtype(obj["dtype"]))
    if isinstance(obj, dict):
        return {k: unplain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(unplain(v) for v in obj)
    return obj


def _unplain_frame(obj: dict) -> pd.DataFrame:
    rest = None if obj[FRAME] is None else pa.ipc.open_stream(obj[FRAME]).read_all().to_pandas()
    kept = obj["index"]
    if kept is None:
        index = rest.index
    elif kept[0] == "range":
        index = pd.RangeIndex(*kept[1:4], name=kept[4])
    else:
        index = pd.Index(unplain(kept[1]), name=kept[2], copy=False)
    columns = {c: unplain(a) for c, a in obj["flat"].items()}
    for c in obj["lists"]:
        rest[c] = [None if v is None else list(v) for v in rest[c]]
    columns.update({c: rest[c].array for c in ([] if rest is None else rest.columns)})
    # no copy: the columns stay views of the loaded tensors
    return pd.DataFrame({c: columns[c] for c in obj[COLUMNS]}, index=index, copy=False)
