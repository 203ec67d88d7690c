"""How ``make test`` hands tests to its workers (pytest-xdist), apart from the fixtures.

Two rules. Each worker runs the tests that need no site first, then the tests of the
built site, then the browser tests, so the one build (tests/conftest.py) overlaps the
first kind. And xdist hands out a whole test file at a time (or one page's tests of
tests/browser/test_pages.py), so a file's module and session fixtures (a reference
model, a browser) are set up once.

The second rule would be ``--dist loadgroup`` with ``xdist_group`` marks, but under
pytest 9 loadgroup stops grouping: https://github.com/pytest-dev/pytest-xdist/issues/1386
(fixed by https://github.com/pytest-dev/pytest-xdist/pull/1388). Drop the scheduler
below for those marks once a pytest-xdist release with that fix is pinned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

BROWSER_TESTS = Path(__file__).resolve().parent / "browser"
# Pages whose browser tests share one recorded visit per page (a fixture's cache).
PER_PAGE_MODULE = "tests/browser/test_pages.py"


def needs_site(item: pytest.Item) -> bool:
    """Whether the test uses the built site (the ``built_site`` fixture)."""
    return "built_site" in getattr(item, "fixturenames", ())


def run_order(item: pytest.Item) -> int:
    """0: tests without the site; 1: tests of the built site; 2: browser tests.

    Each worker runs its tests in this order, so the build overlaps the first kind
    and each worker starts Chromium once (the browser fixtures are package-scoped).
    """
    if BROWSER_TESTS in item.path.parents:
        return 2
    return int(needs_site(item))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order by ``run_order``; a file (which runs in one worker) by its latest test."""
    latest: dict[Path, int] = {}
    for item in items:
        latest[item.path] = max(latest.get(item.path, 0), run_order(item))
    items.sort(key=lambda item: latest[item.path])  # stable: collection order otherwise


def split_scope(nodeid: str) -> str:
    """The unit xdist hands to one worker: a file, or one page of test_pages.py.

    ```python
    from tests.xdist_schedule import split_scope

    assert split_scope("tests/test_core.py::test_a[1]") == "tests/test_core.py"
    page = "tests/browser/test_pages.py::test_console[cost/]"
    assert split_scope(page) == "tests/browser/test_pages.py[cost/]"
    ```
    """
    file, _, test = nodeid.partition("::")
    if file == PER_PAGE_MODULE and "[" in test:
        return f"{file}[{test.partition('[')[2]}"
    return file


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist hands out a test file at a time, or one page's tests of test_pages.py."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFileOrPage(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return split_scope(nodeid)

    return ByFileOrPage(config, log)
