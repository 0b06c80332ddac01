"""The house (docs/architecture.md): no two modules of ``scanner`` import each other, directly or round a longer
circle; the top of ``scanner/`` holds the ground floor and the packages; no module over 800 lines.

Every import counts, at the top of a module, inside a function (a deferred import only hides a circle until the
day someone moves it up) or under ``if TYPE_CHECKING:`` (a type one module needs of another is a dependency too:
a type both sides share moves down a floor). A submodule importing its own package's ``__init__`` is how
packages work and is not a circle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "scanner"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in ROOT.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The scanner modules ``name`` imports when it runs (and when its functions run)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    own_packages = {".".join(name.split(".")[:depth]) for depth in range(1, name.count(".") + 1)}
    return {target for target in found if target in MODULES and target != name and target not in own_packages}


def circles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    graph = {name: sorted(imports_of(name)) for name in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            connect(name)
    return groups


def test_no_import_circles() -> None:
    assert circles() == []


def test_the_checker_sees_a_circle_hidden_in_a_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: two modules importing each other, one of them inside a function, are found."""
    root = tmp_path / "scanner"
    root.mkdir()
    (root / "__init__.py").write_text("", encoding="utf-8")
    (root / "first.py").write_text("from scanner import second\n", encoding="utf-8")
    (root / "second.py").write_text("def late():\n    from scanner.first import thing\n", encoding="utf-8")
    (root / "third.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import scanner.fourth\n")
    (root / "fourth.py").write_text("import scanner.third\n", encoding="utf-8")
    (root / "fifth.py").write_text("import scanner.third\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", root)
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {module_name(path): path for path in root.rglob("*.py")})
    assert sorted(circles()) == [["scanner.first", "scanner.second"], ["scanner.fourth", "scanner.third"]]


GROUND_FLOOR = 12  # models, errors, exit codes, wire, text safety...: what every stage shares (issue 38)
LONGEST = 800


def test_the_top_of_scanner_holds_the_ground_floor_and_packages() -> None:
    loose = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(loose) <= GROUND_FLOOR, loose


def test_no_module_is_over_800_lines() -> None:
    long = {
        name: lines for name, path in MODULES.items() if (lines := len(path.read_text("utf-8").splitlines())) > LONGEST
    }
    assert long == {}


def test_a_store_is_passed_typed_never_as_any() -> None:
    untyped = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for arg in [*node.args.args, *node.args.kwonlyargs]:
                    if arg.arg == "store" and (arg.annotation is None or ast.unparse(arg.annotation) == "Any"):
                        untyped.append(f"{name}.{node.name}")
    assert untyped == []
