"""rdl: relational deep learning on PyG, PyTorch Frame and Lightning.

The public API (docs/api.md): :func:`config`, :func:`load_database`, :func:`load_task`,
:func:`prepare`, :func:`make_model` and :func:`fit`, defined in :mod:`rdl.api` and imported
on first use, so that ``import rdl`` stays light.
"""
from rdl.paths import CONF_DIR, TASKS_DIR, cache_dir

__version__ = "0.1.0"

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
