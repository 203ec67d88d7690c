"""Facts: a page's comparing sentences, written in its Markdown, checked by the build.

A sentence that compares computed values is written inside the fact it states::

    "His" gives as much to "Kohli" {% call fact("tie") %}as to itself{% endcall %}.

``fact`` prints the sentence if the page object's fact ``tie`` holds, and otherwise
fails the build with ``docs/<page>.md:<line>: '<sentence>' no longer holds
(<values>)``. Each fact name is used once per page (so its line is found by name),
and every fact a page module declares is used by its Markdown: a fact nobody states
is dead code. A sentence that legitimately changes with the values is an ``if`` on
``holds("name")``.

A sentence that states a mechanism (X causes, gets, carries or turns into Y) is
guarded by a fact computed from an intervention on X (an ablation, a patch, a
removal), never from a correlation such as an attention weight or a weight score:
the fact's values are the intervention's result, with its spread over sequences or
texts and its unit, and a test feeds the fact a result without the effect (the
intervened value equal to the unchanged one) and sees it turn false.

```python
from mha.support.page import Fact, Page
from mha_site.facts import FactError, PageFacts

page = Page(facts={"tie": Fact(False, "0.5 vs 0.4")}, figures={})
facts = PageFacts(page, "docs/a.md", 'Two {% call fact("tie") %}tie{% endcall %}.\\n')
try:
    facts.state("tie", "tie")
except FactError as error:
    assert str(error) == "docs/a.md:1: 'tie' no longer holds (0.5 vs 0.4)"
```
"""

from __future__ import annotations

import re

from mha.support.page import Page


class FactError(ValueError):
    """A sentence of a page no longer holds for the values it speaks of."""


USE = re.compile(r"""\b(fact|holds)\(\s*["']([^"']+)["']\s*\)""")


def uses(markdown: str) -> list[tuple[int, str]]:
    """``(line, fact name)`` of each ``fact("…")`` or ``holds("…")`` in ``markdown``.

    ```python
    from mha_site.facts import uses

    text = 'a\\n{% call fact("tie") %}x{% endcall %} {% if holds("big") %}y{% endif %}'
    assert uses(text) == [(2, "tie"), (2, "big")]
    ```
    """
    return [
        (markdown.count("\n", 0, match.start()) + 1, match[2])
        for match in USE.finditer(markdown)
    ]


def stated(markdown: str) -> set[str]:
    """The facts ``markdown`` states as sentences, ``{% call fact("…") %}``: each must
    hold. One read only by ``holds("…")`` picks between sentences and may be false.

    ```python
    from mha_site.facts import stated

    text = '{% call fact("tie") %}x{% endcall %} {% if holds("big") %}y{% endif %}'
    assert stated(text) == {"tie"}
    ```
    """
    return {match[2] for match in USE.finditer(markdown) if match[1] == "fact"}


class PageFacts:
    """The facts of one page as its Markdown states them, during one render.

    ``page`` is the page object, ``where`` the Markdown's path as messages name it,
    ``markdown`` its source (for line numbers).
    """

    def __init__(self, page: Page, where: str, markdown: str) -> None:
        self.page, self.where = page, where
        self.lines: dict[str, list[int]] = {}
        for line, name in uses(markdown):
            self.lines.setdefault(name, []).append(line)
        self.used: set[str] = set()

    def _fact(self, name: str):
        line = self.lines.get(name, [0])[0]
        where = f"{self.where}:{line}"
        if name not in self.page.facts:
            raise FactError(
                f"{where}: the page module has no fact {name!r}; "
                f"it has {sorted(self.page.facts)}"
            )
        if len(self.lines.get(name, [])) > 1:
            raise FactError(
                f"{where}: fact {name!r} is used on lines {self.lines[name]}; "
                "use each fact once per page (declare another for the other sentence)"
            )
        self.used.add(name)
        return self.page.facts[name], where

    def state(self, name: str, sentence: str) -> str:
        """``sentence`` if fact ``name`` holds, else a ``FactError`` at its line."""
        fact, where = self._fact(name)
        if not fact.holds:
            words = " ".join(sentence.split())
            raise FactError(f"{where}: {words!r} no longer holds ({fact.values})")
        return sentence

    def holds(self, name: str) -> bool:
        """Whether fact ``name`` holds, for a sentence that changes with it."""
        return self._fact(name)[0].holds

    def unused(self) -> str | None:
        """A message naming the page module's facts its Markdown never states."""
        missing = sorted(set(self.page.facts) - self.used)
        if not missing:
            return None
        return (
            f"{self.where}: the page module declares facts the page never states: "
            f"{missing}; write their sentences with fact(...) or remove them"
        )


STATED = re.compile(
    r"""\{%-?\s*call\s+fact\(\s*["']([^"']+)["']\s*\)\s*-?%\}(.*?)\{%-?\s*endcall\s*-?%\}""",
    re.S,
)
SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s|$)|\n\s*\n")


def unprinted(markdown: str) -> list[tuple[int, str]]:
    """``(line, fact name)`` of each stated fact whose sentence prints no value.

    A guarded sentence shows at least one value its fact compares, next to it: a
    ``{{ }}`` in the sentence that holds the ``{% call fact %}`` (from the end of the
    previous sentence, ``.``, ``!``, ``?`` or a blank line, to the end of its own) or
    in the sentence just before it; for a sentence that opens its paragraph, in the
    block just before it (the table or figure it reads; template-only lines such as
    ``{% endfor %}`` are skipped).

    ```python
    from mha_site.facts import unprinted

    good = 'It gets {{ page.w | pct }}, {% call fact("tie") %}as much{% endcall %}.'
    bare = 'Intro. {% call fact("tie") %}Head A wins{% endcall %}. It gets {{ w }}.'
    table = '| {{ w }} |\\n\\n{% call fact("tie") %}They tie{% endcall %}.'
    assert unprinted(good) == unprinted(table) == [] and unprinted(bare) == [(1, "tie")]
    ```
    """
    found = []
    for match in STATED.finditer(markdown):
        before = markdown[: match.start()]
        ends = list(SENTENCE_END.finditer(before))
        start = ends[-1].end() if ends else 0
        after = SENTENCE_END.search(markdown, match.end())
        end = after.start() if after else len(markdown)
        near = markdown[start:end]
        if not ends or ends[-1].group(0).strip() == "":  # it opens its paragraph
            near += _block_before(before[: ends[-1].start()] if ends else "")
        else:  # the sentence before it, in its paragraph
            near += before[ends[-2].end() if len(ends) > 1 else 0 : start]
        if "{{" not in near:
            found.append((markdown.count("\n", 0, match.start()) + 1, match[1]))
    return found


def _block_before(text: str) -> str:
    """The last block of ``text`` that is not template tags alone."""
    for block in reversed(re.split(r"\n\s*\n", text)):
        if re.sub(r"\{%.*?%\}", "", block, flags=re.S).strip():
            return block
    return ""
