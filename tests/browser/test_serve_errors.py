"""`make serve` never hangs: each build error is shown in the page it concerns.

A real `mkdocs serve --dirty` (as `make serve` runs it) serves a tiny copy of the
project: CONTRIBUTING's example page (``tests/test_contributing.py``), a page that
stays well, and one page per kind of error, with the glue of docs/_glue that serves
them (macros, errors, serve, drift). Each error is made while it serves; Chromium
reads the page: one banner of the error's kind, its file and line; the other pages
are still served; the fix shows within one rebuild. And CONTRIBUTING's order:
the page module saved (a new fact) before the Markdown that states it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Browser

from tests.conftest import ROOT, local_build_env
from tests.test_contributing import FALSE_FACT, PAGE_MODULE, recipe_tree

WELL = "# {title}\n\nA page that is well.\n"
# page: (title, what an edit appends, the banner's kind, the line it names)
BROKEN = {
    "kind-template.md": ("Template", "An unclosed {{ brace.\n", "Template error", 5),
    "kind-typed.md": ("Typed", "It takes 42 ms.\n", "Drift guard", 5),
    "kind-block.md": (
        "Block",
        '```python exec="on"\nassert 1 == 2\n```\n',
        "A Python block of the page raised",
        5,
    ),
    "kind-figure.md": (
        "Figure",
        '{{ figure("nope") }}\n',
        "A figure is missing",
        5,
    ),
    "kind-value.md": (
        "Value",
        "{{ page.nope }}\n",
        "The page reads a value its page object does not have",
        5,
    ),
}
# Two pages of an API reference, one linking to what the other documents.
REFERENCE = {
    "reference-formatting.md": "# Formatting\n\nIt writes what "
    "[`split_heads`][mha.heads.split_heads] returns.\n\n::: mha.support.formatting\n",
    "reference-heads.md": "# Heads\n\n::: mha.heads\n",
}
GLUE = ("serve.py", "drift.py")
SERVE = [
    sys.executable,
    "-m",
    "mkdocs",
    "serve",
    "--dirty",
    "--no-strict",
]  # beside macros.py and errors.py (recipe_tree)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`mkdocs serve --dirty` of ``tree`` on ``url``, its log in ``log``."""

    def __init__(self, tree: Path, log: Path) -> None:
        self.tree, self.log = tree, log
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}/"
        env = local_build_env(PYTHONPATH=str(tree / "src"))
        self.process = subprocess.Popen(
            [*SERVE, "-a", f"127.0.0.1:{port}"],
            cwd=tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
            start_new_session=True,  # mkdocs and its children, stopped together
        )

    def builds(self) -> int:
        """How many builds have ended: the first, then each rebuild (or failed)."""
        text = self.log.read_text()
        ended = ("Serving on", "Reloading browsers", "will appear stuck")
        return sum(text.count(end) for end in ended)

    def wait_for(self, builds: int, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while self.builds() < builds:
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mkdocs serve: no build {builds}:\n{self.log.read_text()}")
            time.sleep(0.1)

    def write(self, files: dict[str, str]) -> None:
        """Write ``files`` (path under the tree: text) and wait for their rebuild:
        one, or more when the first began before the last file was written."""
        before = self.builds()
        for path, text in files.items():
            (self.tree / path).write_text(text)
        self.wait_for(before + 1)
        time.sleep(0.5)  # a second build, if one was started, has begun
        self.wait_for(self.log.read_text().count("Building documentation"))

    def html(self, page: str) -> str:
        with urllib.request.urlopen(self.url + page, timeout=30) as response:
            return response.read().decode()

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The tiny project, served, every page well."""
    tree = recipe_tree(ROOT, tmp_path_factory.mktemp("served"))
    for glue in GLUE:
        shutil.copy(ROOT / "docs" / "_glue" / glue, tree / "docs" / "_glue" / glue)
    config = yaml.safe_load((tree / "mkdocs.yml").read_text())
    config["hooks"] = [f"docs/_glue/{name}" for name in ("errors.py", *GLUE)]
    config["watch"] = ["src"]
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!ENV", ""))
    config["plugins"] += [p for p in site["plugins"] if "mkdocstrings" in str(p)]
    for page, text in REFERENCE.items():
        (tree / "docs" / page).write_text(text)
    (tree / "mkdocs.yml").write_text(yaml.safe_dump(config))
    (tree / "docs" / "other.md").write_text(WELL.format(title="Other"))
    for page, (title, *_) in BROKEN.items():
        (tree / "docs" / page).write_text(WELL.format(title=title) + "\n")
    server = Served(tree, tree / "serve.log")
    try:
        server.wait_for(1)
        yield server
    finally:
        server.stop()


def _banners(browser: Browser, url: str, pages: list[str]) -> dict[str, list]:
    """(title, lines) of each build-error banner each of ``pages`` shows, read by
    Chromium in one tab."""
    tab = browser.new_page()
    shown = {}
    try:
        for page in pages:
            tab.goto(url + page.removesuffix(".md") + "/")
            shown[page] = [
                (
                    banner.locator(".admonition-title").inner_text(),
                    banner.locator("li").all_inner_texts(),
                )
                for banner in tab.locator(".mha-build-error").all()
                if banner.is_visible()
            ]
    finally:
        tab.close()
    return shown


def _well(served: Served, pages: list[str]) -> list[str]:
    """Those of ``pages`` that are served without a build-error banner."""
    return [p for p in pages if "mha-build-error" not in served.html(p[:-3] + "/")]


def test_each_error_is_shown_in_its_page_and_the_fix_in_one_rebuild(
    served: Served, browser: Browser
):
    pages = [*BROKEN, "temperature.md", "other.md"]
    assert _well(served, pages) == pages
    module = (served.tree / PAGE_MODULE).read_text()
    well = {
        f"docs/{page}": (served.tree / "docs" / page).read_text() for page in BROKEN
    }
    broken = {
        f"docs/{page}": well[f"docs/{page}"] + edit
        for page, (_, edit, *_) in BROKEN.items()
    }
    served.write(broken | {PAGE_MODULE: module.replace(*FALSE_FACT)})
    shown = _banners(browser, served.url, pages)
    for page, (_, _, title, line) in BROKEN.items():
        assert len(shown[page]) == 1, shown[page]
        assert shown[page][0][0].startswith(title), shown[page]
        assert shown[page][0][1][0].startswith(f"docs/{page}:{line}: "), shown[page]
    assert [title for title, _ in shown["temperature.md"]] == [
        "A fact no longer holds (or is not the page module's). "
        "`make build` will refuse this page"
    ]
    lines = shown["temperature.md"][0][1]
    assert re.match(r"docs/temperature\.md:7: 'a higher temperature", lines[0])
    assert shown["other.md"] == []  # still served, still well

    builds = served.builds()
    served.write(well | {PAGE_MODULE: module})
    assert _well(served, pages) == pages
    # docs/ and src/ are looked at apart: their edits may start a build each
    assert served.builds() <= builds + 2, "the fix took more than one rebuild"


def test_a_page_module_saved_before_its_markdown_is_shown_then_recovers(
    served: Served, browser: Browser
):
    """CONTRIBUTING's order: the module declares a new fact, then the Markdown
    states it. Between the two saves the page says which fact is not stated, where
    it is declared; the Markdown's save shows the page, in one rebuild."""
    module = (served.tree / PAGE_MODULE).read_text()
    markdown = (served.tree / "docs" / "temperature.md").read_text()
    declared = module.replace(
        '"flatter": Fact(',
        '"summed": Fact(bool(np.isclose(warm.sum(), 1)), f"{warm.sum()}", '
        '"the weights sum to one", qualitative="a total said in words"), '
        '"flatter": Fact(',
        1,
    )
    assert declared != module
    served.write({PAGE_MODULE: declared})
    shown = _banners(browser, served.url, ["temperature.md"])["temperature.md"]
    assert len(shown) == 1, shown
    assert shown[0][0].startswith("A fact is declared but never stated"), shown
    assert shown[0][1][0].startswith(f"{PAGE_MODULE}:"), shown
    assert "['summed']" in shown[0][1][0]

    builds = served.builds()
    sentence = '{% call fact("summed") %}the weights sum to one{% endcall %}.\n'
    served.write({"docs/temperature.md": markdown + sentence})
    assert served.builds() == builds + 1
    assert _well(served, ["temperature.md"]) == ["temperature.md"]
    assert "the weights sum to one" in served.html("temperature/")


def test_a_docstring_edit_in_the_library_keeps_the_reference_linked(served: Served):
    """A page of the reference documents mha.support.formatting and links to
    mha.heads, which another page documents. A docstring edit in the first renders
    its page again: rendered alone, its link showed as literal brackets
    (mkdocs-autorefs resolves only among the pages of one build); the whole
    reference renders with it."""
    module = served.tree / "src" / "mha" / "support" / "formatting.py"
    text = module.read_text()
    docstring = '    """``x`` rounded to ``places`` decimals'
    assert docstring in text
    edited = text.replace(
        docstring, '    """``x`` rounded (edited) to ``places`` decimals'
    )
    start = len(served.log.read_text())
    served.write({"src/mha/support/formatting.py": edited})
    html = served.html("reference-formatting/")
    assert "rounded (edited) to" in html
    assert "][mha.heads.split_heads]" not in html
    assert 'href="../reference-heads/#mha.heads.split_heads"' in html
    assert "Could not find cross-reference" not in served.log.read_text()[start:]
    served.write({"src/mha/support/formatting.py": text})
