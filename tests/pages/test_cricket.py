"""The cricket worked example reproduces the values the seed derived by hand."""

import numpy as np
import pytest

from mha.worked.cricket import solve, tripled_century

TOL = 5e-4


@pytest.fixture(scope="module")
def example():
    return solve()


def test_single_full_width_head(example):
    np.testing.assert_allclose(example.full.dots, [4, 4, 1])
    np.testing.assert_allclose(example.full.scores, [2, 2, 0.5])
    np.testing.assert_allclose(example.full.weights, [0.450, 0.450, 0.100], atol=TOL)
    np.testing.assert_allclose(example.full.output, [0.450, 0.450, 0.100, 0], atol=TOL)


def test_head_a_resolves_the_coreference(example):
    np.testing.assert_allclose(example.head_a.scores, [2.828, 1.414, 0], atol=TOL)
    np.testing.assert_allclose(example.head_a.weights, [0.768, 0.187, 0.045], atol=TOL)
    np.testing.assert_allclose(example.head_a.output, [0.768, 0.187], atol=TOL)


def test_head_b_registers_the_topic(example):
    np.testing.assert_allclose(example.head_b.scores, [0, 1.414, 0.707], atol=TOL)
    np.testing.assert_allclose(example.head_b.weights, [0.140, 0.576, 0.284], atol=TOL)
    np.testing.assert_allclose(example.head_b.output, [0.284, 0], atol=TOL)


def test_concatenation_and_w_o(example):
    np.testing.assert_allclose(example.concat, [0.768, 0.187, 0.284, 0], atol=TOL)
    np.testing.assert_allclose(example.mixed, sum(example.writes), atol=1e-12)
    # with W_O every output coordinate reads from both heads
    assert all((np.abs(w) > 0).any() for w in example.writes)


def test_tripled_century_moves_outputs_not_weights(example):
    tripled = solve(v=tripled_century())
    for before, after in [
        (example.full, tripled.full),
        (example.head_a, tripled.head_a),
        (example.head_b, tripled.head_b),
    ]:
        np.testing.assert_array_equal(before.weights, after.weights)
    np.testing.assert_array_equal(tripled.head_a.output, example.head_a.output)
    np.testing.assert_allclose(tripled.head_b.output, [0.852, 0], atol=TOL)
    # the seed rounds 3 x 0.100 to 0.300; the exact statement is "tripled"
    expected_full = example.full.output * [1, 1, 3, 1]
    np.testing.assert_allclose(tripled.full.output, expected_full, rtol=1e-12)
    np.testing.assert_allclose(tripled.concat, [0.768, 0.187, 0.852, 0], atol=TOL)
