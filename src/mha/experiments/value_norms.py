"""Attention weighted by what it moves (Kobayashi et al., 2020): a head's output is
``sum_s a[t, s] f(x_s)``, ``f(x) = (x W_V + b_V) W_O`` (its rows of W_O), so a large
weight on a small ``f`` moves little.
"""

from __future__ import annotations

import numpy as np

from mha.heads import repeat_kv, split_heads
from mha.layer import MultiHeadAttention


def value_norms(attention: MultiHeadAttention, x: np.ndarray) -> np.ndarray:
    """``|f(x_s)|`` per head and token ``(..., h, n)``, from the input ``x (..., n,
    d_model)``.

    ```python
    import numpy as np
    from mha import MultiHeadAttention
    from mha.experiments.value_norms import value_norms

    layer = MultiHeadAttention(d_model=8, n_heads=4, n_kv_heads=2)
    x = np.random.default_rng(0).normal(size=(1, 5, 8))
    norms = value_norms(layer, x)
    v = x[0, 2] @ layer.w_v[:, 0:2]  # head 1 reads K/V head 0
    assert norms.shape == (1, 4, 5)
    assert np.isclose(norms[0, 1, 2], np.linalg.norm(v @ layer.w_o[2:4]))
    ```
    """
    a = attention
    v = x @ a.w_v.astype(x.dtype, copy=False)
    if a.b_v is not None:
        v = v + a.b_v.astype(x.dtype, copy=False)
    v = repeat_kv(split_heads(v, a.n_kv_heads), a.n_heads // a.n_kv_heads)
    w_o = a.w_o.astype(x.dtype, copy=False).reshape(a.n_heads, a.d_k, a.d_model)
    # |v W_O|² = v (W_O W_O^T) v^T: a d_k x d_k Gram per head, not d_model-wide writes
    squared = ((v @ (w_o @ w_o.swapaxes(-1, -2))) * v).sum(axis=-1)  # (..., h, n)
    return np.sqrt(np.maximum(squared, 0))


def weighted_by_norm(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """``weights (..., h, n_q, n_k)`` times ``norms (..., h, n_k)``, rows renormalised:
    the share of what each key moves.

    ```python
    import numpy as np
    from mha.experiments.value_norms import weighted_by_norm

    weights = np.array([[[0.9, 0.1]]])  # one head, one query: most weight on key 0
    shares = weighted_by_norm(weights, np.array([[0.1, 1.0]]))  # key 0 moves little
    assert np.allclose(shares, [[[0.9 * 0.1 / 0.19, 0.1 / 0.19]]])
    ```
    """
    weights, norms = np.asarray(weights), np.asarray(norms)
    if norms.shape != weights.shape[:-2] + weights.shape[-1:]:
        raise ValueError(
            f"norms: expected shape {weights.shape[:-2] + weights.shape[-1:]} "
            f"(one per head and key), got {norms.shape}"
        )
    moved = weights * norms[..., None, :]
    return moved / moved.sum(axis=-1, keepdims=True)
