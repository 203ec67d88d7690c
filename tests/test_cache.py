"""The content-hash cache: one computation per key, even when asked for at once."""

from __future__ import annotations

import threading
import time

import numpy as np

from mha import cache


def test_callers_asking_at_once_compute_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    calls: list[int] = []
    results: list[int] = []

    def slow_square(x: int) -> int:
        calls.append(x)
        time.sleep(0.3)  # long enough for the other callers to ask meanwhile
        return x * x

    threads = [
        threading.Thread(target=lambda: results.append(cache.cached(slow_square, 7)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [49, 49, 49]
    assert calls == [7]


def test_other_arguments_are_another_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    calls: list[int] = []

    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert [cache.cached(square, 2), cache.cached(square, 3)] == [4, 9]
    assert cache.cached(square, 2) == 4
    assert calls == [2, 3]


def test_a_view_and_a_copy_of_the_same_numbers_share_a_key():
    """A result just computed may hold strided views; read back, it holds copies."""
    view = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert not view.flags.c_contiguous
    assert cache.cache_key(max, {"w": view}) == cache.cache_key(max, {"w": view.copy()})
    assert cache.cache_key(max, view) != cache.cache_key(max, view[:, :1])
