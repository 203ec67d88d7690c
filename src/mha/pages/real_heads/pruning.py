"""Remove all-MiniLM-L6-v2's heads (the core's ``head_mask``, no retraining) and
measure the corpus's embeddings: ``cosine`` to the unpruned ones (1 = unchanged) and
``retrieval``, the share of retrieval queries whose nearest neighbour is their partner.

Three studies: each head alone; each layer's heads together; heads removed one after
another, least damaging (1 - cosine) first, measured every ``STEP`` heads and at the
shares Michel et al. and Voita et al. report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.data import michel2019, voita2019
from mha.experiments.corpus import retrieval_queries, sentences
from mha.support.cache import cached
from mha.support.validate import lookup

_STEP = 8  # cumulative pruning is measured every STEP heads removed
_BATCH_SIZE = 12  # sentences per forward pass, grouped by length


def _retrieval_accuracy(
    embeddings: np.ndarray, queries: Sequence[tuple[int, int]]
) -> float:
    """Share of ``(query, answer)`` pairs whose answer is the query's nearest other
    row of ``embeddings (B, d)`` (unit vectors).
    """
    similarity = embeddings @ embeddings.T
    np.fill_diagonal(similarity, -np.inf)
    hits = [similarity[q].argmax() == answer for q, answer in queries]
    return float(np.mean(hits))


class _Evaluator:
    """The corpus encoded once, grouped by length, each layer's input kept: a pruned
    pass reruns only the layers from the first pruned one up.
    """

    def __init__(self, model, texts: Sequence[str], queries: Sequence[tuple[int, int]]):
        self.model = model
        self.queries = tuple(queries)
        lengths = [len(tokens) for tokens in model.batch(list(texts)).tokens]
        order = np.argsort(lengths, kind="stable")
        self.groups = [
            order[i : i + _BATCH_SIZE] for i in range(0, len(order), _BATCH_SIZE)
        ]
        self.batches = [model.batch([texts[i] for i in group]) for group in self.groups]
        self.passes = [model.forward(batch) for batch in self.batches]
        self.reference = self._pool([p.hidden[-1] for p in self.passes])

    def embed(self, head_mask: np.ndarray) -> np.ndarray:
        """Embeddings ``(B, d_model)`` of the corpus with ``head_mask (layers, heads)``."""
        pruned_layers = np.flatnonzero((np.asarray(head_mask) != 1).any(axis=1))
        if not pruned_layers.size:
            return self.reference
        start = int(pruned_layers[0])
        last = [
            self.model.forward(batch, head_mask, start, run.hidden[start]).hidden[-1]
            for batch, run in zip(self.batches, self.passes, strict=True)
        ]
        return self._pool(last)

    def without_each_head(self, layer: int) -> list[tuple[float, float]]:
        """``quality`` with each head of ``layer`` removed alone, head by head: the
        layer's Q, K and V projected once for all its heads
        (``EncoderLayer.each_head_mask``), the same products as ``quality``'s."""
        n_layers, n_heads = self.model.n_layers, self.model.n_heads
        masks = np.ones((n_heads, n_layers, n_heads), dtype=np.float32)
        masks[np.arange(n_heads), layer, np.arange(n_heads)] = 0
        outputs = [  # (groups, heads): the pruned layer's outputs
            self.model.layers[layer].each_head_mask(
                run.hidden[layer], batch.valid, masks[:, layer]
            )
            for batch, run in zip(self.batches, self.passes, strict=True)
        ]
        found = []
        for head, mask in enumerate(masks):
            last = [
                self._resume(batch, mask, layer + 1, out[head])
                for batch, out in zip(self.batches, outputs, strict=True)
            ]
            found.append(self._score(self._pool(last)))
        return found

    def _resume(
        self, batch, head_mask: np.ndarray, start: int, x: np.ndarray
    ) -> np.ndarray:
        """The last layer's output from ``x`` entering layer ``start``."""
        if start == self.model.n_layers:
            return x
        return self.model.forward(batch, head_mask, start, x).hidden[-1]

    def quality(self, head_mask: np.ndarray) -> tuple[float, float]:
        """``(cosine to the unpruned embeddings, retrieval accuracy)`` under ``head_mask``."""
        return self._score(self.embed(head_mask))

    def _score(self, embeddings: np.ndarray) -> tuple[float, float]:
        """``(cosine to the unpruned embeddings, retrieval accuracy)`` of ``embeddings``."""
        products = np.sum(embeddings * self.reference, axis=-1, dtype=np.float64)
        cosine = float(np.mean(products))  # the rows are unit vectors
        return cosine, _retrieval_accuracy(embeddings, self.queries)

    def _pool(self, last_hidden: list[np.ndarray]) -> np.ndarray:
        """Each group's mean-pooled embeddings, back in the corpus's order."""
        pooled = [
            b.mean_pool(h) for b, h in zip(self.batches, last_hidden, strict=True)
        ]
        return np.concatenate(pooled)[np.argsort(np.concatenate(self.groups))]


@dataclass(frozen=True)
class _Pruning:
    """The three pruning studies' results."""

    n_sentences: int
    n_queries: int
    baseline_retrieval: float  # the whole model's retrieval accuracy
    single_cosine: np.ndarray  # (layers, heads): one head removed
    single_retrieval: np.ndarray  # (layers, heads)
    layer_cosine: np.ndarray  # (layers,): a whole layer's heads removed
    order: tuple[tuple[int, int], ...]  # (layer, head), least damaging first
    counts: np.ndarray  # (points,) heads removed at each cumulative point
    cumulative_cosine: np.ndarray  # (points,)
    cumulative_retrieval: np.ndarray  # (points,)

    @property
    def damage(self) -> np.ndarray:
        """``(layers, heads)``: 1 - cosine when the head alone is removed."""
        return 1 - self.single_cosine

    @property
    def n_heads(self) -> int:
        """Heads in the whole model."""
        return self.single_cosine.size

    def at(self, count: int) -> tuple[float, float]:
        """``(cosine, retrieval)`` with the ``count`` least damaging heads removed."""
        i = lookup("count", count, {c: i for i, c in enumerate(self.counts.tolist())})
        return float(self.cumulative_cosine[i]), float(self.cumulative_retrieval[i])

    def largest_retrieval_move(self) -> int:
        """The most queries that any single-head removal turns (right or wrong)."""
        moves = np.abs(self.single_retrieval - self.baseline_retrieval)
        return round(float(moves.max()) * self.n_queries)


def _literature_counts(n_heads: int) -> tuple[int, ...]:
    """Head counts matching Michel et al.'s BERT share and Voita et al.'s share."""
    shares = (michel2019.BERT_PRUNABLE, voita2019.pruned_share())
    return tuple(round(share * n_heads) for share in shares)


def _study(texts: Sequence[str], queries: Sequence[tuple[int, int]]) -> _Pruning:
    """The three studies on ``texts`` (about 60 passes over them)."""
    from mha.pretrained import minilm

    model = minilm.load()
    evaluator = _Evaluator(model, texts, queries)
    shape = (model.n_layers, model.n_heads)

    def without(heads: Sequence[tuple[int, int]]) -> tuple[float, float]:
        mask = np.ones(shape, dtype=np.float32)
        for layer, head in heads:
            mask[layer, head] = 0
        return evaluator.quality(mask)

    all_heads = [(layer, head) for layer in range(shape[0]) for head in range(shape[1])]
    single = np.array([evaluator.without_each_head(layer) for layer in range(shape[0])])
    layers = np.array(
        [without([(layer, h) for h in range(shape[1])]) for layer in range(shape[0])]
    )
    damage = 1 - single[..., 0]
    order = tuple(sorted(all_heads, key=lambda lh: (damage[lh], lh)))
    counts = sorted({*range(0, len(order) + 1, _STEP), *_literature_counts(len(order))})
    cumulative = np.array([without(order[:count]) for count in counts])
    return _Pruning(
        n_sentences=len(texts),
        n_queries=len(queries),
        baseline_retrieval=_retrieval_accuracy(evaluator.reference, queries),
        single_cosine=single[..., 0],
        single_retrieval=single[..., 1],
        layer_cosine=layers[:, 0],
        order=order,
        counts=np.array(counts),
        cumulative_cosine=cumulative[:, 0],
        cumulative_retrieval=cumulative[:, 1],
    )


def _pruning() -> _Pruning:
    """The studies on the project's corpus (cached)."""
    return cached(_study, sentences(), retrieval_queries())
