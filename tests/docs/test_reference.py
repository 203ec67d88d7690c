"""The API reference documents the library a reader imports, and only it: the core,
the real models, the shared worked examples and experiments, and the published data.
Not the site's own code (page modules, figures, support, build tooling)."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import mha
from tests.conftest import ROOT

REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: (?P<name>[\w.]+)\n(?P<options>(?:[ \t]+.*\n)*)", re.M)
# the library: what the reference documents; every other package of mha is the site's
LIBRARY = ("attention", "heads", "layer", "kv_cache", "rope", "positions", "accounting")
LIBRARY_PACKAGES = ("pretrained", "worked", "experiments", "data")
SITE_PACKAGES = ("pages", "figures", "support")
ANCHOR = re.compile(r'id="(mha\.[\w.]+)"')


def documented() -> tuple[set[str], set[str]]:
    """Modules named in a ``:::`` directive, and those rendered with their submodules."""
    named, with_children = set(), set()
    for page in REFERENCE.glob("*.md"):
        for match in DIRECTIVE.finditer(page.read_text()):
            named.add(match["name"])
            if re.search(r"show_submodules:\s*true", match["options"]):
                with_children.add(match["name"])
    return named, with_children


def library_modules() -> list[str]:
    """The public modules of the library: the core's and those of its packages."""
    names = [f"mha.{name}" for name in LIBRARY]
    for package in LIBRARY_PACKAGES:
        path = [str(Path(mha.__file__).parent / package)]
        names.append(f"mha.{package}")
        names += [
            info.name
            for info in pkgutil.walk_packages(path, f"mha.{package}.")
            if not any(part.startswith("_") for part in info.name.split("."))
        ]
    return sorted(names)


def test_every_library_module_is_in_the_reference():
    named, with_children = documented()
    missing = [
        name
        for name in library_modules()
        if name not in named
        and not any(name.startswith(parent + ".") for parent in with_children)
    ]
    assert not missing, f"add these modules to a page of docs/reference/: {missing}"


def test_the_reference_names_no_module_of_the_site():
    named, _ = documented()
    site = [
        name
        for name in named
        if any(name.startswith(f"mha.{package}") for package in SITE_PACKAGES)
    ]
    assert not site, f"the site's own code is not documented in the reference: {site}"


def test_every_package_of_mha_is_the_library_or_the_site():
    """A new package of mha is sorted into one of the two lists above."""
    packages = {info.name for info in pkgutil.iter_modules(mha.__path__) if info.ispkg}
    assert packages == set(LIBRARY_PACKAGES) | set(SITE_PACKAGES)


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
        "models": ["mha.pretrained.minilm.load", "mha.pretrained.smollm2.load"],
        "examples": [
            "mha.worked.cricket.solve",
            "mha.experiments.toy_task.generate",
            "mha.checkers.check_decode_step",
        ],
        "data": ["mha.data.published"],
    }
    for page, anchors in pages.items():
        html = (built_site / "reference" / page / "index.html").read_text()
        for anchor in anchors:
            assert f'id="{anchor}"' in html, f"{anchor} missing from reference/{page}"
        assert "```python" not in html  # docstring examples render as code, not text


def test_the_built_reference_documents_no_name_of_the_site(built_site: Path):
    """No heading of the built reference is a page module's, a figure's or the
    support's name (the anchors mkdocstrings gives every documented object)."""
    anchors = {
        anchor
        for page in (built_site / "reference").glob("*/index.html")
        for anchor in ANCHOR.findall(page.read_text())
    }
    assert "mha.layer.MultiHeadAttention" in anchors  # the reader finds the library
    site = sorted(
        a for a in anchors if re.match(rf"mha\.({'|'.join(SITE_PACKAGES)})\b", a)
    )
    assert not site, f"the reference documents the site's code: {site[:10]}"


def test_the_overview_lists_every_re_export():
    text = (ROOT / "docs" / "reference" / "overview.md").read_text()
    missing = [name for name in mha.__all__ if f"[`{name}`]" not in text]
    assert not missing, f"docs/reference/overview.md does not list {missing}"
