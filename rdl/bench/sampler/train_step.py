"""Step 4 of ``python -m rdl.bench sampler``: the sampler vs the compiled train step."""
from __future__ import annotations

import statistics
import time

import torch

from rdl.bench.sampler.inputs import _batches


def measure_train_step(steps: int = 20, warmup: int = 5, threads: int | None = None,
                       overrides: tuple[str, ...] = ()) -> dict:
    """The sampler alone, the loader (sampling, rows, labels, pads) and the compiled train
    step of ``python -m rdl.train task=user-churn`` (its data, model and compile settings;
    no loader workers; then ``overrides``), each the median ms of ``steps`` batches after
    ``warmup``."""
    from hydra import compose, initialize_config_dir
    from torch_geometric.sampler import NodeSamplerInput

    import rdl
    from rdl.api import build
    from rdl.graph.build import to_seconds

    if threads:
        torch.set_num_threads(threads)
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        cfg = compose("config", ["task=user-churn", "data.num_workers=0", *overrides])
    t0 = time.perf_counter()
    task, dm, module = build(cfg)
    setup_s = time.perf_counter() - t0
    opt = module.optimizer_fn(module.model.parameters(), lr=torch.tensor(module.lr))
    module.train()
    entity = task.entity_table

    # The sampler alone, on the train seeds.
    df = dm.tables["train"]
    nodes = torch.from_numpy(df[task.entity_col].to_numpy()).long()
    seed_time = to_seconds(df["timestamp"])
    batch_size = dm.split_batch_size("train")
    sample_ms = []
    for i, idx in enumerate(_batches(nodes.numel(), batch_size, warmup + steps)):
        inp = NodeSamplerInput(input_id=idx, node=nodes[idx], time=seed_time[idx],
                               input_type=entity)
        t = time.perf_counter()
        dm.sampler.sample_from_nodes(inp)
        if i >= warmup:
            sample_ms.append(1000 * (time.perf_counter() - t))

    # The loader: sampling + rows + labels (+ a compiled run's pad nodes and edges).
    loader_ms, batches = [], []
    it = iter(dm.train_dataloader())
    for i in range(warmup + steps):
        t = time.perf_counter()
        batches.append(next(it))
        if i >= warmup:
            loader_ms.append(1000 * (time.perf_counter() - t))
    del it

    def step(batch):
        loss, _ = module.step_loss(batch)
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
    common = {"scale": float(cfg.data.db.scale), "batch_size": batch_size,
              "fanout": " ".join(map(str, dm.settings.num_neighbors)),
              "strategy": dm.settings.strategy,
              "threads": torch.get_num_threads(), "steps": steps}
    rows = []
    for what, key, ms in (("sampler.sample_from_nodes", "sample", sample_ms),
                          ("loader batch (sample + features + labels)", "loader", loader_ms),
                          ("compiled train step (fwd + bwd + Adam)", "step", step_ms)):
        rows.append({"what": what, "ms/batch_median": round(med[key], 2),
                     "ms/batch_mean": round(statistics.mean(ms), 2),
                     "vs_train_step": round(med[key] / med["step"], 3), **common})
    return {"rows": rows, "compile_warmup_s": compile_s, "datamodule_setup_s": setup_s}
