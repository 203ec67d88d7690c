"""CONTRIBUTING.md's map of where a page's code lives matches the tree."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `docs/(?P<page>[\w-]+\.md)` \| (?P<rest>.*) \|$", re.M)
MAP = {m["page"]: re.findall(r"`([^`]+)`", m["rest"]) for m in ROW.finditer(TEXT)}
PAGES = sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_every_page_is_in_the_map():
    assert sorted(MAP) == PAGES


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_module_figures_and_tests_exist_where_the_map_says(page: str):
    name = page[:-3].replace("-", "_")
    module = f"src/mha/pages/{name}.py"
    if (ROOT / "src" / "mha" / "pages" / name).is_dir():  # a page with code of its own
        module = f"src/mha/pages/{name}/__init__.py"
    paths = MAP[page]
    assert paths[0] == module, f"{page}: its module is {module}"
    for path in paths:
        assert (ROOT / path).is_file(), f"{page}: {path} does not exist"
    figures = ROOT / "src" / "mha" / "figures" / f"{name}.py"
    assert figures.is_file() == (f"src/mha/figures/{figures.name}" in paths), (
        f"{page}: the map and the tree disagree about {figures.name}"
    )
