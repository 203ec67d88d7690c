"""Each exercise checker accepts a right answer and rejects wrong ones, with a reason,
cannot be fooled by an answer fitted to fixed cases, and never raises."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.layer import MultiHeadAttention
from mha.pages import exercises
from mha.pages.exercises import (
    Verdict,
    best_kv_heads,
    check_best_kv_heads,
    check_gqa_param_count,
    check_rope,
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
        # answers that ignore the input's values, or truncate them
        (
            lambda x, h: split_swapaxes(
                np.arange(x.size, dtype=x.dtype).reshape(x.shape), h
            ),
            "wrong values",
        ),
        (lambda x, h: split_swapaxes(x.astype(int), h), "values became int64"),
        (lambda x, h: split_swapaxes(np.round(x), h), "wrong values"),
        (lambda x, h: split_swapaxes(x.astype(np.float64), h), "dtype float64"),
        (lambda x, h: split_swapaxes(x.astype(np.float16), h), "dtype float16"),
        (lambda x, h: split_swapaxes(x, h).tolist(), "expected a NumPy array"),
        (lambda x, h: np.float64(0), "expected a NumPy array"),
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


def test_split_heads_checker_rejects_an_answer_that_changes_x_after_splitting():
    def right_then_scribbles(x, n_heads):
        heads = split_swapaxes(x, n_heads).copy()
        x *= 2  # the caller's array must stay as it was
        return heads

    verdict = check_split_heads(right_then_scribbles)
    assert not verdict and "changed its input x" in verdict.message


def test_split_heads_checker_tries_several_shapes_and_both_dtypes():
    seen = []

    def recording(x, n_heads):
        seen.append((x.shape, x.dtype, n_heads))
        return split_swapaxes(x, n_heads)

    assert check_split_heads(recording)
    d_ks = {shape[-1] // h for shape, _, h in seen}
    assert len(d_ks) == len(seen) >= 5 and {dtype for _, dtype, _ in seen} == {
        np.dtype(np.float32),
        np.dtype(np.float64),
    }
    assert any(h > 1 and shape[1] > 1 and shape[0] > 1 for shape, _, h in seen)


def test_split_heads_checker_fails_a_lookup_table_of_some_cases():
    # An answer right on the cases it has seen, wrong elsewhere, is caught: the cases
    # of a different function (another code object) are others.
    known = {}

    def learn(x, n_heads):
        known[(x.shape, n_heads)] = True
        return split_swapaxes(x, n_heads)

    check_split_heads(learn)

    def table(x, n_heads):
        if (x.shape, n_heads) in known:
            return split_swapaxes(x, n_heads)
        return x.reshape(x.shape[0], n_heads, x.shape[1], -1)

    assert not check_split_heads(table)


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
        (lambda d, h, kv: str(gqa_formula(d, h, kv)), "expected an integer"),
        (lambda d, h: 0, "raised TypeError"),
        # d_k fixed at 64 (a checker tried only with d_k = 64 passes it)
        (lambda d, h, kv: 2 * d * d + 2 * d * kv * 64, "expected"),
        (lambda d, h, kv: 2 * d * d + 2 * d * kv * (d / h), "a float"),
        (lambda d, h, kv: np.array([gqa_formula(d, h, kv)] * 2), "expected an integer"),
        (lambda d, h, kv: True, "expected an integer"),
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
        (lambda h, g: max(1, h // g), "query heads would share|does not divide"),
        (lambda h, g: h, "smaller cache"),  # always MHA: right but not smallest
        (lambda h, g: 1, "query heads would share"),  # always MQA
        (lambda h, g: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_kv_checker_rejects_wrong_answers(wrong, reason):
    verdict = check_best_kv_heads(wrong)
    assert not verdict and re.search(reason, verdict.message)


def test_kv_checker_rejects_a_table_of_the_old_fixed_cases():
    old = {(32, 4): 8, (32, 1): 32, (32, 32): 1, (12, 5): 3, (9, 4): 3, (16, 3): 8}
    assert not check_best_kv_heads(lambda h, g: old.get((h, g), 1))


# --- every checker: NumPy scalars, stable verdicts, never raising -----------------


@pytest.mark.parametrize(
    ("checker", "right", "as_numpy"),
    [
        (check_gqa_param_count, gqa_formula, np.int64),
        (check_gqa_param_count, gqa_formula, np.int32),
        (check_gqa_param_count, gqa_formula, np.array),  # a 0-d array
        (check_best_kv_heads, kv_brute_force, np.int64),
        (check_best_kv_heads, kv_brute_force, np.uint8),
    ],
)
def test_numpy_integers_are_accepted(checker, right, as_numpy):
    assert checker(lambda *args: as_numpy(right(*args)))


def test_a_verdict_is_stable_and_its_cases_follow_the_code():
    def one(x, n_heads):
        return split_swapaxes(x, n_heads)

    def other(x, n_heads):  # the same answer, written otherwise: other cases
        return np.swapaxes(x.reshape(x.shape[0], x.shape[1], n_heads, -1), 1, 2)

    assert str(check_split_heads(one)) == str(check_split_heads(one))
    assert exercises._seed(one) == exercises._seed(one)
    assert exercises._seed(one) != exercises._seed(other)
    assert exercises._seed(len) == exercises._seed(abs)  # no code: the type's name


def test_the_seed_is_the_same_in_another_process_whatever_the_string_hashing():
    # a set literal is a frozenset constant, whose order follows the string hashing
    source = (
        "def answer(n_heads, max_group):\n"
        "    return n_heads if max_group in {'a', 'b', 'c', 'd'} else 1\n"
    )
    here = {}
    exec(source, here)
    code = f"from mha.pages.exercises import _seed\n{source}print(_seed(answer))"
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "1"},
    ).stdout
    assert int(there) == exercises._seed(here["answer"])


class Hostile:
    """A result that refuses to be compared, converted, printed or tested."""

    def __eq__(self, other):
        raise RuntimeError("no comparing")

    __ne__ = __lt__ = __gt__ = __eq__
    __hash__ = None

    def __repr__(self):
        raise RuntimeError("no repr")

    def __bool__(self):
        raise RuntimeError("no truth")

    def __index__(self):
        raise RuntimeError("no index")

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array")

    def __len__(self):
        raise RuntimeError("no len")


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


RESULTS = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.builds(Hostile),
    st.sampled_from(
        [
            np.int64(8),
            np.float32(np.nan),
            np.array([1, 2]),
            np.array(3),
            np.ones((2, 2, 2, 2)),
            np.zeros(0),
            np.array(["a"]),
            np.array([object()]),
            np.ones((1, 1, 1, 1), np.complex64),
            [[1], [2, 3]],
        ]
    ),
)
RAISES = st.sampled_from(
    [
        ValueError("v"),
        ZeroDivisionError(),
        SystemExit(3),
        RecursionError(),
        Unprintable(),
        MemoryError(),
    ]
)
CHECKERS = (check_split_heads, check_gqa_param_count, check_best_kv_heads, check_rope)


@pytest.mark.parametrize("checker", CHECKERS)
@settings(max_examples=50, deadline=None)
@given(result=RESULTS, error=RAISES, raises_at=st.integers(0, 3))
def test_no_checker_raises_whatever_the_answer_does(checker, result, error, raises_at):
    calls = []

    def answer(*args):
        calls.append(args)
        if len(calls) > raises_at:
            raise error
        return result

    verdict = checker(answer)
    assert isinstance(verdict, Verdict) and isinstance(str(verdict), str)
    assert not verdict


@pytest.mark.parametrize("checker", CHECKERS)
@pytest.mark.parametrize("candidate", [None, 3, "split_heads", np.ones(3)])
def test_a_checker_given_no_function_says_so(checker, candidate):
    verdict = checker(candidate)
    assert not verdict and "expected a function" in verdict.message


def test_a_verdict_is_its_truth_value():
    assert Verdict(True, "ok") and not Verdict(False, "no")
    assert str(Verdict(False, "no")) == "✗ no"
