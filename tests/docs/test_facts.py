"""Facts: a page's comparing sentences are in its Markdown, guarded by its module.

Each ``fact("name")`` or ``holds("name")`` of a page names a fact of its page object,
once; every fact the object declares is stated by the page; every fact stated as a
sentence holds (one read by ``holds`` only chooses between sentences). Change
an input and the stale sentence is refused: in-process here, and by
``mkdocs build --strict`` end to end, at the sentence's line, quoting it.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mha.pages import cricket as cricket_page
from mha.support.page import Fact, Page
from mha.worked.cricket import solve, solve_extended
from mha_site.evidence import marker
from mha_site.facts import FactError, PageFacts, choosing, unmarked, unshown, uses
from mha_site.facts import stated as stated_sentences
from tests.conftest import ROOT, local_build_env
from tests.docs.rendering import render

DOCS = ROOT / "docs"
ANOTHER_QUERY = np.array([2.0, 1.0, 0.0, 1.0])  # "his" leaning to "Kohli": no tie
PAGES = [
    page
    for page in sorted(DOCS.glob("*.md"))
    if importlib.util.find_spec("mha.pages." + page.stem.replace("-", "_"))
]


def page_object(page: Path) -> Page:
    return importlib.import_module("mha.pages." + page.stem.replace("-", "_")).page()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_states_each_of_its_facts_once_and_each_holds(page: Path):
    obj, text = page_object(page), page.read_text(encoding="utf-8")
    stated = Counter(name for _, name in uses(text))
    # a sentence that picks its words by its own fact reads it twice: fact and holds
    stated.subtract(choosing(text))
    assert set(stated) == set(obj.facts), (
        f"{page.name}: stated but not declared {sorted(set(stated) - set(obj.facts))}"
        f", declared but not stated {sorted(set(obj.facts) - set(stated))}"
    )
    assert max(stated.values(), default=1) == 1, f"{page.name}: used twice: {stated}"
    # a fact read only by ``holds("…")`` picks a sentence, and may be false; a
    # sentence stated with ``fact("…")`` must hold
    stated_as_sentence = stated_sentences(text)
    stale = {
        name: f.values
        for name, f in obj.facts.items()
        if not f.holds and name in stated_as_sentence - choosing(text)
    }
    assert not stale, f"{page.name}: facts that no longer hold: {stale}"


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_every_sentence_chosen_by_a_fact_carries_its_marker(page: Path):
    """A ``holds("x")`` outside every guarded sentence picks words no marker
    explains: each is the sentence of its own fact, which shows its verdict."""
    found = unmarked(page.read_text(encoding="utf-8"))
    assert not found, f"{page.name}: holds() outside a guarded sentence: {found}"


def test_a_sentence_chosen_by_its_fact_is_stated_either_way_and_a_bare_one_is_found():
    bare = 'It {% if holds("up") %}grows{% else %}shrinks{% endif %}.\n'
    assert unmarked(bare) == [(1, "up")]
    # the same words as the sentence of their fact; a table above reads it by name
    named = (
        '{% set up = holds("up") %}| {% if up %}a{% else %}b{% endif %} |\n\n'
        'It {% call fact("up") %}{% if up %}grows{% else %}shrinks{% endif %}'
        "{% endcall %}.\n"
    )
    assert unmarked(named) == [] and choosing(named) == {"up"}
    for holds, words in ((True, "grows"), (False, "shrinks")):
        page = Page(facts={"up": Fact(holds, "1 vs 2", "it grows")}, figures={})
        facts = PageFacts(page, "docs/x.md", named)
        assert facts.holds("up") is holds
        assert facts.state("up", words) == words  # a false fact still picks words
    # read by name without stating it: the name's choice is not the fact's sentence
    unstated = '{% set up = holds("up") %}It {% if up %}grows{% endif %}.'
    assert unmarked(unstated) == [(1, "up")] and choosing(unstated) == set()


ZERO = re.compile(r"^-?0(\.0*)?%?$")  # "0", "0.000", "-0.0", "0.0%"


def printed_as_zero(markdown: Path, obj: Page) -> list[tuple[str, float]]:
    """The numbers a page prints as zero (``dec``, ``pct``, ...) that are not zero."""
    found = []

    def seen(value, text: str) -> None:
        if ZERO.match(text) and isinstance(value, int | float | np.number) and value:
            found.append((text, float(value)))

    render(markdown, obj, seen)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_number_that_is_not_zero_is_printed_as_zero(page: Path):
    """'at most 0.000' of a difference of 1e-9 reads as exact: print it so it shows."""
    found = printed_as_zero(page, page_object(page))
    assert not found, f"{page.name}: printed as zero but not zero: {found}"


def test_a_small_number_printed_as_zero_is_found(tmp_path: Path):
    markdown = tmp_path / "x.md"
    markdown.write_text("at most {{ page.gap | dec }}, {{ page.none | pct }}\n")
    obj = Page(gap=4e-4, none=0.0, facts={}, figures={})
    assert printed_as_zero(markdown, obj) == [("0.000", 4e-4)]


def test_a_false_fact_names_its_line_and_quotes_its_sentence():
    markdown = 'One.\nTwo {% call fact("tie") %}a tie{% endcall %}.\n'
    false = Page(facts={"tie": Fact(False, "0.5 vs 0.4", "a and b tie")}, figures={})
    with pytest.raises(FactError, match=r"^docs/x\.md:2: 'a tie' no longer holds"):
        PageFacts(false, "docs/x.md", markdown).state("tie", "a tie")
    twice = PageFacts(false, "docs/x.md", markdown + 'fact("tie")')
    with pytest.raises(FactError, match="used on lines"):
        twice.holds("tie")
    unstated = PageFacts(
        Page(facts={"x": Fact(True, "1", "one is one")}, figures={}), "d.md", ""
    )
    assert "never states: ['x']" in unstated.unused()


def test_a_fact_without_a_description_is_refused():
    with pytest.raises(TypeError, match="says"):
        Fact(True, "1")  # type: ignore[call-arg]
    for empty in ("", "   "):
        with pytest.raises(ValueError, match="says: expected a one-line description"):
            Fact(True, "1", empty)
    with pytest.raises(TypeError, match="says: expected one line"):
        Fact(True, "1", "two\nlines")
    with pytest.raises(TypeError, match="qualitative: expected one line"):
        Fact(True, "1", "one is one", qualitative=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_fact_says_what_it_checks_in_one_line_of_its_own(page: Path):
    facts = page_object(page).facts
    described = {name: fact.says for name, fact in facts.items()}
    assert all(says.strip() and "\n" not in says for says in described.values())
    # two facts of a page with one description: one of them says the wrong thing,
    # unless they are one check stated by two sentences (the same values)
    for says, n in Counter(described.values()).items():
        checks = {(f.holds, f.values) for f in facts.values() if f.says == says}
        assert n == 1 or len(checks) == 1, f"{page.name}: {says!r} describes {n} facts"


def test_a_sentence_that_prints_none_of_its_facts_values_is_refused():
    tie = Fact(True, "weights [0.45, 0.45, 0.1]", "a and b tie")
    mark = marker("tie")  # as the build writes it after the sentence
    shown = f'"His" gives 45.0% to "Kohli", {mark}as much to itself.'
    assert unshown(shown, {"tie": tie}) == []
    for wrong in ("12.5%", "0.46", "4"):  # another value, or another precision's
        bare = f'"His" gives {wrong} to "Kohli", {mark}as much to itself.'
        assert unshown(bare, {"tie": tie}) == ["tie"], wrong
    # declared qualitative, with its reason: allowed
    said = Fact(True, "weights [0.45, 0.45, 0.1]", "a and b tie", qualitative="a tie")
    assert unshown(f"Head A {mark}ties.", {"tie": said}) == []


def test_a_changed_query_makes_the_cricket_tie_false():
    changed = solve(q=ANOTHER_QUERY)
    facts = cricket_page._facts(changed, solve_extended(), changed)
    assert not facts["tie"].holds and not facts["tie_verdict"].holds


def test_the_strict_build_fails_on_a_stale_sentence(tmp_path: Path):
    """The cricket page built alone, from a copy of src/ whose query for "his"
    changed: the build stops at the sentence's line and quotes it."""
    shutil.copytree(ROOT / "src", tmp_path / "src")
    example = tmp_path / "src" / "mha" / "worked" / "cricket.py"
    text = example.read_text()
    assert "Q_HIS = np.array([1.0, 2.0, 0.0, 1.0])" in text
    example.write_text(
        text.replace("[1.0, 2.0, 0.0, 1.0]", str(ANOTHER_QUERY.tolist()))
    )
    docs = tmp_path / "docs"
    for part in ("_glue", "_theme", "assets"):
        shutil.copytree(DOCS / part, docs / part)
    markdown = (DOCS / "cricket.md").read_text()
    shutil.copy(DOCS / "cricket.md", docs / "cricket.md")
    line = next(i for i, t in enumerate(markdown.splitlines(), 1) if 'fact("tie")' in t)
    config = (ROOT / "mkdocs.yml").read_text()
    config = re.sub(r"(?ms)^nav:\n.*?(?=^\S)", "", config)  # one page: no nav
    (tmp_path / "mkdocs.yml").write_text(config)
    env = local_build_env(
        PYTHONPATH=str(tmp_path / "src"), MHA_CACHE_DIR=str(tmp_path / "cache")
    )
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    expected = (
        f"docs/cricket.md:{line}: 'but exactly as much to itself' no longer holds"
    )
    assert expected in result.stdout + result.stderr, result.stderr[-3000:]
