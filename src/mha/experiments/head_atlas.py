"""What each head of all-MiniLM-L6-v2 looks at: the head atlas of the project's corpus.

Each head's statistics (``STATISTICS``) are averaged over the corpus's word tokens as
queries; each head is named by ``head_grid.classify`` with ``KINDS``. The real-heads
page reports the atlas; the position page studies its typical previous-token head.
Layers and heads are numbered from 0.

```python
from mha.experiments.head_atlas import atlas

a = atlas()  # all-MiniLM-L6-v2: 6 layers by 12 heads
layer, head = a.typical("previous token")
assert a.kinds[layer, head] == "previous token"
assert sum(a.count(kind) for kind in a.present()) == a.kinds.size == 72
```
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.experiments import head_grid, minilm_corpus
from mha.experiments.corpus import SEEDS, sentences
from mha.experiments.head_grid import Sentence
from mha.support.cache import cached

# kind -> the statistic that defines it, in the order the page lists them
KINDS: dict[str, str] = {
    "previous token": "previous",
    "next token": "next",
    "[CLS]": "cls",
    "[SEP]": "sep",
    "punctuation": "punctuation",
    "same word": "same_word",
    "broad": "spread",
    "mixed": "",  # no statistic: none of the rules above applies
}
TARGETS = ("previous", "next", "cls", "sep", "punctuation", "same_word")
STATISTICS = (*TARGETS, "entropy", "spread")


def head_statistics(
    tokens: Sequence[Sequence[str]], weights: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """Each of ``STATISTICS`` per head, ``(layers, heads)``, averaged over the word
    queries: ``tokens[s]`` ([CLS] ... [SEP]) and ``weights[s] (layers, heads, n, n)``;
    ``spread`` is the entropy as a fraction of log n.

    ```python
    import numpy as np
    from mha.experiments.head_atlas import head_statistics

    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    shift = np.eye(5, k=-1)[None, None]  # one layer, one head: each on the token before
    stats = head_statistics([tokens], [shift])
    assert stats["previous"][0, 0] == 1 and stats["next"][0, 0] == 0
    ```
    """
    if len(tokens) != len(weights) or not tokens:
        raise ValueError(
            f"tokens, weights: expected one weight array per sentence, got "
            f"{len(tokens)} token lists and {len(weights)} arrays"
        )
    sums = {name: np.zeros(weights[0].shape[:-2]) for name in STATISTICS}
    n_queries = n_repeated = 0
    for s, (toks, w) in enumerate(zip(tokens, weights, strict=True)):
        n = len(toks)
        if w.shape != (*sums["cls"].shape, n, n) or n < 3:
            raise ValueError(
                f"weights[{s}]: expected shape {(*sums['cls'].shape, n, n)} for "
                f"{n} tokens ([CLS], at least one word, [SEP]), got {w.shape}"
            )
        w = np.asarray(w, dtype=np.float64)
        q = np.arange(1, n - 1)  # word tokens as queries
        rows = w[..., q, :]  # (layers, heads, queries, n)
        punctuation = [j for j in q if set(toks[j]) <= set(string.punctuation)]
        entropy = -(rows * np.log(np.where(rows > 0, rows, 1))).sum(-1)
        sums["previous"] += w[..., q, q - 1].sum(-1)
        sums["next"] += w[..., q, q + 1].sum(-1)
        sums["cls"] += rows[..., 0].sum(-1)
        sums["sep"] += rows[..., n - 1].sum(-1)
        sums["punctuation"] += rows[..., punctuation].sum((-1, -2))
        sums["entropy"] += entropy.sum(-1)
        sums["spread"] += entropy.sum(-1) / np.log(n)
        for i in q:
            same = [j for j in q if j != i and toks[j] == toks[i]]
            if same:
                sums["same_word"] += w[..., i, same].sum(-1)
                n_repeated += 1
        n_queries += len(q)
    means = {name: total / n_queries for name, total in sums.items()}
    means["same_word"] = sums["same_word"] / max(n_repeated, 1)
    return means


@dataclass(frozen=True)
class Atlas:
    """The statistics and kinds of every head, and its attention on the seeds."""

    statistics: dict[str, np.ndarray]  # name -> (layers, heads)
    kinds: np.ndarray  # (layers, heads) of str
    examples: tuple[Sentence, ...]  # the seed sentences
    n_sentences: int
    n_queries: int  # word tokens over the corpus

    def count(self, kind: str) -> int:
        """How many heads are of ``kind``."""
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {list(KINDS)}, got {kind!r}")
        return int((self.kinds == kind).sum())

    def count_in_layer(self, kind: str, layer: int) -> int:
        """How many of ``layer``'s heads are of ``kind``."""
        return int((self.kinds[layer] == kind).sum())

    def parked(self) -> tuple[np.ndarray, np.ndarray]:
        """Per layer, the mean weight on [CLS] and on [SEP] and punctuation together."""
        mean = {
            s: self.statistics[s].mean(axis=1) for s in ("cls", "sep", "punctuation")
        }
        return mean["cls"], mean["sep"] + mean["punctuation"]

    def layers(self, kind: str) -> list[int]:
        """The layers that have at least one head of ``kind``, in order."""
        return [int(i) for i in np.flatnonzero((self.kinds == kind).any(axis=1))]

    def present(self) -> list[str]:
        """The kinds that at least one head has, in the order of ``KINDS``."""
        return [kind for kind in KINDS if self.count(kind)]

    def typical(self, kind: str) -> tuple[int, int]:
        """The head of ``kind`` highest in its statistic (``mixed``: lowest spread)."""
        heads = [(int(i), int(j)) for i, j in np.argwhere(self.kinds == kind)]
        if not heads:
            raise ValueError(f"kind: no head is of kind {kind!r}")
        score = self.statistics[KINDS[kind] or "spread"]
        sign = 1 if KINDS[kind] else -1
        return max(heads, key=lambda head: sign * score[head])

    def strongest(self, statistic: str) -> tuple[int, int]:
        """``(layer, head)`` with the highest mean of ``statistic``."""
        values = self.statistics[statistic]
        return tuple(int(i) for i in np.unravel_index(values.argmax(), values.shape))

    def value(self, kind: str) -> float:
        """The defining statistic (``mixed``: spread) of ``kind``'s typical head."""
        return float(self.statistics[KINDS[kind] or "spread"][self.typical(kind)])


def _compute(texts: Sequence[str], seeds: Sequence[str]) -> Atlas:
    """The atlas of ``texts``, keeping ``seeds`` (among them) whole for the heatmaps."""
    runs = minilm_corpus.runs(texts)  # the pass the [CLS] shares read too
    found = tuple(
        Sentence(text, run.tokens, run.weights)
        for text, run in zip(texts, runs, strict=True)
    )
    stats = head_statistics([s.tokens for s in found], [s.weights for s in found])
    examples = tuple(found[list(texts).index(text)] for text in seeds)
    n_queries = sum(len(s.tokens) - 2 for s in found)
    kinds = head_grid.classify(stats, KINDS)
    return Atlas(stats, kinds, examples, len(texts), n_queries)


def atlas() -> Atlas:
    """The atlas of the project's corpus (cached).

    ```python
    from mha.experiments.corpus import SEEDS, sentences
    from mha.experiments.head_atlas import KINDS, atlas

    a = atlas()
    assert a.n_sentences == len(sentences()) and len(a.examples) == len(SEEDS)
    assert set(a.present()) <= set(KINDS)
    ```
    """
    return cached(_compute, sentences(), SEEDS)
