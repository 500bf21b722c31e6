"""What a benchmark's figures were measured with: the packages, the CPU, the GPU and its
driver, the commit and a digest of rdl's own source (:func:`environment`; the GPU check's
header)."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import torch


def environment(device: str) -> dict:
    """What the figures were measured with."""
    import pytorch_lightning
    import torch_frame
    import torch_geometric
    env = {"python": platform.python_version(), "torch": torch.__version__,
           "torch_geometric": torch_geometric.__version__, "torch_frame": torch_frame.__version__,
           "pytorch_lightning": pytorch_lightning.__version__, "cpu": _cpu_model(),
           "cpu_cores": os.cpu_count(), "commit": _run(["git", "rev-parse", "--short", "HEAD"]),
           "rdl_digest": source_digest()}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                   capability=".".join(map(str, torch.cuda.get_device_capability(0))),
                   cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                   driver=_run(["nvidia-smi", "--query-gpu=driver_version",
                                "--format=csv,noheader"]))
    return env


def source_digest(root: Path | None = None) -> str:
    """A digest of rdl's own source files (``.py`` and ``.yaml`` under ``rdl/``): which
    code ran where the commit cannot say (a lent GPU's copy of the tree kept an older
    ``.git`` on 2026-12-04). ``python -c "from rdl.bench.gpu_env import source_digest as d;
    print(d())"`` at a commit gives the same."""
    import hashlib
    root = root or Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml", ".sql")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"
