"""Words tied to their checks, over the real site.

- Every guarded sentence prints, next to it, at least one value its fact compares
  (``mha_site.facts.unprinted``), so a reader sees what the check saw.
- Every fact a page states has a test that feeds it values making it false (an
  ``assert not …["name"].holds``, directly, in a loop over names, or through a helper
  such as ``fails("name", …)``), so a check replaced by ``True`` fails a test.

Both hold for every page; a new sentence or fact must come with both.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mha_site.facts import unprinted, uses

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))


def _negated_keys(test: ast.AST) -> list[ast.AST]:
    """The subscript keys of ``….holds`` read under a ``not`` or compared ``is False``."""
    keys = []
    for node in ast.walk(test):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            negated = node.operand
        elif isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value is False for c in node.comparators
        ):
            negated = node.left
        else:
            continue
        keys += [
            sub.value.slice
            for sub in ast.walk(negated)
            if isinstance(sub, ast.Attribute)
            and sub.attr == "holds"
            and isinstance(sub.value, ast.Subscript)
        ]
    return keys


def _strings(node: ast.AST) -> set[str]:
    return {
        c.value
        for c in ast.walk(node)
        if isinstance(c, ast.Constant) and isinstance(c.value, str)
    }


def falsified(source: str) -> set[str]:
    """The fact names a test module asserts false.

    ```python
    from tests.docs.test_words_tied import falsified

    code = '''
    def fails(name, **changed):
        return not facts(**changed)[name].holds

    def test_x():
        assert not facts(a=1)["tie"].holds
        for name in ("big", "small"):
            assert not other[name].holds
        assert fails("wide", b=2)

    @pytest.mark.parametrize(("name", "part"), [("even", "a"), ("odd", "b")])
    def test_y(name, part):
        assert not facts(part)[name].holds
    '''
    assert falsified(code) == {"tie", "big", "small", "wide", "even", "odd"}
    ```
    """
    tree = ast.parse(source.strip() if source.startswith("\n") else source)
    loops: dict[str, set[str]] = {}
    helpers: dict[str, int] = {}  # a helper that negates .holds of its n-th argument
    parametrized: set[str] = set()  # the values of a parametrized test's fact name
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.comprehension) and isinstance(
            node.target, ast.Name
        ):
            loops.setdefault(node.target.id, set()).update(_strings(node.iter))
        if isinstance(node, ast.FunctionDef):
            params = [a.arg for a in node.args.args]
            for key in _negated_keys(node):
                if isinstance(key, ast.Name) and key.id in params:
                    helpers[node.name] = params.index(key.id)
                    parametrized |= _parametrized(node, key.id)
    names: set[str] = set(parametrized)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for key in _negated_keys(node.test):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                names.add(key.value)
            elif isinstance(key, ast.Name):
                names |= loops.get(key.id, set())
        for call in ast.walk(node.test):
            position = helpers.get(getattr(call, "func", None) and _name(call.func))
            known = isinstance(call, ast.Call) and position is not None
            if known and position < len(call.args):
                names |= _strings(call.args[position])
    return names


def _parametrized(test: ast.FunctionDef, argument: str) -> set[str]:
    """The values ``@pytest.mark.parametrize`` gives ``argument`` of ``test``."""
    values: set[str] = set()
    for decorator in test.decorator_list:
        if not (
            isinstance(decorator, ast.Call) and _name(decorator.func) == "parametrize"
        ):
            continue
        names, rows = decorator.args[0], decorator.args[1]
        argnames = (
            [n.strip() for n in names.value.split(",")]
            if isinstance(names, ast.Constant)
            else [e.value for e in getattr(names, "elts", [])]
        )
        if argument not in argnames or not isinstance(rows, ast.List | ast.Tuple):
            continue
        at = argnames.index(argument)
        for row in rows.elts:
            if isinstance(row, ast.Call):  # pytest.param(...)
                row = ast.Tuple(elts=row.args)
            item = row.elts[at] if isinstance(row, ast.Tuple) else row
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                values.add(item.value)
    return values


def _name(node: ast.AST) -> str | None:
    return getattr(node, "id", None) or getattr(node, "attr", None)


def test_every_guarded_sentence_prints_a_value_of_its_fact():
    silent = [
        f"docs/{page.name}: {name}"
        for page in PAGES
        for _, name in unprinted(page.read_text(encoding="utf-8"))
    ]
    assert not silent, (
        "a guarded sentence prints none of the values its fact compares; print one "
        "({{ page.… }}) in the sentence that states it:\n  " + "\n  ".join(silent)
    )


@pytest.fixture(scope="module")
def asserted_false() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names |= falsified(path.read_text(encoding="utf-8"))
    return names


def test_every_fact_has_a_test_that_makes_it_false(asserted_false):
    missing = [
        f"docs/{page.name}: {name}"
        for page in PAGES
        for name in sorted({n for _, n in uses(page.read_text(encoding="utf-8"))})
        if name not in asserted_false
    ]
    assert not missing, (
        "a fact no test makes false (a check replaced by True would pass): add "
        'assert not facts(<values that break it>)["name"].holds to its page\'s '
        "tests:\n  " + "\n  ".join(missing)
    )
