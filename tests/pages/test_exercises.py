"""Each exercise checker accepts a right answer and rejects wrong ones, with a reason,
cannot be fooled by an answer fitted to fixed cases, and never raises."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.accounting import param_count
from mha.layer import MultiHeadAttention
from mha.pages import exercises
from mha.pages.exercises import (
    APART,
    Verdict,
    best_kv_heads,
    check_best_kv_heads,
    check_gqa_param_count,
    check_split_heads,
)
from mha.support import apart
from tests.pages.hostile import Hostile, Unprintable


def noted(log: str, line: str) -> None:
    """Append ``line`` to the file ``log``: an answer runs in another process, so it
    tells a test what it saw through a file."""
    with open(log, "a") as file:
        file.write(line + "\n")


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


def test_split_heads_checker_tries_several_shapes_and_both_dtypes(tmp_path):
    log = str(tmp_path / "seen")  # the answer runs in another process: it writes

    def recording(x, n_heads):
        noted(log, f"{x.shape}|{x.dtype}|{n_heads}")
        return split_swapaxes(x, n_heads)

    assert check_split_heads(recording)
    seen = [line.split("|") for line in Path(log).read_text().splitlines()]
    shapes = [
        tuple(int(n) for n in shape[1:-1].split(",") if n) for shape, _, _ in seen
    ]
    d_ks = {shape[-1] // int(h) for shape, (_, _, h) in zip(shapes, seen, strict=True)}
    assert len(d_ks) == len(seen) >= 5
    assert {dtype for _, dtype, _ in seen} == {"float32", "float64"}
    assert any(
        int(h) > 1 and shape[1] > 1 and shape[0] > 1
        for shape, (_, _, h) in zip(shapes, seen, strict=True)
    )


def test_split_heads_checker_fails_a_lookup_table_of_some_cases(tmp_path):
    # An answer right on the cases it has seen, wrong elsewhere, is caught: the cases
    # of a different function (another code object) are others.
    log = str(tmp_path / "seen")

    def learn(x, n_heads):
        noted(log, f"{x.shape}|{n_heads}")
        return split_swapaxes(x, n_heads)

    check_split_heads(learn)
    known = set(Path(log).read_text().splitlines())

    def table(x, n_heads):
        if f"{x.shape}|{n_heads}" in known:
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
CHECKERS = (check_split_heads, check_gqa_param_count, check_best_kv_heads)


@pytest.mark.parametrize("checker", CHECKERS)
@settings(max_examples=6, deadline=None)  # a process each: the next test goes wider
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


@pytest.mark.parametrize(
    "check",
    [
        exercises._check_split_heads,
        exercises._check_gqa_param_count,
        exercises._check_best_kv_heads,
    ],
)
@settings(max_examples=50, deadline=None)
@given(result=RESULTS, raises_at=st.integers(0, 3))
def test_no_check_raises_whatever_comes_back_from_the_answers_process(
    check, result, raises_at
):
    back = pickle.loads(pickle.dumps(apart._plain(result)))  # what the parent gets
    calls = []

    def answer(*args):
        calls.append(args)
        if len(calls) > raises_at:
            raise apart.Raised("raised ValueError: v")
        return back

    verdict = check(answer, np.random.default_rng(raises_at))
    assert isinstance(verdict, Verdict) and not verdict and str(verdict)


@pytest.mark.parametrize("checker", CHECKERS)
@pytest.mark.parametrize("candidate", [None, 3, "split_heads", np.ones(3)])
def test_a_checker_given_no_function_says_so(checker, candidate):
    verdict = checker(candidate)
    assert not verdict and "expected a function" in verdict.message


def test_a_verdict_is_its_truth_value():
    assert Verdict(True, "ok") and not Verdict(False, "no")
    assert str(Verdict(False, "no")) == "✗ no"


# --- the answer runs apart: what it could reach in the checker's process, it cannot


def reads_frames(n_heads, max_group):
    """Return the checker's expected value, found in a calling frame (in the
    checker's process, the check's own frame holds it)."""
    frame = sys._getframe(1)
    while frame is not None:
        if "expected" in frame.f_locals:
            return frame.f_locals["expected"]
        frame = frame.f_back
    return -1


def test_an_answer_reading_the_checkers_frames_finds_nothing():
    verdict = check_best_kv_heads(reads_frames)
    assert not verdict and "got -1" in verdict.message


def test_an_answer_patching_the_checkers_module_after_a_first_call_fails():
    calls = []

    def patches(d_model, n_heads, n_kv_heads):
        import mha.pages.exercises as checker

        calls.append(1)
        if len(calls) == 1:  # right once, then make the reference agree with 0
            return gqa_formula(d_model, n_heads, n_kv_heads)
        checker.param_count = lambda *args, **kwargs: 0
        return 0

    verdict = check_gqa_param_count(patches)
    assert not verdict and "got 0" in verdict.message
    assert exercises.param_count is param_count  # the checker's module is untouched


def test_an_array_that_lies_about_equality_is_not_trusted():
    def liar(x, n_heads):
        class Liar(np.ndarray):  # np.array_equal(liar, anything) says True
            def __array_function__(self, func, types, args, kwargs):
                return True

            def __eq__(self, other):
                return True

        b, s, d = x.shape
        return np.zeros((b, n_heads, s, d // n_heads), x.dtype).view(Liar)

    verdict = check_split_heads(liar)
    assert not verdict and "(Liar), expected a NumPy array" in verdict.message


def test_an_integer_that_equals_everything_is_not_trusted():
    def liar(d_model, n_heads, n_kv_heads):
        class Liar(int):
            def __eq__(self, other):
                return True

            def __ne__(self, other):
                return False

            __hash__ = int.__hash__

        return Liar(0)

    verdict = check_gqa_param_count(liar)
    assert not verdict and "(Liar), expected an integer" in verdict.message


def test_a_lookup_table_filled_from_failure_messages_meets_new_cases():
    # Each failure says "got G, expected E" for one case; the table learns it, and so
    # the answer reads other data: its cases change. (Fixed cases were all learnt
    # in as many rounds as there are cases, here 6.)
    table = {}

    def answer(d_model, n_heads, n_kv_heads):
        return table.get((d_model, n_heads, n_kv_heads), 0)

    failed = r"d_model=(\d+), n_heads=(\d+), n_kv_heads=(\d+): got \d+, expected (\d+)"
    for _ in range(8):
        verdict = check_gqa_param_count(answer)
        d_model, n_heads, n_kv_heads, expected = map(
            int, re.search(failed, verdict.message).groups()
        )
        table[d_model, n_heads, n_kv_heads] = expected
    assert not verdict and len(table) == 8


def test_an_endless_loop_is_stopped_and_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(exercises, "TIME_LIMIT", 0.5)
    log = str(tmp_path / "pid")

    def forever(n_heads, max_group):
        import os

        noted(log, str(os.getpid()))
        while True:
            pass

    verdict = check_best_kv_heads(forever)
    assert not verdict and "did not return within 0.5 s" in verdict.message
    with pytest.raises(ProcessLookupError):  # its process is gone
        os.kill(int(Path(log).read_text()), 0)


def test_one_process_per_check_not_the_checkers(tmp_path):
    log = str(tmp_path / "pids")

    def right(n_heads, max_group):
        import os

        noted(log, str(os.getpid()))
        return kv_brute_force(n_heads, max_group)

    verdict = check_best_kv_heads(right)
    assert verdict and APART in verdict.message
    pids = Path(log).read_text().split()
    assert len(pids) >= 8 and set(pids) == {pids[0]} != {str(os.getpid())}


def test_what_the_answer_prints_reaches_the_reader(capsys):
    def chatty(n_heads, max_group):
        print("trying", n_heads)
        return kv_brute_force(n_heads, max_group)

    assert check_best_kv_heads(chatty)
    assert "trying" in capsys.readouterr().out


def test_an_answer_that_kills_its_process_is_reported():
    def exits(n_heads, max_group):
        import os

        os._exit(3)

    verdict = check_best_kv_heads(exits)
    assert (
        not verdict and "ended the process it ran in (exit code 3)" in verdict.message
    )
