"""Benchmarks run by `make bench`, never by `make test`.

Each module here has ``run() -> dict``. ``python -m tests.bench [name ...]`` runs them
(all by default), prints each result and writes it to
``src/mha/data/bench/<name>.json``, a committed data file that pages render. A build
never times anything: it only reads these files.
"""

import time
from collections.abc import Callable

import numpy as np


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))
