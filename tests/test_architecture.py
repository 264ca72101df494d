"""The house stays as docs/ARCHITECTURE.md draws it: floors from the ground up, every import of a
project module points down (or stays on its floor), no import cycle (imports inside functions
count), and an import inside a function only defers a heavy dependency, saying so."""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The floors, from the ground up; packages on one floor may import each other's modules.
FLOORS = (("infra",), ("lakehouse",), ("settings",), ("collectors",), ("analysis",), ("alerts", "dashboards"),
          ("brokerscope",))
FLOOR_OF = {pkg: level for level, floor in enumerate(FLOORS) for pkg in floor}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the project module imported
    line: int
    in_function: bool
    deferred: bool  # the line, or the one above, says why it is inside a function


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    mods = {}
    for pkg in FLOOR_OF:
        for path in (root / pkg).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def _resolved(mods: dict[str, Path], module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".") if mods[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = []
    for name in names:
        while name and name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in mods and name != module:
            out.append(name)
    return out


def imports(root: Path = ROOT) -> list[Import]:
    mods = project_modules(root)
    found = []
    for module, path in mods.items():
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines))
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                said = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
                for target in _resolved(mods, module, node):
                    found.append(Import(module, target, node.lineno, id(node) in in_function, "deferred" in said))
    return found


def test_every_import_points_down_or_stays_on_its_floor():
    upward = [f"{i.module}:{i.line} imports {i.target}" for i in imports()
              if FLOOR_OF[i.target.split(".")[0]] > FLOOR_OF[i.module.split(".")[0]]]
    assert not upward, "imports that run up a floor (move the shared code down instead):\n" + "\n".join(upward)


def test_no_import_cycle_counting_imports_inside_functions():
    graph = defaultdict(set)
    for i in imports():
        graph[i.module].add(i.target)
    cycles, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" → ".join(path[path.index(nxt):] + [node, nxt]) if nxt in path else f"{node} → {nxt}")
            elif nxt not in state:
                visit(nxt, path + [node])
        state[node] = "done"

    for module in sorted(project_modules()):
        if module not in state:
            visit(module, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_imports_inside_functions_only_defer_heavy_dependencies_and_say_so():
    hidden = [f"{i.module}:{i.line} imports {i.target}" for i in imports() if i.in_function and not i.deferred]
    assert not hidden, ("imports inside functions without a '# deferred: <what is heavy>' comment (import at the "
                        "top unless it defers pyspark/dash):\n" + "\n".join(hidden))


def test_the_checks_see_a_cycle_and_an_undeclared_import_inside_a_function(tmp_path):
    """What the checks above read: both directions of a cycle, one of them inside a function."""
    for pkg, body in (("settings", "def f():\n    from collectors import x\n"), ("collectors", "import settings.y\n")):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
        (tmp_path / pkg / ("y.py" if pkg == "settings" else "x.py")).write_text(body)
    found = imports(tmp_path)
    assert {(i.module, i.target, i.in_function, i.deferred) for i in found} == {
        ("settings.y", "collectors.x", True, False), ("collectors.x", "settings.y", False, False)}
