"""The answers to the six active-recall questions of seed 004, as the page shows them."""

from __future__ import annotations

import numpy as np

from mha.pages.exercises import bert_base, flops, four_heads, pruning, score_variance
from mha.worked.cricket import solve, tripled_century


def test_four_heads_of_one_dimension():
    ans = four_heads()
    assert (ans.d_model, ans.n_heads, ans.d_k, ans.scale) == (4, 4, 1, 1.0)
    assert abs(ans.two_head_scale - np.sqrt(2)) < 1e-12
    assert np.allclose(ans.weights[2], 1 / 3)  # q(his) is zero in dimension 3
    assert ans.weights[0].argmax() == 0  # dimension 1 points at "Kohli"


def test_bert_base_holds_2_359_296_parameters():
    ans = bert_base()
    assert ans.d_k == 64
    assert ans.params == ans.params_from_arrays == ans.four_d_squared == 2_359_296


def test_tripling_a_value_moves_outputs_not_weights():
    before, after = solve(), solve(v=tripled_century())
    for run in ("full", "head_a", "head_b"):
        assert np.allclose(getattr(before, run).weights, getattr(after, run).weights)
    assert np.allclose(after.head_a.output, before.head_a.output)
    assert np.allclose(after.head_b.output, 3 * before.head_b.output)
    assert abs(after.head_b.output[0] - 0.852) < 5e-4


def test_the_scaled_variance_does_not_depend_on_the_head_count():
    for row in score_variance():
        assert abs(row.raw / row.theory_raw - 1) < 0.1
        assert abs(row.scaled - 1) < 0.1


def test_what_pruning_removes_in_parameters():
    ans = pruning()
    assert ans.per_head == 4 * 512 * 64 == 131_072
    assert ans.pruned == 38 * 131_072 == 4_980_736
    assert ans.total == 6 * 4 * 512**2 == 6_291_456
    assert ans.kept_heads == 10 and abs(ans.pruned_share - 38 / 48) < 1e-12


def test_the_seed_flops_comparison():
    ans = flops()
    assert ans.one_head == ans.many_heads == 5_120_000
    assert ans.per_head == 640_000 and ans.many_heads_flops == 10_240_000
