"""Step 4 of ``python -m rdl.bench sampler``: the sampler vs the compiled train step."""
from __future__ import annotations

import statistics
import time

import torch

from rdl.bench.sampler.inputs import _batches, _conf, _task


def measure_train_step(steps: int = 20, warmup: int = 5, threads: int | None = None) -> dict:
    import torch.nn.functional as F
    from hydra.utils import get_class, instantiate
    from torch_geometric.sampler import NodeSamplerInput

    from rdl.graph.build import to_seconds
    from rdl.training.compile import compile_model
    from rdl.training.shapes import pad_inputs

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
    model = instantiate(model_cfg, _partial_=True)(
        **dm.model_kwargs(get_class(model_cfg._target_)))
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
