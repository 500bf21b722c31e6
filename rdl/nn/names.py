"""Per-table modules under any table name: a database's tables are named by its users, and
PyTorch refuses some names as module names (``"orders.2024"``, ``""``, ``"type"``,
``"training"``, ``"forward"``: a ``.``, an empty name, an attribute of ``Module``).

:class:`TypeDict` is the one place that maps a node type (a table's name) to the name its
module gets: unchanged where PyTorch takes it (so existing checkpoints keep their keys),
else ``<...>`` around the name with ``%`` and ``.`` percent-encoded, which no table name
that PyTorch takes can clash with. Everything outside (errors, predictions, the graph)
keeps the user's name.
"""
from __future__ import annotations

import torch

_PLAIN = torch.nn.ModuleDict()


def module_key(name: str) -> str:
    """The module name of node type ``name`` (see the module's docstring)."""
    if name and "." not in name and not name.startswith("<") and not hasattr(_PLAIN, name):
        return name
    return "<" + name.replace("%", "%25").replace(".", "%2E") + ">"


def node_type(key: str) -> str:
    """The node type whose module name is ``key`` (:func:`module_key` undone)."""
    if key.startswith("<") and key.endswith(">"):
        return key[1:-1].replace("%2E", ".").replace("%25", "%")
    return key


class TypeDict(torch.nn.ModuleDict):
    """A ``ModuleDict`` keyed by node types, whatever their names (:func:`module_key`)."""

    def __init__(self, modules: dict | None = None):
        super().__init__()
        for name, module in (modules or {}).items():
            self[name] = module

    def __getitem__(self, name: str) -> torch.nn.Module:
        return super().__getitem__(module_key(name))

    def __setitem__(self, name: str, module: torch.nn.Module) -> None:
        super().__setitem__(module_key(name), module)

    def __delitem__(self, name: str) -> None:
        super().__delitem__(module_key(name))

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and super().__contains__(module_key(name))

    def keys(self):
        return [node_type(k) for k in super().keys()]

    def items(self):
        return [(node_type(k), m) for k, m in super().items()]

    def __iter__(self):
        return iter(self.keys())
