"""A browser page that records what a test must see: console errors and requests.

Every browser test opens its pages in a `local_context` and records them with
`recording` (a test's page is a `recorded_tab`), so each one also checks the site's
promise to work offline: a request to any origin other than the local server is
recorded, and fails in the browser (its flags, tests/browser/chromium.py: it never
leaves the machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Request,
    Response,
)

# Requests that never leave the page itself.
_INLINE_SCHEMES = {"data", "blob", "about"}


@dataclass
class RecordedPage:
    """A Playwright page on the local site, with its problems recorded as they happen.

    ``console_errors`` holds console messages of type error and uncaught exceptions,
    ``requests`` every URL requested (by the page or its workers), and
    ``failed_responses`` local responses with an HTTP error status.
    """

    page: Page
    base_url: str
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed_responses: list[str] = field(default_factory=list)

    def goto(self, path: str) -> None:
        """Open ``path`` (relative to the site's root) and wait for its load event."""
        url = urljoin(self.base_url, path)
        response = self.page.goto(url, wait_until="load")
        if response is None:
            self.failed_responses.append(f"{url}: no response")

    def is_local(self, url: str) -> bool:
        """Whether ``url`` stays on the site's own origin (or inside the page)."""
        return is_local(url, self.base_url)

    def foreign_requests(self) -> list[str]:
        """Requested URLs on any other origin than the local server's."""
        return [url for url in self.requests if not self.is_local(url)]

    def problems(self) -> list[str]:
        """Everything that should not happen on any page, one line each."""
        return (
            [f"console error: {text}" for text in self.console_errors]
            + [f"HTTP error: {line}" for line in self.failed_responses]
            + [f"request to another host: {url}" for url in self.foreign_requests()]
        )


def is_local(url: str, base_url: str) -> bool:
    """Whether ``url`` stays on ``base_url``'s origin (or inside the page)."""
    parts = urlsplit(url)
    return parts.scheme in _INLINE_SCHEMES or parts.netloc == urlsplit(base_url).netloc


def local_context(browser: Browser, base_url: str, **options: object) -> BrowserContext:
    """A browser context on ``base_url``, in a ``browser`` launched with
    ``CHROMIUM_ARGS``, where a request to any other origin fails in the browser.

    ``options`` are Playwright's context options (``color_scheme``, ``viewport``).
    """
    return browser.new_context(base_url=base_url, **options)


@contextmanager
def recording(page: Page, base_url: str) -> Iterator[RecordedPage]:
    """Record what ``page`` (in a `local_context`) does until the block ends."""
    recorded = RecordedPage(page=page, base_url=base_url)

    def on_request(request: Request) -> None:
        recorded.requests.append(request.url)

    def on_response(response: Response) -> None:
        if response.status >= 400 and recorded.is_local(response.url):
            recorded.failed_responses.append(f"{response.status} {response.url}")

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            recorded.console_errors.append(f"{message.text} ({message.location})")

    def on_page_error(error: Exception) -> None:
        recorded.console_errors.append(f"uncaught {error}")

    # the context's events also carry the requests of the page's workers
    page.context.on("request", on_request)
    page.context.on("response", on_response)
    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    try:
        yield recorded
    finally:
        page.context.remove_listener("request", on_request)
        page.context.remove_listener("response", on_response)
        page.remove_listener("console", on_console)
        page.remove_listener("pageerror", on_page_error)


# A page of the site that runs no script: it keeps a shared context's renderer alive.
_ANCHOR = "sitemap.xml"
_CLEAR_STORAGE = "() => { localStorage.clear(); sessionStorage.clear(); }"


def clear_storage(page: Page, base_url: str) -> None:
    """Clear what the site keeps in ``page``'s context: its local and session storage
    (when the page is on the site) and the context's cookies."""
    if urlsplit(page.url).netloc == urlsplit(base_url).netloc:
        page.evaluate(_CLEAR_STORAGE)
    page.context.clear_cookies()


def shared_context(
    browser: Browser, base_url: str, **options: object
) -> BrowserContext:
    """A `local_context` for many `recorded_tab`s, one after the other.

    It holds one tab open on the site, so that each new tab is drawn by the same
    renderer process as the last (a new renderer costs more than the page's load).
    """
    context = local_context(browser, base_url, **options)
    context.new_page().goto(_ANCHOR)
    return context


@contextmanager
def recorded_tab(context: BrowserContext, base_url: str) -> Iterator[RecordedPage]:
    """A new page in the `shared_context` ``context``, recording as it goes.

    On exit the page is closed, and what it could leave to the next tab is cleared:
    the site's local and session storage, and the context's cookies.
    """
    page = context.new_page()
    try:
        with recording(page, base_url) as recorded:
            yield recorded
    finally:
        clear_storage(page, base_url)
        page.close()
