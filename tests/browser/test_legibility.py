"""Every figure is legible on a desktop and on a phone, and carries a numbered caption.

Each page is measured once at 1280 px and once at 375 px wide (tests/browser/tour.py:
in the page's light visit at 1280 px and its dark one at 375 px, when
tests/browser/test_pages.py runs too). In each visit the browser measures the smallest text of every figure and widget as the reader sees it:
font size times the SVG's on-screen scale (its screen CTM). At 1280 px it must be at
least ``DESKTOP_PX``, at 375 px at least ``PHONE_PX`` (``mha.figures.style``). Every
figure is a ``<figure>`` whose visible caption starts "Figure 1.", "Figure 2.", ... in
page order. At 1280 px no table or printed output hides a column or the end of a line,
and at 375 px no display equation runs past its column; equations set side by side that
do not fit are split onto lines of their own (at either width), not broken as one run. A planted tiny font and a
missing caption, in a small synthetic page, must fail the same checks.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Browser

from mha.figures.style import DESKTOP_PX, PHONE_PX
from tests.browser.accessibility import page_violations
from tests.browser.legibility import MEASURE
from tests.browser.legibility import measure as measure_page
from tests.browser.recording import local_context
from tests.browser.site_pages import nav_pages
from tests.browser.tour import MEASURE_HEIGHT, SiteTour

WIDTHS = {1280: DESKTOP_PX, 375: PHONE_PX}  # viewport width: smallest text allowed
PAGES = nav_pages()


def problems(report: dict, least: float) -> list[str]:
    """What one measured visit breaks, one line each (``least``: smallest text, px)."""
    found = []
    for number, figure in enumerate(report["figures"], 1):
        name = figure["id"] or f"figure {number}"
        smallest = figure["smallest"]
        if smallest is not None and smallest["px"] < least:
            found.append(
                f"{name}: text {smallest['text']!r} is {smallest['px']:.2f} px, "
                f"under {least} px"
            )
        caption = figure["caption"] or ""
        if (
            not caption.startswith(f"Figure {number}.")
            or caption == f"Figure {number}."
        ):
            found.append(f"{name}: no visible caption 'Figure {number}. ...'")
        if figure["right"] > report["viewport"] + 1:
            found.append(f"{name}: runs past the screen's right edge")
    if report["loose"]:
        found.append(f"{report['loose']} figure drawing(s) outside a <figure>")
    for widget in report["widgets"]:
        smallest = widget["smallest"]
        if smallest is not None and smallest["px"] < least:
            found.append(
                f"widget {widget['name']}: text {smallest['text']!r} is "
                f"{smallest['px']:.2f} px, under {least} px"
            )
    return found


@pytest.fixture
def measure(site_tour: SiteTour) -> Callable[[str, int], dict]:
    """``measure(path, width)``: the page at ``path`` measured at ``width`` px (once)."""
    return site_tour.measure


by_page = pytest.mark.parametrize(
    "path", PAGES, ids=[p.rstrip("/") or "index" for p in PAGES]
)
by_width = pytest.mark.parametrize("width", list(WIDTHS), ids=lambda w: f"{w}px")


@by_page
@by_width
def test_figures_are_legible_and_captioned(
    measure: Callable[[str, int], dict], path: str, width: int
) -> None:
    found = problems(measure(path, width), WIDTHS[width])
    assert not found, "\n".join(found)


@by_page
def test_tables_and_printed_output_show_everything_on_a_desktop(
    measure: Callable[[str, int], dict], path: str
) -> None:
    report = measure(path, 1280)
    assert not report["tables"], f"table cells hidden at 1280 px: {report['tables']}"
    assert not report["printed"], f"output cut at 1280 px: {report['printed']}"
    assert not report["runTogether"], f"equations run together: {report['runTogether']}"


@by_page
def test_no_code_block_scrolls_sideways_on_a_desktop(
    measure: Callable[[str, int], dict], path: str
) -> None:
    """At 1280 px every line of code, on a page or in a notebook, fits its box."""
    report = measure(path, 1280)
    assert not report["code"], f"code blocks wider than their box: {report['code']}"


def test_a_code_line_wider_than_its_box_is_found(browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 600})
    try:
        page = context.new_page()
        page.set_content(
            '<div class="md-typeset"><pre><code style="display: block; width: 200px;'
            ' overflow: auto">print("a line of code much wider than two hundred'
            ' pixels")</code></pre><pre><code>fits</code></pre></div>'
        )
        report = page.evaluate(MEASURE)
    finally:
        context.close()
    assert [line[:5] for line in report["code"]] == ["print"]


@by_page
def test_display_equations_fit_a_phone(
    measure: Callable[[str, int], dict], path: str
) -> None:
    report = measure(path, 375)
    assert not report["equations"], f"equations past 375 px: {report['equations']}"
    # side-by-side equations too wide for the column go on lines of their own
    assert not report["runTogether"], f"equations run together: {report['runTogether']}"


SYNTHETIC = """<!doctype html><html><body style="margin: 0">
<figure class="mha" id="figure-1"><div class="mha-scroll">
<svg class="mha-figure" width="300" height="60" viewBox="0 0 300 60">
<text x="10" y="30" style="font-size: 16px">legible</text></svg></div>
<figcaption><strong>Figure 1.</strong> What to look at.</figcaption></figure>
<figure class="mha" id="figure-2"><div class="mha-scroll">
<svg class="mha-figure" width="300" height="60" viewBox="0 0 300 60">
<text x="10" y="30" style="font-size: 16px">no caption</text></svg></div></figure>
<figure class="mha" id="figure-3"><div class="mha-scroll">
<svg class="mha-figure" width="150" height="30" viewBox="0 0 300 60">
<text x="10" y="30" style="font-size: 10px">tiny</text></svg></div>
<figcaption><strong>Figure 3.</strong> Text at 10 x 0.5 = 5 px.</figcaption></figure>
</body></html>"""


def test_a_tiny_font_and_a_missing_caption_fail(browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 600})
    try:
        page = context.new_page()
        page.set_content(SYNTHETIC)
        report = page.evaluate(MEASURE)
    finally:
        context.close()
    assert problems(report, PHONE_PX) == [
        "figure-2: no visible caption 'Figure 2. ...'",
        "figure-3: text 'tiny' is 5.00 px, under 7 px",
    ]


def test_a_table_folded_in_details_is_measured_open(
    browser: Browser, site_url: str
) -> None:
    """The cricket page folds a worked example's table in a <details>. After an axe
    run and a change of height, Chromium leaves it unlaid (its wrapper's edge reads
    0 px, and each of its cells counted as hidden): the measurement opens folded
    details, as a reader does, and closes them again."""
    context = local_context(browser, site_url, viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto("cricket/")
        closed = (  # the worked example's; the foot's list of sources stays closed
            "() => [...document.querySelectorAll('article details:not(.mha-sources)')]"
            ".filter(d => !d.open)"
        )
        assert page.evaluate(f"{closed}.length") == 1
        page_violations(page)
        page.set_viewport_size({"width": 1280, "height": MEASURE_HEIGHT})
        assert measure_page(page)["tables"] == []
        assert page.evaluate(f"{closed}.length") == 1
    finally:
        context.close()
