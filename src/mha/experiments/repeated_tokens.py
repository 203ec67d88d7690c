"""Induction heads in a real model: SmolLM2 on random token sequences repeated once.

The depth page reports the scan; the circuits page reads its heads and its passes
again, the position page its strongest previous-token head.

The probe of Olsson et al. (2022): ``N_SEQUENCES`` sequences of ``HALF`` random
non-control token ids, each followed by itself (no BOS). Per head, the induction
score (attention on the token after the previous occurrence) and the previous-token
score; the loss on each copy; the second copy's loss on every sequence with the
strongest induction heads removed, against random sets of as many (all sequences
in one batched pass per set of heads); the residual stream's norms and the attention
on the first token. The unchanged passes are cached on their own (``passes``). A
head is ``(layer, head)``, both numbered from 0.

```python
from mha.experiments.repeated_tokens import N_ABLATED, scan, strongest

s = scan()  # SmolLM2's 30 layers by 9 heads
top = strongest(s.induction, N_ABLATED)  # the induction heads the depth page removes
assert s.loss_second < s.loss_first  # the copy is predicted ...
assert s.loss_top > s.loss_second  # ... less so without the induction heads
```
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm
from mha.support.cache import cached

HALF = 50  # T: tokens in each copy of a repeated sequence
N_SEQUENCES = 8  # repeated sequences the scores average over
N_ABLATED = 5  # heads removed at once
_N_RANDOM_SETS = 10  # random sets of N_ABLATED heads to compare with
_N_MATCHED = 5  # random sets matched by layer: one other head of each induction head's
_SEED = 18


def repeated_sequences(
    model: smollm2.SmolLM2, rng: np.random.Generator | None = None
) -> np.ndarray:
    """``(N_SEQUENCES, 2 HALF)`` ids: ``HALF`` non-control ids drawn uniformly by
    ``rng`` (``None``: the study's seed), then the same ``HALF`` again.

    ```python
    from mha.experiments.repeated_tokens import HALF, N_SEQUENCES, repeated_sequences
    from mha.pretrained import smollm2

    ids = repeated_sequences(smollm2.load())
    assert ids.shape == (N_SEQUENCES, 2 * HALF)
    assert (ids[:, :HALF] == ids[:, HALF:]).all()  # each sequence, then itself again
    ```
    """
    control = set(model.tokenizer.get_added_tokens_decoder())
    allowed = np.array([i for i in range(model.config.vocab_size) if i not in control])
    rng = np.random.default_rng([_SEED, 3]) if rng is None else rng
    first = rng.choice(allowed, size=(N_SEQUENCES, HALF))
    return np.concatenate([first, first], axis=1)


def induction_scores(weights: np.ndarray, half: int = HALF) -> np.ndarray:
    """Mean attention of each query t in [T, 2T - 1] on key t - T + 1, per head.

    ``weights (..., 2T, 2T)``; the key t - T + 1 holds the token that came after the
    previous occurrence of the query's token. Returns ``weights.shape[:-2]``.

    ```python
    import numpy as np
    from mha.experiments.repeated_tokens import induction_scores

    half = 3
    weights = np.eye(2 * half)  # every query on itself: no induction
    assert induction_scores(weights, half) == 0
    for t in range(half, 2 * half):  # each query of the copy on the token after its twin
        weights[t] = np.eye(2 * half)[t - half + 1]
    assert induction_scores(weights, half) == 1
    ```
    """
    _check_square(weights, 2 * half)
    queries = np.arange(half, 2 * half)
    return weights[..., queries, queries - half + 1].mean(axis=-1)


def _previous_token_scores(weights: np.ndarray) -> np.ndarray:
    """Mean attention of each query t in [1, n - 1] on key t - 1, per head."""
    _check_square(weights, weights.shape[-1])
    queries = np.arange(1, weights.shape[-1])
    return weights[..., queries, queries - 1].mean(axis=-1)


def _check_square(weights: np.ndarray, n: int) -> None:
    if weights.ndim < 2 or weights.shape[-2:] != (n, n) or n < 2:
        raise ValueError(
            f"weights: expected shape (..., {n}, {n}), got {np.shape(weights)}"
        )


def _copy_losses(
    model: smollm2.SmolLM2, final: np.ndarray, sequences: np.ndarray
) -> np.ndarray:
    """Each sequence's mean next-token loss (nats) on copy 0 (queries 0 .. T - 2) and
    copy 1 (T .. 2T - 2), ``(2, B)``, from the residual streams ``final (B, n,
    d_model)`` after the last block: the head runs once, on the rows the loss reads."""
    queries = np.concatenate([np.arange(HALF - 1), np.arange(HALF, 2 * HALF - 1)])
    rows = final[:, queries]  # (B, 2 (T - 1), d_model)
    # one 2-D product (measured: a 3-D one, a product per sequence, takes about
    # twice the CPU time, each reading the whole 49152-token head)
    logits = model.head(rows.reshape(-1, rows.shape[-1])).reshape(*rows.shape[:2], -1)
    losses = np.array(
        [
            smollm2.token_losses(scores, ids[queries + 1])
            for scores, ids in zip(logits, sequences, strict=True)
        ]
    )  # (B, 2 (T - 1))
    return losses.reshape(len(sequences), 2, HALF - 1).mean(axis=-1).T


@dataclass(frozen=True)
class Passes:
    """SmolLM2 unchanged on each of ``ids (B, n)``, one ``trace`` per sequence: what
    the depth and circuits pages both read, computed once (``passes``)."""

    ids: np.ndarray
    stream: np.ndarray  # (layers + 1, B, n, d_model): entering each block, then last
    weights: np.ndarray  # (layers, B, heads, n, n): each head's causal attention
    attention_norm: np.ndarray  # (layers, B): mean |attention write|, tokens t >= 1
    mlp_norm: np.ndarray  # (layers, B): mean |feed-forward write|, tokens t >= 1


def _traced(ids: np.ndarray) -> Passes:
    """One ``SmolLM2.trace`` per row of ``ids (B, n)``, stacked."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.shape[1] < 2:
        raise ValueError(f"ids: expected shape (B, n >= 2), got {ids.shape}")
    model = smollm2.load()
    traces = [model.trace(row) for row in ids]

    def norms(writes: np.ndarray) -> np.ndarray:  # (layers, n, d) -> (layers,)
        return np.linalg.norm(writes[:, 1:], axis=-1).mean(axis=-1)

    return Passes(
        ids=ids,
        stream=np.stack([t.stream for t in traces], axis=1),
        weights=np.stack([t.weights for t in traces], axis=1),
        attention_norm=np.stack([norms(t.attention_writes) for t in traces], axis=1),
        mlp_norm=np.stack([norms(t.mlp_writes) for t in traces], axis=1),
    )


def passes() -> Passes:
    """SmolLM2 unchanged on each of the ``repeated_sequences``, from the cache.

    ```python
    from mha.experiments.repeated_tokens import HALF, N_SEQUENCES, passes

    p = passes()  # SmolLM2's 30 layers, 9 heads a layer
    assert p.ids.shape == (N_SEQUENCES, 2 * HALF)
    assert p.weights.shape == (30, N_SEQUENCES, 9, 2 * HALF, 2 * HALF)
    ```
    """
    return cached(_traced, repeated_sequences(smollm2.load()))


@dataclass(frozen=True)
class Scan:
    """Everything the study measures on SmolLM2's repeated sequences (means over them;
    norms and shares over the tokens t >= 1)."""

    induction: np.ndarray  # (layers, heads)
    previous: np.ndarray  # (layers, heads)
    first_token: np.ndarray  # (layers,) share of attention on token 0
    uniform_first_token: float  # that share if every query spread its weight evenly
    stream_norm: np.ndarray  # (layers + 1,) |x| entering each block
    attention_norm: np.ndarray  # (layers,) |attention write|
    mlp_norm: np.ndarray  # (layers,) |feed-forward write|
    first_stream_norm: np.ndarray  # (layers + 1,) |x| of the first token
    loss_first: float  # on the first copy, every sequence
    loss_second: float  # on the second copy, every sequence
    loss_top: float  # ... with the strongest induction heads removed
    loss_random: np.ndarray  # (N_RANDOM_SETS,) ... with random sets removed
    random_sets: np.ndarray  # (N_RANDOM_SETS, N_ABLATED, 2) (layer, head)
    losses: np.ndarray  # (2, B) first and second copy, each sequence, unchanged
    top_losses: np.ndarray  # (2, B) ... the strongest induction heads removed
    random_losses: np.ndarray  # (N_RANDOM_SETS, 2, B) ... each random set removed
    matched_sets: np.ndarray  # (N_MATCHED, N_ABLATED, 2) random, in the top's layers
    matched_losses: np.ndarray  # (N_MATCHED, 2, B) ... each matched set removed


def _scan() -> Scan:
    model = smollm2.load()
    sequences = repeated_sequences(model)
    p = passes()

    def over_layers(score) -> np.ndarray:
        """``score`` of each layer's weights ``(sequences, heads, n, n)``, taken in
        float64 one layer at a time (not a 170 MB copy of them all), averaged over
        the sequences."""
        return _over_sequences(
            np.stack([score(layer.astype(np.float64)) for layer in p.weights])
        )

    norms = np.linalg.norm(p.stream, axis=-1)  # (layers + 1, sequences, n)
    losses = _copy_losses(model, p.stream[-1], sequences)
    scores = over_layers(induction_scores)
    top = strongest(scores, N_ABLATED)
    rng = np.random.default_rng([_SEED, 4])
    others = [h for h in np.ndindex(scores.shape) if h not in set(top)]
    random_sets = np.array(
        [
            [others[i] for i in rng.choice(len(others), N_ABLATED, replace=False)]
            for _ in range(_N_RANDOM_SETS)
        ]
    )
    matched_sets = _matched_sets(
        top, scores.shape[1], np.random.default_rng([_SEED, 5])
    )
    top_losses = _ablated_losses(model, sequences, top, p.stream)
    random_losses = np.array(
        [_ablated_losses(model, sequences, heads, p.stream) for heads in random_sets]
    )
    return Scan(
        induction=scores,
        previous=over_layers(_previous_token_scores),
        first_token=over_layers(lambda w: w[..., 1:, 0].mean(axis=(1, 2))),
        uniform_first_token=float(np.mean(1 / np.arange(2, sequences.shape[1] + 1))),
        stream_norm=_over_sequences(norms[..., 1:].mean(axis=-1)),
        attention_norm=_over_sequences(p.attention_norm),
        mlp_norm=_over_sequences(p.mlp_norm),
        first_stream_norm=_over_sequences(norms[..., 0]),
        loss_first=float(losses[0].mean()),
        loss_second=float(losses[1].mean()),
        loss_top=float(top_losses[1].mean()),
        loss_random=random_losses[:, 1].mean(axis=-1),
        random_sets=random_sets,
        losses=losses,
        top_losses=top_losses,
        random_losses=random_losses,
        matched_sets=matched_sets,
        matched_losses=np.array(
            [_ablated_losses(model, sequences, h, p.stream) for h in matched_sets]
        ),
    )


def _matched_sets(
    top: list[tuple[int, int]], n_heads: int, rng: np.random.Generator
) -> np.ndarray:
    """``N_MATCHED`` random sets ``(N_MATCHED, len(top), 2)``: for each head of ``top``,
    another head of its layer, not in ``top``, each set without repeats."""
    sets = []
    for _ in range(_N_MATCHED):
        chosen: list[tuple[int, int]] = []
        for layer, _ in top:
            free = [
                h
                for h in range(n_heads)
                if (layer, h) not in top and (layer, h) not in chosen
            ]
            chosen.append((layer, int(rng.choice(free))))
        sets.append(chosen)
    return np.array(sets)


def _over_sequences(x: np.ndarray) -> np.ndarray:
    """``(layers, sequences, ...)`` -> the mean over the sequences, in float64, summed
    in their order."""
    return np.ascontiguousarray(np.moveaxis(x, 1, 0), dtype=np.float64).mean(axis=0)


def _ablated_loss(
    model: smollm2.SmolLM2,
    sequences: np.ndarray,
    heads,
    entering: np.ndarray | None = None,
) -> float:
    """Mean next-token loss (nats) on the second copy of every sequence, with
    ``heads`` (``(layer, head)`` pairs) removed (``ablated_losses``, averaged).
    """
    return float(_ablated_losses(model, sequences, heads, entering)[1].mean())


def _ablated_losses(
    model: smollm2.SmolLM2,
    sequences: np.ndarray,
    heads,
    entering: np.ndarray | None = None,
) -> np.ndarray:
    """Each sequence's mean next-token loss (nats) on the first and the second copy,
    ``(2, B)``, with ``heads`` (``(layer, head)`` pairs) removed: one batched pass
    over all sequences.

    Each removed head's output is zeroed before W_O (``head_mask``, as in
    ``SmolLM2.logits``). ``entering (layers + 1, B, n, d_model)``, the unchanged
    model's residual streams, lets the pass start at the first layer that changes.
    """
    sequences = np.asarray(sequences)
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    mask = np.ones((n_layers, n_heads), dtype=np.float32)
    for layer, head in heads:
        mask[layer, head] = 0.0
    start = min((layer for layer, _ in heads), default=n_layers)
    if entering is None:
        x = np.ascontiguousarray(model.embedding[:, sequences].transpose(1, 2, 0))
        start = 0
    else:
        x = entering[start]
    causal = causal_mask(sequences.shape[1])
    for layer in range(start, n_layers):
        block = model.blocks[layer]
        normed = rms_norm(x, block.attention_norm, block.eps)
        x = x + block.attention(normed, mask=causal, head_mask=mask[layer])[0]
        # token by token: one matrix product over every sequence's rows
        x = x + block.feed_forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)
    return _copy_losses(model, x, sequences)


def strongest(scores: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The ``k`` heads with the highest ``scores (layers, heads)``, strongest first.

    ```python
    import numpy as np
    from mha.experiments.repeated_tokens import strongest

    scores = np.array([[0.1, 0.9], [0.5, 0.2]])  # 2 layers, 2 heads
    assert strongest(scores, 2) == [(0, 1), (1, 0)]
    ```
    """
    order = np.argsort(-scores, axis=None, kind="stable")[:k]
    return [tuple(int(i) for i in np.unravel_index(j, scores.shape)) for j in order]


def scan() -> Scan:
    """SmolLM2 on the repeated sequences, from the cache (N_SEQUENCES passes, then
    1 + N_RANDOM_SETS batched passes over all of them with heads removed).

    ```python
    from mha.experiments.repeated_tokens import scan

    s = scan()
    assert s.induction.shape == s.previous.shape == (30, 9)  # (layers, heads)
    assert 0 < s.first_token.min() and s.first_token.max() <= 1
    ```
    """
    return cached(_scan)
