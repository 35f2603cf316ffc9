"""The layout's rules, checked on the source: the core never imports a system, packages import each other without
cycles, and a system never imports another system. Function-level imports count as much as top-level ones."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import sleuth

PACKAGE_ROOT = Path(sleuth.__file__).parent


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def parse(path: Path) -> ast.Module:
    """``ast.parse`` with the garbage collector paused. On CPython 3.11 the AST builder keeps its recursion depth per
    interpreter, not per thread: a finalizer run by the collector mid-parse lets another thread's ``ast.parse`` (a
    library's background thread left by an earlier test on the same worker) interleave, and the parse fails with
    "SystemError: AST constructor recursion depth mismatch" (CI, stop 43). Without the collector nothing in the parse
    runs Python code, so no other thread can get in."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    finally:
        if was_enabled:
            gc.enable()


def imports(root: Path) -> dict[str, set[str]]:
    """Module -> the sleuth modules it imports anywhere in its body (``from a import b`` counts as ``a.b`` too)."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        targets: set[str] = set()
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        found[name] = {t for t in targets if t.split(".")[0] == root.name}
    return found


def unit(module: str) -> str:
    """The package a module belongs to: ``sleuth.index``, ``sleuth.systems.dhr``, or a top-level module."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[1:2] == ["systems"] and len(parts) > 2 else parts[:2])


def is_system(module: str) -> bool:
    return module.split(".")[1:2] == ["systems"]


def core_imports_of_systems(root: Path) -> list[str]:
    """``core module -> system module`` for every import from the core into ``<root>.systems``."""
    return sorted(f"{module} -> {target}" for module, targets in imports(root).items() if not is_system(module)
                  for target in targets if is_system(target))


def package_cycles(root: Path) -> list[list[str]]:
    """Cycles in the graph of packages (a package importing itself is fine)."""
    graph: dict[str, set[str]] = {}
    for module, targets in imports(root).items():
        graph.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_the_core_never_imports_a_system():
    assert core_imports_of_systems(PACKAGE_ROOT) == []


def test_packages_import_each_other_without_cycles():
    assert package_cycles(PACKAGE_ROOT) == []


def test_a_system_never_imports_another_system():
    crossing = sorted(f"{m} -> {t}" for m, targets in imports(PACKAGE_ROOT).items() if is_system(m)
                      for t in targets if is_system(t) and unit(t) != unit(m) and unit(t) != "sleuth.systems"
                      and unit(m) != "sleuth.systems")
    assert crossing == []


def test_the_rules_catch_a_planted_violation(tmp_path):
    """The checks on a small tree: a function-level core -> system import (a cycle too, as the system imports the
    core), then an index <-> stages cycle."""
    root = tmp_path / "sleuth"
    for folder in ("index", "stages", "systems/dhr"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "systems" / "dhr" / "stages.py").write_text("from sleuth.index.bm25 import BM25Index\n")
    (root / "index" / "bm25.py").write_text("def load():\n    from sleuth.systems.dhr import stages\n")
    (root / "stages" / "base.py").write_text("import sleuth.index.bm25\n")
    assert core_imports_of_systems(root) == ["sleuth.index.bm25 -> sleuth.systems.dhr",
                                             "sleuth.index.bm25 -> sleuth.systems.dhr.stages"]
    assert package_cycles(root) == [["sleuth.index", "sleuth.systems.dhr", "sleuth.index"]]
    (root / "index" / "bm25.py").write_text("from sleuth.stages.base import load\n")
    assert package_cycles(root) == [["sleuth.index", "sleuth.stages", "sleuth.index"]]
