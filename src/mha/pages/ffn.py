"""What attention cannot do by itself, however many heads it has: ``docs/ffn.md``.

A head's output is a convex combination of its values, so it lies in their hull; a
token that attends only to itself gets ``x W_V W_O``, affine in ``x``: no attention
layer computes ReLU of it, a one-hidden-layer ReLU feed-forward network (FFN) does.
A token that also sees a zero-valued key (a sink) gets ``x sigmoid(beta x)`` from a
head built for it, close to ReLU for a large ``beta`` (``_sink_relu_demo``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.support.formatting import significant, words
from mha.support.page import Fact, Figure, Page
from mha.support.validate import generator

_SINK_SCALES = (1.0, 10.0, 100.0)  # beta: the sink heads' score per unit of x
_Rng = np.random.Generator | None


@functools.cache
def page() -> Page:
    """What the page prints: the drawn head, the bounds check, the ReLU comparison."""
    hull, bounds, relu = _hull_demo(), _bounds_check(), relu_demo()
    sink = _sink_relu_demo()
    return Page(
        hull=hull,
        inside=(int(hull.inside.sum()), len(hull.inside)),  # outputs in the hull, all
        bounds=bounds,
        min_weight=f"{bounds.min_weight:.1e}",
        relu=relu,
        linear_gap=f"{relu.linear_gap:.1e}",
        sink=sink,
        sink_errors=words([f"{significant(100 * e)}%" for e in sink.errors]),
        sink_scales=words([f"{beta:.0f}" for beta in sink.scales]),
        facts=_facts(hull, bounds, relu, sink),
        figures=_figures(hull),
    )


def _facts(
    hull: _HullDemo, bounds: _BoundsCheck, relu: _ReluDemo, sink: _SinkDemo
) -> dict[str, Fact]:
    """The facts the page's sentences state about the four demonstrations."""
    errors = np.array(sink.errors)
    return {
        "linear": Fact(
            relu.linear_gap < 1e-12,
            f"largest gap {relu.linear_gap}",
            says="the first token's output differs from x W_V W_O by under 1e-12",
            qualitative="an exact equality, said in words (the largest difference is zero) when it holds exactly",
        ),
        "linear_exact": Fact(
            relu.linear_gap == 0,
            f"largest gap {relu.linear_gap}",
            says="the first token's output equals x W_V W_O exactly",
        ),
        "sink_closer": Fact(
            (np.diff(errors) < 0).all()
            and (errors < relu.attention_error).all()
            and errors[-1] < 1e-4 * relu.attention_error,
            f"sink heads {sink.errors} at beta {sink.scales}, "
            f"best affine map {relu.attention_error}",
            says="the sink heads' unexplained share of ReLU falls as beta grows, stays under the best affine map's, and ends under 1e-4 of it",
        ),
        "never_negative": Fact(
            bounds.min_weight >= 0,
            f"smallest weight {bounds.min_weight}",
            says="the smallest attention weight seen is zero or more",
        ),
        "all_within": Fact(
            bounds.within == bounds.checks and hull.inside.all(),
            f"{bounds.within} of {bounds.checks} coordinates, "
            f"{hull.inside.sum()} of {len(hull.inside)} outputs",
            says="every output coordinate lies within its values' range, and every output inside their hull",
        ),
        "ffn_exact": Fact(
            relu.ffn_error == 0 < relu.attention_error,
            f"unexplained: FFN {relu.ffn_error}, attention {relu.attention_error}",
            says="the FFN leaves none of ReLU's variance unexplained, while the best affine map leaves some",
        ),
    }


def _figures(hull: _HullDemo) -> dict[str, Figure]:
    """The drawn head's values, hull and outputs."""
    where = "all of" if hull.inside.all() else f"{hull.inside.sum()} of"
    return {
        "convex_hull": Figure(
            "ffn.convex_hull",
            (hull,),
            alt="Scatter of the head's value vectors as dots, the shaded polygon of "
            f"their convex hull, and the head's {len(hull.inside)} outputs as crosses, "
            f"{where} which fall inside the polygon.",
            caption="One head's values (dots) and outputs (crosses) in the plane of "
            "its two coordinates: every cross lies in the shaded hull of the dots, "
            "because each output is a weighted average of the values.",
        )
    }


def _convex_hull(points: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull of ``points (m, 2)``, counter-clockwise (Andrew's
    monotone chain: sorted points, lower and upper chains, no clockwise turn).
    """
    pts = sorted(map(tuple, np.asarray(points, dtype=float)))

    def turn(o, a, b) -> float:  # z of (a - o) x (b - o): > 0 counter-clockwise
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def chain(sequence: list) -> list:
        out: list = []
        for p in sequence:
            while len(out) >= 2 and turn(out[-2], out[-1], p) <= 0:
                out.pop()
            out.append(p)
        return out[:-1]

    return np.array(chain(pts) + chain(pts[::-1]))


def _in_convex_polygon(points: np.ndarray, hull: np.ndarray, tol: float = 1e-12):
    """Whether each of ``points (m, 2)`` lies in the counter-clockwise ``hull (k, 2)``:
    on the left of (or on) every edge.
    """
    points = np.asarray(points, dtype=float)
    inside = np.ones(len(points), dtype=bool)
    for a, b in zip(hull, np.roll(hull, -1, axis=0), strict=True):
        edge, rel = b - a, points - a
        inside &= edge[0] * rel[:, 1] - edge[1] * rel[:, 0] >= -tol
    return inside


@dataclass(frozen=True)
class _HullDemo:
    """One head of width d_k = 2: its values, its outputs and the values' hull."""

    values: np.ndarray  # (n, 2) the head's value vectors, one per token
    outputs: np.ndarray  # (n, 2) the head's output for each query
    weights: np.ndarray  # (n, n) its attention weights
    hull: np.ndarray  # (k, 2) vertices of the convex hull of the values
    inside: np.ndarray  # (n,) bool: each output lies in that hull


def _hull_demo(
    n: int = 8, d_model: int = 8, n_heads: int = 4, rng: _Rng = None
) -> _HullDemo:
    """Run a random layer with heads of width 2 and place head 0's outputs in its plane."""
    if d_model != 2 * n_heads:
        raise ValueError(
            f"n_heads: expected d_model / n_heads = 2 (a plane to draw), "
            f"got d_model={d_model}, n_heads={n_heads}"
        )
    weights, values, outputs = (
        a[0] for a in _random_heads((n,), d_model, n_heads, rng)
    )
    hull = _convex_hull(values)  # head 0's values: (n, 2)
    return _HullDemo(values, outputs, weights, hull, _in_convex_polygon(outputs, hull))


def _random_heads(shape: tuple[int, ...], d_model: int, n_heads: int, rng: _Rng):
    """A random layer on random tokens ``(*shape, d_model)``: its weights
    ``(..., h, n, n)``, each head's values and outputs ``(..., h, n, d_k)``."""
    rng = generator(rng)
    layer = MultiHeadAttention(d_model, n_heads, rng=rng)
    x = rng.normal(size=(*shape, d_model))
    _, weights = layer(x)
    values = split_heads(x @ layer.w_v, n_heads)
    return weights, values, weights @ values


@dataclass(frozen=True)
class _BoundsCheck:
    """Every output coordinate of every head against the range of its values."""

    n_heads: int
    d_model: int
    checks: int  # output coordinates compared (batch · h · n · d_k)
    within: int  # how many lie between the smallest and largest value coordinate
    min_weight: float  # the smallest attention weight seen (never negative)


def _bounds_check(
    batch: int = 4, n: int = 32, d_model: int = 64, n_heads: int = 8, rng: _Rng = None
) -> _BoundsCheck:
    """Check the hull's bound coordinate by coordinate on a random layer: in every
    coordinate, a convex combination lies between the smallest and largest value.
    """
    weights, values, outputs = _random_heads((batch, n), d_model, n_heads, rng)
    low, high = values.min(axis=-2, keepdims=True), values.max(axis=-2, keepdims=True)
    ok = (outputs >= low - 1e-12) & (outputs <= high + 1e-12)
    return _BoundsCheck(n_heads, d_model, ok.size, int(ok.sum()), float(weights.min()))


def feed_forward(
    x: np.ndarray, w_1: np.ndarray, b_1: np.ndarray, w_2: np.ndarray, b_2: np.ndarray
) -> np.ndarray:
    """The Transformer's position-wise FFN with ReLU: ``relu(x W₁ + b₁) W₂ + b₂``."""
    return np.maximum(x @ w_1 + b_1, 0) @ w_2 + b_2


def _unexplained(fit: np.ndarray, target: np.ndarray) -> float:
    """The share of ``target``'s variance that ``fit`` leaves unexplained."""
    spread = ((target - target.mean(axis=0)) ** 2).sum()
    return float(((fit - target) ** 2).sum() / spread)


@dataclass(frozen=True)
class _ReluDemo:
    """Can attention compute ReLU of a token that attends only to itself?"""

    samples: int  # random tokens tried
    d_model: int
    linear_gap: float  # max |layer(x)[first token] - (x W_V W_O)[first token]|
    attention_error: float  # unexplained share of ReLU's variance, best affine map
    ffn_error: float  # the same share for a one-hidden-layer ReLU FFN


def relu_demo(samples: int = 2000, d_model: int = 4, rng: _Rng = None) -> _ReluDemo:
    """Compare the best attention layer with an FFN on the target ``relu(x)``.

    A token attending only to itself gets ``x W_V W_O`` (+ ``b_V W_O + b_O``), an
    affine map; every affine map is reachable: the best is the least-squares fit.
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
    eye, zero = np.eye(d_model), np.zeros(d_model)
    ffn = _unexplained(feed_forward(x, eye, zero, eye, zero), target)
    affine = _unexplained(design @ coef, target)
    return _ReluDemo(samples, d_model, linear_gap, affine, ffn)


@dataclass(frozen=True)
class _SinkDemo:
    """ReLU of a token that also sees a sink: one head per coordinate, per scale."""

    samples: int
    scales: tuple[float, ...]  # beta
    errors: tuple[float, ...]  # unexplained share of ReLU's variance, per beta


def _sink_relu_demo(
    samples: int = 2000,
    d_model: int = 4,
    scales: tuple[float, ...] = _SINK_SCALES,
    rng: _Rng = None,
) -> _SinkDemo:
    """How close a head gets to ReLU once its token also sees a sink (a key whose
    value is zero): the core's layer, weights set by hand, on two-token sequences.

    The sink comes first, flagged by an extra coordinate; each token ``x`` (those of
    ``relu_demo``) second. Head ``i`` scores ``beta x_i`` on the token and 0 on the sink
    (its key: a bias of 1 minus the flag), so it outputs its value ``x_i`` times
    ``sigmoid(beta x_i)``, ReLU's smooth twin.
    """
    x = generator(rng).normal(size=(samples, d_model))  # the tokens relu_demo draws
    width, d_k = 2 * d_model, 2  # the tokens' coordinates, the sink's flag, zeros
    sequences = np.zeros((samples, 2, width))
    sequences[:, 0, d_model] = 1.0  # the sink: the flag, and a zero value
    sequences[:, 1, :d_model] = x
    errors = []
    for beta in scales:
        layer = MultiHeadAttention(width, d_model, bias=True)
        layer.w_q, layer.w_k, layer.w_v, layer.w_o = np.zeros((4, width, width))
        layer.b_k = np.zeros(width)
        i, column = np.arange(d_model), np.arange(d_model) * d_k  # head i's first
        layer.w_q[i, column] = beta * np.sqrt(d_k)  # undo the 1/sqrt(d_k)
        layer.b_k[column], layer.w_k[d_model, column] = 1.0, -1.0
        layer.w_v[i, column] = layer.w_o[column, i] = 1.0
        out, _ = layer(sequences, mask=causal_mask(2))
        errors.append(_unexplained(out[:, 1, :d_model], np.maximum(x, 0)))
    return _SinkDemo(samples, tuple(scales), tuple(errors))
