"""How ``make test`` hands tests to its workers (pytest-xdist), apart from the fixtures.

Two rules. Each worker runs the tests that need neither the site nor the pages' studies
first, then the tests of the built site and of the pages' code, then the browser tests,
so the build (tests/conftest.py) overlaps the first kind, and computes every study once,
on both cores, before a test reads it; the file of the test that compares it with a
second build comes last, so that the second build (started when the first ends) overlaps
the rest. And xdist hands out a whole test file at a time, or all the tests of one page
of the site in tests/browser/test_pages.py and tests/browser/test_legibility.py (which
read the same visits of that page, tests/browser/tour.py), so a file's module and
session fixtures (a reference model, a browser) are set up once and a page is loaded
once for both files. Among the browser tests, whole files go out first and the pages one
by one after them, so that the small units are left to fill in at the end.

The scheduler keeps that order: xdist's own ``--dist loadscope`` would hand out the
units with the most tests first (``--loadscope-reorder``), the browser tests among
them, before the site is built.

The second rule would be ``--dist loadgroup`` with ``xdist_group`` marks, but under
pytest 9 loadgroup stops grouping: https://github.com/pytest-dev/pytest-xdist/issues/1386
(fixed by https://github.com/pytest-dev/pytest-xdist/pull/1388). Drop the scheduler
below for those marks once a pytest-xdist release with that fix is pinned.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

BROWSER_TESTS = Path(__file__).resolve().parent / "browser"
# The browser tests parametrized by the site's pages, which share one visit per page.
PER_PAGE_MODULES = ("tests/browser/test_pages.py", "tests/browser/test_legibility.py")
PAGE_SCOPE = "tests/browser/pages"
_WIDTH = re.compile(r"^\d+px-")  # test_legibility.py's ids: "1280px-cricket"
ROOT = BROWSER_TESTS.parents[1]
# Where the pages' studies are computed, and the real models' weights dequantised:
# the site's build computes and caches them all. And the folders whose examples
# (docstrings, a page's code blocks) run that code.
STUDY_CODE = ("mha.pages", "mha.figures", "mha.experiments", "mha.pretrained")
PAGE_CODE = (
    *(ROOT / "src" / package.replace(".", "/") for package in STUDY_CODE),
    ROOT / "src/mha_site",
    ROOT / "docs",
)


def needs_site(item: pytest.Item) -> bool:
    """Whether the test uses the built site (the ``built_site`` fixture)."""
    return "built_site" in getattr(item, "fixturenames", ())


def reads_studies(item: pytest.Item) -> bool:
    """Whether the test may read the pages' studies (or a real model): an example in
    the pages' code (``PAGE_CODE``), a test whose module or test helpers (``tests.*``)
    hold anything of ``STUDY_CODE``, or a test given such an object as a parameter.

    ```python
    from types import SimpleNamespace

    import mha.pages.depth
    import tests.pages.test_circuits as circuits
    import tests.test_core as core
    from tests.xdist_schedule import ROOT, reads_studies

    def item(path, module=None, **params):
        spec = SimpleNamespace(params=params)
        return SimpleNamespace(path=ROOT / path, module=module, callspec=spec)

    assert reads_studies(item("src/mha/experiments/repeated_tokens.py"))
    assert reads_studies(item("docs/circuits.md"))
    assert reads_studies(item(circuits.__file__, circuits))  # through its helper
    assert reads_studies(item(core.__file__, core, obj=mha.pages.depth.page))
    assert not reads_studies(item(core.__file__, core))
    assert not reads_studies(item("src/mha/attention.py"))
    ```
    """
    path = Path(item.path)
    if any(folder == path or folder in path.parents for folder in PAGE_CODE):
        return True
    module = getattr(item, "module", None)
    params = getattr(getattr(item, "callspec", None), "params", {})
    return (module is not None and _holds_study_code(module)) or any(
        _is_study_code(_origin(value)) for value in params.values()
    )


def _origin(value: object) -> str:
    """The name of the module ``value`` is, or was defined in ("" if none)."""
    if isinstance(value, ModuleType):
        return value.__name__
    return getattr(value, "__module__", None) or ""


def _is_study_code(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in STUDY_CODE)


@functools.cache
def _holds_study_code(module: ModuleType) -> bool:
    """Whether the test module ``module`` or a ``tests.*`` module it imports, at any
    depth, holds an object of ``STUDY_CODE``."""
    seen, todo = {module.__name__}, [module]
    while todo:
        for value in vars(todo.pop()).values():
            origin = _origin(value)
            if _is_study_code(origin):
                return True
            helper = sys.modules.get(origin) if origin.startswith("tests.") else None
            if helper is not None and origin not in seen:
                seen.add(origin)
                todo.append(helper)
    return False


def run_order(item: pytest.Item) -> int:
    """0: tests without the site or the studies; 1: tests of the built site or of the
    pages' code (``reads_studies``, which wait for the build: tests/conftest.py); 2:
    browser tests; 3: the test of the second build (``rebuilt_site``).

    Each worker runs its tests in this order, so the build overlaps the first kind,
    the second build (started when the first ends) the next two, and each worker
    starts Chromium once (the browser fixtures are package-scoped).
    """
    if "rebuilt_site" in getattr(item, "fixturenames", ()):
        return 3
    if BROWSER_TESTS in item.path.parents:
        return 2
    return int(needs_site(item) or reads_studies(item))


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
