"""The GPU check's report (``python -m rdl.bench gpu``): its rows as ``gpu.md``'s tables
(each against the eager and the plain compiled row of the same check, the kernels and
the host's time of the profiled rows) and ``gpu.json``, each written whole."""
from __future__ import annotations

import json
from pathlib import Path

from rdl.bench.e2e import PROFILED, VARIANTS
from rdl.bench.report import markdown
from rdl.caching import write_atomic


def label(row: dict) -> str:
    """A row as its task, config, loader and variant (its log's and the tables' name)."""
    workers = "" if row["workers"] is None else f" data.num_workers={row['workers']}"
    return f"{row['task']} {row['config']}{workers} {row['size']} {row['variant']}"


def table(rows: list[dict]) -> list[dict]:
    """The report's rows: each with its ratio to the eager row of its task, config, loader
    and size, and a variant of the compiled step to the plain compiled row
    (``dynamic``): whether the option pays, measured in the same check."""
    def key(r):
        return r["task"], r["config"], r["workers"], r["size"]
    eager, dynamic = ({key(r): r.get("seeds_per_s") for r in rows if r["variant"] == v}
                      for v in ("eager", "dynamic"))
    out = []
    for r in rows:
        base, own = eager.get(key(r)), r.get("seeds_per_s")
        compiled = dynamic.get(key(r)) if r["variant"] not in ("eager", "dynamic") else None
        out.append({
            "part": r["part"], "task": r["task"], "config": r["config"], "size": r["size"],
            "loader": _loader(r), "variant": VARIANTS[r["variant"]][0], "seeds/s": own,
            "vs eager": own / base if own and base else None,
            "vs compiled": own / compiled if own and compiled else None,
            "loader alone seeds/s": r.get("loader_seeds_per_s"),
            "step alone seeds/s": r.get("step_seeds_per_s"), "bound": r.get("bound"),
            "step ms": r.get("step_ms"), "first epoch s": r.get("first_epoch_s"),
            "graphs (in timed epochs)": _graphs(r),
            **{f"profiled {k}": r.get(k) for k in PROFILED},
            "cudagraph skips": r.get("cudagraph_skips"),
            "peak GiB": r.get("peak_gib"), "note": r.get("note", "")})
    return out


def _graphs(row: dict) -> str | None:
    """Dynamo's graphs of a row, those compiled in its timed epochs, and its breaks."""
    if "graphs" not in row:
        return None
    breaks = f", {row['graph_breaks']} breaks" if row.get("graph_breaks") else ""
    return f"{row['graphs']} ({row['graphs_timed']}){breaks}"


def _loader(row: dict) -> str:
    """The loader a row ran with (its workers and prefetch), else what it was set to."""
    if "loader_workers" in row:
        prefetch = f", prefetch {row['prefetch']}" if row.get("prefetch") else ""
        return f"{_workers(row['loader_workers'])}{prefetch}"
    return "configured" if row["workers"] is None else _workers(row["workers"])


def _workers(n: int) -> str:
    return f"{n} worker{'s' if n != 1 else ''}"


def kernels_md(rows: list[dict]) -> list[str]:
    """A short table per profiled CUDA row: its kernels a step by kind, its top kernels by
    device time, then its most launched."""
    text = []
    for i, r in enumerate(rows):
        if not r.get("top_kernels"):
            continue
        kinds = ", ".join(f"{k} {n:.0f}" for k, n in r.get("kernel_kinds", {}).items())
        text += [f"### r{i:02d} {label(r)}", "", f"Kernels a step by kind: {kinds}", "",
                 "| kernel | a step | ms a step |", "|---|---|---|"]
        for k in [*r["top_kernels"], None, *r.get("frequent_kernels", [])]:
            text.append("| **most launched** | | |" if k is None else
                        f"| `{_cut(k['name'])}` | {k['per_step']:.1f} | {k['ms']:.3f} |")
        text.append("")
    return text


def host_md(rows: list[dict]) -> list[str]:
    """Per host-profiled row: its time by area, then its top functions by own time."""
    text = []
    for i, r in enumerate(rows):
        if not r.get("host_areas"):
            continue
        areas = ", ".join(f"{k} {v:.1f}" for k, v in r["host_areas"].items())
        text += [f"### r{i:02d} {label(r)}", "",
                 f"{r.get('host_profiled_ms', 0):.1f} ms a step: {areas}", "",
                 "| function | calls a step | own ms | with callees ms |", "|---|---|---|---|"]
        text += [f"| `{_cut(t['where'])}` | {t['calls']:.1f} | {t['own_ms']:.2f} | "
                 f"{t['total_ms']:.2f} |" for t in r.get("host_top", [])]
        text.append("")
    return text


def _cut(name: str, most: int = 90) -> str:
    name = name.replace("|", "/").replace("`", "'")
    return name if len(name) <= most else name[:most - 1] + "…"


def write(out: Path, header: dict, rows: list[dict]) -> None:
    """``gpu.json`` and ``gpu.md``, each written whole (a temporary file, then renamed)."""
    doc = {**header, "rows": rows}
    env = header["env"]
    text = [f"# GPU check, {header['date']}, {env.get('gpu', 'cpu')}", "",
            f"`{header['command']}` ({header['elapsed_s']:.0f} s)", "",
            ", ".join(f"{k} {v}" for k, v in env.items()), "",
            f"`pytest -m cuda`: {header['tests'].get('summary', 'not run')}"
            + "".join(f"\n- failed: `{t}`" for t in header["tests"].get("failed", [])), "",
            "Seeds/s over the timed epochs, the loader and the step together as a run "
            "trains; beside it each alone (the loader's batches moved to the device with no "
            "step; the step on batches already there), and which bounds the row "
            "(rdl/bench/alone.py). Graphs: Dynamo's, in all and compiled inside "
            "the timed epochs; `profiled` columns: per step of one more epoch under "
            "torch.profiler (host wall time, device time, of which compute kernels and "
            "copies (memcpy, memset), operators dispatched, kernels run, copies, launches, "
            "CUDA graph replays; captures: CUDA graphs recorded in the whole "
            "profiled window; regions and graph calls: Dynamo's compiled regions entered "
            "and compiled graphs run a step, one each for a model compiled whole, and the "
            "frames they belong to); cudagraph skips: graphs reduce-overhead ran without CUDA "
            "graphs (the row's log says why); peak GiB: GPU memory allocated (CPU: the "
            "process's resident memory). Each row's log: `logs.tgz`.", "",
            markdown([{k: ("" if v is None else v) for k, v in r.items()} for r in table(rows)])
            if rows else "(no rows)", ""]
    top = kernels_md(rows)
    if top:
        text += ["## Top kernels by device time (per profiled step)", "", *top]
    if header.get("matmuls"):
        text += ["## The stacked encoders' weight gradient, each way timed", "",
                 header["matmuls"].strip(), ""]
    if header.get("kernels_codegen"):
        text += ["## Kernels as the CPU's proxy counts them (`--codegen triton`)", "",
                 header["kernels_codegen"].strip(), ""]
    if header.get("evaluation"):
        text += ["## Evaluation compiled or eager (`compile.eval=auto`'s threshold)", "",
                 header["evaluation"].strip(), ""]
    host = host_md(rows)
    if host:
        text += ["## Where the host's time goes (cProfile, ms a step of the step alone)", "",
                 *host]
    for name, body in (("gpu.json", json.dumps(doc, indent=1, default=str)),
                       ("gpu.md", "\n".join(text))):
        write_atomic(out / name, body)
