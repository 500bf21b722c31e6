"""The rows of the GPU check (``python -m rdl.bench gpu``), most wanted first, in parts that
each fit one check's budget (``--part N``).

A GPU is lent for 15 minutes, its start included, and one command may run 10: the rows do
not fit in one check. The parts, most wanted first (docs/performance.md, "The GPU check"):

1. ``python -m rdl.bench matmuls`` (seconds: the stacked encoders' weight gradient, each
   way timed), the CUDA tests (``pytest -m cuda``), then at ``experiment=gpu`` (2,048
   seeds a step, the tables' encoders stacked, the workers' batches packed) user-churn
   eager and compiled (``dynamic=True``), compiled with each batch copied to the GPU as
   its one buffer (``data.pack_batches=device``), with the stacked encoders over chunks of
   rows (``model.stacked_encoders=1024``: a third of the padded arithmetic), with TF32
   matmuls (``matmul_precision=high``: the
   stacked encoders' weight gradients are half a compiled step's kernel time; its one row
   of 2026-12-04 ran slower, unexplained), with its kernels launched from C++
   (``cpp_wrapper``), with combo kernels (the compiled step's host time is now the
   larger part of it) and with no reduction split in two (``split_reductions``: 69 of the
   354 kernels a step by the GPU proxy, ``python -m rdl.bench kernels --codegen triton``,
   are the second halves of split sums), then eager and compiled item-sales and user-item-purchase (the
   latter not measured since batches are packed);
2. at ``experiment=gpu``, user-churn compiled with the workers' batches not packed in
   one buffer (``data.pack_batches=false``, as before) and shared by file name
   (``sharing_strategy=file_system``), CUDA graphs over buckets for the node tasks
   (on 2026-12-04 user-churn's ran 28 compiled graphs and 56 CUDA graphs a step, slower
   than eager: its row logs why, and counts them),
   buckets alone, the first task's model with its ops fused but not
   stacked (``dynamic-fused``) and per type (``dynamic-per-type``), the first task with
   ``data.num_workers=0`` beside the configured workers (what settled the 11-25 and 11-27
   disagreement), and batches sampled on the GPU (``data.sampler.device=cuda``);
3. at the default config (512 seeds), eager and compiled for the three tasks, then the
   host-overhead rows (the tiny model, the first task), eager and compiled;
4. at the default config, CUDA graphs over buckets and buckets alone, and the same two
   host-overhead rows.

Part 1 as it was on 2026-11-28 (the experiment=gpu rows, the ops and loaders of user-churn)
is now spread over parts 1 and 2; the parts of 2026-12-04 likewise. The parts are sized by estimate from the rows of
2026-11-25, 11-27 and 11-28 (eager 25-50 s, compiled 120-180 s of first epoch each,
CUDA graphs over buckets 130-300 s; 11 rows in 470 s on 11-28), not measured as parts. A
row the task's family refuses (buckets on a link task) is listed as not applicable, not
run.
"""
from __future__ import annotations

import functools
import os

from rdl.bench.e2e import CUDA_ONLY, TINY, VARIANTS

CONFIGS = {"gpu": ["experiment=gpu"], "default": []}
GPU_VARIANTS = ["eager", "dynamic", "reduce-overhead+buckets", "buckets", "dynamic-fused",
                "dynamic-per-type", "dynamic-device-sampler", "dynamic-tf32",
                "dynamic-file-system", "dynamic-unpacked", "dynamic-cpp-wrapper",
                "dynamic-combo-kernels", "dynamic-packed-to-device", "dynamic-chunked",
                "dynamic-unsplit"]
#: the tasks, each as TASK:MODEL (a link task trains with its experiment's model)
TASKS = ["user-churn", "item-sales", "user-item-purchase:contextgnn"]
FAST, GRAPHS = ("eager", "dynamic"), ("reduce-overhead+buckets", "buckets")
#: the model's ops fused without stacked encoders, and per type (before rdl/nn/fused.py)
OPS = ("dynamic-fused", "dynamic-per-type")
#: (part, config, data.num_workers (None: the config's), variants, tasks, size): ``all``
#: the tasks, ``first`` the first of them, ``rest`` the others
#: the compiled step's own options (its host time, its kernels)
STEP = ("dynamic-packed-to-device", "dynamic-chunked", "dynamic-tf32", "dynamic-cpp-wrapper",
        "dynamic-combo-kernels", "dynamic-unsplit")
GROUPS = [
    (1, "gpu", None, (*FAST, *STEP), "first", "full"),
    (1, "gpu", None, FAST, "rest", "full"),
    (2, "gpu", None, ("dynamic-unpacked", "dynamic-file-system"), "first", "full"),
    (2, "gpu", None, ("reduce-overhead+buckets",), "all", "full"),
    (2, "gpu", None, ("buckets",), "all", "full"),
    (2, "gpu", None, OPS, "first", "full"),
    (2, "gpu", 0, FAST, "first", "full"),
    (2, "gpu", None, ("dynamic-device-sampler",), "first", "full"),
    (3, "default", None, FAST, "all", "full"),
    (3, "default", None, FAST, "first", "host overhead"),
    (4, "default", None, GRAPHS, "all", "full"),
    (4, "default", None, GRAPHS, "first", "host overhead"),
]
PARTS = sorted({g[0] for g in GROUPS})


def split_task(item: str) -> tuple[str, str | None]:
    """``TASK[:MODEL]`` as (task, model or None)."""
    task, _, model = item.partition(":")
    return task, model or None


def plan_rows(tasks: list[str], configs: list[str], variants: list[str], host_overhead: bool,
              device: str, extra: list[str], parts: list[int] | None = None) -> list[dict]:
    """The rows of ``parts`` (None: every part), in order, with the tasks, configs and
    variants given; CUDA-graph variants only on CUDA. A row a task's family refuses has
    its reason in ``note`` (not run)."""
    variants = [v for v in variants if device == "cuda" or v not in CUDA_ONLY]
    rows = []
    for part, config, workers, chosen, which, size in GROUPS:
        if (parts and part not in parts) or config not in configs or (
                size == "host overhead" and not host_overhead):
            continue
        for item in {"all": tasks, "first": tasks[:1], "rest": tasks[1:]}[which]:
            task, model = split_task(item)
            for variant in (v for v in chosen if v in variants):
                overrides = [*CONFIGS[config], *extra, *(TINY if size != "full" else [])]
                row = {"part": part, "task": task, "model": model or _model(task),
                       "config": config, "size": size, "variant": variant,
                       "workers": workers, "overrides": overrides}
                note = refused(row)
                if note:
                    row["note"] = f"not applicable: {note}"
                rows.append(row)
    return rows


@functools.lru_cache(maxsize=None)
def _model(task: str) -> str:
    from rdl.bench.train.variants import _task_models
    return _task_models([task], [])[0][1]


_REFUSED: dict = {}


def refused(row: dict) -> str:
    """Why the task's family cannot train the row's variant (its own check, before any
    data is read: a link task refuses buckets), or ''."""
    from rdl.api import data_settings, load_task
    from rdl.bench.train.variants import _compose
    from rdl.families import family_of

    sets = VARIANTS[row["variant"]][1]
    key = (row["task"], row["model"], tuple(sets))
    if key not in _REFUSED:
        cfg = _compose([f"task={row['task']}", f"model={row['model']}", *sets])
        task = load_task(cfg)
        try:
            family_of(task).check(data_settings(cfg), task)
            _REFUSED[key] = ""
        except ValueError as e:
            _REFUSED[key] = str(e)
    return _REFUSED[key]


#: what torch logs in the row's own log (``logs.tgz``) for a variant that replays CUDA
#: graphs: why Inductor cut a graph into partitions, each replayed as a CUDA graph of its
#: own (``cudagraphs``), why it ran one without (``perf_hints``), and Dynamo's graph
#: breaks and recompiles. On 2026-12-04 such a user-churn step replayed 56 CUDA graphs
#: and called 28 AOT-compiled forwards (28 Dynamo graphs a step, or one cut by Inductor:
#: these logs say which), and its host time stayed above eager's.
GRAPH_LOGS = "perf_hints,cudagraphs,graph_breaks,recompiles"


def row_logs(row: dict) -> dict:
    """The environment a row's process adds for torch's logs: :data:`GRAPH_LOGS` for a
    variant that replays CUDA graphs, unless ``TORCH_LOGS`` is set already."""
    if "reduce-overhead" in row["variant"] and "TORCH_LOGS" not in os.environ:
        return {"TORCH_LOGS": GRAPH_LOGS}
    return {}
