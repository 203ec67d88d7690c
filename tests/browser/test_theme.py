"""Accessibility fixes to the theme: they hold, and stay close to Material's own."""

from __future__ import annotations

from pathlib import Path

import material
import pytest

from tests.browser.accessibility import COLOUR_RULES, blocking_violations
from tests.browser.conftest import NEW_PAGE

ROOT = Path(__file__).resolve().parents[2]
PARTIAL = "partials/search.html"
# The one change made to the theme's partial: an accessible name for the dialog.
ORIGINAL = '<div class="md-search" data-md-component="search" role="dialog">'
FIXED = '<div class="md-search" data-md-component="search" role="dialog" aria-label="{{ lang.t(\'search\') }}">'


def _without_leading_comment(template: str) -> str:
    return template.split("-#}\n", 1)[1]


def test_search_partial_differs_from_materials_only_by_its_label() -> None:
    theirs = (Path(material.__file__).parent / "templates" / PARTIAL).read_text()
    ours = (ROOT / "docs" / "_theme" / PARTIAL).read_text()
    assert ORIGINAL in theirs, (
        "Material's search partial changed: re-copy it into docs/_theme"
    )
    assert _without_leading_comment(ours) == _without_leading_comment(theirs).replace(
        ORIGINAL, FIXED
    ), (
        "docs/_theme/partials/search.html drifted from Material's; re-copy and re-label it"
    )


SCROLLING_REGIONS = ".md-typeset__scrollwrap, .tabbed-labels"


def test_a_region_that_scrolls_sideways_can_be_focused(new_page: NEW_PAGE) -> None:
    """On a phone-sized screen the cricket tables scroll, so they take keyboard focus.

    docs/assets/js/scroll-focus.js (loaded by docs/_theme/main.html) does it, and undoes
    it when the region fits again.
    """
    page = new_page()
    page.page.set_viewport_size({"width": 360, "height": 740})
    page.goto("cricket/")
    regions = page.page.locator(SCROLLING_REGIONS)
    scrolling = regions.evaluate_all(
        "els => els.filter(el => el.checkVisibility() && el.scrollWidth > el.clientWidth)"
        ".map(el => el.getAttribute('tabindex'))"
    )
    assert len(scrolling) >= 2, "too few regions scroll at this width to test anything"
    assert scrolling == ["0"] * len(scrolling)
    assert not blocking_violations(page.page, ("scrollable-region-focusable",))
    page.page.set_viewport_size({"width": 1600, "height": 900})
    page.page.wait_for_function(
        f"() => [...document.querySelectorAll({SCROLLING_REGIONS!r})]"
        ".every(el => el.scrollWidth > el.clientWidth || !el.hasAttribute('tabindex'))"
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_faint_text_on_a_desktop_page(
    new_page: NEW_PAGE, scheme: str
) -> None:
    """The page tests check the contrast of each page's text by distinct colour
    (`page_violations`), and the dark scheme on a phone, where the navigation and the
    table of contents are folded away. Here axe's own ``color-contrast``, which finds
    the background behind each text by layout, checks a long page at 1280 px in each
    scheme: its sidebars open, its tables, a note, folded details, math and code (the
    cricket page has each kind; the cost page, with no code or note, took twice as
    long).
    """
    page = new_page(color_scheme=scheme)
    page.goto("cricket/")
    assert not page.problems()
    kinds = {"code": ".highlight", "note": ".admonition", "details": "details"}
    kinds |= {"table": "table", "math": ".katex"}
    for kind, selector in kinds.items():
        assert page.page.locator(f".md-typeset {selector}").count(), f"no {kind}"
    links = page.page.locator(".md-sidebar a")
    assert links.evaluate_all("els => els.filter(a => a.checkVisibility()).length") > 20
    found = blocking_violations(page.page, COLOUR_RULES)
    assert not found, f"axe, {scheme} scheme:\n" + "\n".join(found)
