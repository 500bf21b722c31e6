"""Steps 1-2 of ``python -m rdl.bench sampler``: configs, the graph, the seeds, the batches."""
from __future__ import annotations

import os
import time
from pathlib import Path

import torch

from rdl.bench.report import peak_rss_gib

SETTINGS = {"churn": "user-churn", "article": "item-sales"}


def _conf(name: str):
    from omegaconf import OmegaConf

    import rdl
    if name.startswith("data/"):
        # A data config includes the loader settings (data/loader/default.yaml): Hydra
        # composes it, on its own (no task's or model's settings over it).
        from hydra import compose, initialize_config_dir
        with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
            return compose(name).data
    return OmegaConf.load(rdl.CONF_DIR / f"{name}.yaml")


def _task(name: str):
    from hydra.utils import instantiate
    cfg = _conf(f"task/{name}")  # a task YAML in the global package nests it under task:
    return instantiate(cfg.task if "task" in cfg else cfg, _convert_="all")


def _graph(db, task):
    """The training graph (as a node task's preparation builds it, same cache)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    import rdl
    from rdl.graph.build import make_graph
    cfg = _conf("data/hm")
    stypes = OmegaConf.to_container(cfg.stypes)
    return make_graph(db.upto(task.test_time), stypes, instantiate(cfg.text_embedder),
                      os.path.join(rdl.cache_dir(), "graphs"))[0]


def prepare(scale: float, timestamp: str, folder: Path) -> dict:
    """Build the graph and the seeds; save what the sampling subprocesses need."""
    import pandas as pd

    from rdl.data.hm import load_hm
    from rdl.graph.build import to_seconds

    t0 = time.perf_counter()
    db = load_hm("synthetic", scale=scale, seed=int(_conf("data/hm").db.seed))
    t1 = time.perf_counter()
    tasks = {k: _task(v) for k, v in SETTINGS.items()}
    data = _graph(db, tasks["churn"])
    t2 = time.perf_counter()
    ts = pd.Timestamp(timestamp)
    seeds = {}
    for key, task in tasks.items():
        if ts not in task.timestamps("train", db):
            raise SystemExit(f"{timestamp} is not a train timestamp of {task.name}")
        df = task.make_table(db.upto(task.val_time), [ts])
        seeds[key] = {"type": task.entity_table,
                      "node": torch.from_numpy(df[task.entity_col].to_numpy()).long(),
                      "time": to_seconds(df["timestamp"])}
    t3 = time.perf_counter()
    skeleton = {
        "num_nodes": {t: int(data[t].num_nodes) for t in data.node_types},
        "time": {t: data[t].time for t in data.node_types if "time" in data[t]},
        "edge_index": {et: data[et].edge_index for et in data.edge_types},
    }
    torch.save(skeleton, folder / "graph.pt")
    torch.save(seeds, folder / "seeds.pt")
    return {
        "load_db_s": t1 - t0, "graph_s": t2 - t1, "seeds_s": t3 - t2,
        "num_nodes": skeleton["num_nodes"],
        "num_edges": {"/".join(et): int(ei.size(1)) for et, ei in skeleton["edge_index"].items()},
        "seeds": {k: int(v["node"].numel()) for k, v in seeds.items()},
        "peak_rss_gib": peak_rss_gib(),
    }


def _skeleton_graph(path):
    from torch_geometric.data import HeteroData
    sk = torch.load(path)
    data = HeteroData()
    for t, n in sk["num_nodes"].items():
        data[t].num_nodes = n
    for t, time_ in sk["time"].items():
        data[t].time = time_
    for et, ei in sk["edge_index"].items():
        data[et].edge_index = ei
    return data


def _batches(n: int, batch_size: int, count: int, seed: int = 0):
    """``count`` batches of a shuffled pass over ``n`` seeds (wrapping around)."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=g)
    reps = -(-count * batch_size // max(n, 1))
    perm = perm.repeat(max(reps, 1))
    return [perm[i * batch_size:(i + 1) * batch_size] for i in range(count)]
