"""Every page of the built site, opened in headless Chromium from 127.0.0.1.

Each page is visited once in the light colour scheme on a desktop (1280 px) and once in
the dark one on a phone (375 px); the tests below read what those visits recorded.
Select one page with ``-k``, e.g. ``.venv/bin/pytest tests/browser -k cricket``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.browser.site_pages import nav_pages, sitemap_pages
from tests.browser.tour import SiteTour, Visit

PAGES = nav_pages()
by_page = pytest.mark.parametrize(
    "path", PAGES, ids=[p.rstrip("/") or "index" for p in PAGES]
)


@pytest.fixture
def visit(site_tour: SiteTour) -> Callable[[str], Visit]:
    """``visit(path)``: the page at ``path``, opened (once per session) and recorded."""
    return site_tour.visit


def test_every_built_page_is_in_the_nav(built_site: Path) -> None:
    """The pages tested here (the nav) are exactly the pages built (the sitemap)."""
    assert sorted(sitemap_pages(built_site)) == sorted(PAGES), (
        "a built page is missing from the nav of mkdocs.yml, or a nav entry was not built"
    )


# First of a page's tests: it opens the page in the light scheme only.
@by_page
def test_math_is_rendered_by_katex(visit: Callable[[str], Visit], path: str) -> None:
    problems = visit(path).math.problems()
    assert not problems, "\n".join(problems)


@by_page
def test_page_loads_without_error(visit: Callable[[str], Visit], path: str) -> None:
    seen = visit(path)
    errors = [
        *seen.light.console_errors,
        *seen.light.failed_responses,
        *seen.dark.console_errors,
        *seen.dark.failed_responses,
    ]
    assert not errors, "\n".join(errors)


@by_page
def test_no_request_leaves_the_local_server(
    visit: Callable[[str], Visit], path: str
) -> None:
    seen = visit(path)
    foreign = seen.light.foreign_requests() + seen.dark.foreign_requests()
    assert not foreign, "requests to other hosts:\n" + "\n".join(foreign)


@by_page
def test_no_serious_accessibility_violation(
    visit: Callable[[str], Visit], path: str
) -> None:
    seen = visit(path)
    found = seen.violations + [f"dark scheme: {line}" for line in seen.dark_violations]
    assert not found, "axe:\n" + "\n".join(found)
