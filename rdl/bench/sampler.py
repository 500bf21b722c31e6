"""Time rdl's temporal sampler on the synthetic H&M graph: ``python -m rdl.bench sampler``.

``python -m rdl.bench sampler [--scale 1.0] [--batch-size 512] [--fanout 128 64]
[--batches 50] [--threads 1] [--timestamp 2020-08-31] [--device cpu] [--out DIR]``

1. Loads the synthetic H&M database (``rdl.data.hm.load_hm``, cached) and builds the graph
   as training does (``make_graph`` on the database cut at the test time, with the stypes
   and text embedder of ``conf/data/hm.yaml``; cached).
2. Seeds: (a) ``user-churn`` customers and (b) ``item-sales`` articles of the train table
   at one train timestamp (``Task.make_table`` on the train cut for that one timestamp:
   the rows of ``split_table("train", db)`` at that time), with the timestamp as seed time.
3. For each setting (churn, article) and strategy (uniform, last), in a fresh subprocess
   (so peak memory does not mix): load the sampling graph (edge indices, node times),
   build the sampler's index (timed), sample ``--batches`` batches of ``--batch-size``
   seeds after 3 warm-up batches, with ``torch.set_num_threads(--threads)``. Rows:
   seeds/s, sampled nodes/s, ms per batch, nodes and edges per batch, peak RSS of that
   process (sampling graph + index + sampling), index build seconds.
4. The train-step comparison at the default config (``conf/data/hm.yaml``,
   ``conf/model/sage.yaml``, user-churn, in a fresh subprocess): the sampler's time per
   batch, the loader's (sampling + feature slicing + labels, what ``NodeLoader`` yields
   with ``num_workers=0``) and the compiled model's train step (forward, backward, Adam
   step; ``torch.compile(model, dynamic=True)``), medians over 20 batches after warm-up,
   all at torch's default thread count, as in training (``--train-threads`` to change).
   On a shared machine, run it when the load is low: with every core in use by OpenMP,
   a busy core stalls each parallel region (the step slows down several times).

Both tables are printed and written (Markdown and CSV) into the run folder
(default ``outputs/bench/<time>-sampler``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rdl.bench.report import peak_rss_gib, report, run_dir

SETTINGS = {"churn": "user-churn", "article": "item-sales"}
STRATEGIES = ("uniform", "last")
WARMUP = 3


# --------------------------------------------------------------------------- #
# Inputs
# --------------------------------------------------------------------------- #
def _conf(name: str):
    from omegaconf import OmegaConf

    import rdl
    return OmegaConf.load(rdl.ROOT / "conf" / f"{name}.yaml")


def _task(name: str):
    from hydra.utils import instantiate
    return instantiate(_conf(f"task/{name}"), _convert_="all")


def _graph(db, task):
    """The training graph (as ``RelDataModule.setup`` builds it, same cache)."""
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


def _sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _batches(n: int, batch_size: int, count: int, seed: int = 0):
    """``count`` batches of a shuffled pass over ``n`` seeds (wrapping around)."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=g)
    reps = -(-count * batch_size // max(n, 1))
    perm = perm.repeat(max(reps, 1))
    return [perm[i * batch_size:(i + 1) * batch_size] for i in range(count)]


# --------------------------------------------------------------------------- #
# One sampling configuration (fresh process)
# --------------------------------------------------------------------------- #
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
    sampler = TemporalSampler(data, fanout, strategy=strategy, device=dev, seed=0)
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


# --------------------------------------------------------------------------- #
# Sampling vs the compiled train step at the default config (fresh process)
# --------------------------------------------------------------------------- #
def measure_train_step(steps: int = 20, warmup: int = 5, threads: int | None = None) -> dict:
    import torch.nn.functional as F
    from hydra.utils import instantiate
    from torch_geometric.sampler import NodeSamplerInput

    from rdl.graph.build import to_seconds
    from rdl.training.compile import compile_model, pad_inputs

    if threads:
        torch.set_num_threads(threads)
    data_cfg, model_cfg, root = _conf("data/hm"), _conf("model/sage"), _conf("config")
    task = _task("user-churn")
    hops = list(data_cfg.num_neighbors)[: model_cfg.num_layers]
    dm = instantiate(data_cfg, _partial_=True, _convert_="all")(task=task, num_neighbors=hops,
                                                                seed=int(root.seed))
    t0 = time.perf_counter()
    dm.setup()
    setup_s = time.perf_counter() - t0
    torch.manual_seed(int(root.seed))
    model = instantiate(model_cfg, _partial_=True)(**dm.model_kwargs())
    compiled = compile_model(model, **dict(root.compile.kwargs))
    lr = torch.tensor(float(root.lr))
    opt = instantiate(_conf("optimizer/adam"))(model.parameters(), lr=lr)
    entity = task.entity_table
    time_types = model.time_types

    # The sampler alone, on the train seeds.
    df = dm.tables["train"]
    nodes = torch.from_numpy(df[task.entity_col].to_numpy()).long()
    seed_time = to_seconds(df["timestamp"])
    sample_ms = []
    for i, idx in enumerate(_batches(nodes.numel(), dm.batch_size, warmup + steps)):
        inp = NodeSamplerInput(input_id=idx, node=nodes[idx], time=seed_time[idx],
                               input_type=entity)
        t = time.perf_counter()
        dm.sampler.sample_from_nodes(inp)
        if i >= warmup:
            sample_ms.append(1000 * (time.perf_counter() - t))

    # The loader: sampling + feature slicing + labels.
    loader_ms, batches = [], []
    it = iter(dm.train_dataloader())
    for i in range(warmup + steps):
        t = time.perf_counter()
        batches.append(next(it))
        if i >= warmup:
            loader_ms.append(1000 * (time.perf_counter() - t))
    del it

    def step(batch):
        types = [nt for nt in batch.node_types if "tf" in batch[nt]]
        pred = compiled(*pad_inputs({nt: batch[nt].tf for nt in types},
                                    batch.collect("edge_index"),
                                    {nt: batch[nt].time for nt in time_types},
                                    {nt: batch[nt].batch for nt in time_types},
                                    batch[entity].seed_time,
                                    {nt: batch[nt].num_nodes for nt in types}),
                        row_dict={nt: batch[nt].tf_index for nt in types}).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(pred, batch[entity].y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    step_ms = []
    t = time.perf_counter()
    for b in batches[:warmup]:  # compilation (dynamic shapes: the first steps recompile)
        step(b)
    compile_s = time.perf_counter() - t
    for b in batches[warmup:]:
        t = time.perf_counter()
        step(b)
        step_ms.append(1000 * (time.perf_counter() - t))

    med = {k: statistics.median(v) for k, v in
           (("sample", sample_ms), ("loader", loader_ms), ("step", step_ms))}
    common = {"scale": float(data_cfg.db.scale), "batch_size": dm.batch_size,
              "fanout": " ".join(map(str, hops)), "strategy": dm.strategy,
              "threads": torch.get_num_threads(), "steps": steps}
    rows = []
    for what, key, ms in (("sampler.sample_from_nodes", "sample", sample_ms),
                          ("loader batch (sample + features + labels)", "loader", loader_ms),
                          ("compiled train step (fwd + bwd + Adam)", "step", step_ms)):
        rows.append({"what": what, "ms/batch_median": round(med[key], 2),
                     "ms/batch_mean": round(statistics.mean(ms), 2),
                     "vs_train_step": round(med[key] / med["step"], 3), **common})
    return {"rows": rows, "compile_warmup_s": compile_s, "datamodule_setup_s": setup_s}


# --------------------------------------------------------------------------- #
def _worker(argv: list[str]) -> dict | list:
    spec = json.loads(argv[0])
    if spec.pop("kind") == "train":
        return measure_train_step(**spec)
    return measure_sampling(**spec)


def _run_worker(spec: dict) -> dict | list:
    proc = subprocess.run([sys.executable, "-m", "rdl.bench.sampler", "--worker", json.dumps(spec)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{spec} failed:\n{proc.stderr[-5000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return "?"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:  # one configuration, in this (fresh) process
        print(json.dumps(_worker(argv[1:])))
        return
    p = argparse.ArgumentParser(prog="python -m rdl.bench sampler",
                                description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=1.0, help="synthetic H&M scale (1.0: full size)")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--fanout", type=int, nargs="+", default=[128, 64])
    p.add_argument("--batches", type=int, default=50, help="timed batches per configuration")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the sampling runs")
    p.add_argument("--timestamp", default="2020-08-31", help="the train seed time")
    p.add_argument("--device", default="cpu", help="where the sampler's index lives")
    p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    p.add_argument("--no-train-step", action="store_true", help="skip the train-step comparison")
    p.add_argument("--no-sampling", action="store_true", help="only the train-step comparison")
    p.add_argument("--train-threads", type=int, default=None,
                   help="torch threads of the train-step comparison (default: torch's default)")
    p.add_argument("--out", default=None,
                   help="report folder (default outputs/bench/<time>-sampler)")
    args = p.parse_args(argv)
    out = Path(args.out) if args.out else run_dir("sampler")
    out.mkdir(parents=True, exist_ok=True)

    if not args.no_sampling:
        _sampling_table(args, out)
    if not args.no_train_step:
        _train_step_table(args, out)


def _sampling_table(args, out: Path) -> None:
    load_start = _load()
    with tempfile.TemporaryDirectory(prefix="rdl-bench-sampler-") as tmp:
        print(f"scale {args.scale}: loading the database and the graph ...", flush=True)
        info = _run_worker_prepare(args.scale, args.timestamp, tmp)
        print(f"  database {info['load_db_s']:.1f} s, graph {info['graph_s']:.1f} s, seeds "
              f"{info['seeds']} ({info['seeds_s']:.1f} s), peak {info['peak_rss_gib']:.2f} GiB",
              flush=True)
        rows = []
        for setting in args.settings:
            for strategy in args.strategies:
                spec = {"kind": "sample", "folder": tmp, "setting": setting, "strategy": strategy,
                        "batch_size": args.batch_size, "fanout": args.fanout,
                        "batches": args.batches, "threads": args.threads, "device": args.device}
                row = _run_worker(spec)
                rows.append(row)
                print(f"  {setting:8s} {strategy:8s} {row['seeds/s']:10.0f} seeds/s "
                      f"{row['ms/batch']:7.2f} ms/batch  index {row['index_build_s']:.1f} s  "
                      f"peak {row['peak_rss_gib']:.2f} GiB", flush=True)
    load_end = _load()
    n = info["num_nodes"]
    header = (f"rdl TemporalSampler on the synthetic H&M graph, scale {args.scale} "
              f"({n.get('customer', 0):,} customers, {n.get('article', 0):,} articles, "
              f"{n.get('transactions', 0):,} transactions; seeds at {args.timestamp}: "
              f"{info['seeds']}), batch {args.batch_size}, fan-out {args.fanout}, "
              f"{args.threads} thread(s), device {args.device}; each row a fresh process "
              f"(peak RSS: sampling graph + index + sampling). Graph build/load "
              f"{info['graph_s']:.1f} s. Load average (1/5/15 min) before: {load_start}, "
              f"after: {load_end}; {os.cpu_count()} CPUs.")
    report("sampler", rows, out, header=header)


def _train_step_table(args, out: Path) -> None:
    print("train-step comparison at the default config ...", flush=True)
    load_start = _load()
    res = _run_worker({"kind": "train", "threads": args.train_threads})
    rows = res["rows"]
    header = ("Sampling vs the compiled model's train step at the default config "
              "(conf/data/hm.yaml, conf/model/sage.yaml, user-churn, num_workers=0), "
              f"medians over {rows[0]['steps']} batches after warm-up "
              f"(datamodule setup {res['datamodule_setup_s']:.1f} s, compilation and "
              f"warm-up {res['compile_warmup_s']:.1f} s). Load average (1/5/15 min) before: "
              f"{load_start}, after: {_load()}.")
    report("sampler-train-step", rows, out, header=header)


def _run_worker_prepare(scale: float, timestamp: str, folder: str) -> dict:
    """``prepare`` in a subprocess: its peak memory stays out of the sampling rows."""
    code = ("import json, sys; from pathlib import Path; from rdl.bench.sampler import prepare; "
            "print(json.dumps(prepare(float(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))))")
    proc = subprocess.run([sys.executable, "-c", code, str(scale), timestamp, folder],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"preparing the graph failed:\n{proc.stderr[-5000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main(sys.argv[1:])
