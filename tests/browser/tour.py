"""One tab per colour scheme, taken from page to page of the site by the page tests.

Every page is visited in both colour schemes (`SiteTour.visit`: what
tests/browser/test_pages.py reads, each scheme opened when first read) and measured at
two widths (`SiteTour.measure`: what tests/browser/test_legibility.py reads). The light
visit is a desktop's (1280 px), the dark one a phone's (375 px): a reader meets both,
and so a page loads twice, not three times. A measurement reuses the visit that holds
the page at its width (the tab is made as tall as a measurement wants); otherwise it
loads the page in the light tab. The dark scheme on a desktop, where the sidebars
show, is checked once for the site (tests/browser/test_theme.py).

Each load is in a tab that stays open from one page to the next: a new tab (or a new
context) would start a new renderer, which costs more than the page's own load. Before
each load the tab's site storage and cookies are cleared, so that no page sees what
another stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from playwright.sync_api import Browser, BrowserContext, Page

from tests.browser.accessibility import COLOUR_RULES, page_violations
from tests.browser.legibility import measure
from tests.browser.recording import (
    RecordedPage,
    clear_storage,
    local_context,
    recording,
)
from tests.browser.rendering import MathReport, math_report

Scheme = Literal["light", "dark"]

MEASURE_HEIGHT = 900  # px: the height of the screen a page is measured on
# each scheme's visit: a desktop in light mode (Playwright's default size), a phone in
# dark mode
VISIT_VIEWPORTS: dict[Scheme, dict[str, int]] = {
    "light": {"width": 1280, "height": 720},
    "dark": {"width": 375, "height": MEASURE_HEIGHT},
}


@dataclass(frozen=True)
class SchemeVisit:
    """What one page did in one colour scheme."""

    recorded: RecordedPage
    violations: list[str]  # `page_violations`: of every rule in light mode, of the
    # colour rules in dark mode (on a phone, where no axe run is needed)
    math: MathReport | None  # how its math was rendered (light mode)


class Visit:
    """What one page did in the browser, in both colour schemes.

    The page is opened in a scheme the first time something of that scheme is read.
    """

    def __init__(self, tour: SiteTour, path: str):
        self.tour = tour
        self.path = path

    @property
    def light(self) -> RecordedPage:
        return self.tour.seen("light", self.path).recorded

    @property
    def dark(self) -> RecordedPage:
        return self.tour.seen("dark", self.path).recorded

    @property
    def math(self) -> MathReport:
        math = self.tour.seen("light", self.path).math
        assert math is not None
        return math

    @property
    def violations(self) -> list[str]:
        """Serious/critical axe findings, every rule (light)."""
        return self.tour.seen("light", self.path).violations

    @property
    def dark_violations(self) -> list[str]:
        """Serious/critical findings of the colour rules (dark, on a phone)."""
        return self.tour.seen("dark", self.path).violations


class SiteTour:
    """The visits and measurements of the site's pages, each made once per session."""

    def __init__(self, browser: Browser, base_url: str):
        self.browser = browser
        self.base_url = base_url
        self.contexts: dict[Scheme, BrowserContext] = {}
        self.tabs: dict[Scheme, Page] = {}
        self.holds: dict[Scheme, tuple[str, int]] = {}  # the page loaded, its width
        self.visits: dict[tuple[Scheme, str], SchemeVisit] = {}
        self.reports: dict[tuple[str, int], dict] = {}

    def tab(self, scheme: Scheme) -> Page:
        """The ``scheme`` tab, opened in a `local_context` of its own the first time."""
        if scheme not in self.tabs:
            context = local_context(self.browser, self.base_url, color_scheme=scheme)
            self.contexts[scheme] = context
            self.tabs[scheme] = context.new_page()
        return self.tabs[scheme]

    def ready(self, scheme: Scheme, viewport: dict[str, int]) -> Page:
        """The ``scheme`` tab at ``viewport``, its site storage and cookies cleared."""
        page = self.tab(scheme)
        clear_storage(page, self.base_url)
        page.set_viewport_size(viewport)
        self.holds.pop(scheme, None)
        return page

    def discard(self, scheme: Scheme) -> None:
        """Close the ``scheme`` tab and its context: the next load opens new ones."""
        self.holds.pop(scheme, None)
        self.tabs.pop(scheme, None)
        context = self.contexts.pop(scheme, None)
        if context is not None:
            context.close()

    @contextmanager
    def recorded(self, scheme: Scheme, path: str) -> Iterator[RecordedPage]:
        """``path`` loaded in the ``scheme`` tab, its console and requests recorded."""
        viewport = VISIT_VIEWPORTS[scheme]
        page = self.ready(scheme, viewport)
        try:
            with recording(page, self.base_url) as recorded:
                recorded.goto(path)
                yield recorded
        except BaseException:
            self.discard(scheme)  # a page that failed leaves its tab to no other
            raise
        self.holds[scheme] = (path, viewport["width"])

    def visit(self, path: str) -> Visit:
        """The page at ``path``, opened in each colour scheme when first read."""
        return Visit(self, path)

    def seen(self, scheme: Scheme, path: str) -> SchemeVisit:
        """Open the page at ``path`` in ``scheme`` (once) and check it."""
        if (scheme, path) not in self.visits:
            with self.recorded(scheme, path) as recorded:
                if scheme == "light":
                    math = math_report(recorded.page)
                    violations = page_violations(recorded.page)
                else:
                    math = None
                    violations = page_violations(recorded.page, COLOUR_RULES)
            self.visits[scheme, path] = SchemeVisit(recorded, violations, math)
        return self.visits[scheme, path]

    def measure(self, path: str, width: int) -> dict:
        """The page at ``path`` measured (once) on a screen ``width`` px wide: in the
        tab whose visit holds it at that width, else loaded in the light tab."""
        if (path, width) not in self.reports:
            viewport = {"width": width, "height": MEASURE_HEIGHT}
            holding = [s for s, held in self.holds.items() if held == (path, width)]
            if holding:
                page = self.tabs[holding[0]]
                page.set_viewport_size(viewport)
            else:
                page = self.ready("light", viewport)
                try:
                    page.goto(path, wait_until="load")
                except BaseException:
                    self.discard("light")
                    raise
                self.holds["light"] = (path, width)
            self.reports[path, width] = measure(page)
        return self.reports[path, width]

    def close(self) -> None:
        for scheme in list(self.contexts):
            self.discard(scheme)
