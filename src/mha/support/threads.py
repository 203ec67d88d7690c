"""A context in which BLAS (NumPy's matrix products) runs on one thread.

The site's build and its tests run BLAS on one thread (small matrices run faster
that way); SmolLM2's decoding and some benchmarks compare one thread with several.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager

from threadpoolctl import ThreadpoolController


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()  # finds the BLAS libraries once (about a millisecond)


def one_blas_thread() -> AbstractContextManager:
    """A context in which BLAS (NumPy's matrix products) uses a single thread.

    ```python
    import numpy as np
    from mha.support.threads import one_blas_thread

    with one_blas_thread():
        assert (np.ones((2, 2)) @ np.ones(2)).tolist() == [2.0, 2.0]
    ```
    """
    return _blas().limit(limits=1, user_api="blas")
