"""The core path a student follows: each of its pages, as built, links in its article
the page it builds on and the next one, in the nav's order; the KV-cache page links
where decoding is measured, fast attention and position."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mkdocs.utils.yaml import yaml_load

from tests.conftest import ROOT

CONFIG = yaml_load((ROOT / "mkdocs.yml").read_text())
CORE = [
    page.removesuffix(".md")
    for entry in next(e["The core path"] for e in CONFIG["nav"] if "The core path" in e)
    for page in entry.values()
]


def article_links(built_site: Path, page: str) -> set[str]:
    """The pages the article of ``site/<page>/index.html`` links to, by name (the
    nav, the header and the footer's previous and next buttons are outside it)."""
    html = (built_site / page / "index.html").read_text()
    article = re.search(r"<article\b.*?</article>", html, re.S).group()
    linked = set()
    for href in re.findall(r'<a\b[^>]*\bhref="([^"]+)"', article):
        if "://" in href or href.startswith(("#", "mailto:")):
            continue
        parts = [p for p in href.split("#")[0].split("/") if p not in ("", "..", ".")]
        if parts:
            linked.add(parts[0])
    return linked


def test_article_links_reads_pages_from_relative_links(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<nav><a href="../c/">c</a></nav><article><a href="../b/#x">b</a> '
        '<a href="#top">top</a> <a href="https://example.org/d/">d</a></article>'
    )
    assert article_links(tmp_path, "a") == {"b"}


@pytest.mark.parametrize("index", range(len(CORE)), ids=lambda i: CORE[i])
def test_a_core_page_links_the_page_before_and_the_next(
    built_site: Path, index: int
) -> None:
    linked = article_links(built_site, CORE[index])
    neighbours = CORE[max(index - 1, 0) : index] + CORE[index + 1 : index + 2]
    missing = [page for page in neighbours if page not in linked]
    assert not missing, f"{CORE[index]}'s article does not link {missing}"


def test_the_kv_cache_page_links_measured_decoding_fast_attention_and_position(
    built_site: Path,
) -> None:
    linked = article_links(built_site, "kv-cache")
    assert {"real-gqa-model", "fast-attention", "position"} <= linked
