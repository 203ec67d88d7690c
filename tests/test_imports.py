"""The import graph of src/, read from the syntax tree: no cycle, and no figure module
reaching past its page (a figure draws what its page object hands it)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src"
# what a figure may not import: the studies, the models and the data its page reads
NOT_FROM_FIGURES = ("mha.worked", "mha.experiments", "mha.pretrained", "mha.data")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in SRC.rglob("*.py")}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` names in an import statement.

    ``from package import name`` names the package (its ``__init__`` runs first, and
    hands ``name`` over), and the submodule too if ``name`` is one: a sibling read
    through its package's ``__init__`` is a circle whenever that ``__init__`` imports
    the module asking."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found |= {base, sub}
    return found & known


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) - {name} for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_one():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_from_a_package_import_a_sibling_is_an_edge_to_the_package(tmp_path: Path):
    (tmp_path / "a.py").write_text("from p import b\nfrom p.c import x\n")
    known = {"p", "p.a", "p.b", "p.c"}
    assert imports("p.a", tmp_path / "a.py", known) == {"p", "p.b", "p.c"}
    (tmp_path / "a.py").write_text("from . import b\nfrom .c import x\n")
    assert imports("p.a", tmp_path / "a.py", known) == {"p", "p.b", "p.c"}


def test_no_import_cycle_in_src():
    found = cycles(graph())
    assert not found, f"modules that import each other in a circle: {found}"


def test_no_figure_imports_the_studies_models_or_data():
    reaching = {
        name: sorted(t for t in targets if t.startswith(NOT_FROM_FIGURES))
        for name, targets in graph().items()
        if name.startswith("mha.figures")
    }
    reaching = {name: targets for name, targets in reaching.items() if targets}
    assert not reaching, f"figures draw what their page hands them: {reaching}"
