"""A function called apart behaves as if called directly, on plain data, and what it
could reach in its caller's process (frames, modules, objects) it cannot."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from mha.support.apart import Apart, Opaque, Raised, shown

LIMIT = 60.0  # generous: these calls take milliseconds, the machine may be loaded


def countdown(n):  # calls itself: rebuilt before its globals are filled in
    return 0 if n == 0 else 1 + countdown(n - 1)


def test_a_function_travels_with_what_it_reads():
    offset = 10

    def helper(v):
        return v + offset  # a closure value

    def answer(x, scale=2):  # a default, a module, a function of this module
        return [helper(v) * scale for v in x], np.float32(countdown(3))

    with Apart(answer, LIMIT) as apart:
        assert apart([1, 2]) == ([22, 24], np.float32(3))
        assert apart((5,)) == ([30], 3.0)  # one process, reused


def test_arrays_come_back_and_in_place_changes_reach_the_caller():
    def scale(x):
        x *= 3
        return x.T

    x = np.arange(6.0).reshape(2, 3)
    with Apart(scale, LIMIT) as apart:
        got = apart(x)
    assert type(got) is np.ndarray and got.shape == (3, 2)
    assert x.tolist() == [[0.0, 3.0, 6.0], [9.0, 12.0, 15.0]]


def test_only_plain_data_comes_back():
    def odd_things():
        class Mine:
            def __repr__(self):
                return "mine"

        return Mine(), {"a": [Mine()]}, np.array([Mine()], dtype=object)

    with Apart(odd_things, LIMIT) as apart:
        mine, nested, array = apart()
    assert isinstance(mine, Opaque) and shown(mine) == "mine (Mine)"
    assert isinstance(nested["a"][0], Opaque) and isinstance(array[0], Opaque)


def test_what_the_function_raises_is_described():
    def fails(n):
        raise KeyError(n)

    with (
        Apart(fails, LIMIT) as apart,
        pytest.raises(Raised, match="raised KeyError: 4"),
    ):
        apart(4)


def test_a_function_reading_what_pickle_cannot_carry_is_refused_plainly():
    lock = threading.Lock()

    def locked():
        with lock:
            return 1

    with (
        Apart(locked, LIMIT) as apart,
        pytest.raises(Raised, match="could not be sent"),
    ):
        apart()


def test_an_ended_process_refuses_the_next_calls_too():
    def exits():
        raise SystemExit(5)  # described, the process lives on

    def dies():
        import os

        os._exit(7)

    with Apart(exits, LIMIT) as apart, pytest.raises(Raised, match="SystemExit: 5"):
        apart()
    with Apart(dies, LIMIT) as apart:
        for _ in range(2):
            with pytest.raises(Raised, match="exit code 7"):
                apart()


@pytest.mark.parametrize(
    ("fn", "limit", "message"),
    [(3, LIMIT, "fn must be callable"), (len, 0.0, "time_limit must be positive")],
)
def test_bad_arguments_are_named(fn, limit, message):
    with pytest.raises((TypeError, ValueError), match=message):
        Apart(fn, limit)
