"""docs/evidence.md: every fact of every page, at the line its Markdown states it."""

from __future__ import annotations

import importlib
import re

from mha.pages import evidence

DOCS = evidence._DOCS


def test_every_fact_of_every_page_is_listed_once_at_its_line():
    p = evidence.page()
    listed = {(g.file, r.name): r for g in p.groups for r in g.rows}
    for markdown in sorted(DOCS.glob("*.md")):
        module = "mha.pages." + markdown.stem.replace("-", "_")
        if markdown.name == "evidence.md" or not importlib.util.find_spec(module):
            continue
        facts = importlib.import_module(module).page().facts
        text = markdown.read_text(encoding="utf-8").splitlines()
        for name, fact in facts.items():
            row = listed.pop((markdown.name, name))
            assert (row.says, row.values) == (fact.says, fact.values)
            assert re.search(
                rf"""(fact|holds)\(\s*["']{name}["']""", text[row.line - 1]
            )
    assert not listed, f"listed but not a fact of its page: {sorted(listed)}"
    assert p.n_facts == sum(len(g.rows) for g in p.groups) > 0


def test_a_page_without_facts_is_left_out():
    assert evidence._group("notation.md") is None
    assert evidence._group("evidence.md") is None
