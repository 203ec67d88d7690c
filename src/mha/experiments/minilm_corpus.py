"""all-MiniLM-L6-v2 run once over some sentences, each sentence's part of the pass kept.

The real-heads atlas, its [CLS] shares and the position page's previous-token head
all read the model on the project's corpus: one batched pass (``runs``, cached)
serves them all, instead of one pass each (padding is masked out as keys, so each
sentence is encoded as it would be alone, to float32 rounding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.pretrained import minilm
from mha.support.cache import cached


@dataclass(frozen=True)
class Run:
    """One sentence's tokens and what the model computed on them, padding cut off."""

    tokens: tuple[str, ...]  # with [CLS] and [SEP]
    hidden: np.ndarray  # (layers + 1, n, d_model): each layer's input, then the output
    weights: np.ndarray  # (layers, heads, n, n): each layer's attention weights


def _runs(texts: tuple[str, ...]) -> tuple[Run, ...]:
    model = minilm.load()
    batch = model.batch(list(texts))
    forward = model.forward(batch)
    runs = []
    for s, tokens in enumerate(batch.tokens):
        n = len(tokens)
        runs.append(
            Run(
                tuple(tokens),
                forward.hidden[:, s, :n].copy(),
                forward.weights[:, s, :, :n, :n].copy(),
            )
        )
    return tuple(runs)


def runs(texts: Sequence[str]) -> tuple[Run, ...]:
    """The model on ``texts`` in one batched pass, one ``Run`` per text (cached).

    ```python
    from mha.experiments.minilm_corpus import runs

    (run,) = runs(["the cat sat ."])
    assert run.tokens[0] == "[CLS]" and run.weights.shape == (6, 12, 6, 6)
    assert run.hidden.shape == (7, 6, 384)
    ```
    """
    if isinstance(texts, str) or not texts:
        raise ValueError(f"texts: expected a non-empty list of strings, got {texts!r}")
    return cached(_runs, tuple(texts))
