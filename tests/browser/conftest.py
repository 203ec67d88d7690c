"""Fixtures for browser tests: one headless Chromium, and recorded pages on the site.

A later browser test (say, of an interactive widget) needs only ``new_page``::

    def test_slider_updates_weights(new_page):
        page = new_page()                 # a RecordedPage on the local site
        page.goto("widgets/heads/")
        page.page.get_by_role("slider").fill("4")
        ...
        assert not page.problems()        # console errors, HTTP errors, other hosts
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from playwright.sync_api import Browser, BrowserContext, sync_playwright

from tests.browser.chromium import CHROMIUM_ARGS, require_chromium
from tests.browser.recording import RecordedPage, recorded_tab, shared_context
from tests.browser.tour import SiteTour

NEW_PAGE = Callable[..., RecordedPage]


# Package scope: every test under tests/browser shares one browser, closed as soon as
# they are done. (A running sync Playwright makes asyncio.run() fail in this thread,
# so it must not outlive the browser tests.)
@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Headless Chromium; skipped when absent, except under CI where that fails."""
    executable = require_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="package")
def site_context(
    browser: Browser, site_url: str
) -> Iterator[Callable[..., BrowserContext]]:
    """``site_context(color_scheme)``: one `shared_context` per colour scheme."""
    contexts: dict[str, BrowserContext] = {}

    def context_for(color_scheme: str = "light") -> BrowserContext:
        if color_scheme not in contexts:
            contexts[color_scheme] = shared_context(
                browser, site_url, color_scheme=color_scheme
            )
        return contexts[color_scheme]

    yield context_for
    for context in contexts.values():
        context.close()


@pytest.fixture
def new_page(
    site_context: Callable[..., BrowserContext], site_url: str
) -> Iterator[NEW_PAGE]:
    """Factory of `RecordedPage`s on the built site, each in a new tab.

    ``new_page()`` opens a light-scheme page, ``new_page(color_scheme="dark")`` a
    dark one; every page opened is closed after the test, and what it stored cleared
    (`recorded_tab`).
    """
    with ExitStack() as stack:

        def open_page(**options: str) -> RecordedPage:
            context = site_context(**options)
            return stack.enter_context(recorded_tab(context, site_url))

        yield open_page


@pytest.fixture(scope="package")
def site_tour(browser: Browser, site_url: str) -> Iterator[SiteTour]:
    """Every page visited in both colour schemes and measured at two widths, once."""
    tour = SiteTour(browser, site_url)
    yield tour
    tour.close()
