"""The cricket sentence: which of "Kohli", "his", "century" does "his" attend to?

Input data (seed 004): the query of "his" and the keys and values of the three
tokens, already projected, with d_model = 4. Dimensions 1-2 carry coreference
features, dimensions 3-4 topic/position features. One full-width head sees all
four; head A sees dimensions 1-2 and head B dimensions 3-4, each with its own
softmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import scaled_dot_product_attention
from mha.heads import split_heads

TOKENS = ("Kohli", "his", "century")
QUERY = "his"
Q_HIS = np.array([1.0, 2.0, 0.0, 1.0])
K = np.array(
    [
        [2.0, 1.0, 0.0, 0.0],  # Kohli
        [0.0, 1.0, 0.0, 2.0],  # his
        [0.0, 0.0, 2.0, 1.0],  # century
    ]
)
V = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],  # Kohli
        [0.0, 1.0, 0.0, 0.0],  # his
        [0.0, 0.0, 1.0, 0.0],  # century
    ]
)
# The seed's cost example: n tokens at the base Transformer's width and head count.
COST_N, COST_D_MODEL, COST_HEADS = 100, 512, 8

# An output projection for the "what W_O does" step: each output coordinate reads
# from both heads (rows 0-1 are head A's, rows 2-3 head B's).
W_O = np.array(
    [
        [1.0, 0.0, 0.5, 0.0],
        [0.0, 1.0, 0.0, 0.5],
        [0.5, 0.0, 1.0, 0.0],
        [0.0, 0.5, 0.0, 1.0],
    ]
)


def tripled_century() -> np.ndarray:
    """The values with v(century) tripled (the recall question); queries and keys stay.

    ```python
    from mha.worked.cricket import V, tripled_century

    assert (tripled_century()[2] == 3 * V[2]).all()
    ```
    """
    values = V.copy()
    values[2] *= 3
    return values


@dataclass(frozen=True)
class HeadRun:
    """One head's computation for the query "his" (arrays indexed like ``TOKENS``)."""

    name: str
    dims: tuple[int, ...]  # 0-based feature columns this head sees
    d_k: int  # len(dims)
    dots: np.ndarray  # q·k for each key
    scale: float  # √d_k
    scores: np.ndarray  # q·k / √d_k
    weights: np.ndarray  # softmax of the scores
    output: np.ndarray  # Σ weight · v over the head's dims


@dataclass(frozen=True)
class Cricket:
    """The whole worked example: one wide head, two narrow heads, and W_O."""

    full: HeadRun
    head_a: HeadRun
    head_b: HeadRun
    concat: np.ndarray  # [out_A, out_B], width 4
    w_o: np.ndarray
    mixed: np.ndarray  # concat @ W_O
    writes: tuple[np.ndarray, np.ndarray]  # out_A @ W_O[:2], out_B @ W_O[2:]


def _run(name: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, dims) -> HeadRun:
    output, weights = scaled_dot_product_attention(q[None], k, v)
    d_k = q.shape[-1]
    return HeadRun(
        name=name,
        dims=tuple(dims),
        d_k=d_k,
        dots=k @ q,
        scale=float(np.sqrt(d_k)),
        scores=k @ q / np.sqrt(d_k),
        weights=weights[0],
        output=output[0],
    )


def solve(
    q: np.ndarray = Q_HIS, k: np.ndarray = K, v: np.ndarray = V, w_o: np.ndarray = W_O
) -> Cricket:
    """Run the example: the full-width head, heads A and B, concat and W_O.

    ```python
    import numpy as np
    from mha.worked.cricket import solve, tripled_century

    ex = solve()
    assert ex.head_a.weights.argmax() == 0  # head A picks "Kohli"
    tripled = solve(v=tripled_century())  # V(century) x 3: weights do not move
    assert np.allclose(tripled.head_b.weights, ex.head_b.weights)
    ```
    """
    full = _run("one head (d_k = 4)", q, k, v, range(4))
    q_heads = split_heads(q[None], 2)  # (2 heads, 1 query, 2)
    k_heads, v_heads = split_heads(k, 2), split_heads(v, 2)  # (2 heads, 3 keys, 2)
    head_a = _run("head A (dims 1-2)", q_heads[0, 0], k_heads[0], v_heads[0], (0, 1))
    head_b = _run("head B (dims 3-4)", q_heads[1, 0], k_heads[1], v_heads[1], (2, 3))
    concat = np.concatenate([head_a.output, head_b.output])
    writes = (head_a.output @ w_o[:2], head_b.output @ w_o[2:])
    return Cricket(full, head_a, head_b, concat, w_o, concat @ w_o, writes)
