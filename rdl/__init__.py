"""rdl: relational deep learning on PyG, PyTorch Frame and Lightning."""
import os
from pathlib import Path

__version__ = "0.1.0"

#: rdl's Hydra configs and its tasks' SQL, shipped inside the package.
CONF_DIR = Path(__file__).resolve().parent / "conf"
TASKS_DIR = Path(__file__).resolve().parent / "tasks"


def cache_dir() -> Path:
    """Where rdl caches generated databases and materialised graphs: ``$RDL_CACHE`` or
    ``~/.cache/rdl``."""
    return Path(os.environ.get("RDL_CACHE") or Path.home() / ".cache" / "rdl")
