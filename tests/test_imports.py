"""The import graph of src/, read from the syntax tree: no cycle, and no figure module
reaching past its page (a figure draws what its page object hands it)."""

from __future__ import annotations

import ast
import re
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


# --- one page's names are its own --------------------------------------------------
# A page module's one public entry is its ``page()``: another page may read what a page
# publishes there (the home page shows the multi-head page's figure, the exercises and
# the position page quote numbers other pages print, so that both print the same),
# and nothing else of it. A function, constant or type that two pages use, a study
# both compute with, lives in the library (mha.experiments, mha.worked), where each
# page imports it from.
PAGES = "mha.pages"


def page_of(module: str) -> str | None:
    """The page a module of ``mha.pages`` belongs to: ``mha.pages.depth.induction`` is
    the depth page's; None for a module outside the pages, or the package itself."""
    parts = module.split(".")
    return parts[2] if module.startswith(f"{PAGES}.") and len(parts) > 2 else None


def other_pages_names(module: str, path: Path) -> list[str]:
    """What ``path`` (the module ``module``) reads of a page other than its own, but
    that page's ``page``: ``mha.pages.depth.scan`` for ``from mha.pages.depth import
    scan`` or for ``depth.scan`` after ``from mha.pages import depth``."""
    own = page_of(module)
    if own is None:
        return []  # a figure reads its page's types; the site's tooling, every page
    tree = ast.parse(path.read_text())
    found, aliases = [], {}  # the local names bound to another page's module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if node.module == PAGES and page_of(target) not in (None, own):
                    aliases[alias.asname or alias.name] = target
                elif page_of(node.module) not in (None, own) and (
                    node.module.count(".") > 2 or alias.name != "page"
                ):
                    found.append(target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if page_of(alias.name) not in (None, own):
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:  # ``import mha.pages.x`` binds ``mha``
                        found.append(alias.name)
    reads = {}  # id of each Name node read as ``name.attribute``
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            reads[id(node.value)] = node.attr
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases:
            attribute = reads.get(id(node))
            if attribute != "page":  # the module handed on, or another name of it
                found.append(f"{aliases[node.id]}.{attribute or '*'}")
    return sorted(found)


def test_a_page_reading_another_pages_names_is_found(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_text(
        "from mha.pages import cost, ffn as f\n"
        "from mha.pages.depth import page, scan\n"
        "from mha.pages.depth.induction import sample\n"
        "from mha.pages.position import helper\n"
        "import mha.pages.block as b\n"
        "def g():\n"
        "    from mha.pages.cricket import page\n"
        "    return cost.page(), f.study(), b, page()\n"
    )
    found = other_pages_names("mha.pages.position.part", path)
    assert found == [
        "mha.pages.block.*",
        "mha.pages.depth.induction.sample",
        "mha.pages.depth.scan",
        "mha.pages.ffn.study",
    ]
    assert other_pages_names("mha.figures.position", path) == []  # not a page


def test_no_page_reads_another_pages_names_but_its_page():
    found = {
        name: reads
        for name, path in modules().items()
        if (reads := other_pages_names(name, path))
    }
    assert not found, (
        "a page reads another page's published object, page(), and nothing else of "
        f"it: move what two pages share to mha.experiments or mha.worked: {found}"
    )


DOCS = ROOT / "docs"
# ``from mha.pages.x import a, b`` or ``import (\n a,\n b as c,\n)``: group 2 the list
DOCS_IMPORT = re.compile(r"^\s*from (mha\.pages[\w.]*) import (\([^)]*\)|.*)$", re.M)
# public names of a page module that its page prints, beside what its blocks import
SHOWN = {
    # the type of the arguments of post_norm and pre_norm, whose source the page prints
    "mha.pages.block.Sublayer",
}
IMPORTED = re.compile(r"(\w+)(?:\s+as\s+\w+)?\s*(?:,|\)|$)")


def public_names(path: Path) -> list[str]:
    """The names a module defines at its top level (functions, classes, assignments)
    without a leading underscore; what it imports is not counted."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [
                n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
            ]
    return [name for name in names if not name.startswith("_")]


def read_by_docs(texts: list[str]) -> set[str]:
    """``module.name`` for each name of ``mha.pages`` the pages' code blocks and the
    notebooks (``texts``) import."""
    return {
        f"{m[1]}.{name}"
        for text in texts
        for m in DOCS_IMPORT.finditer(text)
        for name in IMPORTED.findall(m[2])
    }


def test_the_names_the_docs_import_are_read():
    text = "```python\nfrom mha.pages.block import post_norm, source\n```\n"
    text += "from mha.pages.a.b import (\n    X,\n    y as z,\n)\n"
    found = {"mha.pages.block.post_norm", "mha.pages.block.source"}
    assert read_by_docs([text]) == found | {"mha.pages.a.b.X", "mha.pages.a.b.y"}


def test_a_page_module_exposes_page_and_what_its_code_blocks_import():
    """Everything else of a page module is private to it (a leading underscore)."""
    texts = [p.read_text() for p in [*DOCS.glob("*.md"), *DOCS.glob("notebooks/*.py")]]
    allowed = read_by_docs(texts) | SHOWN
    public = {
        name: extra
        for name, path in modules().items()
        if page_of(name) is not None
        and (
            extra := [
                n
                for n in public_names(path)
                if n != "page" and f"{name}.{n}" not in allowed
            ]
        )
    }
    assert not public, (
        "a page module's names are private to it but page() and what its code blocks "
        f"and the notebooks import: add a leading underscore to {public}"
    )
