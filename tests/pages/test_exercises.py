"""Each exercise checker accepts a right answer and rejects wrong ones, with a reason."""

from __future__ import annotations

import numpy as np
import pytest

from mha.layer import MultiHeadAttention
from mha.pages.exercises import (
    Verdict,
    best_kv_heads,
    check_best_kv_heads,
    check_gqa_param_count,
    check_split_heads,
)

# split_heads


def split_swapaxes(x, n_heads):
    b, s, d = x.shape
    return np.swapaxes(x.reshape(b, s, n_heads, d // n_heads), 1, 2)


def split_einsum(x, n_heads):
    b, s, d = x.shape
    return np.einsum("bshk->bhsk", x.reshape(b, s, n_heads, d // n_heads))


def split_loop(x, n_heads):
    d_k = x.shape[-1] // n_heads
    return np.stack([x[..., i * d_k : (i + 1) * d_k] for i in range(n_heads)], axis=1)


@pytest.mark.parametrize("right", [split_swapaxes, split_einsum, split_loop])
def test_split_heads_checker_accepts_right_answers(right):
    verdict = check_split_heads(right)
    assert verdict and verdict.passed and str(verdict).startswith("✓")


@pytest.mark.parametrize(
    "wrong, reason",
    [
        (lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), "mixes tokens"),
        (lambda x, h: split_swapaxes(x, h).swapaxes(2, 3), "shape"),
        (lambda x, h: split_swapaxes(x, h)[..., ::-1], "wrong values"),
        (lambda x, h: None, "shape"),
        (lambda x, h: x.reshape(-1, h), "shape"),
        (lambda x, h: x[999], "raised IndexError"),
    ],
)
def test_split_heads_checker_rejects_wrong_answers(wrong, reason):
    verdict = check_split_heads(wrong)
    assert not verdict and str(verdict).startswith("✗")
    assert reason in verdict.message


def test_split_heads_checker_does_not_trust_a_mutated_input():
    def mutates(x, n_heads):
        x[...] = 0  # the checker passes a copy: its own reference stays intact
        return split_swapaxes(x, n_heads)

    assert not check_split_heads(mutates)


# GQA parameter count


def gqa_from_layer(d_model, n_heads, n_kv_heads):
    return MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads).param_count


def gqa_formula(d_model, n_heads, n_kv_heads):
    return 2 * d_model**2 + 2 * d_model * n_kv_heads * (d_model // n_heads)


@pytest.mark.parametrize("right", [gqa_from_layer, gqa_formula])
def test_gqa_checker_accepts_right_answers(right):
    assert check_gqa_param_count(right)


@pytest.mark.parametrize(
    "wrong, reason",
    [
        (lambda d, h, kv: 4 * d * d, "MHA count"),
        (lambda d, h, kv: 4 * d * kv * (d // h), "expected"),
        (lambda d, h, kv: gqa_formula(d, h, kv) + 4 * d, "expected"),  # biases
        (lambda d, h, kv: str(gqa_formula(d, h, kv)), "expected"),
        (lambda d, h: 0, "raised TypeError"),
    ],
)
def test_gqa_checker_rejects_wrong_answers(wrong, reason):
    verdict = check_gqa_param_count(wrong)
    assert not verdict and reason in verdict.message


# KV heads for the smallest cache


def kv_brute_force(n_heads, max_group):
    ok = [g for g in range(1, n_heads + 1) if n_heads % g == 0]
    return min(g for g in ok if n_heads / g <= max_group)


def test_the_reference_answer_matches_brute_force():
    for h in range(1, 65):
        for max_group in range(1, 20):
            assert best_kv_heads(h, max_group) == kv_brute_force(h, max_group)


def test_kv_checker_accepts_a_right_answer():
    assert check_best_kv_heads(kv_brute_force)


@pytest.mark.parametrize(
    "wrong, reason",
    [
        (lambda h, g: -(-h // g), "does not divide"),  # ceil, ignoring the groups
        (lambda h, g: max(1, h // g), "query heads would share"),  # too few
        (lambda h, g: h, "smaller cache"),  # always MHA: right but not smallest
        (lambda h, g: 1, "query heads would share"),  # always MQA
        (lambda h, g: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_kv_checker_rejects_wrong_answers(wrong, reason):
    verdict = check_best_kv_heads(wrong)
    assert not verdict and reason in verdict.message


def test_a_verdict_is_its_truth_value():
    assert Verdict(True, "ok") and not Verdict(False, "no")
    assert str(Verdict(False, "no")) == "✗ no"
