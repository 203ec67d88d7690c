"""A page's Markdown rendered as the build renders it, in-process, for a given page
object: the macros' templates without mkdocs (no figures drawn, no code run).

``render`` checks the facts as the build does (``mha_site.facts``) and hands every
number a formatting filter prints to ``seen(value, text)``, so a test can look at
what the reader would read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jinja2

from mha.support import formatting
from mha.support.page import Page
from mha_site.evidence import Code, text
from mha_site.facts import PageFacts

FILTERS = {
    "dec": formatting.decimals,
    "pct": formatting.percent,
    "thousands": formatting.thousands,
    "vec": formatting.vector,
    "sig": formatting.significant,
    "plain": text,  # the evidence index's words, escaped for Markdown
    # a bench result's commit, as a local build prints it
    "commit": Code(Path("."), None, None).commit_link,
}


def render(
    markdown: Path,
    page: Page,
    seen: Callable[[object, str], None] = lambda value, text: None,
) -> str:
    """``markdown`` (a page under docs/) rendered for ``page``, whitespace folded."""
    text = markdown.read_text(encoding="utf-8")
    facts = PageFacts(page, f"docs/{markdown.name}", text)

    def watched(format_: Callable) -> Callable:
        def printed(value, *args) -> str:
            out = format_(value, *args)
            seen(value, out)
            return out

        return printed

    env = jinja2.Environment()
    env.filters.update({name: watched(f) for name, f in FILTERS.items()})
    env.globals.update(
        fact=lambda name, caller: facts.state(name, caller()),
        holds=facts.holds,
        figure=lambda name: "",
    )
    rendered = env.from_string(text).render(page=page, config={"repo_url": "repo"})
    unused = facts.unused()
    if unused:
        raise AssertionError(unused)
    return " ".join(rendered.split())
