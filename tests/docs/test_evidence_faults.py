"""The four faults a reliability audit planted, each planted into a real page and
refused by the build's checks or visible in the sentence's popover.

1. Two facts swapped between two sentences: each popover then says the other
   sentence's check, beside the wrong words.
2. The words of a ``holds()`` branch swapped ("320.00 GiB, less than the 128.48 GiB"):
   each wording is tested against its fact, true and turned false.
3. A value printed under the wrong label (century's weight beside "Kohli"): refused
   by ``mislabelled``, a value of a named thing is printed from a mapping keyed by
   the name.
4. A sentence comparing values with no number and no fact: refused by ``unguarded``.

The page is rendered in-process as the build renders it (the macros' ``fact`` with
its marker, ``mha_site.evidence.marker``), keeping its blocks, then read by the
same checks the build runs (``mha_site.facts``). What the reader's popover holds
(``mha_site.evidence.popover``, in the page's evidence file) is set after the
marker here, as evidence.js shows it.
"""

from __future__ import annotations

import copy
import html
import importlib
import re
from pathlib import Path

import jinja2

from mha.support.page import Fact, Page
from mha_site.evidence import marker, popover
from mha_site.facts import PageFacts, mislabelled, unguarded, unshown
from tests.docs.rendering import FILTERS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def page_of(name: str) -> Page:
    return importlib.import_module(f"mha.pages.{name.replace('-', '_')}").page()


def render(markdown: str, page: Page, popovers: bool = True) -> str:
    """``markdown`` rendered for ``page``, each stated sentence followed by its
    marker and, if ``popovers``, what its popover shows, blocks kept."""
    facts = PageFacts(page, "docs/x.md", markdown)

    def fact(name: str, caller) -> str:
        chooses = name in facts.choosing
        shown = popover(page.facts[name], "u", name, "", chooses) * popovers
        return facts.state(name, caller()) + marker(name) + shown

    env = jinja2.Environment()
    env.filters.update(FILTERS)
    env.globals.update(fact=fact, holds=facts.holds, figure=lambda name: "")
    return env.from_string(markdown).render(page=page)


def popover_after(rendered: str, words: str) -> str:
    """The text of the popover that follows ``words`` (its ``says``), as read."""
    at = rendered.index(words)
    says = re.search(r'<span class="mha-says">(.*?)</span>', rendered[at:], re.S)
    return html.unescape(says[1])


def test_two_facts_swapped_between_two_sentences_show_the_wrong_check():
    page = page_of("cricket")
    text = (DOCS / "cricket.md").read_text(encoding="utf-8")
    swapped = (
        text.replace('fact("a_commits")', 'fact("@")')
        .replace('fact("b_self")', 'fact("a_commits")')
        .replace('fact("@")', 'fact("b_self")')
    )
    assert swapped != text
    honest, planted = render(text, page), render(swapped, page)
    sentence = "breaks the tie"
    assert page.facts["a_commits"].says in popover_after(honest, sentence)
    shown = popover_after(planted, sentence)
    # the reader sees, beside "Head A … breaks the tie", head B's check
    assert "head B" in shown and "head A" not in shown
    assert unshown(render(text, page, popovers=False), page.facts) == []


def _beyond_weights(rendered: str) -> tuple[float, str, float]:
    """The cache, the word and the weights of kv-cache.md's sentence on full MHA."""
    found = re.search(
        r"would be\s+([\d,.]+) GiB,\s+(more|less) than the ([\d,.]+) GiB", rendered
    )
    assert found, "the sentence is not on the page"
    return float(found[1].replace(",", "")), found[2], float(found[3].replace(",", ""))


def _wording_holds(rendered: str) -> bool:
    cache, word, weights = _beyond_weights(rendered)
    return (word == "more") == (cache > weights)


def test_each_wording_of_a_holds_branch_is_checked_true_and_turned_false():
    page = page_of("kv-cache")
    text = (DOCS / "kv-cache.md").read_text(encoding="utf-8")
    # turned false: a smaller cache than the weights, and the fact false with it
    small = copy.copy(page)
    small.gib = {**page.gib, "longest": page.gib["weights"] / 2}
    fact = page.facts["mha_beyond_weights"]
    small.facts = {**page.facts, "mha_beyond_weights": Fact(False, "x", fact.says)}
    assert _beyond_weights(render(text, page))[1] == "more"
    assert _beyond_weights(render(text, small))[1] == "less"
    assert _wording_holds(render(text, page)) and _wording_holds(render(text, small))
    branch = '{% if holds("mha_beyond_weights") %}more{% else %}less{% endif %}'
    assert branch in text
    planted = text.replace(branch, branch.replace("more", "@").replace("less", "more"))
    planted = planted.replace("@", "less")
    shown = render(planted, page)
    assert not _wording_holds(shown)
    # and the reader sees it: "less than" beside a check that says "larger: true"
    said = popover_after(shown, "less than the")
    assert fact.says in said and ": true, and the words" in said


# Values printed by position beside a named token, still on these pages: each is
# counted, so a new one fails (a value of a named thing is printed from a mapping
# keyed by its name, as the cricket page's opening paragraphs do).
STILL_BY_POSITION = {
    "attention.md": 8,
    "cricket.md": 45,
    "exercises.md": 2,
    "kv-cache.md": 2,
    "real-gqa-model.md": 2,
    "real-heads.md": 3,
}


def test_a_value_under_another_label_is_refused():
    for markdown in sorted(DOCS.glob("*.md")):
        found = mislabelled(markdown.read_text(encoding="utf-8"))
        assert len(found) == STILL_BY_POSITION.get(markdown.name, 0), (
            markdown.name,
            found,
        )
    text = (DOCS / "cricket.md").read_text(encoding="utf-8")
    right = '{{ page.weight.full["Kohli"] | pct }} of its attention to "Kohli"'
    assert right in text
    for wrong in ('page.weight.head_b["over"]', "cricket.full.weights[2]"):
        planted = text.replace(right, right.replace('page.weight.full["Kohli"]', wrong))
        new = set(mislabelled(planted)) - set(mislabelled(text))
        assert [expr for _, expr in new] == [f"{wrong} | pct"]


def test_a_comparing_sentence_with_no_number_and_no_fact_is_refused():
    for markdown in sorted(DOCS.glob("*.md")):
        assert unguarded(markdown.read_text(encoding="utf-8")) == [], markdown.name
    text = (DOCS / "cricket.md").read_text(encoding="utf-8")
    plant = 'Head A puts less weight on "Kohli" than the single head does.'
    anchor = "**Head B** (the topic and position columns):"
    planted = text.replace(anchor, f"{plant}\n\n{anchor}")
    line = planted[: planted.index(plant)].count("\n") + 1
    assert unguarded(planted) == [(line, plant)]
