"""The build is strict, complete and reproducible."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT


class _AnyTagLoader(yaml.SafeLoader):
    """Reads mkdocs.yml, whose !!python/name tags a safe loader refuses."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)
CONFIG = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_AnyTagLoader)


def nav_pages(nav) -> list[str]:
    """Every Markdown page named in the nav, in order."""
    pages = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_page_in_the_nav_is_built(built_site: Path):
    for page in nav_pages(CONFIG["nav"]):
        if page.endswith((".md", ".py")):
            stem = page.rsplit(".", 1)[0]
            out = built_site / (
                "index.html" if stem == "index" else f"{stem}/index.html"
            )
            assert out.is_file(), f"{page} was not built"


def test_the_site_makes_no_third_party_request(built_site: Path):
    for html in built_site.rglob("*.html"):
        text = html.read_text()
        for needle in (
            "fonts.googleapis",
            "fonts.gstatic",
            "cdn.jsdelivr",
            "unpkg.com",
        ):
            assert needle not in text, f"{html} references {needle}"


def test_two_builds_are_byte_identical(built_site: Path, rebuilt_site: Path):
    """``rebuilt_site`` is a second strict build of its own (tests/conftest.py)."""
    differ = _differences(filecmp.dircmp(built_site, rebuilt_site))
    assert not differ, f"files differ between two builds: {differ[:20]}"


def _differences(cmp: filecmp.dircmp, prefix: str = "") -> list[str]:
    _, mismatch, errors = filecmp.cmpfiles(
        cmp.left, cmp.right, cmp.common_files, shallow=False
    )
    found = [
        prefix + name for name in mismatch + errors + cmp.left_only + cmp.right_only
    ]
    for name, sub in cmp.subdirs.items():
        found += _differences(sub, f"{prefix}{name}/")
    return found


def _build_tiny_site(tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    """Build a one-page site with this project's strict settings for macros and exec."""
    macros = next(
        p["macros"] for p in CONFIG["plugins"] if isinstance(p, dict) and "macros" in p
    )
    config = {
        "site_name": "tiny",
        "docs_dir": str(tmp_path / "docs"),
        "site_dir": str(tmp_path / "site"),
        "strict": CONFIG["strict"],
        "hooks": [str(ROOT / "docs" / "_glue" / "errors.py")],
        "plugins": [
            {"macros": {**macros, "module_name": str(ROOT / macros["module_name"])}},
            "markdown-exec",
        ],
        "markdown_extensions": ["pymdownx.superfences"],
    }
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tiny.md").write_text(page)  # a page without a page module
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_the_tiny_site_builds_when_nothing_is_wrong(tmp_path: Path):
    ok = _build_tiny_site(tmp_path, "# Fine\n\n{{ page.figures | length }} figures\n")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "0 figures" in (tmp_path / "site" / "tiny" / "index.html").read_text()


@pytest.mark.parametrize(
    "page, first_line",
    [
        (
            "# Oops\n\n{{ no_such_value }}\n",
            "ERROR   -  docs/tiny.md:3: 'no_such_value' is undefined",
        ),
        (
            "# Oops\n\n{{ page.nothing | dec }}\n",
            "ERROR   -  docs/tiny.md:3: the page object has no value 'nothing'; "
            "it has ['figures']",
        ),
        (
            "# Oops\n\n{{ figure('nothing') }}\n",
            "ERROR   -  docs/tiny.md:3: the page module has no figure 'nothing'; "
            "it has []",
        ),
        (
            '# Oops\n\n```python exec="on"\nx = 1\nraise RuntimeError("block failed")\n```\n',
            "WARNING -  docs/tiny.md:3: this Python block raised "
            "RuntimeError: block failed",
        ),
    ],
    ids=["unknown name", "unknown value", "unknown figure", "failing block"],
)
def test_a_strict_build_fails_on_an_error_named_in_one_line_first(
    tmp_path: Path, page: str, first_line: str
):
    """Each error a contributor can cause: its file and line, before any traceback."""
    result = _build_tiny_site(tmp_path, page)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if not line.startswith("INFO")]
    assert lines[0] == first_line, result.stderr[-3000:]
