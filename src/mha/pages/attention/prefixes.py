"""Why the causal mask is a training trick: one pass scores every prefix.

SmolLM2 reads n + 1 tokens once, the first n under the causal mask: row i of its logits
predicts token i + 1. The same n losses again from one pass per prefix ``ids[: i + 1]``
(its last row), cached: together about n/2 whole passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.pretrained import smollm2
from mha.support.cache import cached

_TEXT = "The cat sat on the mat because it was warm."
_TOLERANCE = 1e-5  # relative, in float32: BLAS rounds differently for each shape


@dataclass(frozen=True)
class _PrefixLosses:
    """Next-token losses (nats) of one causal pass and of one pass per prefix."""

    tokens: tuple[str, ...]  # the n + 1 tokens of the text
    one_pass: np.ndarray  # (n,) loss of token i + 1 read off row i of one pass
    separate: np.ndarray  # (n,) the same loss from a pass over tokens 0..i alone
    tolerance: float

    @property
    def n(self) -> int:
        return len(self.one_pass)

    @property
    def largest_difference(self) -> float:  # max |one pass - separate|, in nats
        return float(np.abs(self.one_pass - self.separate).max())

    @property
    def largest_relative(self) -> float:  # max |one pass - separate| / separate
        return float((np.abs(self.one_pass - self.separate) / self.separate).max())

    @property
    def separate_tokens(self) -> int:  # rows the separate passes compute: 1 + ... + n
        return self.n * (self.n + 1) // 2

    @property
    def rows(self) -> list[tuple[str, str, float, float]]:
        """(context's last token, target, one pass, separate) for each prefix."""
        return [
            (self.tokens[i], self.tokens[i + 1], self.one_pass[i], self.separate[i])
            for i in range(self.n)
        ]


def _compute(text: str, digest: str) -> _PrefixLosses:
    """The n losses of ``text`` both ways (``digest`` names the weights, for the cache)."""
    model = smollm2.load()
    ids = model.encode(text)
    inputs, targets = ids[:-1], np.array(ids[1:])
    one_pass = model.logits(inputs)  # (n, vocab): row i has seen tokens 0..i
    separate = np.stack(
        [
            model.head(model.hidden(inputs[: i + 1], model.new_caches(i + 1))[0, -1])
            for i in range(len(inputs))
        ]
    )  # a new pass per prefix, its last row only
    # the page prints how far apart two float32 passes' losses are (1e-5 nats): the
    # losses in float64 throughout, so that only the passes differ
    return _PrefixLosses(
        tokens=tuple(model.decode([i]) for i in ids),
        one_pass=smollm2.token_losses(one_pass.astype(np.float64), targets),
        separate=smollm2.token_losses(separate.astype(np.float64), targets),
        tolerance=_TOLERANCE,
    )


def _results() -> _PrefixLosses:
    """``TEXT`` both ways, computed once per code and model."""
    return cached(_compute, _TEXT, smollm2.gguf_digest())
