"""What a page module hands its Markdown: values, facts and figures, in one object.

Every ``mha.pages.<page>`` has a function ``page() -> Page``. The Markdown
``docs/<page>.md`` reads that object, and only it, as ``page``: it prints its values
(``{{ page.example.weights[0] | dec }}``), writes each sentence that compares values
inside the fact it states (``{% call fact("tie") %}a tie{% endcall %}``), and draws
its figures by name (``{{ figure("bars") }}``). The words are in the Markdown; whether
they still hold is a ``Fact`` here, computed from the same values.

```python
import numpy as np
from mha.support.page import Fact, Figure, Page

weights = np.array([0.45, 0.45, 0.10])
page = Page(
    weights=weights,
    facts={
        "tie": Fact(
            weights[0] == weights[1],
            f"weights {weights.tolist()}",
            "the first two weights are equal",
        )
    },
    figures={},
)
assert page.weights is weights and page.facts["tie"].holds
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The design's budget for a widget's data embedded in its page (JSON, in bytes): the
# one definition every widget and its tests use.
WIDGET_BYTES = 150_000


@dataclass(frozen=True)
class Fact:
    """A named boolean that a sentence of the page states, and the values behind it.

    ``values`` prints the values that make it true (or false), for the message when
    it no longer holds and for the reader's popover beside its sentence; ``says`` is
    its one-line description in plain words, what it checks (for example "the single
    head's weights on Kohli and on his are equal, within 1e-12"): required, one line.
    ``qualitative`` is empty for a fact whose sentence prints a value the fact reads
    (``mha_site.facts`` checks that); a fact whose sentence prints none, because it
    states a tie or an ordering and the numbers sit in a table or sentence nearby,
    declares so with its reason (``qualitative="an ordering: the table above"``).

    ```python
    from mha.support.page import Fact

    weights = [0.768, 0.187, 0.045]
    strongest = Fact(weights[0] > 0.5, f"weights {weights}", "the first is over half")
    assert strongest.holds and "0.768" in strongest.values and not strongest.qualitative
    ```
    """

    holds: bool
    values: str
    says: str
    qualitative: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "holds", bool(self.holds))
        if not isinstance(self.values, str) or not self.values:
            raise TypeError(f"values: expected a non-empty string, got {self.values!r}")
        for name in ("says", "qualitative"):
            text = getattr(self, name)
            if not isinstance(text, str) or "\n" in text:
                raise TypeError(f"{name}: expected one line of text, got {text!r}")
        if not self.says.strip():
            raise ValueError(
                "says: expected a one-line description of what the fact checks, "
                f"in plain words, got {self.says!r}"
            )


@dataclass(frozen=True)
class Figure:
    """A figure of the page: ``mha.figures.<draw>(*data)``, its alt text and caption.

    ``draw`` names a function of the page's figure module (``"cricket.bars"`` is
    ``mha.figures.cricket.bars``): it draws what the page hands it, ``data``, and
    computes nothing of its own. Pages do not import figures; the build draws them
    (``mha.figures.render``). The caption says what to look at.

    ```python
    from mha.support.page import Figure

    bars = Figure("cricket.three_distributions", (1, 2), "bars of weights", "Look.")
    assert bars.draw == "cricket.three_distributions"
    ```
    """

    draw: str
    data: tuple
    alt: str
    caption: str

    def __post_init__(self) -> None:
        module, _, function = str(self.draw).rpartition(".")
        if not (isinstance(self.draw, str) and module and function):
            raise ValueError(f"draw: expected 'module.function', got {self.draw!r}")
        if not isinstance(self.data, tuple):
            raise TypeError(f"data: expected a tuple, got {type(self.data).__name__}")
        for name in ("alt", "caption"):
            text = getattr(self, name)
            if not isinstance(text, str) or not text.strip():
                raise ValueError(
                    f"{name}: expected a sentence for figure {self.draw!r}, got {text!r}"
                )


class Page:
    """The values a page prints, its facts by name and its figures by name.

    Values are plain attributes (``page.example``); ``facts`` and ``figures`` are
    dictionaries.

    ```python
    from mha.support.page import Fact, Page

    page = Page(n=100, facts={"big": Fact(True, "n = 100", "n is big")}, figures={})
    assert page.n == 100 and "n" in repr(page)
    ```
    """

    def __init__(
        self,
        *,
        facts: dict[str, Fact],
        figures: dict[str, Figure],
        **values: Any,
    ) -> None:
        for name, fact in facts.items():
            if not isinstance(fact, Fact):
                raise TypeError(f"facts[{name!r}]: expected a Fact, got {fact!r}")
        for name, figure in figures.items():
            if not isinstance(figure, Figure):
                raise TypeError(f"figures[{name!r}]: expected a Figure, got {figure!r}")
        self.facts = dict(facts)
        self.figures = dict(figures)
        self.__dict__.update(values)

    def __repr__(self) -> str:
        values = sorted(set(vars(self)) - {"facts", "figures"})
        return (
            f"Page(values={values}, facts={sorted(self.facts)}, "
            f"figures={sorted(self.figures)})"
        )
