"""Step 3 of ``python -m rdl.bench sampler``: one sampling configuration, in its own process."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch

from rdl.bench.report import peak_rss_gib
from rdl.bench.sampler.inputs import _batches, _skeleton_graph

STRATEGIES = ("uniform", "last")
WARMUP = 3


def _sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_sampling(folder: str, setting: str, strategy: str, batch_size: int,
                     fanout: list[int], batches: int, threads: int, device: str) -> dict:
    from torch_geometric.sampler import NodeSamplerInput

    from rdl.graph.sampler import TemporalSampler

    torch.set_num_threads(threads)
    dev = torch.device(device)
    rss_base = peak_rss_gib()
    data = _skeleton_graph(Path(folder) / "graph.pt")
    seeds = torch.load(Path(folder) / "seeds.pt")[setting]
    num_tx = data["transactions"].num_nodes
    _sync(dev)
    t0 = time.perf_counter()
    sampler = TemporalSampler(data, fanout, strategy=strategy, device=dev, random_seed=0)
    _sync(dev)
    build_s = time.perf_counter() - t0
    rss_index = peak_rss_gib()

    times, nodes, edges = [], 0, 0
    for i, idx in enumerate(_batches(seeds["node"].numel(), batch_size, WARMUP + batches)):
        inp = NodeSamplerInput(input_id=idx, node=seeds["node"][idx], time=seeds["time"][idx],
                               input_type=seeds["type"])
        _sync(dev)
        t = time.perf_counter()
        out = sampler.sample_from_nodes(inp)
        _sync(dev)
        dt = time.perf_counter() - t
        if i >= WARMUP:
            times.append(dt)
            nodes += sum(v.numel() for v in out.node.values())
            edges += sum(v.numel() for v in out.row.values())
    total = sum(times)
    n_seeds = batches * batch_size
    row = {
        "setting": setting, "strategy": strategy, "device": device, "threads": threads,
        "batch_size": batch_size, "fanout": " ".join(map(str, fanout)), "batches": batches,
        "seeds/s": round(n_seeds / total), "sampled_nodes/s": round(nodes / total),
        "ms/batch": round(1000 * total / batches, 2),
        "ms/batch_median": round(1000 * statistics.median(times), 2),
        "nodes/batch": round(nodes / batches), "edges/batch": round(edges / batches),
        "peak_rss_gib": round(peak_rss_gib(), 2), "rss_imports_gib": round(rss_base, 2),
        "rss_after_index_gib": round(rss_index, 2),
        "index_build_s": round(build_s, 2), "transactions": num_tx,
    }
    if dev.type == "cuda":
        row["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated(dev) / 2**30, 2)
    return row
