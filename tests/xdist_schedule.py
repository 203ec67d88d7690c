"""How ``make test`` hands tests to its workers (pytest-xdist), apart from the fixtures.

Two rules. Each worker runs the tests that need no site first, then the tests of the
built site, then the browser tests, so the build (tests/conftest.py) overlaps the
first kind; the file of the test that compares it with a second build comes last, so
that the second build (started when the first ends) overlaps the rest. And xdist
hands out a whole test file at a time, or all the tests of one page of the site in
tests/browser/test_pages.py and tests/browser/test_legibility.py (which read the same
visits of that page, tests/browser/tour.py), so a file's module and session fixtures
(a reference model, a browser) are set up once and a page is loaded once for both
files. Among the browser tests, whole files go out first and the pages one by one
after them, so that the small units are left to fill in at the end.

The scheduler keeps that order: xdist's own ``--dist loadscope`` would hand out the
units with the most tests first (``--loadscope-reorder``), the browser tests among
them, before the site is built.

The second rule would be ``--dist loadgroup`` with ``xdist_group`` marks, but under
pytest 9 loadgroup stops grouping: https://github.com/pytest-dev/pytest-xdist/issues/1386
(fixed by https://github.com/pytest-dev/pytest-xdist/pull/1388). Drop the scheduler
below for those marks once a pytest-xdist release with that fix is pinned.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BROWSER_TESTS = Path(__file__).resolve().parent / "browser"
# The browser tests parametrized by the site's pages, which share one visit per page.
PER_PAGE_MODULES = ("tests/browser/test_pages.py", "tests/browser/test_legibility.py")
PAGE_SCOPE = "tests/browser/pages"
_WIDTH = re.compile(r"^\d+px-")  # test_legibility.py's ids: "1280px-cricket"


def needs_site(item: pytest.Item) -> bool:
    """Whether the test uses the built site (the ``built_site`` fixture)."""
    return "built_site" in getattr(item, "fixturenames", ())


def run_order(item: pytest.Item) -> int:
    """0: tests without the site; 1: tests of the built site; 2: browser tests; 3:
    the test of the second build (``rebuilt_site``).

    Each worker runs its tests in this order, so the build overlaps the first kind,
    the second build (started when the first ends) the next two, and each worker
    starts Chromium once (the browser fixtures are package-scoped).
    """
    if "rebuilt_site" in getattr(item, "fixturenames", ()):
        return 3
    if BROWSER_TESTS in item.path.parents:
        return 2
    return int(needs_site(item))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order by ``run_order``; a unit of ``split_scope`` (which runs in one worker) by
    its latest test, whole files before pages, and a page's tests in the order of
    ``PER_PAGE_MODULES``."""
    scopes = [split_scope(item.nodeid) for item in items]
    latest: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, (item, scope) in enumerate(zip(items, scopes, strict=True)):
        latest[scope] = max(latest.get(scope, 0), run_order(item))
        first.setdefault(scope, index)
    position = {item.nodeid: index for index, item in enumerate(items)}

    def key(pair: tuple[pytest.Item, str]) -> tuple:
        item, scope = pair
        file = item.nodeid.partition("::")[0]
        module = PER_PAGE_MODULES.index(file) if file in PER_PAGE_MODULES else 0
        is_page = scope.startswith(PAGE_SCOPE)
        return (latest[scope], is_page, first[scope], module, position[item.nodeid])

    items[:] = [item for item, _ in sorted(zip(items, scopes, strict=True), key=key)]


def split_scope(nodeid: str) -> str:
    """The unit xdist hands to one worker: a file, or one page's browser tests.

    ```python
    from tests.xdist_schedule import split_scope

    assert split_scope("tests/test_core.py::test_a[1]") == "tests/test_core.py"
    page = "tests/browser/test_pages.py::test_console[cost]"
    assert split_scope(page) == "tests/browser/pages[cost]"
    wide = "tests/browser/test_legibility.py::test_legible[1280px-cost]"
    assert split_scope(wide) == "tests/browser/pages[cost]"
    ```
    """
    file, _, test = nodeid.partition("::")
    if file in PER_PAGE_MODULES and "[" in test:
        page = _WIDTH.sub("", test.partition("[")[2], count=1)
        return f"{PAGE_SCOPE}[{page}"
    return file


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist hands out the units of ``split_scope`` in the order of the collection."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFileOrPage(LoadScopeScheduling):
        def __init__(self, config: pytest.Config, log: object = None) -> None:
            super().__init__(config, log)
            # keep the collection's order of units (the default puts the largest first)
            config.option.loadscopereorder = False

        def _split_scope(self, nodeid: str) -> str:
            return split_scope(nodeid)

    return ByFileOrPage(config, log)
