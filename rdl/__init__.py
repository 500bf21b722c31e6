"""rdl: relational deep learning on PyG, PyTorch Frame and Lightning.

The public API (docs/api.md): :func:`config`, :func:`load_database`, :func:`load_task`,
:func:`prepare`, :func:`make_model` and :func:`fit`, defined in :mod:`rdl.api` and imported
on first use, so that ``import rdl`` stays light.
"""
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


#: the public API, from :mod:`rdl.api`
__all__ = ["config", "load_database", "load_task", "prepare", "make_model", "fit",
           "cache_dir", "CONF_DIR", "TASKS_DIR"]
_API = ("config", "load_database", "load_task", "prepare", "make_model", "fit")


def __getattr__(name: str):
    # PEP 562: rdl.fit and the rest import torch, Lightning and PyG only when first used
    if name in _API:
        from rdl import api
        return getattr(api, name)
    raise AttributeError(f"module 'rdl' has no attribute {name!r}")
