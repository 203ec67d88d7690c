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
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Browser, Page

from tests.conftest import ROOT, local_build_env
from tests.docs.glue import glue
from tests.serving import free_port
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


# How the server's log says a build ended: the first, each rebuild, a rebuild that failed.
SERVING, REBUILT, FAILED = "Serving on", "Reloading browsers", "will appear stuck"
DETECTED = "Detected file changes"  # a rebuild is due
# The server looks at each watched folder (docs/, src/) apart, every POLL_SECONDS: a
# file written is seen by the next look at its folder. Two looks, and a margin.
SEEN_WITHIN = 2 * glue("serve").POLL_SECONDS + 0.1
# Once a rebuild has ended, the server starts the next one due (logging DETECTED)
# at once: a moment later, no rebuild due means none.
SETTLED = 0.05


class Served:
    """`mkdocs serve --dirty` of ``tree`` on ``url``, its log in ``log``."""

    def __init__(self, tree: Path, log: Path) -> None:
        self.tree, self.log = tree, log
        port = free_port()
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

    def _count(self, *lines: str) -> int:
        """How many lines of the log hold one of ``lines``."""
        text = self.log.read_text()
        return sum(text.count(line) for line in lines)

    def builds(self) -> int:
        """How many builds have ended: the first, then each rebuild (or failed)."""
        return self._count(SERVING, REBUILT, FAILED)

    def _due(self) -> int:
        """How many rebuilds are due or running: detected, not ended (one read)."""
        text = self.log.read_text()
        return text.count(DETECTED) - text.count(REBUILT) - text.count(FAILED)

    def until(self, done: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
        """Return once ``done()``; fail, with the log, if the server stops first or
        ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not done():
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mkdocs serve: {what}:\n{self.log.read_text()}")
            time.sleep(0.02)

    def _idle(self) -> bool:
        """No rebuild due, twice ``SETTLED`` seconds apart."""
        if self._due():
            return False
        time.sleep(SETTLED)
        return not self._due()

    def write(self, files: dict[str, str]) -> None:
        """Write ``files`` (path under the tree: text) and wait for their rebuild: one
        detected after they were written (it starts a moment later, after them) has
        ended, and once the server has looked at both folders since, none is due
        (files under docs/ and src/ may start a build each)."""
        self.until(lambda: not self._due(), "no end to the rebuilds before the edit")
        detected = self._count(DETECTED)
        for path, text in files.items():
            (self.tree / path).write_text(text)
        seen = time.monotonic() + SEEN_WITHIN
        self.until(lambda: self._count(REBUILT, FAILED) > detected, "no rebuild")
        self.until(lambda: time.monotonic() > seen and self._idle(), "no end")

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
    for name in GLUE:
        shutil.copy(ROOT / "docs" / "_glue" / name, tree / "docs" / "_glue" / name)
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
        server.until(lambda: server.builds() == 1, "no first build")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tab(browser: Browser) -> Iterator[Page]:
    """One Chromium tab for the module's tests."""
    tab = browser.new_page()
    yield tab
    tab.close()


# (title, lines) of each visible build-error banner of the page, read in one call.
# Visible as Playwright's is_visible() says: a box of some size, not hidden.
BANNERS = """() => [...document.querySelectorAll(".mha-build-error")]
  .filter((banner) => {
    const box = banner.getBoundingClientRect();
    const style = getComputedStyle(banner);
    return box.width > 0 && box.height > 0 && style.visibility !== "hidden";
  })
  .map((banner) => [
    banner.querySelector(".admonition-title").innerText,
    [...banner.querySelectorAll("li")].map((line) => line.innerText),
  ])"""


def _banners(tab: Page, url: str, pages: list[str]) -> dict[str, list]:
    """(title, lines) of each build-error banner each of ``pages`` shows, read by
    Chromium."""
    shown = {}
    for page in pages:
        tab.goto(url + page.removesuffix(".md") + "/")
        shown[page] = [tuple(banner) for banner in tab.evaluate(BANNERS)]
    tab.goto("about:blank")  # a page left open would reload at each rebuild
    return shown


def _well(served: Served, pages: list[str]) -> list[str]:
    """Those of ``pages`` that are served without a build-error banner."""
    return [p for p in pages if "mha-build-error" not in served.html(p[:-3] + "/")]


def test_each_error_is_shown_in_its_page_and_the_fix_in_one_rebuild(
    served: Served, tab: Page
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
    shown = _banners(tab, served.url, [*BROKEN, "temperature.md"])
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
    assert _well(served, ["other.md"]) == ["other.md"]  # still served, no banner

    builds = served.builds()
    served.write(well | {PAGE_MODULE: module})
    assert _well(served, pages) == pages
    # docs/ and src/ are looked at apart: their edits may start a build each
    assert served.builds() <= builds + 2, "the fix took more than one rebuild"


def test_a_page_module_saved_before_its_markdown_is_shown_then_recovers(
    served: Served, tab: Page
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
    shown = _banners(tab, served.url, ["temperature.md"])["temperature.md"]
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
    reference renders with it. The edit stays: no other test reads that docstring."""
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
