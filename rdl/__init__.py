"""rdl: relational deep learning on PyG, PyTorch Frame and Lightning."""
import os
from pathlib import Path

__version__ = "0.1.0"

#: The repository root, where ``conf/`` and ``tasks/`` live (rdl is installed editable).
ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """Where rdl caches generated databases and materialised graphs: ``$RDL_CACHE`` or
    ``~/.cache/rdl``."""
    return Path(os.environ.get("RDL_CACHE") or Path.home() / ".cache" / "rdl")
