"""A digest of everything ``rdl.prepare`` gives a run, for showing that a change left the
data a training reads the same: ``python benchmarks/prepared_digest.py OUT.json
[override ...]`` writes one SHA-1 per tensor, array and frame of the prepared data (every
node and edge type's tensors, the encoded columns, the column statistics, the split
tables, and per family its own: the label history, the tree prior's predictions, the seed
features), keyed by where it sits; two commits' files compare with ``cmp`` or a diff of the
keys. The training that reads identical data runs identical code, unless that code
changed too. A model object (a LightGBM fit) is recorded by its type: its predictions are
hashed where they are kept.

    python benchmarks/prepared_digest.py old.json data=hm-kaggle data.db.path=FILES   # commit A
    python benchmarks/prepared_digest.py new.json data=hm-kaggle data.db.path=FILES   # commit B
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys

import numpy as np
import pandas as pd
import torch


def digest(x) -> str:
    if isinstance(x, torch.Tensor):
        t = x.detach().contiguous().cpu()
        data = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return f"{t.dtype}{tuple(t.shape)}:{hashlib.sha1(data).hexdigest()}"
    if isinstance(x, np.ndarray):
        return f"{x.dtype}{x.shape}:{hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()}"
    if isinstance(x, pd.Series):
        x = x.to_frame()
    if isinstance(x, pd.DataFrame):
        layout = repr(list(zip(map(str, x.columns), map(str, x.dtypes)))).encode()
        return hashlib.sha1(pd.util.hash_pandas_object(x, index=True).values.tobytes()
                            + layout).hexdigest()
    return repr(x)


def walk(x, path: str, out: dict) -> None:
    if x is None or isinstance(x, (torch.Tensor, np.ndarray, pd.Series, pd.DataFrame, int,
                                   float, str, bool)):
        out[path] = digest(x)
    elif hasattr(x, "feat_dict"):                        # a TensorFrame
        walk(x.feat_dict, f"{path}.feat", out)
        walk(dict(x.col_names_dict), f"{path}.cols", out)
    elif hasattr(x, "values") and hasattr(x, "offset"):  # a nested tensor of PyTorch Frame
        walk(x.values, f"{path}.values", out)
        walk(x.offset, f"{path}.offset", out)
    elif isinstance(x, dict):
        for k in sorted(x, key=str):
            walk(x[k], f"{path}[{k!s}]", out)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            walk(v, f"{path}[{i}]", out)
    else:
        out[path] = type(x).__name__


def prepared_digest(overrides: list[str]) -> dict:
    from rdl.api import config, load_database, prepare
    from rdl.settings import duckdb_settings
    from rdl.training.process import for_process

    cfg = config(*overrides)
    for_process(duckdb=duckdb_settings(cfg))   # as rdl.train sets up a run
    prepared = prepare(cfg, load_database(cfg)).prepared
    out, graph = {}, prepared.data
    for nt in graph.node_types:
        out[f"node[{nt}].num_nodes"] = str(graph[nt].num_nodes)
        for k, v in graph[nt].items():
            walk(v, f"node[{nt}].{k}", out)
    for et in graph.edge_types:
        for k, v in graph[et].items():
            walk(v, f"edge[{et}].{k}", out)
    walk({str(k): v for k, v in prepared.col_stats.items()}, "col_stats", out)
    walk({str(k): v for k, v in prepared.tables.items()}, "tables", out)
    for field in dataclasses.fields(prepared):
        if field.name not in ("task", "db", "tables", "data", "col_stats"):
            walk(getattr(prepared, field.name), f"prepared.{field.name}", out)
    return out


if __name__ == "__main__":
    out = prepared_digest(sys.argv[2:])
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    print(f"{sys.argv[1]}: {len(out)} entries")
