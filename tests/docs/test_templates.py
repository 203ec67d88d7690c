"""Templates print, they do not compute: a page reads its page object, nothing else.

A template reads one name, ``page`` (what ``mha.pages.<page>.page()`` returns), and
the site's three macros (``fact``, ``holds``, ``figure``); the names it binds itself
(``set``, ``for``, macro arguments) are its own. There is no ``core()``: whatever a
page needs, its module imports in Python, where the import graph and the tests see it.

Inside ``{{ }}`` and ``{% %}`` of a page there is no arithmetic, no comparison, no
string concatenation, no NumPy or list method call and no filter other than the
formatting ones; ``{% set %}`` only names results. Attribute access, subscripts and
calls of the page module's functions are allowed. A value that needs computing is
computed, and so tested, in ``mha.pages.<page>``.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
from jinja2 import nodes

from tests.conftest import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
FORMATTING = {
    "dec",
    "pct",
    "thousands",
    "vec",
    "sig",
    "safe",
    "e",
    "escape",
    "join",
    "plain",
    "commit",  # a bench result's commit, linked (mha_site.evidence.Code.commit_link)
}
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


# ``config``: the site's settings (its repository's address), which no module computes
READS = {"page", "fact", "holds", "figure", "loop", "caller", "config"}


def foreign_names(text: str) -> list[str]:
    """The names a template reads that are neither ``page``, a macro nor its own."""
    tree = jinja2.Environment().parse(text)
    bound = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    bound |= {m.name for m in tree.find_all(nodes.Macro)}
    read = {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
    return sorted(read - bound - READS)


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


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_template_reads_only_its_page_object(page: Path):
    found = foreign_names(page.read_text(encoding="utf-8"))
    assert not found, f"docs/{page.name} reads {found}: read them from `page.`"


def test_foreign_names_are_found():
    assert foreign_names('{% set m = core("x") %}{{ m.y }}') == ["core"]
    assert foreign_names("{{ cricket.w | dec }}") == ["cricket"]
    assert not foreign_names(
        "{% set c = page.example %}{% for t in page.tokens %}{{ t }}{% endfor %}"
        '{% call fact("tie") %}a tie{% endcall %}{{ figure("bars") }}{{ c.w }}'
    )


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
        "{%- set ranks = page.score_ranks -%}",
        "{{ figure('head_timings') }}",
        "{% for token in page.tokens %}{{ token }}{% endfor %}",
        "{{ x | dec(0) }}",
        "{% if page.is_tie %}",
        "{{ r.first_step if r.first_step is not none else page.never }}",
    ],
)
def test_printing_constructs_pass(block: str):
    assert not problems(block), problems(block)
