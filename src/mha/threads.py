"""Threads for large NumPy work, as many as BLAS may use, and BLAS on one inside them.

NumPy's elementwise functions (the ``exp`` of a softmax) run on one core, but they
release the GIL, so Python threads can run them side by side. BLAS (NumPy's matrix
products) has threads of its own; both levels at once oversubscribe the cores and
were about twice as slow as either alone (measured on this project's 2-core
machines), hence ``one_blas_thread`` inside the threads of ``on_every_core``.

One setting rules both: the BLAS thread limit (``threadpoolctl``). Under
``threadpool_limits(1)``, as in the site's build, its tests and the per-head timing
benchmark, everything runs on the calling thread.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TypeVar

from threadpoolctl import ThreadpoolController

T = TypeVar("T")


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()  # finds the BLAS libraries once (about a millisecond)


def one_blas_thread() -> AbstractContextManager:
    """A context in which BLAS (NumPy's matrix products) uses a single thread.

    ```python
    import numpy as np
    from mha.threads import one_blas_thread

    with one_blas_thread():
        assert (np.ones((2, 2)) @ np.ones(2)).tolist() == [2.0, 2.0]
    ```
    """
    return _blas().limit(limits=1, user_api="blas")


def blas_threads() -> int:
    """How many threads BLAS may use at this moment (1 inside ``one_blas_thread``).

    ```python
    from mha.threads import blas_threads, one_blas_thread

    with one_blas_thread():
        assert blas_threads() == 1
    ```
    """
    controllers = _blas().select(user_api="blas").lib_controllers
    return max((c.num_threads for c in controllers), default=1)


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="mha")


def on_every_core(work: Callable[[T], object], items: Sequence[T]) -> None:
    """Run ``work(item)`` for every item on ``blas_threads()`` threads, BLAS on one each.

    Thread ``t`` takes items ``t, t + threads, ...``. Returns when all are done; the
    first exception raised by ``work`` propagates. ``work`` must write its results
    somewhere of its own (say, a slice of an array).

    ```python
    import numpy as np
    from mha.threads import on_every_core

    out = np.zeros(4)

    def fill(i):
        out[i] = np.exp(float(i))

    on_every_core(fill, range(4))
    assert np.allclose(out, np.exp(np.arange(4)))
    ```
    """
    threads = max(1, min(blas_threads(), len(items)))

    def share(first: int) -> None:
        for item in items[first::threads]:
            work(item)

    if threads == 1:
        share(0)
        return
    with one_blas_thread():
        for _ in _pool().map(share, range(threads)):
            pass
