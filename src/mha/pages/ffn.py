"""What attention cannot do by itself, however many heads it has.

Page: ``docs/ffn.md``.

1. Each head's output is a weighted average of its value vectors with non-negative
   weights that sum to one, so it lies in the convex hull of those values.
2. A token that attends only to itself (a sequence of one token, or the first token
   under a causal mask) gets ``x W_V W_O``: an affine function of its input. No
   choice of weights, heads or stacked attention layers makes that ReLU; a
   feed-forward network (FFN) with one hidden ReLU layer computes it exactly.

```python
from mha.pages.ffn import hull_demo, relu_demo

assert hull_demo().inside.all()
assert relu_demo().ffn_error == 0.0 < relu_demo().attention_error
```
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.support.claims import Claim
from mha.support.validate import generator


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull of 2-D ``points (m, 2)``, counter-clockwise.

    Andrew's monotone chain: sort the points, then build the lower and upper chains,
    dropping every point that would make a clockwise turn.

    ```python
    import numpy as np
    from mha.pages.ffn import convex_hull

    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]])
    assert convex_hull(square).tolist() == [[0, 0], [1, 0], [1, 1], [0, 1]]
    ```
    """
    pts = sorted(map(tuple, np.asarray(points, dtype=float)))

    def chain(sequence: list) -> list:
        out: list = []
        for p in sequence:
            while len(out) >= 2 and _cross(out[-2], out[-1], p) <= 0:
                out.pop()
            out.append(p)
        return out[:-1]

    return np.array(chain(pts) + chain(pts[::-1]))


def _cross(o, a, b) -> float:
    """z of (a - o) × (b - o): positive for a counter-clockwise turn."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def in_convex_polygon(points: np.ndarray, hull: np.ndarray, tol: float = 1e-12):
    """Whether each of ``points (m, 2)`` lies in the counter-clockwise ``hull (k, 2)``.

    A point is inside when it is on the left of (or on) every edge.

    ```python
    import numpy as np
    from mha.pages.ffn import in_convex_polygon

    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]])
    assert in_convex_polygon(np.array([[0.5, 0.5], [2, 0]]), square).tolist() == [
        True,
        False,
    ]
    ```
    """
    points = np.asarray(points, dtype=float)
    inside = np.ones(len(points), dtype=bool)
    for a, b in zip(hull, np.roll(hull, -1, axis=0), strict=True):
        edge, rel = b - a, points - a
        inside &= edge[0] * rel[:, 1] - edge[1] * rel[:, 0] >= -tol
    return inside


@dataclass(frozen=True)
class HullDemo:
    """One head of width d_k = 2: its values, its outputs and the values' hull."""

    values: np.ndarray  # (n, 2) the head's value vectors, one per token
    outputs: np.ndarray  # (n, 2) the head's output for each query
    weights: np.ndarray  # (n, n) its attention weights
    hull: np.ndarray  # (k, 2) vertices of the convex hull of the values
    inside: np.ndarray  # (n,) bool: each output lies in that hull

    @property
    def inside_count(self) -> int:
        """How many outputs lie in the hull."""
        return int(self.inside.sum())

    @property
    def count(self) -> int:
        """How many outputs there are (one per query)."""
        return len(self.inside)


def hull_demo(
    n: int = 8,
    d_model: int = 8,
    n_heads: int = 4,
    rng: np.random.Generator | None = None,
) -> HullDemo:
    """Run a random layer with heads of width 2 and place head 0's outputs in its plane.

    ```python
    from mha.pages.ffn import hull_demo

    demo = hull_demo(n=5)
    assert demo.values.shape == demo.outputs.shape == (5, 2)
    ```
    """
    rng = generator(rng)
    layer = MultiHeadAttention(d_model, n_heads, rng=rng)
    if layer.d_k != 2:
        raise ValueError(
            f"n_heads: expected d_model / n_heads = 2 (a plane to draw), "
            f"got d_model={d_model}, n_heads={n_heads}"
        )
    x = rng.normal(size=(n, d_model))  # (seq, d_model)
    _, weights = layer(x)  # (h, n, n)
    values = split_heads(x @ layer.w_v, n_heads)[0]  # head 0: (n, 2)
    outputs = weights[0] @ values  # (n, 2)
    hull = convex_hull(values)
    return HullDemo(values, outputs, weights[0], hull, in_convex_polygon(outputs, hull))


@dataclass(frozen=True)
class BoundsCheck:
    """Every output coordinate of every head against the range of its values."""

    n_heads: int
    d_model: int
    checks: int  # output coordinates compared (batch · h · n · d_k)
    within: int  # how many lie between the smallest and largest value coordinate
    min_weight: float  # the smallest attention weight seen (never negative)
    max_row_sum_error: float  # max |Σ_j w_ij - 1|

    @property
    def min_weight_text(self) -> str:
        """The smallest weight in scientific notation, as the page prints it."""
        return f"{self.min_weight:.1e}"


def bounds_check(
    batch: int = 4,
    n: int = 32,
    d_model: int = 64,
    n_heads: int = 8,
    rng: np.random.Generator | None = None,
) -> BoundsCheck:
    """Check the convex-hull bound coordinate by coordinate on a random layer.

    In every coordinate, a convex combination lies between the smallest and the
    largest value: attention can average, never amplify.

    ```python
    from mha.pages.ffn import bounds_check

    check = bounds_check(batch=1, n=4, d_model=8, n_heads=2)
    assert check.within == check.checks == 1 * 2 * 4 * 4
    ```
    """
    rng = generator(rng)
    layer = MultiHeadAttention(d_model, n_heads, rng=rng)
    x = rng.normal(size=(batch, n, d_model))
    _, weights = layer(x)  # (batch, h, n, n)
    values = split_heads(x @ layer.w_v, n_heads)  # (batch, h, n, d_k)
    outputs = weights @ values  # (batch, h, n, d_k)
    low = values.min(axis=-2, keepdims=True)  # (batch, h, 1, d_k)
    high = values.max(axis=-2, keepdims=True)
    eps = 1e-12
    ok = (outputs >= low - eps) & (outputs <= high + eps)
    return BoundsCheck(
        n_heads=n_heads,
        d_model=d_model,
        checks=int(ok.size),
        within=int(ok.sum()),
        min_weight=float(weights.min()),
        max_row_sum_error=float(np.abs(weights.sum(axis=-1) - 1).max()),
    )


def feed_forward(
    x: np.ndarray, w_1: np.ndarray, b_1: np.ndarray, w_2: np.ndarray, b_2: np.ndarray
) -> np.ndarray:
    """The Transformer's position-wise FFN with ReLU: ``relu(x W₁ + b₁) W₂ + b₂``.

    ```python
    import numpy as np
    from mha.pages.ffn import feed_forward

    eye, zero = np.eye(2), np.zeros(2)
    assert feed_forward(np.array([[-1.0, 2.0]]), eye, zero, eye, zero).tolist() == [
        [0.0, 2.0]
    ]
    ```
    """
    return np.maximum(x @ w_1 + b_1, 0) @ w_2 + b_2


@dataclass(frozen=True)
class ReluDemo:
    """Can attention compute ReLU of a token that attends only to itself?"""

    samples: int  # random tokens tried
    d_model: int
    linear_gap: float  # max |layer(x)[first token] - (x W_V W_O)[first token]|
    attention_error: float  # unexplained share of ReLU's variance, best affine map
    ffn_error: float  # the same share for a one-hidden-layer ReLU FFN


def relu_demo(
    samples: int = 2000, d_model: int = 4, rng: np.random.Generator | None = None
) -> ReluDemo:
    """Compare the best attention layer with an FFN on the target ``relu(x)``.

    For a token that attends only to itself, the layer's output is ``x W_V W_O``
    (plus ``b_V W_O + b_O`` with biases): an affine map, and every affine map is
    reachable (take ``W_V = M``, ``W_O = I``). So the best any attention layer can do,
    with any number of heads, is the least-squares affine fit, computed here. The
    unexplained share is ``Σ (fit - target)² / Σ (target - mean)²``.

    ```python
    from mha.pages.ffn import relu_demo

    demo = relu_demo(samples=500)
    assert demo.linear_gap < 1e-12 and 0.2 < demo.attention_error < 0.35
    ```
    """
    rng = generator(rng)
    x = rng.normal(size=(samples, d_model))  # (samples, d_model) single tokens
    target = np.maximum(x, 0)

    # The layer really is affine on a token alone: the first token under a causal
    # mask, in a sequence of three random tokens whose later tokens cannot reach it.
    layer = MultiHeadAttention(d_model, 2, rng=rng)
    seq = np.concatenate([x[:, None], rng.normal(size=(samples, 2, d_model))], axis=1)
    out, _ = layer(seq, mask=causal_mask(3))  # (samples, 3, d_model)
    linear_gap = float(np.abs(out[:, 0] - x @ layer.w_v @ layer.w_o).max())

    design = np.concatenate([x, np.ones((samples, 1))], axis=1)  # affine: [x, 1]
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    spread = ((target - target.mean(axis=0)) ** 2).sum()
    attention_error = float(((design @ coef - target) ** 2).sum() / spread)

    eye, zero = np.eye(d_model), np.zeros(d_model)
    ffn = feed_forward(x, eye, zero, eye, zero)
    ffn_error = float(((ffn - target) ** 2).sum() / spread)
    return ReluDemo(samples, d_model, linear_gap, attention_error, ffn_error)


def hull_texts(demo: HullDemo | None = None) -> tuple[str, str]:
    """The alt text and the caption of the convex-hull figure, from its values.

    ```python
    from mha.pages.ffn import hull_texts

    alt, caption = hull_texts()
    assert "all of which fall inside the polygon" in alt and caption
    ```
    """
    demo = hull_demo() if demo is None else demo
    where = (
        "all of which fall inside the polygon"
        if demo.inside.all()
        else f"{demo.inside_count} of which fall inside the polygon"
    )
    alt = (
        "Scatter of the head's value vectors as dots, the shaded polygon of their "
        f"convex hull, and the head's {demo.count} outputs as crosses, {where}."
    )
    caption = (
        "One head's values (dots) and outputs (crosses) in the plane of its two "
        "coordinates: every cross lies in the shaded hull of the dots, because each "
        "output is a weighted average of the values."
    )
    return alt, caption


def claims() -> dict[str, Claim]:
    """The page's sentences that compare computed values, checked against them.

    ```python
    from mha.pages.ffn import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    hull, bounds, relu = hull_demo(), bounds_check(), relu_demo()
    return {
        "never_negative": Claim(
            "never negative",
            bounds.min_weight >= 0,
            f"smallest weight {bounds.min_weight}",
        ),
        "all_within": Claim(
            "So attention can average, never amplify: no output coordinate is larger "
            "than the largest value in that coordinate",
            bounds.within == bounds.checks and hull.inside.all(),
            f"{bounds.within} of {bounds.checks} coordinates, "
            f"{hull.inside_count} of {hull.count} outputs",
        ),
        "ffn_exact": Claim(
            "the FFN has the nonlinearity attention lacks",
            relu.ffn_error == 0 < relu.attention_error,
            f"unexplained: FFN {relu.ffn_error}, attention {relu.attention_error}",
        ),
    }
