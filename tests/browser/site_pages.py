"""The pages of the site, found where a reader finds them: in the nav of mkdocs.yml.

Tests are parametrized with these paths at collection time (so ``-k cricket`` selects
one page); `test_pages.py` checks against the built sitemap that no page is missed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path, PurePosixPath

from mkdocs.utils.yaml import yaml_load

ROOT = Path(__file__).resolve().parents[2]
_SITEMAP_NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def _config() -> dict:
    with open(ROOT / "mkdocs.yml", encoding="utf-8") as file:
        return yaml_load(file)


def _source_files(nav: object) -> list[str]:
    """Every source file named in a (nested) mkdocs nav, in order."""
    if isinstance(nav, str):
        return [] if "://" in nav else [nav]
    if isinstance(nav, dict):
        return [path for value in nav.values() for path in _source_files(value)]
    if isinstance(nav, list):
        return [path for item in nav for path in _source_files(item)]
    return []


def url_path(source: str) -> str:
    """The URL path, relative to the site root, of the page built from ``source``.

    ```python
    from tests.browser.site_pages import url_path

    assert url_path("index.md") == ""
    assert url_path("cricket.md") == "cricket/"
    assert url_path("notebooks/variance.py") == "notebooks/variance/"
    ```
    """
    path = PurePosixPath(source).with_suffix("")
    if path.name in ("index", "README"):
        path = path.parent
    return "" if str(path) == "." else f"{path}/"


def nav_pages() -> list[str]:
    """URL paths of the pages in the nav of mkdocs.yml (``""`` is the home page)."""
    return [url_path(source) for source in _source_files(_config()["nav"])]


def sitemap_pages(site: Path) -> list[str]:
    """URL paths of the pages listed in the built site's sitemap."""
    site_url = _config()["site_url"]
    locs = [
        loc.text or ""
        for loc in ET.parse(site / "sitemap.xml")
        .getroot()
        .iterfind("sm:url/sm:loc", _SITEMAP_NS)
    ]
    outside = [loc for loc in locs if not loc.startswith(site_url)]
    if outside:
        raise ValueError(f"sitemap entries outside site_url {site_url!r}: {outside}")
    return [loc.removeprefix(site_url) for loc in locs]
