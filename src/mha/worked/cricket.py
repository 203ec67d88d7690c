"""The cricket sentence: which of "Kohli", "his", "century" does "his" attend to?

The query of "his" and the three tokens' keys and values, already projected, d_model
= 4: columns 0-1 carry coreference, 2-3 topic/position. One full-width head sees all
four; head A columns 0-1, head B 2-3, each with its own softmax. Built by hand, not
trained. ``solve_extended`` adds "over" and a query for "century": whose, and when.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import softmax
from mha.data import published
from mha.heads import split_heads
from mha.support.page import Fact

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
V = np.eye(3, 4)  # each token's value: a coordinate of its own (Kohli, his, century)
V_TRIPLED = V * [[1.0], [1.0], [3.0]]  # v(century) tripled: the recall question
# The seed's cost example: n tokens at the base Transformer's width and head count.
COST_N = 100
COST_D_MODEL = published.model("Transformer base").d_model
COST_HEADS = published.model("Transformer base").n_heads

# The "what W_O does" step: each output coordinate reads its own coordinate and half
# the other head's (rows 0-1 are head A's, rows 2-3 head B's).
W_O = np.eye(4) + 0.5 * (np.eye(4, k=2) + np.eye(4, k=-2))


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


def _run(name: str, q, k, v, dims, scale: float | None = None) -> HeadRun:
    """One head's run for the query ``q``, its scores divided by ``scale`` (√d_k)."""
    d_k = q.shape[-1]
    scale = float(np.sqrt(d_k)) if scale is None else float(scale)
    scores = k @ q / scale
    weights = softmax(scores)
    return HeadRun(name, tuple(dims), d_k, k @ q, scale, scores, weights, weights @ v)


def _heads(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale=None) -> list[HeadRun]:
    """Heads A (columns 0-1) and B (columns 2-3), each with its own softmax."""
    q_heads = split_heads(q[None], 2)[:, 0]  # (2 heads, 2)
    k_heads, v_heads = split_heads(k, 2), split_heads(v, 2)  # (2 heads, keys, 2)
    dims = ((0, 1), (2, 3))
    return [
        _run(f"head {n} (columns {a}-{b})", *qkv, (a, b), scale)
        for n, (a, b), *qkv in zip("AB", dims, q_heads, k_heads, v_heads, strict=True)
    ]


def solve(
    q: np.ndarray = Q_HIS, k: np.ndarray = K, v: np.ndarray = V, w_o: np.ndarray = W_O
) -> Cricket:
    """Run the example: the full-width head, heads A and B, concat and W_O.

    ```python
    import numpy as np
    from mha.worked.cricket import V_TRIPLED, solve

    ex = solve()
    assert ex.head_a.weights.argmax() == 0  # head A picks "Kohli"
    tripled = solve(v=V_TRIPLED)  # v(century) x 3: the weights do not move
    assert np.allclose(tripled.head_b.weights, ex.head_b.weights)
    ```
    """
    full = _run("one head (d_k = 4)", q, k, v, range(4))
    head_a, head_b = _heads(q, k, v)
    concat = np.concatenate([head_a.output, head_b.output])
    writes = (head_a.output @ w_o[:2], head_b.output @ w_o[2:])
    return Cricket(full, head_a, head_b, concat, w_o, concat @ w_o, writes)


def split_only(
    q: np.ndarray = Q_HIS, k: np.ndarray = K, v: np.ndarray = V
) -> list[HeadRun]:
    """Heads A and B with the full head's scale √4 = 2 instead of their own √2:
    splitting alone, against splitting and rescaling (``solve``).

    ```python
    from mha.worked.cricket import solve, split_only

    head_a, head_b = split_only()
    assert head_a.scale == solve().full.scale == 2.0
    assert head_a.weights.argmax() == 0  # the split alone breaks the tie
    assert head_a.weights[0] < solve().head_a.weights[0]  # √2 sharpens it further
    ```
    """
    return _heads(q, k, v, float(np.sqrt(q.shape[-1])))


# The extended example: a fourth token, "over", and a query for "century". The first
# three keys and values and the query of "his" are the ones above.
EXTENDED_TOKENS = ("Kohli", "his", "century", "over")
EXTENDED_QUERIES = ("his", "century")
Q_CENTURY = np.array([1.0, 2.0, 2.0, -1.0])  # whose century? (cols 0-1) when? (2-3)
K_EXTENDED = np.vstack([K, [0.0, 0.0, 2.0, 0.0]])  # "over": a cricket term, no person
V_EXTENDED = np.vstack([V, [0.0, 0.0, 0.0, 1.0]])


def solve_extended(
    q_century: np.ndarray = Q_CENTURY,
    k: np.ndarray = K_EXTENDED,
    v: np.ndarray = V_EXTENDED,
) -> dict[str, Cricket]:
    """The extended example: for each query ("his", "century"), the run of ``solve``
    over the keys and values of ``EXTENDED_TOKENS``.

    ```python
    from mha.worked.cricket import EXTENDED_TOKENS, solve_extended

    century = solve_extended()["century"]
    assert EXTENDED_TOKENS[century.head_a.weights.argmax()] == "Kohli"  # whose
    assert EXTENDED_TOKENS[century.head_b.weights.argmax()] == "over"  # when
    ```
    """
    queries = {"his": Q_HIS, "century": q_century}
    return {token: solve(q=queries[token], k=k, v=v) for token in EXTENDED_QUERIES}


def tripling_facts(example: Cricket, tripled: Cricket) -> dict[str, Fact]:
    """What tripling v(century) does to the example (``tripled``, solved with
    ``V_TRIPLED``), as facts a page states: no weight of any run moves, head A's output
    stays exactly, head B's is tripled. The cricket page and the recall answers state
    them both.

    ```python
    from mha.worked.cricket import V_TRIPLED, solve, tripling_facts

    example = solve()
    assert all(f.holds for f in tripling_facts(example, solve(v=V_TRIPLED)).values())
    assert not tripling_facts(example, example)["b_tripled"].holds  # nothing tripled
    ```
    """
    runs = ("full", "head_a", "head_b")
    return {
        "no_weight_moves": Fact(
            all(
                np.allclose(getattr(tripled, r).weights, getattr(example, r).weights)
                for r in runs
            ),
            "weights before and after tripling v(century)",
            says="tripling v(century) leaves every weight of the single head and of both heads unchanged",
            qualitative="an identity over every weight of three runs (np.allclose); the weights after are printed beside it",
        ),
        "a_unmoved": Fact(
            np.array_equal(tripled.head_a.output, example.head_a.output),
            f"head A output {tripled.head_a.output.tolist()}",
            says="tripling v(century) leaves head A's output exactly equal",
        ),
        "b_tripled": Fact(
            np.allclose(tripled.head_b.output, 3 * example.head_b.output),
            f"head B output {tripled.head_b.output.tolist()}",
            says="tripling v(century) multiplies head B's output by exactly three",
        ),
    }
