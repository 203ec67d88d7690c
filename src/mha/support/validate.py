"""Input checks shared by the core: clear ``ValueError``s that name the argument."""

from __future__ import annotations

import numpy as np


def float_array(name: str, x: object, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a ``ValueError`` naming ``name``.

    Integer, boolean and complex arrays are refused (attention is defined on real
    floats, and silently promoting an integer array would hide a bug). NaN and +inf
    are refused; -inf is accepted only where ``allow_neg_inf`` (a masked logit).

    ```python
    import numpy as np
    from mha.support.validate import float_array

    assert float_array("x", [1.0, 2.0]).dtype == np.float64
    ```
    """
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        raise ValueError(
            f"{name}: expected a floating-point array (float32 or float64), "
            f"got dtype {arr.dtype}"
        )
    if np.isfinite(arr).all():  # the usual case, in one pass
        return arr
    bad = np.isnan(arr) | (np.isposinf(arr) if allow_neg_inf else ~np.isfinite(arr))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name}: expected finite values, got {arr[first]} at index {first}"
        )
    return arr


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is a positive integer, else raise.

    ```python
    from mha.support.validate import positive_int

    assert positive_int("n", 3) == 3
    ```
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value}")
    return int(value)


def head_dim(d_model: int, n_heads: int, n_kv_heads: int | None = None) -> int:
    """Check the head arithmetic and return d_k = d_model / n_heads.

    ```python
    from mha.support.validate import head_dim

    assert head_dim(512, 8, 2) == 64
    ```
    """
    d_model = positive_int("d_model", d_model)
    n_heads = positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(
            f"d_model: expected a multiple of n_heads={n_heads}, got {d_model}"
        )
    if n_kv_heads is not None:
        n_kv_heads = positive_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads: expected a divisor of n_heads={n_heads}, got {n_kv_heads}"
            )
    return d_model // n_heads


def generator(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself, or the fixed default seed when ``None`` (every build draws alike).

    ```python
    import numpy as np
    from mha.support.validate import generator

    assert generator(None).integers(1000) == np.random.default_rng(0).integers(1000)
    ```
    """
    if rng is None:
        return np.random.default_rng(0)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy.random.Generator or None, got {rng!r}")
    return rng
