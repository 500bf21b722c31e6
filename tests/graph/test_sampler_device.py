"""A sampler on a GPU samples exactly what the CPU sampler samples under the same seed
(``pytest -m cuda``; skipped without CUDA): its random numbers are drawn on the host
(rdl/graph/random_draws.py) and every other op computes the same on both devices."""
from __future__ import annotations

import numpy as np
import torch
from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling, NodeSamplerInput

from rdl.graph import TemporalSampler
# _one_thread: the autouse fixture, imported to apply here
from tests.graph.sampling import CUDA_ONLY, _one_thread, random_graph, star_graph  # noqa: F401

pytestmark = CUDA_ONLY


def outputs(out) -> dict:
    """A sampler output's tensors and counts by name, on the CPU."""
    flat = {f"{field}/{k}": v.cpu() for field in ("node", "row", "col", "edge", "batch")
            for k, v in getattr(out, field).items()}
    flat["num_sampled_nodes"] = dict(out.num_sampled_nodes)
    flat["num_sampled_edges"] = dict(out.num_sampled_edges)
    flat.update({f"metadata/{i}": m.cpu() if isinstance(m, torch.Tensor) else m
                 for i, m in enumerate(out.metadata)})
    return flat


def differences(a: dict, b: dict) -> list[str]:
    """The names of the values in which two outputs differ (dtypes and shapes included)."""
    if a.keys() != b.keys():
        return sorted(a.keys() ^ b.keys())
    return [k for k, x in a.items()
            if (not (isinstance(b[k], torch.Tensor) and x.dtype == b[k].dtype
                     and x.shape == b[k].shape and torch.equal(x, b[k]))
                if isinstance(x, torch.Tensor) else x != b[k])]


def samples(device, draw_on=None):
    """What samplers on ``device`` sample, by case: random graphs with every time encoding,
    strategy and a few fan-outs (node seeds, several batches of each; seed links with
    weighted binary negatives and with triplets), and one customer with 5,000 rows (the
    large-segment path and its re-draws). ``draw_on``: a device to draw the random numbers
    on instead of the host (what the test must catch)."""
    out = {}

    def sampler(d, fans, **kw):
        s = TemporalSampler(d, fans, device=device, rng_per_batch=True, **kw)
        if draw_on is not None:
            s._get_generator = lambda gen=torch.Generator(device=draw_on): gen
        return s

    for gs in range(12):
        for tm in ("int", "float", "huge"):
            d = random_graph(gs, tm)
            rng = np.random.default_rng(gs)
            scale = 2**58 if tm == "huge" else 1
            for strategy in ("uniform", "mix", "last"):
                for fans in ([2, 1], [3, 2], [1, 4]):
                    s = sampler(d, fans, strategy=strategy, strict=bool(gs % 2), random_seed=gs)
                    for b in range(2):
                        ids = torch.from_numpy(rng.integers(0, d["user"].num_nodes, 12))
                        t = torch.from_numpy(rng.integers(-1, 9, 12)) * scale
                        t = t.double() + 0.5 if tm == "float" else t
                        inp = NodeSamplerInput(input_id=torch.arange(12 * b, 12 * b + 12),
                                               node=ids, time=t, input_type="user")
                        out["nodes", gs, tm, strategy, str(fans), b] = s.sample_from_nodes(inp)
                    et = ("event", "f2p_item_id", "item")
                    ei = d[et].edge_index
                    if ei.size(1) == 0:
                        continue
                    m = min(6, ei.size(1))
                    inp = EdgeSamplerInput(input_id=torch.arange(m), row=ei[0, :m],
                                           col=ei[1, :m], label=None, time=t[:m], input_type=et)
                    w = torch.rand(d["item"].num_nodes,
                                   generator=torch.Generator().manual_seed(gs)) + 0.1
                    out["binary", gs, tm, strategy, str(fans)] = s.sample_from_edges(
                        inp, NegativeSampling("binary", amount=2, dst_weight=w))
                    out["triplet", gs, tm, strategy, str(fans)] = s.sample_from_edges(
                        inp, NegativeSampling("triplet", amount=2))
    d = star_graph(5000)
    for strategy in ("uniform", "mix"):
        for k in (3, 40, 2000, 3000):   # 2000: c > 2k, i.i.d. offsets; 3000: random keys
            s = sampler(d, [k], strategy=strategy, random_seed=7)
            for b in range(3):
                inp = NodeSamplerInput(input_id=torch.arange(b, b + 4),
                                       node=torch.zeros(4, dtype=torch.long), time=None,
                                       input_type="customer")
                out["star", strategy, k, b] = s.sample_from_nodes(inp)
    return {k: outputs(v) for k, v in out.items()}


def test_a_cuda_sampler_samples_what_the_cpu_sampler_samples():
    cpu, cuda = samples("cpu"), samples("cuda")
    assert cpu.keys() == cuda.keys() and len(cpu) > 500
    for what in cpu:
        assert differences(cpu[what], cuda[what]) == [], what


def test_draws_on_the_gpu_would_sample_otherwise():
    """The comparison above sees where the random numbers come from: drawn by a CUDA
    generator (Philox) instead of the host's, the same seeds sample other subgraphs."""
    cpu, cuda = samples("cpu"), samples("cuda", draw_on="cuda")
    differ = [what for what in cpu if differences(cpu[what], cuda[what])]
    assert len(differ) > 50
