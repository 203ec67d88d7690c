"""Threads for large NumPy work: one pool over the cores, and BLAS kept to one thread.

NumPy's elementwise functions (the ``exp`` of a softmax) run on one core, but they
release the GIL, so Python threads can run them side by side. BLAS (NumPy's matrix
products) has threads of its own; both levels at once oversubscribe the cores and
were about twice as slow as either alone (measured on this project's 2-core
machines), hence ``one_blas_thread`` around work handed to ``pool``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
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


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="mha")


def on_every_core(work: Callable[[T], object], items: Iterable[T]) -> None:
    """Run ``work(item)`` for every item on a thread per core, BLAS on one thread each.

    Returns when all are done; the first exception raised by ``work`` propagates.
    ``work`` must write its results somewhere of its own (say, a slice of an array).

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
    with one_blas_thread():
        for _ in _pool().map(work, items):
            pass
