"""A browser page that records what a test must see: console errors and requests.

Every browser test opens its pages through `recorded_page`, so each one also checks
the site's promise to work offline: a request to any origin other than the local
server is recorded and aborted (it never leaves the machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urljoin, urlsplit

from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Response, Route

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
        parts = urlsplit(url)
        if parts.scheme in _INLINE_SCHEMES:
            return True
        return parts.netloc == urlsplit(self.base_url).netloc

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


@contextmanager
def recorded_page(
    browser: Browser,
    base_url: str,
    color_scheme: Literal["light", "dark"] = "light",
) -> Iterator[RecordedPage]:
    """A fresh browser context and page on ``base_url``, recording as it goes.

    Only ``base_url``'s origin is reachable: any other request is recorded, then
    aborted. The context (cookies, storage, the chosen colour scheme) is closed on
    exit.
    """
    context = browser.new_context(base_url=base_url, color_scheme=color_scheme)
    recorded = RecordedPage(page=context.new_page(), base_url=base_url)

    def on_route(route: Route) -> None:
        if recorded.is_local(route.request.url):
            route.continue_()
        else:
            route.abort("blockedbyclient")

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

    context.route("**/*", on_route)
    context.on("request", on_request)
    context.on("response", on_response)
    recorded.page.on("console", on_console)
    recorded.page.on("pageerror", on_page_error)
    try:
        yield recorded
    finally:
        context.close()
