"""The site's search: Material's, with its index built when the reader opens the search
box (docs/assets/js/search-on-demand.js and the worker it names), not on each page
load, and the formulas of its results rendered (docs/assets/js/katex-init.js)."""

from __future__ import annotations

import time

from playwright.sync_api import Browser, Page, Worker
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.rendering import raw_tex

RESULT = ".md-search-result__item a"

# The state of the worker in front of Material's (its top-level variables): whether
# it still holds the index unbuilt, and whether it has had Material's worker build it.
HOLDS_INDEX = "index !== null && built === null"
BUILT = "index === null && built !== null"


def until(condition: str) -> str:
    """A function for ``Worker.evaluate``: the first true value of ``condition`` (a
    JavaScript expression over the worker's variables, polled every 10 ms), awaited
    if it is a promise."""
    return f"""() => new Promise((done) => {{
      const poll = setInterval(() => {{
        const value = {condition};
        if (value) done(value, clearInterval(poll));
      }}, 10);
    }})"""


WAIT_FOR_INDEX = until("index !== null || built !== null")  # the page handed it over
WAIT_FOR_BUILD = until("built")  # `built`: Material's worker has answered "ready"


def finds(page: Page, query: str, path: str) -> None:
    """Type ``query`` into the search box as a reader does (``/`` opens it, and a
    new query replaces the last), and wait until a result links to the page at
    ``path``. Each key searches anew and Material replaces the list, so the list
    is read whole, in the page, until it holds the page (or the wait times out)."""
    box = page.locator(".md-search__input")
    if box.evaluate("box => box !== document.activeElement"):
        page.keyboard.press("/")
    box.press("Control+A")
    box.press_sequentially(query)
    try:
        page.wait_for_function(
            """([selector, path]) => [...document.querySelectorAll(selector)]
                 .some((a) => new URL(a.href).pathname === path)""",
            arg=[RESULT, path],
            timeout=15_000,
        )
    except PlaywrightTimeout as error:
        shown = page.eval_on_selector_all(
            RESULT, "links => links.map((a) => new URL(a.href).pathname)"
        )
        raise AssertionError(f"{query!r} found no {path}: {shown}") from error


def on_demand_worker(page: Page, timeout_s: float = 10.0) -> Worker:
    """The search worker in front of Material's, once the page has handed it the
    index."""
    deadline = time.monotonic() + timeout_s
    while not (found := [w for w in page.workers if "search-on-demand.js" in w.url]):
        assert time.monotonic() < deadline, f"no search worker: {page.workers}"
        page.wait_for_timeout(20)
    (worker,) = found
    worker.evaluate(WAIT_FOR_INDEX)
    return worker


def test_the_index_is_built_when_the_box_opens_and_finds_the_pages(new_page) -> None:
    recorded = new_page()
    recorded.goto("notation/")
    worker = on_demand_worker(recorded.page)
    assert worker.evaluate(HOLDS_INDEX), "the index was built before any search"
    recorded.page.keyboard.press("/")  # opens the box: the index builds, no key typed
    worker.evaluate(WAIT_FOR_BUILD)
    assert worker.evaluate(BUILT)
    finds(recorded.page, "cricket", "/cricket/")
    finds(recorded.page, "rotary", "/position/")  # and the next query
    assert not recorded.problems()


def test_the_math_in_the_results_is_rendered(new_page) -> None:
    """A snippet holds its section's formulas as TeX; docs/assets/js/katex-init.js
    renders them, also where the query's word is highlighted inside one (``d_k``:
    "\\(\\sqrt{d_k}\\)" would read "\\(\\sqrt{<mark>d_k</mark>}\\)"), and a
    notebook's, between $."""
    recorded = new_page()
    recorded.goto("notation/")
    results = recorded.page.locator(".md-search-result__list")
    for query, path in [
        ("d_k", "/cost/"),
        ("scales by", "/notebooks/mha_in_a_few_lines/"),
    ]:
        finds(recorded.page, query, path)
        # the list may still change (each key searches anew): polled until the
        # results hold rendered formulas and no raw TeX, or 15 s have passed
        deadline = time.monotonic() + 15
        while True:
            raw, rendered = raw_tex(results), results.locator(".katex").count()
            if rendered and not raw:
                break
            assert time.monotonic() < deadline, f"{query!r}: {rendered} formulas, {raw}"
            recorded.page.wait_for_timeout(100)
    assert not recorded.problems()


def test_a_page_opened_from_a_file_keeps_materials_worker(
    browser: Browser, built_site
) -> None:
    # From a file, Material itself waits for the first search (and finds no index:
    # it would need its offline plugin's search_index.js).
    page = browser.new_page()
    try:
        page.goto((built_site / "notation" / "index.html").as_uri())
        worker = page.evaluate(
            "() => JSON.parse(document.getElementById('__config').textContent).search"
        )
        assert "/workers/search." in worker and "on-demand" not in worker, worker
    finally:
        page.close()
