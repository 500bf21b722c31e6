"""rdl's import picture: every module of ``rdl/`` on a floor, and every import (at the top of
a file or inside a function: a late import is still an arrow) runs down a floor or stays in
its own room. No arrow runs back up, no room imports a room beside it on its floor, and no
circle remains. The floors are :data:`FLOORS`, the one place they are defined
(docs/architecture.md draws them); a new module takes the floor of the longest prefix of
its name listed there.

Run as a script (``python tests/test_imports.py``) it prints the picture: each floor's
rooms, and the arrows between rooms.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "rdl"

#: floor -> the rooms on it (a room: a module or package of rdl, by its dotted name),
#: bottom first. A module's room is the longest room name that prefixes it.
FLOORS = [
    # 0: no rdl below it
    ["rdl.paths", "rdl.caching", "rdl.scaling", "rdl.visibility", "rdl.sections",
     "rdl.progress", "rdl.cores"],
    ["rdl.safe_load", "rdl.threads", "rdl.duck"],
    # 2: files to tables
    ["rdl.data"],
    # 3: tables to a graph, and to a sampled batch
    ["rdl.graph"],
    # 4: what a task is (its SQL, split times, kinds); the models, which know no task
    ["rdl.tasks", "rdl.nn"],
    # 5: what a seed's past says (deep feature synthesis, label statistics)
    ["rdl.features"],
    # 6: the baselines, fitted on those features
    ["rdl.baselines"],
    # 7: the steps of preparation every family takes
    ["rdl.preparation"],
    # 8: training that every family shares (settings, data module, LightningModule, compile);
    # the prepared data's cache, which every family's preparation reads or fills
    ["rdl.training", "rdl.prepared_cache"],
    # 9: what a family gives (rdl.families.family); 10: the families; 11: which is which
    ["rdl.families.family"],
    ["rdl.families.node", "rdl.families.link"],
    ["rdl.families"],
    # 12, 13: a run: the checkpoint's config and the report; the config checked, the trackers
    ["rdl.checkpoints", "rdl.report"],
    ["rdl.settings", "rdl.tracking"],
    # 14: the API; 15: its command lines; 16: what runs them several times
    ["rdl.api"],
    ["rdl.train", "rdl.predict"],
    ["rdl.backtest", "rdl.leaderboard"],
    # 17: the front door (``import rdl``), then the benchmarks, above everything
    ["rdl"],
    ["rdl.bench"],
]


def modules() -> dict[str, Path]:
    out = {}
    for f in sorted(ROOT.rglob("*.py")):
        parts = list(f.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def room_of(module: str) -> str:
    rooms = [r for floor in FLOORS for r in floor]
    return max((r for r in rooms if module == r or module.startswith(r + ".")), key=len)


def floor_of(room: str) -> int:
    return next(i for i, floor in enumerate(FLOORS) if room in floor)


def imports(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """``(importer, imported)`` module pairs of rdl, each import resolved to the module it
    names (``from rdl.x import y``: ``rdl.x.y`` where that is a module, else ``rdl.x``)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out = set()
    for mod, file in mods.items():
        package = mod if file.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                         for a in node.names]
            else:
                continue
            for name in names:
                target = resolve(name) if name.split(".")[0] == "rdl" else None
                if target and target != mod:
                    out.add((mod, target))
    return out


def arrows() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Room -> room arrows, each with the module imports behind it."""
    out = defaultdict(list)
    for a, b in sorted(imports(modules())):
        ra, rb = room_of(a), room_of(b)
        if ra != rb:
            out[(ra, rb)].append((a, b))
    return out


def circles(edges) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_floor():
    rooms = [r for floor in FLOORS for r in floor]
    assert len(rooms) == len(set(rooms))
    for mod in modules():
        assert any(mod == r or mod.startswith(r + ".") for r in rooms), mod


def test_no_arrow_runs_up_a_floor_or_sideways():
    bad = {(a, b): why for (a, b), why in arrows().items()
           if floor_of(room_of(a)) <= floor_of(room_of(b))}
    assert not bad, "\n".join(f"{a} (floor {floor_of(a)}) -> {b} (floor {floor_of(b)}): "
                              f"{why}" for (a, b), why in bad.items())


def test_no_circle():
    assert circles(imports(modules())) == []


def defined(file: Path) -> set[str] | None:
    """The names a module defines at its top level (None: it makes names on demand, a
    module ``__getattr__``)."""
    names = set()
    for node in ast.parse(file.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try)):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {n.name for n in ast.walk(node)
                      if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names


def test_every_name_imported_from_rdl_exists():
    """``from rdl.x import y``: ``y`` is a module of rdl or a name ``rdl.x`` defines (a name
    moved to another module would otherwise fail only when that line runs)."""
    mods, missing = modules(), []
    for mod, file in mods.items():
        for node in ast.walk(ast.parse(file.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or \
                    not (node.module or "").startswith("rdl"):
                continue
            names = defined(mods[node.module]) if node.module in mods else None
            for a in node.names:
                if names is not None and f"{node.module}.{a.name}" not in mods and \
                        a.name not in names:
                    missing.append(f"{mod}: from {node.module} import {a.name}")
    assert not missing, "\n".join(missing)


if __name__ == "__main__":
    for i, floor in reversed(list(enumerate(FLOORS))):
        print(f"floor {i:2d}: {'  '.join(floor)}")
    picture = arrows()
    print(f"\n{len(picture)} arrows between rooms, "
          f"{sum(floor_of(a) <= floor_of(b) for a, b in picture)} up or sideways; "
          f"{len(circles(imports(modules())))} circles")
    for (a, b), why in picture.items():
        flag = "" if floor_of(a) > floor_of(b) else "   <-- UP/SIDEWAYS"
        print(f"  {a} -> {b} ({len(why)}){flag}")
