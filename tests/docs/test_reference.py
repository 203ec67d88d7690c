"""The API reference covers every public module of src/mha and builds from docstrings."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import mha
from tests.conftest import ROOT

REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: (?P<name>[\w.]+)\n(?P<options>(?:[ \t]+.*\n)*)", re.M)


def documented() -> tuple[set[str], set[str]]:
    """Modules named in a ``:::`` directive, and those rendered with their submodules."""
    named, with_children = set(), set()
    for page in REFERENCE.glob("*.md"):
        for match in DIRECTIVE.finditer(page.read_text()):
            named.add(match["name"])
            if re.search(r"show_submodules:\s*true", match["options"]):
                with_children.add(match["name"])
    return named, with_children


def public_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(mha.__path__, "mha.")
        if not any(part.startswith("_") for part in info.name.split("."))
    )


def test_every_public_module_is_in_the_reference():
    named, with_children = documented()
    missing = [
        name
        for name in public_modules()
        if name not in named
        and not any(name.startswith(parent + ".") for parent in with_children)
    ]
    assert not missing, f"add these modules to a page of docs/reference/: {missing}"


def test_the_directive_parser_sees_options():
    page = (
        "::: mha.worked\n    options:\n      show_submodules: true\n\n::: mha.heads\n"
    )
    found = {
        (m["name"], "show_submodules" in m["options"]) for m in DIRECTIVE.finditer(page)
    }
    assert found == {("mha.worked", True), ("mha.heads", False)}


def test_reference_pages_render_the_docstrings(built_site: Path):
    pages = {
        "core": [
            "mha.layer.MultiHeadAttention",
            "mha.attention.softmax",
            "mha.accounting.kv_cache_bytes",
        ],
        "pages": ["mha.pages.cost.sweep", "mha.pages.attention.batches.study"],
        "pages-inside": ["mha.pages.exercises.page"],
        "pages-deep-dives": ["mha.pages.real_heads.pruning.study"],
        "examples": ["mha.worked.cricket.solve", "mha.checkers.check_decode_step"],
        "figures": ["mha.figures.cost.head_timings"],
    }
    for page, anchors in pages.items():
        html = (built_site / "reference" / page / "index.html").read_text()
        for anchor in anchors:
            assert f'id="{anchor}"' in html, f"{anchor} missing from reference/{page}"
        assert "```python" not in html  # docstring examples render as code, not text


def test_the_overview_lists_every_re_export():
    text = (ROOT / "docs" / "reference" / "overview.md").read_text()
    missing = [name for name in mha.__all__ if f"[`{name}`]" not in text]
    assert not missing, f"docs/reference/overview.md does not list {missing}"
