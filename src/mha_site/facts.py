"""Facts: a page's comparing sentences, written in its Markdown, checked by the build.

A sentence that compares computed values is written inside the fact it states::

    "His" gives as much to "Kohli" {% call fact("tie") %}as to itself{% endcall %}.

``fact`` prints the sentence if the page object's fact ``tie`` holds, and otherwise
fails the build with ``docs/<page>.md:<line>: '<sentence>' no longer holds
(<values>)``. Each fact name is used once per page (so its line is found by name),
and every fact a page module declares is used by its Markdown: a fact nobody states
is dead code. A sentence that legitimately changes with the values picks its words by
its own fact, inside it (``{% call fact("x") %}{% if holds("x") %}…{% else %}…{%
endif %}{% endcall %}``): it is stated either way and carries the fact's marker; a
``holds("x")`` outside every guarded sentence is refused (``unmarked``).

A sentence that states a mechanism (X causes, gets, carries or turns into Y) is
guarded by a fact computed from an intervention on X (an ablation, a patch, a
removal), never from a correlation such as an attention weight or a weight score:
the fact's values are the intervention's result, with its spread over sequences or
texts and its unit, and a test feeds the fact a result without the effect (the
intervened value equal to the unchanged one) and sees it turn false.

```python
from mha.support.page import Fact, Page
from mha_site.facts import FactError, PageFacts

page = Page(facts={"tie": Fact(False, "0.5 vs 0.4", "a and b tie")}, figures={})
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
from mha_site import evidence


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


SET = re.compile(
    r"""\{%-?\s*set\s+(\w+)\s*=\s*holds\(\s*["']([^"']+)["']\s*\)\s*-?%\}"""
)


def choosing(markdown: str) -> set[str]:
    """The facts ``markdown`` states by a sentence that chooses its words by the same
    fact (``{% call fact("x") %}{% if holds("x") %}…{% endif %}{% endcall %}``, or by
    a name set to it earlier, ``{% set x = holds("x") %}`` … ``{% if x %}``, when a
    table above the sentence chooses by it too): such a sentence is stated whether
    the fact holds or not, and its marker says which.

    ```python
    from mha_site.facts import choosing

    text = '{% call fact("x") %}{% if holds("x") %}more{% else %}less{% endif %}'
    assert choosing(text + "{% endcall %}") == {"x"}
    named = '{% set big = holds("x") %}{% call fact("x") %}{% if big %}more{% endif %}'
    assert choosing(named + "{% endcall %}") == {"x"}
    ```
    """
    names: dict[str, list[str]] = {}
    for variable, name in SET.findall(markdown):
        names.setdefault(name, []).append(variable)
    found = set()
    for m in STATED.finditer(markdown):
        reads = [rf"""holds\(\s*["']{re.escape(m[1])}["']\s*\)"""]
        reads += [
            rf"\{{%-?\s*(?:el)?if\s+(?:not\s+)?{re.escape(v)}\b"
            for v in names.get(m[1], [])
        ]
        if any(re.search(read, m[2]) for read in reads):
            found.add(m[1])
    return found


def unmarked(markdown: str) -> list[tuple[int, str]]:
    """``(line, fact name)`` of each ``holds("…")`` that picks words outside every
    guarded sentence, for a fact the page never states: a sentence the reader cannot
    see checked, with no marker. Write it as the sentence of its own fact,
    ``{% call fact("x") %}{% if holds("x") %}…{% else %}…{% endif %}{% endcall %}``.

    ```python
    from mha_site.facts import unmarked

    bare = 'It {% if holds("x") %}grows{% else %}shrinks{% endif %}.'
    marked = '{% call fact("x") %}' + bare + "{% endcall %}"
    assert unmarked(bare) == [(1, "x")] and unmarked(marked) == []
    ```
    """
    inside = [m.span() for m in STATED.finditer(markdown)]
    said = stated(markdown)
    return [
        (markdown.count("\n", 0, m.start()) + 1, m[2])
        for m in USE.finditer(markdown)
        if m[1] == "holds"
        and m[2] not in said
        and not any(start <= m.start() < end for start, end in inside)
    ]


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
        # sentences that choose their words by their own fact, true or false:
        # {% call fact("x") %}{% if holds("x") %}more{% else %}less{% endif %} …
        self.choosing = choosing(markdown)

    def _fact(self, name: str):
        line = self.lines.get(name, [0])[0]
        where = f"{self.where}:{line}"
        if name not in self.page.facts:
            raise FactError(
                f"{where}: the page module has no fact {name!r}; "
                f"it has {sorted(self.page.facts)}"
            )
        if len(self.lines.get(name, [])) > 1 + (name in self.choosing):
            raise FactError(
                f"{where}: fact {name!r} is used on lines {self.lines[name]}; "
                "use each fact once per page (declare another for the other sentence)"
            )
        self.used.add(name)
        return self.page.facts[name], where

    def state(self, name: str, sentence: str) -> str:
        """``sentence`` if fact ``name`` holds, else a ``FactError`` at its line."""
        fact, where = self._fact(name)
        if not fact.holds and name not in self.choosing:
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


NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:e[-+−]?\d+)?(%)?(?![\w])")
VALUE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", re.I)


def _printed(number: str) -> tuple[float, float, bool]:
    """A printed number's value, the half-width of its last digit, and whether it
    is a percentage (``45.0%`` is 0.45 to within 0.0005)."""
    percent = number.endswith("%")
    body = number.rstrip("%").replace(",", "").replace("−", "-")
    mantissa, _, exponent = body.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    half = 0.5 * 10.0 ** (-decimals) * 10.0 ** int(exponent or 0)
    return float(body), half, percent


def shown(paragraph: str, values: str) -> bool:
    """Whether ``paragraph`` (rendered text) prints one of the numbers of a fact's
    ``values``, at the precision it prints it (``45.0%`` shows 0.4500012; ``0.768``
    shows 0.76812; ``1,024`` shows 1024).

    ```python
    from mha_site.facts import shown

    values = "one head's weights on Kohli, his, century: [0.45, 0.45, 0.1]"
    assert shown('"His" gives 45.0% of its attention to "Kohli"', values)
    assert shown("century gets 0.100", values)
    assert not shown("the right antecedent gets 12.5%", values)
    ```
    """
    read = [float(v) for v in VALUE.findall(values)]
    for match in NUMBER.finditer(paragraph):
        number, half, percent = _printed(match[0])
        scale = 100.0 if percent else 1.0
        if any(abs(v * scale - number) <= half * (1 + 1e-9) for v in read):
            return True
    return False


_TAG = re.compile(r"<[^>]*>")
_BLOCKS = re.compile(r"\n\s*\n")


def unshown(rendered: str, facts: dict) -> list[str]:
    """The stated facts of a rendered page (Markdown with its markers, before HTML)
    whose sentence's paragraph prints none of the fact's values (``shown``), except
    those declared qualitative. The paragraph is read with the block before it (a
    table or sentence it follows) and a table right after it; figures are not read.

    ```python
    from mha.support.page import Fact
    from mha_site.evidence import marker
    from mha_site.facts import unshown

    tie = Fact(True, "[0.45, 0.45, 0.1]", "a tie")
    text = f"Kohli gets 45.0%.\\n\\nA tie{marker('tie')}."
    bare = f"Intro.\\n\\nA tie{marker('tie')}."
    assert unshown(text, {"tie": tie}) == [] and unshown(bare, {"tie": tie}) == ["tie"]
    ```
    """
    blocks = [
        b for b in _BLOCKS.split(rendered) if not b.lstrip().startswith("<figure")
    ]
    found = []
    for name, fact in facts.items():
        mark = evidence.marker(name)  # after the sentence, as the build writes it
        at = next((i for i, b in enumerate(blocks) if mark in b), None)
        if at is None or fact.qualitative:
            continue
        near = blocks[max(0, at - 1) : at + 1]
        if at + 1 < len(blocks) and blocks[at + 1].lstrip().startswith("|"):
            near.append(blocks[at + 1])
        text = _TAG.sub(" ", "\n\n".join(near))
        if not shown(text, fact.values):
            found.append(name)
    return found


# "more … than", "less … than", …: a sentence that compares two things by size.
COMPARES = re.compile(
    r"\b(?:more|less|fewer|larger|smaller|higher|lower|greater|weaker|stronger)\b"
    r"[^.!?]{0,60}?\bthan\b",
    re.I,
)
# Sentences that compare without a computed value of the page, each with its reason:
# the start of the sentence (whitespace folded), and why it needs no fact.
UNGUARDED = {
    "more heads means more parameters": "a belief the page then refutes, quoted",
    "link such sinks to *massive activations*": "a cited paper's finding",
    "Fewer K/V heads, smaller cache, but your team": "an exercise's premise",
    "checks that the result is the same, measures the memory": (
        "what the page sets out to show, shown by the facts below"
    ),
    "FlashAttention loads a block of": "a cited paper's bound, in symbols",
    "With more heads than relations the extra heads": (
        "a condition on h (above the number of relations), not a result"
    ),
}


def unguarded(markdown: str) -> list[tuple[int, str]]:
    """``(line, sentence)`` of each sentence of ``markdown``'s prose that compares
    two things by size ("less weight on Kohli than …") outside any
    ``{% call fact %}``, printing no value, and not explained in ``UNGUARDED``: a
    comparison the build cannot check. Questions, headings and code are not read,
    nor a clause that continues a guarded sentence.

    ```python
    from mha_site.facts import unguarded

    plain = 'Head A puts less weight on "Kohli" than the single head does.'
    fact = '{% call fact("a") %}Head A puts less weight on it than one head{% endcall %}.'
    assert unguarded(plain) == [(1, plain)] and unguarded(fact) == []
    assert unguarded("Is one head less costly than two?") == []
    ```
    """
    blanked = re.sub(r"^(`{3,}|~{3,}).*?^\1", _blank, markdown, flags=re.S | re.M)
    blanked = STATED.sub(lambda m: "FACT" + "\n" * m[0].count("\n"), blanked)
    blanked = re.sub(r"^#.*$", _blank, blanked, flags=re.M)
    found, start = [], 0
    for end in [*(m.end() for m in SENTENCE_END.finditer(blanked)), len(blanked)]:
        sentence = " ".join(blanked[start:end].split())
        at = start + len(blanked[start:end]) - len(blanked[start:end].lstrip())
        start = end
        if (
            COMPARES.search(sentence)
            and "{{" not in sentence
            and "FACT" not in sentence  # a clause of a guarded sentence
            and not sentence.endswith("?")
            and not any(known in sentence for known in UNGUARDED)
        ):
            found.append((blanked.count("\n", 0, at) + 1, sentence))
    return found


def _blank(match: re.Match) -> str:
    """A match replaced by as many line ends: line numbers stay where they were."""
    return "\n" * match[0].count("\n")


_PRINTED = re.compile(r"\{\{(.*?)\}\}", re.S)
_POSITIONAL = re.compile(r"\bweights(?:\[\s*-?\d+\s*\])+")
_KEYED = re.compile(r"""\[\s*["']([^"']+)["']\s*\]""")


def _plain(words: str) -> str:
    return " ".join(words.lower().replace("-", " ").split())


def mislabelled(markdown: str) -> list[tuple[int, str]]:
    """``(line, printed expression)`` of each value printed beside a name it may not
    belong to: a weight picked by position (``weights[0]``) in a sentence that names
    a token in quotes, or a value picked by a name (``weight["Kohli"]``) that its
    sentence does not write (a name written elsewhere in the same sentence passes:
    the check is by sentence). A value that belongs to a named thing is printed from a
    mapping keyed by the name, so the label and the value are checked together.

    ```python
    from mha_site.facts import mislabelled

    good = 'It gives {{ page.weight["Kohli"] | pct }} to "Kohli".'
    by_position = 'It gives {{ run.weights[0] | pct }} to "Kohli".'
    wrong_key = 'It gives {{ page.weight["century"] | pct }} to "Kohli" and "his".'
    assert mislabelled(good) == []
    assert mislabelled(by_position) == [(1, "run.weights[0] | pct")]
    assert mislabelled(wrong_key) == [(1, 'page.weight["century"] | pct')]
    ```
    """
    found, start = [], 0
    for end in [*(m.end() for m in SENTENCE_END.finditer(markdown)), len(markdown)]:
        sentence, at = markdown[start:end], start
        start = end
        words = _PRINTED.sub(" ", re.sub(r"\{%.*?%\}", " ", sentence, flags=re.S))
        named = re.findall(r'"([^"{}]+)"', words)
        for match in _PRINTED.finditer(sentence):
            expr = " ".join(match[1].split())
            keys = _KEYED.findall(expr)
            wrong = (named and _POSITIONAL.search(expr)) or any(
                _plain(k) not in _plain(words) for k in keys
            )
            if wrong:
                line = markdown.count("\n", 0, at + match.start()) + 1
                found.append((line, expr))
    return found
