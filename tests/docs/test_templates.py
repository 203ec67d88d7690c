"""Templates print, they do not compute: a page asks its module for every value.

Inside ``{{ }}`` and ``{% %}`` of a page there is no arithmetic, no comparison, no
string concatenation, no NumPy or list method call and no filter other than the
formatting ones; ``{% set %}`` only names results. Attribute access, subscripts and
calls of the page module's functions are allowed. A value that needs computing is
computed, and so tested, in ``mha.pages.<page>``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
FORMATTING = {"dec", "pct", "thousands", "vec", "sig", "safe", "e", "escape", "join"}
FORMATTING |= {"indent", "first", "last"}  # layout, and subscripts by another name
FILTER = re.compile(r"\|\s*(\w+)")
METHODS = [
    "sum",
    "max",
    "min",
    "mean",
    "median",
    "std",
    "var",
    "prod",
    "argmax",
    "argmin",
    "argsort",
    "cumsum",
    "round",
    "tolist",
    "item",
    "astype",
    "reshape",
    "index",
    "count",
    "append",
    "extend",
    "sort",
    "sorted",
    "copy",
    "format",
    "replace",
    "split",
    "upper",
    "lower",
]
METHOD = re.compile(r"\.(" + "|".join(METHODS) + r")\s*\(")
OPERATOR = re.compile(r"\*\*|//|[+*/%~]|(?<![\[(,=])-|[<>]=?|==|!=|\b(and|or|not)\b")


def problems(text: str) -> list[str]:
    """Each computing construct inside a template block of ``text``, with its line."""
    found = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        block = match.group()
        inner = STRING.sub("''", block[2:-2].strip("-").strip())
        if inner.startswith(("set ", "for ", "if ", "elif ")):
            inner = inner.split(" ", 1)[1]
        if inner.startswith(
            ("macro ", "endmacro", "endfor", "endif", "else", "endset")
        ):
            continue
        inner = re.sub(r"\bin\b|\bis( not)? none\b", " ", inner)
        reasons = [f"filter |{name}" for name in FILTER.findall(inner)]
        reasons = [r for r in reasons if r.split("|")[1] not in FORMATTING]
        reasons += [f"method .{name}()" for name in METHOD.findall(inner)]
        reasons += [f"operator {m.group()}" for m in OPERATOR.finditer(inner)]
        found += [f"line {line}: {reason} in {block[:80]!r}" for reason in reasons]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_template_only_prints(page: Path):
    found = problems(page.read_text(encoding="utf-8"))
    assert not found, f"docs/{page.name} computes in its template:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "block",
    [
        "{{ x + 1 }}",
        "{{ (a - b) | dec }}",
        "{{ w.sum() }}",
        "{{ rows | selectattr('h', 'equalto', 8) | list }}",
        "{{ 'a' ~ b }}",
        "{% if a > b %}more{% endif %}",
        "{{ values | max }}",
        "{% set total = a * b %}",
    ],
)
def test_computing_constructs_are_found(block: str):
    assert problems(block)


@pytest.mark.parametrize(
    "block",
    [
        "{{ cricket.full.weights[0] | dec }}",
        "{{ rows[-1].params | thousands }}",
        "{%- set ranks = page.score_ranks() -%}",
        "{{ figure('cost.head_timings', page.alt['timings'], t, caption=page.cap) }}",
        "{% for token in worked.TOKENS %}{{ token }}{% endfor %}",
        "{{ x | dec(0) }}",
        "{% if page.is_tie %}",
        "{{ r.first_step if r.first_step is not none else page.never }}",
    ],
)
def test_printing_constructs_pass(block: str):
    assert not problems(block), problems(block)
