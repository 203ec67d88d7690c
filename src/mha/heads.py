"""Splitting a width into heads, merging it back, and sharing K/V across head groups.

Splitting is a reshape: no new parameters. Head i owns columns ``i*d_k:(i+1)*d_k``.
Splitting, merging and repeating move values without computing with them, so they take
arrays of any numeric dtype and keep it.
"""

from __future__ import annotations

import numpy as np

from mha.support.validate import fits, float_array, numeric_array, positive_int


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """``(..., seq, d_model) -> (..., n_heads, seq, d_k)`` with d_k = d_model / n_heads.

    ```python
    import numpy as np
    from mha import split_heads

    x = np.arange(12.0).reshape(1, 2, 6)  # batch 1, 2 tokens, d_model 6
    heads = split_heads(x, 3)  # (1, 3, 2, 2)
    assert heads[0, 1].tolist() == [[2.0, 3.0], [8.0, 9.0]]  # columns 2:4
    ```
    """
    x, n_heads = _check_split(x, n_heads)
    *lead, seq, d_model = x.shape
    return x.reshape(*lead, seq, n_heads, d_model // n_heads).swapaxes(-2, -3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``(..., n_heads, seq, d_k) -> (..., seq, n_heads * d_k)``: the concatenation.

    ```python
    import numpy as np
    from mha import merge_heads, split_heads

    x = np.arange(12.0).reshape(1, 2, 6)
    assert np.array_equal(merge_heads(split_heads(x, 3)), x)
    ```
    """
    x = _check_heads("x", x, "(..., n_heads, seq, d_k)")
    *lead, n_heads, seq, d_k = x.shape
    return x.swapaxes(-2, -3).reshape(*lead, seq, n_heads * d_k)


def repeat_kv(x: np.ndarray, n_rep: int) -> np.ndarray:
    """Repeat each K/V head ``n_rep`` times: ``(..., h_kv, seq, d_k) -> (..., h_kv*n_rep, seq, d_k)``.

    Query head i then reads K/V head ``i // n_rep``, as in grouped-query attention.

    ```python
    import numpy as np
    from mha import repeat_kv

    kv = np.array([[[1.0]], [[2.0]]])  # 2 K/V heads, 1 token, d_k 1
    assert repeat_kv(kv, 2)[:, 0, 0].tolist() == [1.0, 1.0, 2.0, 2.0]
    ```
    """
    n_rep = positive_int("n_rep", n_rep)
    return _repeat(_check_heads("x", x, "(..., n_kv_heads, seq, d_k)"), n_rep)


def mean_pool_heads(w: np.ndarray, n_heads: int, n_groups: int) -> np.ndarray:
    """Average the column blocks of ``n_heads`` heads within each of ``n_groups`` groups.

    ``w (..., n_heads*d_k) -> (..., n_groups*d_k)``: group g averages heads
    ``g*n_heads/n_groups`` to ``(g+1)*n_heads/n_groups - 1``. This is how Ainslie et al.
    (2023) turn a multi-head K/V projection into a grouped-query one.

    ```python
    import numpy as np
    from mha.heads import mean_pool_heads

    w = np.array([[1.0, 3.0, 10.0, 30.0]])  # 4 heads of d_k = 1
    assert mean_pool_heads(w, 4, 2).tolist() == [[2.0, 20.0]]
    ```
    """
    w, n_heads, n_groups = _check_pool(w, n_heads, n_groups)
    d_k = w.shape[-1] // n_heads
    grouped = w.reshape(*w.shape[:-1], n_groups, n_heads // n_groups, d_k)
    with np.errstate(over="ignore"):  # refused by name just below
        mean = grouped.mean(axis=-2)
    return fits("w", "mean", mean).reshape(*w.shape[:-1], n_groups * d_k)


# --- the same on checked inputs (the layer checks its own once, on entry) ----------
# split_heads and merge_heads keep their own two lines, not a call of these: the
# exercise checkers seed their cases from the code of every function an answer calls
# (mha.pages.exercises._seed), so a change of their code changes the page's cases.


def _split(x: np.ndarray, n_heads: int) -> np.ndarray:
    *lead, seq, d_model = x.shape
    return x.reshape(*lead, seq, n_heads, d_model // n_heads).swapaxes(-2, -3)


def _merge(x: np.ndarray) -> np.ndarray:
    *lead, n_heads, seq, d_k = x.shape
    return x.swapaxes(-2, -3).reshape(*lead, seq, n_heads * d_k)


def _repeat(x: np.ndarray, n_rep: int) -> np.ndarray:
    return x if n_rep == 1 else np.repeat(x, n_rep, axis=-3)


# --- input checks -------------------------------------------------------------------


def _check_split(x: np.ndarray, n_heads: int) -> tuple[np.ndarray, int]:
    n_heads = positive_int("n_heads", n_heads)
    x = numeric_array("x", x)
    if x.ndim < 2:
        raise ValueError(
            f"x: expected at least 2 dimensions (..., seq, d_model), got shape {x.shape}"
        )
    if x.shape[-1] % n_heads or x.shape[-1] < n_heads:
        raise ValueError(
            f"x: expected a last dimension divisible by n_heads={n_heads} "
            f"(d_model = n_heads * d_k, d_k >= 1), got shape {x.shape}"
        )
    return x, n_heads


def _check_heads(name: str, x: np.ndarray, shape: str) -> np.ndarray:
    x = numeric_array(name, x)
    if x.ndim < 3:
        raise ValueError(
            f"{name}: expected at least 3 dimensions {shape}, got shape {x.shape}"
        )
    return x


def _check_pool(
    w: np.ndarray, n_heads: int, n_groups: int
) -> tuple[np.ndarray, int, int]:
    n_heads = positive_int("n_heads", n_heads)
    n_groups = positive_int("n_groups", n_groups)
    w = float_array("w", w)
    if w.ndim == 0 or n_heads % n_groups or w.shape[-1] % n_heads or not w.shape[-1]:
        raise ValueError(
            f"w: expected {n_heads} heads splitting into {n_groups} equal groups "
            f"(a last dimension n_heads * d_k, d_k >= 1), "
            f"got n_heads={n_heads}, n_groups={n_groups}, shape {w.shape}"
        )
    return w, n_heads, n_groups
