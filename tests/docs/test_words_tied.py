"""Words tied to their checks (issue 29, part 5), over the real site.

- Every guarded sentence prints, next to it, at least one value its fact compares
  (``mha_site.facts.unprinted``), so a reader sees what the check saw.
- Every fact a page states has a test that feeds it values making it false (an
  ``assert not …["name"].holds``, directly, in a loop over names, or through a helper
  such as ``fails("name", …)``), so a check replaced by ``True`` fails a test.

Both hold today for most facts, not for all: the ones that do not are listed below
by page, and the lists only shrink. A new fact must come with both; a listed fact that
gains them must leave the list (the test says which).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mha_site.facts import unprinted, uses

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))

# Sentences that print no value of their own fact today, in the sentence, the one
# before it or the block just before it (their numbers are further away).
UNPRINTED_TODAY: dict[str, set[str]] = {}


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


# Facts no test makes false today (a check replaced by True would pass them).
UNFALSIFIED_TODAY = {
    "attention.md": {
        "asymmetric", "causal_first", "causal_last", "gain_falls", "gain_flat",
        "sat_animal", "scaled_flat", "shared_self", "uniform", "unscaled_saturates",
    },
    "cost.md": {
        "both_cost", "either_way", "flat", "quiet", "scores_grow", "shared_shape",
    },
    "cricket.md": {
        "a_commits", "a_unmoved", "b_scale", "b_self", "century_heads", "his_extended",
        "same_cost", "scale_sharpens", "split_breaks_tie",
    },
    "depth.md": {
        "below_even", "louder", "partners", "two_reach",
    },
    "exercises.md": {
        "bert_same", "head_a_still", "no_weight_changes",
    },
    "heads-explorer.md": {
        "same_word_spreads", "slider_turns", "two_heads_drowned",
    },
    "kv-cache.md": {
        "falcon_trap", "llama70_absent", "mha_beyond_weights", "palm_trap", "tradeoff",
        "tradeoff_large", "tradeoff_middle",
    },
    "multi-head.md": {
        "cross_is_self", "whole_matches",
    },
    "one-head-or-many.md": {
        "extra_heads", "forgiving_by_accuracy", "gaps", "later", "narrow_most_right",
        "narrow_worse", "no_takeover", "one_splits", "overlap", "paper_best",
        "paper_shape", "rises", "seeds_differ", "two_enough",
    },
    "real-gqa-model.md": {
        "mqa_breaks", "rows_agree", "uptrained_close",
    },
    "real-heads.md": {
        "borderline", "cls_dominant", "last_layer", "none_of_these", "others_fine",
        "parks_on_cls",
    },
}  # fmt: skip


def test_every_guarded_sentence_prints_a_value_of_its_fact():
    new, fixed = [], []
    for page in PAGES:
        found = {name for _, name in unprinted(page.read_text(encoding="utf-8"))}
        known = UNPRINTED_TODAY.get(page.name, set())
        new += [f"docs/{page.name}: {name}" for name in sorted(found - known)]
        fixed += [f"docs/{page.name}: {name}" for name in sorted(known - found)]
    assert not new, (
        "a guarded sentence prints none of the values its fact compares; print one "
        "({{ page.… }}) in the sentence that states it:\n  " + "\n  ".join(new)
    )
    assert not fixed, "now printed: remove from UNPRINTED_TODAY:\n  " + "\n  ".join(
        fixed
    )


@pytest.fixture(scope="module")
def asserted_false() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names |= falsified(path.read_text(encoding="utf-8"))
    return names


def test_every_fact_has_a_test_that_makes_it_false(asserted_false):
    new, fixed = [], []
    for page in PAGES:
        stated = {name for _, name in uses(page.read_text(encoding="utf-8"))}
        missing = stated - asserted_false
        known = UNFALSIFIED_TODAY.get(page.name, set())
        new += [f"docs/{page.name}: {name}" for name in sorted(missing - known)]
        fixed += [f"docs/{page.name}: {name}" for name in sorted(known - missing)]
    assert not new, (
        "a fact no test makes false (a check replaced by True would pass): add "
        'assert not facts(<values that break it>)["name"].holds to its page\'s '
        "tests:\n  " + "\n  ".join(new)
    )
    assert not fixed, "now tested: remove from UNFALSIFIED_TODAY:\n  " + "\n  ".join(
        fixed
    )
