"""Softmax, scaled dot-product attention and masks.

Masks are boolean and follow the PyTorch SDPA convention: ``True`` means the query
may attend to the key. They broadcast against the score array ``(..., q_len, k_len)``.
"""

from __future__ import annotations

import math

import numpy as np

from mha._validate import float_array, positive_int
from mha.threads import on_every_core


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``; ``-inf`` entries get weight 0.

    Subtracting the row maximum before ``exp`` keeps logits of ±1e4 finite. A row
    whose every entry is ``-inf`` (fully masked) has no distribution and raises.

    ```python
    import numpy as np
    from mha import softmax

    w = softmax(np.array([1e4, 0.0, -np.inf]))
    assert np.allclose(w, [1.0, 0.0, 0.0])
    ```
    """
    x = float_array("x", x, allow_neg_inf=True)
    return _softmax_inplace(np.array(x, copy=True), axis)


def _softmax_inplace(
    scores: np.ndarray, axis: int = -1, masked: bool = True
) -> np.ndarray:
    """Softmax that overwrites ``scores`` (the attention hot path avoids a copy).

    ``masked=False`` says no entry is ``-inf`` (no mask was applied), so no row can be
    fully masked and the check for one is skipped.
    """
    peak = scores.max(axis=axis, keepdims=True)
    if masked and (peak == -np.inf).any():
        row = np.argwhere(np.squeeze(peak, axis=axis) == -np.inf)[0]
        where = f" (row {tuple(int(i) for i in row)})" if row.size else ""
        raise ValueError(
            f"mask: every key is masked in a row{where}; a query must be allowed "
            "to attend to at least one key"
        )
    scores -= peak
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=axis, keepdims=True)
    return scores


def causal_mask(n: int) -> np.ndarray:
    """The ``(n, n)`` boolean mask letting token i attend to tokens 0..i.

    ```python
    from mha import causal_mask

    assert causal_mask(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]
    ```
    """
    n = positive_int("n", n)
    return np.tri(n, dtype=bool)


# Queries are processed in blocks of about this many score entries (2 MiB of float32),
# so that each block's scores, softmax and weighted sum run while it sits in cache.
# When there are several blocks, they run on every core (``mha.threads``). The size
# was the fastest of 1, 2 and 4 MiB on two threads (tests/bench/torch_layer.py shapes).
BLOCK_ENTRIES = 1 << 19


def scaled_dot_product_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q kᵀ / √d_k) v, with any leading batch dimensions.

    Shapes: ``q (..., q_len, d_k)``, ``k (..., k_len, d_k)``, ``v (..., k_len, d_v)``,
    ``mask`` boolean broadcastable to ``(..., q_len, k_len)``. Returns
    ``(output (..., q_len, d_v), weights (..., q_len, k_len))`` in q's dtype.

    The arithmetic is the one line of the formula; it runs over blocks of queries
    only so that each block stays in the processor's cache.

    ```python
    import numpy as np
    from mha import scaled_dot_product_attention

    q = np.array([[1.0, 0.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([[10.0], [20.0]])
    out, w = scaled_dot_product_attention(q, k, v)
    assert np.allclose(w.sum(-1), 1) and 10 < out[0, 0] < 15
    ```
    """
    q = float_array("q", q)
    k = float_array("k", k)
    v = float_array("v", v)
    lead = _check_qkv(q, k, v)
    if mask is not None:
        mask = _check_mask(mask, (*lead, q.shape[-2], k.shape[-2]))
    return _attention(q, k, v, mask)


def _attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The computation of ``scaled_dot_product_attention`` on inputs already checked.

    The layer checks its input once and calls this directly, so a decoding step does
    not re-scan the whole K/V cache for NaNs on every token.
    """
    lead = q.shape[:-2]
    if not lead == k.shape[:-2] == v.shape[:-2]:
        lead = np.broadcast_shapes(lead, k.shape[:-2], v.shape[:-2])
    q_len, k_len = q.shape[-2], k.shape[-2]
    if mask is not None:
        mask = np.broadcast_to(mask, (*lead, q_len, k_len))
    q = q * q.dtype.type(1 / math.sqrt(q.shape[-1]))  # scale the queries: fewer entries
    k_t = k.swapaxes(-1, -2)  # (..., d_k, k_len)
    weights = np.empty((*lead, q_len, k_len), q.dtype)
    rows = max(1, BLOCK_ENTRIES // max(1, math.prod(lead) * k_len))
    if q_len <= rows:  # one block (a decoding step, say)
        return _attend_block(q, k_t, v, mask, weights), weights
    output = np.empty((*lead, q_len, v.shape[-1]), q.dtype)

    def attend(start: int) -> None:
        block = slice(start, start + rows)  # views: results are written in place
        part = None if mask is None else mask[..., block, :]
        scores, out = weights[..., block, :], output[..., block, :]
        _attend_block(q[..., block, :], k_t, v, part, scores, out)

    on_every_core(attend, range(0, q_len, rows))
    return output, weights


def _attend_block(
    q: np.ndarray,
    k_t: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None,
    weights: np.ndarray,
    output: np.ndarray | None = None,
) -> np.ndarray:
    """softmax(q k_t) v for queries already scaled: the weights are written into
    ``weights``, the result into ``output`` (``None``: a new array), which is returned."""
    np.matmul(q, k_t, out=weights)
    if mask is not None:
        np.copyto(weights, q.dtype.type(-np.inf), where=~mask)
    _softmax_inplace(weights, masked=mask is not None)
    return np.matmul(weights, v, out=output)


def _check_qkv(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, ...]:
    """Check shapes and dtypes; return the broadcast leading dimensions."""
    for name, arr in (("q", q), ("k", k), ("v", v)):
        if arr.ndim < 2:
            raise ValueError(
                f"{name}: expected at least 2 dimensions (..., seq, d), "
                f"got shape {arr.shape}"
            )
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(
            f"k, v: expected the dtype of q ({q.dtype}), got {k.dtype} and {v.dtype}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"k: expected last dimension d_k={q.shape[-1]} to match q {q.shape}, "
            f"got shape {k.shape}"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"v: expected {k.shape[-2]} rows (one per key, k has shape {k.shape}), "
            f"got shape {v.shape}"
        )
    try:
        return np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            "q, k, v: expected broadcastable leading dimensions, got shapes "
            f"{q.shape}, {k.shape}, {v.shape}"
        ) from None


def _check_mask(mask: np.ndarray, scores_shape: tuple[int, ...]) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(
            f"mask: expected a boolean array (True = may attend), got dtype {mask.dtype}"
        )
    try:
        shape = np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        shape = None
    if shape != scores_shape:
        raise ValueError(
            f"mask: expected a shape broadcastable to the scores {scores_shape}, "
            f"got {mask.shape}"
        )
    return mask
