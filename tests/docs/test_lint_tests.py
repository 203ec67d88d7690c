"""A lint of the tests: every test can fail.

A test function passes the lint if it asserts, expects an exception
(``pytest.raises``/``warns``/``fail``, Playwright's ``expect``), raises, runs code
that carries its own asserts (``exec`` of a page's block), or calls a helper of the
tests that does one of these (followed to a fixed point, across every module under
tests/, so ``check_*`` helpers count). A comparison whose result is dropped
(``x == y`` as a statement, what is left when ``assert`` is deleted) is refused
anywhere in the tests.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
CHECKS = frozenset({"raises", "warns", "fail", "expect", "deprecated_call", "exec"})


def _called(node: ast.Call) -> str:
    return getattr(node.func, "id", None) or getattr(node.func, "attr", None) or ""


def _summary(function: ast.AST) -> tuple[bool, set[str]]:
    """Whether ``function`` asserts or raises itself, and the names it calls."""
    direct, calls = False, set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assert | ast.Raise):
            direct = True
        elif isinstance(node, ast.Call):
            calls.add(_called(node))
    return direct, calls


def _checks(summary: tuple[bool, set[str]], helpers: set[str]) -> bool:
    direct, calls = summary
    return direct or any(
        name in helpers or name in CHECKS or name.startswith("assert") for name in calls
    )


def asserting_helpers(summaries: dict[str, list[tuple[bool, set[str]]]]) -> set[str]:
    """The names of the tests' functions that check (assert, raise, or call one)."""
    known: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, found in summaries.items():
            if name not in known and any(_checks(s, known) for s in found):
                known.add(name)
                grew = True
    return known


def lint(sources: dict[str, str]) -> list[str]:
    """``path:line: why`` for each test that cannot fail and each dropped comparison.

    ```python
    from tests.docs.test_lint_tests import lint

    good = "def test_a():\\n    assert 1 + 1 == 2\\n"
    bare = "def test_b():\\n    1 + 1 == 3\\n"
    assert lint({"t.py": good}) == []
    assert [row.split(": ")[0] for row in lint({"t.py": bare})] == ["t.py:1", "t.py:2"]
    ```
    """
    trees = {path: ast.parse(text) for path, text in sources.items()}
    summaries: dict[str, list[tuple[bool, set[str]]]] = {}
    tests = []
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Compare):
                found.append(
                    f"{path}:{node.lineno}: a comparison whose result is dropped"
                )
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                summary = _summary(node)
                summaries.setdefault(node.name, []).append(summary)
                if node.name.startswith("test"):
                    tests.append((path, node, summary))
    helpers = asserting_helpers(summaries)
    for path, node, summary in tests:
        if not _checks(summary, helpers - {node.name}):
            found.append(
                f"{path}:{node.lineno}: {node.name} asserts nothing (assert, "
                "pytest.raises, or a helper that asserts)"
            )
    return sorted(found, key=lambda row: (row.split(":")[0], int(row.split(":")[1])))


def test_every_test_can_fail():
    sources = {
        path.relative_to(TESTS.parent).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(TESTS.rglob("*.py"))
    }
    found = lint(sources)
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "body",
    [
        "    result = f()\n    result == 3\n",  # the assert deleted
        "    f()\n",  # nothing checked
        "    helper()\n",  # a helper that does not check either
    ],
)
def test_the_lint_refuses_a_test_that_cannot_fail(body):
    source = f"def helper():\n    return 1\n\n\ndef test_x():\n{body}"
    assert lint({"t.py": source})


@pytest.mark.parametrize(
    "body",
    [
        "    assert f() == 3\n",
        "    with pytest.raises(ValueError):\n        f()\n",
        "    check()\n",  # a helper that asserts, in any test module
        "    np.testing.assert_allclose(f(), 3)\n",
    ],
)
def test_the_lint_accepts_a_test_that_checks(body):
    source = f"def check():\n    assert f()\n\n\ndef test_x():\n{body}"
    assert lint({"t.py": source}) == []
