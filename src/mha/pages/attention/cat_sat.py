"""Three tokens, "the cat sat": Q, K and V as three projections of the same embeddings.

Each embedding marks a part of speech (d_model = 3); three hand-set projections to
d_k = 2 give each token a role in each: what it looks for (W_Q), what it advertises
(W_K) and what it hands over when attended to (W_V).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import scaled_dot_product_attention

TOKENS = ("the", "cat", "sat")
X = np.array(
    [
        [1.0, 0.0, 0.0],  # the: determiner
        [0.0, 1.0, 0.0],  # cat: noun
        [0.0, 0.0, 1.0],  # sat: verb
    ]
)
W_Q = np.array(
    [
        [0.0, 0.0],  # a determiner looks for nothing in particular
        [0.0, 2.0],  # a noun looks for a determiner (channel 2)
        [2.0, 0.0],  # a verb looks for a noun (channel 1)
    ]
)
W_K = np.array(
    [
        [0.0, 2.0],  # a determiner advertises channel 2
        [2.0, 0.0],  # a noun advertises channel 1
        [0.0, 0.0],  # a verb advertises nothing
    ]
)
W_V = np.array(
    [
        [0.0, 0.0],  # the hands over nothing
        [1.0, 0.0],  # cat hands over "animal"
        [0.0, 1.0],  # sat hands over "action"
    ]
)


@dataclass(frozen=True)
class _Attended:
    """Every intermediate of softmax(Q Kᵀ / √d_k) V on the three tokens."""

    q: np.ndarray  # (3, d_k) X W_Q
    k: np.ndarray  # (3, d_k) X W_K
    v: np.ndarray  # (3, d_k) X W_V
    dots: np.ndarray  # (3, 3) Q Kᵀ, row = query, column = key
    scale: float  # √d_k
    scores: np.ndarray  # (3, 3) Q Kᵀ / √d_k
    weights: np.ndarray  # (3, 3) softmax of dots / scale, rows sum to 1
    output: np.ndarray  # (3, d_k) weights @ V


def _solve(
    w_q: np.ndarray = W_Q,
    w_k: np.ndarray = W_K,
    w_v: np.ndarray = W_V,
    mask: np.ndarray | None = None,
    order: tuple[int, ...] = (0, 1, 2),
) -> _Attended:
    """Project the three embeddings, read in ``order`` (a permutation of the tokens),
    and attend, keeping every step.
    """
    if sorted(order) != list(range(len(TOKENS))):
        raise ValueError(f"order: expected a permutation of 0, 1, 2, got {order!r}")
    x = X[list(order)]
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    scale = float(np.sqrt(q.shape[-1]))
    return _Attended(q, k, v, q @ k.T, scale, q @ k.T / scale, weights, output)
