"""What each of all-MiniLM-L6-v2's 72 heads looks at, measured over a small corpus.

Page: ``docs/real-heads.md``.

For every head, each statistic is averaged over every word token of every sentence
of ``mha.experiments.corpus`` as a query ([CLS] and [SEP] are keys, not queries):

- ``previous``, ``next``: the weight on the token just before / just after;
- ``cls``, ``sep``: the weight on [CLS] / on [SEP];
- ``punctuation``: the total weight on punctuation tokens;
- ``same_word``: the total weight on the other occurrences of the query's own token
  (averaged over the queries whose token occurs more than once in the sentence);
- ``entropy``: the entropy of the query's distribution, in nats, and ``spread``, that
  entropy as a fraction of the uniform distribution's, log n (0 = all weight on one
  token, 1 = spread evenly over the sentence).

``classify`` names each head by the rule of ``KINDS``: a head whose mean weight on
one target reaches ``MAJORITY`` is of that target's kind (the largest, if several);
otherwise it is ``broad`` if its spread reaches ``BROAD``, else ``mixed``.

```python
from mha.pages.real_heads import atlas

result = atlas()
assert result.kinds.shape == (6, 12)
assert result.count("previous token") >= 1
```
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.experiments.corpus import SEEDS, sentences
from mha.support.cache import cached

MAJORITY = 0.5  # a target kind needs at least half of the head's attention on average
BROAD = 0.75  # a broad head's entropy is at least this fraction of the uniform one
CRICKET, CAT = range(2)  # positions in Atlas.examples (SEEDS order)
FIRST_LAYER = 0  # layers are numbered from 0

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


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation marks, such as "," or "...".

    ```python
    from mha.pages.real_heads import is_punctuation

    assert is_punctuation(",") and is_punctuation("...") and not is_punctuation("47th")
    ```
    """
    return bool(token) and all(c in string.punctuation for c in token)


def head_name(layer: int, head: int) -> str:
    """A head's name as Clark et al. (2019) write it, layer-head, both counted from 1.

    ```python
    from mha.pages.real_heads import head_name

    assert head_name(1, 8) == "2-9"  # layer index 1, head index 8
    ```
    """
    return f"{layer + 1}-{head + 1}"


def head_statistics(
    tokens: Sequence[Sequence[str]], weights: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """Every statistic of ``STATISTICS`` per head, ``(layers, heads)`` each.

    ``tokens[s]`` are sentence s's n tokens, [CLS] first and [SEP] last;
    ``weights[s]`` its attention ``(layers, heads, n, n)``. Averages are taken over
    all word-token queries of all sentences together.

    ```python
    import numpy as np
    from mha.pages.real_heads import head_statistics

    tokens = ["[CLS]", "a", "b", "a", "[SEP]"]
    previous = np.eye(5, k=-1)[None, None]  # (1 layer, 1 head, 5, 5)
    previous[..., 0, 0] = 1  # [CLS] attends to itself
    stats = head_statistics([tokens], [previous])
    assert stats["previous"][0, 0] == 1 and stats["next"][0, 0] == 0
    assert stats["cls"][0, 0] == 1 / 3  # only "a" (the first word) looks at [CLS]
    assert stats["entropy"][0, 0] == 0
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
        punctuation = [j for j in q if is_punctuation(toks[j])]
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


def classify(statistics: dict[str, np.ndarray]) -> np.ndarray:
    """The kind of every head, ``(layers, heads)`` strings, by the rule of ``KINDS``.

    ```python
    import numpy as np
    from mha.pages.real_heads import STATISTICS, classify

    stats = {name: np.zeros((1, 3)) for name in STATISTICS}
    stats["previous"][0, 0] = 0.9
    stats["spread"][0, 1] = 0.8
    assert classify(stats).tolist() == [["previous token", "broad", "mixed"]]
    ```
    """
    targets = np.stack([statistics[name] for name in TARGETS])  # (targets, L, H)
    names = [kind for kind, stat in KINDS.items() if stat in TARGETS]
    strongest = np.array(names, dtype=object)[targets.argmax(axis=0)]
    broad = np.where(statistics["spread"] >= BROAD, "broad", "mixed")
    kinds = np.where(targets.max(axis=0) >= MAJORITY, strongest, broad)
    return kinds.astype(object)


@dataclass(frozen=True)
class Example:
    """One seed sentence's tokens and every head's attention on it."""

    text: str
    tokens: tuple[str, ...]
    weights: np.ndarray  # (layers, heads, n, n)


@dataclass(frozen=True)
class Atlas:
    """The statistics and kinds of every head, and its attention on the seeds."""

    statistics: dict[str, np.ndarray]  # name -> (layers, heads)
    kinds: np.ndarray  # (layers, heads) of str
    examples: tuple[Example, ...]  # the seed sentences
    n_sentences: int
    n_queries: int  # word tokens over the corpus

    def count(self, kind: str) -> int:
        """How many heads are of ``kind`` (one of ``KINDS``)."""
        _check_kind(kind)
        return int((self.kinds == kind).sum())

    def heads(self, kind: str) -> list[tuple[int, int]]:
        """``(layer, head)`` of every head of ``kind``, layer by layer."""
        _check_kind(kind)
        return [(int(i), int(j)) for i, j in np.argwhere(self.kinds == kind)]

    def count_in_layer(self, kind: str, layer: int) -> int:
        """How many of ``layer``'s heads are of ``kind``."""
        return sum(1 for lyr, _ in self.heads(kind) if lyr == layer)

    def layers(self, kind: str) -> list[int]:
        """The layers that have at least one head of ``kind``, in order."""
        return sorted({layer for layer, _ in self.heads(kind)})

    def present(self) -> list[str]:
        """The kinds that at least one head has, in the order of ``KINDS``."""
        return [kind for kind in KINDS if self.count(kind)]

    def typical(self, kind: str) -> tuple[int, int]:
        """The head of ``kind`` with the highest value of the statistic defining it.

        ``mixed`` heads have no defining statistic: the typical one shown is the
        most focused, the one with the lowest spread (attention that follows
        content rather than position or a fixed token).
        """
        heads = self.heads(kind)
        if not heads:
            raise ValueError(f"kind: no head is of kind {kind!r}")
        score = self.statistics[KINDS[kind] or "spread"]
        sign = 1 if KINDS[kind] else -1
        return max(heads, key=lambda head: sign * score[head])

    def strongest(self, statistic: str) -> tuple[int, int]:
        """``(layer, head)`` with the highest mean of ``statistic``."""
        values = self.statistics[_check_statistic(statistic)]
        return tuple(int(i) for i in np.unravel_index(values.argmax(), values.shape))

    def layer_means(self, statistic: str) -> np.ndarray:
        """``(layers,)``: ``statistic`` averaged over each layer's heads."""
        return self.statistics[_check_statistic(statistic)].mean(axis=1)

    def value(self, kind: str) -> float:
        """The defining statistic (for ``mixed``: the spread) of ``kind``'s typical head."""
        return float(self.statistics[KINDS[kind] or "spread"][self.typical(kind)])


def compute(texts: Sequence[str], seeds: Sequence[str]) -> Atlas:
    """Run all-MiniLM-L6-v2 on ``texts`` and build the atlas (a second or two).

    ``seeds`` (a subset of ``texts``) are kept whole for the heatmaps.

    ```python
    from mha.pages.real_heads import compute

    small = compute(["the cat sat .", "a dog ran to the gate ."], ["the cat sat ."])
    assert small.n_queries == 4 + 7 and small.examples[0].tokens[1] == "the"
    ```
    """
    from mha.pretrained import minilm

    model = minilm.load()
    batch = model.batch(list(texts))
    weights = model.forward(batch).weights  # (layers, B, h, n, n)
    per_sentence = [
        weights[:, s, :, : len(toks), : len(toks)]
        for s, toks in enumerate(batch.tokens)
    ]
    stats = head_statistics(batch.tokens, per_sentence)
    examples = tuple(
        Example(text, batch.tokens[i], per_sentence[i])
        for text in seeds
        for i in [list(texts).index(text)]
    )
    n_queries = sum(len(toks) - 2 for toks in batch.tokens)
    return Atlas(stats, classify(stats), examples, len(texts), n_queries)


def atlas() -> Atlas:
    """The atlas of the project's corpus, computed once per code version (cached).

    ```python
    from mha.pages.real_heads import atlas

    assert atlas().n_sentences >= 30
    ```
    """
    return cached(compute, sentences(), SEEDS)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {list(KINDS)}, got {kind!r}")


def _check_statistic(statistic: str) -> str:
    if statistic not in STATISTICS:
        raise ValueError(
            f"statistic: expected one of {list(STATISTICS)}, got {statistic!r}"
        )
    return statistic
