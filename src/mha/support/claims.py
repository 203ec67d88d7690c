"""Claims: the sentences of a page that compare computed values, checked like numbers.

A page's module (``mha.pages.<page>``) defines ``claims() -> dict[str, Claim]``; the
page prints one with ``{{ claim("name") }}``. A claim is a sentence and whether the
values it speaks of bear it out. Either the module picks the sentence from the values
(the sentence changes with them), or it asserts a fixed sentence (``holds`` computed):
when an input changes and the sentence no longer holds, the build fails and names the
page, the line and the claim, instead of publishing a stale sentence.

```python
from mha.support.claims import Claim, ClaimError, check

tie = Claim("the two weights tie", holds=abs(0.45 - 0.45) < 1e-9, because="0.45 vs 0.45")
assert check(tie, where="docs/page.md:3") == "the two weights tie"
try:
    check(Claim("a tie", holds=False, because="0.5 vs 0.4"), where="docs/page.md:3")
except ClaimError as error:
    assert "docs/page.md:3" in str(error) and "0.5 vs 0.4" in str(error)
```
"""

from __future__ import annotations

from dataclasses import dataclass


class ClaimError(ValueError):
    """A sentence of a page no longer holds for the values it speaks of.

    ```python
    from mha.support.claims import ClaimError

    assert issubclass(ClaimError, ValueError)  # a bad value, for the build
    ```
    """


@dataclass(frozen=True)
class Claim:
    """A sentence about computed values; ``holds`` says whether the values bear it out.

    ``because`` states the values it rests on, for the message when it fails.

    ```python
    from mha.support.claims import Claim

    weights = [0.768, 0.187, 0.045]
    strongest = Claim(
        "head A puts most of its weight on Kohli",
        holds=weights[0] > 0.5,
        because=f"weights {weights}",
    )
    assert strongest.holds
    ```
    """

    text: str
    holds: bool
    because: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise TypeError(f"text: expected a non-empty sentence, got {self.text!r}")
        object.__setattr__(self, "holds", bool(self.holds))


def check(claim: Claim, where: str) -> str:
    """The claim's sentence, or a ``ClaimError`` naming ``where`` (page:line).

    ```python
    from mha.support.claims import Claim, check

    assert check(Claim("it grows", True, "1 < 2"), "docs/a.md:1") == "it grows"
    ```
    """
    if not isinstance(claim, Claim):
        raise TypeError(f"claim: expected a Claim, got {type(claim).__name__}")
    if not claim.holds:
        raise ClaimError(
            f"{where}: the claim {claim.text!r} no longer holds ({claim.because}); "
            "change the sentence or let the page's module choose it from the values"
        )
    return claim.text
