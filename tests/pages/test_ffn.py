"""What attention cannot do alone: the convex hull, and ReLU of a lone token."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.figures import to_svg
from mha.figures.ffn import convex_hull as hull_figure
from mha.pages.ffn import (
    _bounds_check,
    _convex_hull,
    _facts,
    _figures,
    _hull_demo,
    _in_convex_polygon,
    _sink_relu_demo,
    feed_forward,
    page,
    relu_demo,
)
from mha.support.formatting import significant
from tests.pages.drawn import assert_series, drawn


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=3, max_value=40), st.integers(0, 2**32 - 1))
def test_the_hull_holds_every_point_and_its_vertices_are_extreme(n, seed):
    points = np.random.default_rng(seed).normal(size=(n, 2))
    hull = _convex_hull(points)
    assert _in_convex_polygon(points, hull, tol=1e-9).all()
    for i, vertex in enumerate(hull):  # drop a vertex: it falls outside the rest
        rest = np.delete(hull, i, axis=0)
        assert not _in_convex_polygon(vertex[None], rest, tol=-1e-12)[0]


def test_a_point_outside_is_detected():
    square = _convex_hull(np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1]]))
    inside = _in_convex_polygon(np.array([[1, 1], [2.5, 1], [1, -0.1]]), square)
    assert inside.tolist() == [True, False, False]


def test_every_output_of_the_drawn_head_is_inside_its_hull():
    demo = _hull_demo()
    assert demo.inside.all() and len(demo.inside) == len(demo.values)
    assert np.allclose(demo.weights.sum(axis=1), 1) and (demo.weights >= 0).all()
    assert np.allclose(demo.outputs, demo.weights @ demo.values)


def test_every_output_coordinate_stays_within_its_values():
    check = _bounds_check()
    assert check.within == check.checks == 4 * 8 * 32 * 8
    assert check.min_weight >= 0


def test_a_lone_token_gets_an_affine_map_and_cannot_get_relu():
    demo = relu_demo()
    assert demo.linear_gap < 1e-12
    # Var(|x|)/4 over Var(relu(x)) for a standard normal: (1 - 2/π) / (2 - 2/π)
    theory = (1 - 2 / np.pi) / (2 - 2 / np.pi)
    assert abs(demo.attention_error - theory) < 0.03
    assert demo.ffn_error == 0.0


def test_no_affine_map_beats_the_least_squares_fit():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2000, 4))
    target = np.maximum(x, 0)
    spread = ((target - target.mean(axis=0)) ** 2).sum()
    best = relu_demo(samples=2000, rng=np.random.default_rng(3)).attention_error
    for _ in range(50):
        m, b = rng.normal(size=(4, 4)), rng.normal(size=4)
        guess = ((x @ (0.5 * np.eye(4) + 0.1 * m) + 0.4 + 0.1 * b - target) ** 2).sum()
        assert guess / spread >= best - 1e-9


def test_the_ffn_is_relu_with_identity_weights():
    x = np.array([[-2.0, 3.0], [0.5, -0.5]])
    eye, zero = np.eye(2), np.zeros(2)
    assert np.array_equal(feed_forward(x, eye, zero, eye, zero), np.maximum(x, 0))


def test_the_hull_figure_is_deterministic():
    demo = _hull_demo()
    assert to_svg(hull_figure(demo), "alt") == to_svg(hull_figure(demo), "alt")


def test_the_ffn_pages_facts_hold_and_turn_false_on_other_values():
    p = page()
    assert all(f.holds for f in p.facts.values())
    assert p.inside == (8, 8) and p.min_weight == f"{p.bounds.min_weight:.1e}"
    assert (
        "8 outputs as crosses, all of which fall inside" in p.figures["convex_hull"].alt
    )
    outside = replace(p.hull, inside=np.array([True] * 7 + [False]))
    assert not _facts(outside, p.bounds, p.relu, p.sink)["all_within"].holds
    assert "7 of which fall inside" in _figures(outside)["convex_hull"].alt
    negative = replace(p.bounds, min_weight=-1e-3)
    assert not _facts(p.hull, negative, p.relu, p.sink)["never_negative"].holds
    affine = replace(p.relu, attention_error=0.0)  # as if an affine map were ReLU
    assert not _facts(p.hull, p.bounds, affine, p.sink)["ffn_exact"].holds


def test_the_lone_tokens_gap_is_printed_as_what_it_is():
    """0.0e+00 (exact), never a rounded 0.000; a tiny gap reads as not exact."""
    p = page()
    assert p.relu.linear_gap == 0.0 and p.linear_gap == "0.0e+00"
    assert p.facts["linear"].holds and p.facts["linear_exact"].holds
    rounding = _facts(p.hull, p.bounds, replace(p.relu, linear_gap=4e-16), p.sink)
    assert rounding["linear"].holds and not rounding["linear_exact"].holds
    coarse = _facts(p.hull, p.bounds, replace(p.relu, linear_gap=1e-3), p.sink)
    assert not coarse["linear"].holds


def test_a_sink_lets_a_head_approach_relu():
    """With a zero-valued sink beside it, head i outputs x_i sigmoid(beta x_i)."""
    demo = _sink_relu_demo()
    x = np.random.default_rng(0).normal(size=(2000, 4))  # relu_demo's tokens
    target = np.maximum(x, 0)
    spread = ((target - target.mean(axis=0)) ** 2).sum()
    for beta, error in zip(demo.scales, demo.errors, strict=True):
        smooth = x / (1 + np.exp(-beta * x))
        assert error == pytest.approx(((smooth - target) ** 2).sum() / spread)
    assert list(demo.errors) == sorted(demo.errors, reverse=True)
    assert demo.errors[-1] < 1e-6 < demo.errors[0] < relu_demo().attention_error
    p = page()
    assert p.facts["sink_closer"].holds
    errors = [f"{significant(100 * e)}%" for e in demo.errors]
    assert p.sink_errors == f"{errors[0]}, {errors[1]} and {errors[2]}"
    assert p.sink_scales == "1, 10 and 100"
    blunt = replace(demo, errors=(0.3, 0.2, 0.1))  # no better than the affine fit
    assert not _facts(p.hull, p.bounds, p.relu, blunt)["sink_closer"].holds


# --- its figures --------------------------------------------------------------
# The hull figure draws the page's value vectors, their hull and the outputs.


def test_convex_hull_draws_the_values_their_hull_and_the_outputs():
    p, (panel,) = drawn("ffn", "convex_hull")
    assert_series(
        panel.lines,
        {"value vectors": p.hull.values.T, "outputs": p.hull.outputs.T},
    )
    (outline,) = panel.patches.values()
    assert np.allclose(outline[: len(p.hull.hull)], p.hull.hull)
    assert panel.patches.keys() == {"convex hull of the values"}
