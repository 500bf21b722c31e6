"""Where rdl's own files are (its packaged configs and task SQL) and where it caches what
it builds: the bottom floor, imported by every room that needs a path (the package's
``rdl/__init__`` is the front door at the top and only re-exports these)."""
import os
from pathlib import Path

#: rdl's Hydra configs and its tasks' SQL, shipped inside the package.
CONF_DIR = Path(__file__).resolve().parent / "conf"
TASKS_DIR = Path(__file__).resolve().parent / "tasks"


def cache_dir() -> Path:
    """Where rdl caches generated databases and materialised graphs: ``$RDL_CACHE`` or
    ``~/.cache/rdl``."""
    return Path(os.environ.get("RDL_CACHE") or Path.home() / ".cache" / "rdl")
