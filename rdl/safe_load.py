"""Files rdl reads back that someone else may have written: checkpoints (``rdl.predict``, a
resumed ``rdl.train``) and the data a machine's first process prepares for the others.

A pickle is code: torch's full unpickler runs whatever callable the file names. These files
are read with torch's weights-only unpickler instead, which builds tensors, numbers, strings
and containers, plus the few types on :func:`allowed`; a file holding anything else is
refused with the types named (:class:`UntrustedFile`). ``trust=True`` (``trust_checkpoint=
true`` on the command line) reads a file you trust with the full unpickler. What rdl writes
for itself to read back holds only such values: :func:`plain` turns tables (pandas frames, as
Arrow's IPC bytes) and NumPy arrays (as tensors) into them and :func:`unplain` back.

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


def load(path, what: str, trust: bool = False, advice: str | None = None):
    """``torch.load(path)`` on the CPU, weights-only unless ``trust``.

    Raises:
        UntrustedFile: the file holds other types (named), with ``advice`` (default: how to
            opt in).
    """
    if trust:
        return torch.load(path, map_location="cpu", weights_only=False)
    with torch.serialization.safe_globals(allowed()):
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
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


FRAME, ARRAY = "__arrow_ipc__", "__numpy__"


def plain(obj):
    """``obj`` with each pandas frame as Arrow IPC bytes and each NumPy array as a tensor,
    in nested dicts, lists and tuples: values the weights-only unpickler reads.

    Raises:
        TypeError: another type (naming it).
    """
    if isinstance(obj, pd.DataFrame):
        sink = pa.BufferOutputStream()
        table = pa.Table.from_pandas(obj, preserve_index=True)
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        lists = [c for c in obj.columns if obj[c].dtype == object and len(obj)
                 and isinstance(obj[c].iloc[0], list)]
        return {FRAME: sink.getvalue().to_pybytes(), "lists": lists}
    if isinstance(obj, np.ndarray):
        return {ARRAY: torch.from_numpy(np.ascontiguousarray(obj))}
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(plain(v) for v in obj)
    if obj is None or isinstance(obj, (str, bytes, bool, int, float, torch.Tensor)):
        return obj
    raise TypeError(f"{type(obj).__module__}.{type(obj).__qualname__}: not a value rdl writes "
                    "to a file it reads back")


def unplain(obj):
    """:func:`plain`'s values back (a list column's values as lists again)."""
    if isinstance(obj, dict) and FRAME in obj:
        df = pa.ipc.open_stream(obj[FRAME]).read_all().to_pandas()
        for c in obj["lists"]:
            df[c] = [None if v is None else list(v) for v in df[c]]
        return df
    if isinstance(obj, dict) and ARRAY in obj:
        return obj[ARRAY].numpy()
    if isinstance(obj, dict):
        return {k: unplain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(unplain(v) for v in obj)
    return obj
