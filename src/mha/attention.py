"""Softmax, scaled dot-product attention and masks.

Masks are boolean and follow the PyTorch SDPA convention: ``True`` means the query
may attend to the key. They broadcast against the score array ``(..., q_len, k_len)``.
The input checks are at the bottom of the module.
"""

from __future__ import annotations

import math

import numpy as np

from mha.support.validate import (
    ArgumentTypeError,
    allocatable,
    as_array,
    fits,
    flag,
    float_array,
    integer,
    positive_int,
)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``; ``-inf`` entries get weight 0.

    Subtracting the row maximum before ``exp`` keeps logits of ±1e4 finite. A row
    whose every entry is ``-inf`` (fully masked), or that has no entry, has no
    distribution and raises; an array with no rows gives an empty array.

    ```python
    import numpy as np
    from mha import softmax

    w = softmax(np.array([1e4, 0.0, -np.inf]))
    assert np.allclose(w, [1.0, 0.0, 0.0])
    ```
    """
    x, axis = check_softmax_inputs(x, axis)
    return _softmax(x, axis, blame="x")


def scaled_dot_product_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q kᵀ / √d_k) v, with any leading batch dimensions.

    Shapes: ``q (..., q_len, d_k)``, ``k (..., k_len, d_k)``, ``v (..., k_len, d_v)``,
    ``mask`` boolean broadcastable to ``(..., q_len, k_len)``. Returns
    ``(output (..., q_len, d_v), weights (..., q_len, k_len))`` in q's dtype.

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
    q, k, v, mask = check_attention_inputs(q, k, v, mask)
    return attend(q, k, v, mask)


def attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The formula itself, on inputs already checked (``scaled_dot_product_attention``).

    The layer checks its input ``x`` once and calls this on its projections, so a
    decoding step does not scan the whole K/V cache again on every token.

    ```python
    import numpy as np
    from mha.attention import attend

    out, w = attend(np.ones((1, 2)), np.ones((3, 2)), np.arange(3.0)[:, None])
    assert np.allclose(w, 1 / 3) and np.isclose(out[0, 0], 1.0)
    ```
    """
    d_k = q.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):  # refused below, by name
        scores = (q * q.dtype.type(1 / math.sqrt(d_k))) @ k.swapaxes(-1, -2)
    fits("q, k", "scores q·kᵀ/√d_k", scores, mask)
    if mask is not None:
        scores = np.where(mask, scores, q.dtype.type(-np.inf))  # False: may not attend
    weights = _softmax(scores, axis=-1, masked=mask is not None)
    return weights @ v, weights  # an average of v's rows: cannot overflow


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
    allocatable("n", (n, n), np.dtype(bool))
    return np.tri(n, dtype=bool)


def padding_mask(lengths: np.ndarray, n: int, *, left: bool = False) -> np.ndarray:
    """``(batch, n)`` boolean: True where sequence b holds a real token, False on padding.

    Sequence b has ``lengths[b]`` real tokens in a batch padded to ``n`` positions:
    on the right (tokens at 0 .. length-1) or, with ``left=True``, on the left (tokens
    at n-length .. n-1). As a key mask it broadcasts as ``valid[:, None, :]`` against
    ``(batch, q_len, k_len)`` scores, ``valid[:, None, None, :]`` with a heads axis.

    ```python
    from mha.attention import padding_mask

    assert padding_mask([3, 1], 3).tolist() == [[True] * 3, [True, False, False]]
    assert padding_mask([3, 1], 3, left=True)[1].tolist() == [False, False, True]
    ```
    """
    n, left = positive_int("n", n), flag("left", left)
    lengths = as_array("lengths", lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise ValueError(
            f"lengths: expected one integer per sequence, shape (batch,), got "
            f"{lengths.shape} {lengths.dtype}"
        )
    if ((lengths < 0) | (lengths > n)).any():
        raise ValueError(f"lengths: expected counts from 0 to n={n}, got {lengths}")
    positions = np.arange(n)
    if left:
        return positions >= n - lengths[:, None]
    return positions < lengths[:, None]


def tiled_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    causal: bool = False,
    lengths: np.ndarray | None = None,
    block: int = 128,
) -> np.ndarray:
    """Attention that never forms the n×n scores: an online softmax over key blocks.

    Same result as ``attend`` (to rounding), the output only. Queries go a block at a
    time; for each, keys and values are read block by block while each query keeps a
    running maximum ``m`` of its scores, the running sum ``s`` of ``exp(score - m)``
    and the running output ``o`` (Milakov & Gimelshein 2018; FlashAttention, Dao et
    al. 2022). When a block brings a larger maximum, ``s`` and ``o`` are rescaled by
    ``exp(m_old - m_new)`` before the block is added; at the end ``o / s`` is the
    softmax-weighted sum. At most ``block × block`` scores exist at once per query
    block, instead of ``n_q × n_k``; the multiply-adds are the same.

    Masks are built per block, never whole: ``causal`` (query i sees keys 0..i) and
    ``lengths`` (batch,), the number of real keys of each sequence of the batch (the
    first axis), the rest padding. A query with no key to attend to is refused, as
    ``attend`` refuses it.

    ```python
    import numpy as np
    from mha.attention import attend, causal_mask, tiled_attention

    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 300, 16)) for _ in range(3))  # (batch, n, d_k)
    out = tiled_attention(q, k, v, causal=True, block=64)  # 64 does not divide 300
    assert np.allclose(out, attend(q, k, v, causal_mask(300))[0], atol=1e-12)
    ```
    """
    q, k, v, _ = check_attention_inputs(q, k, v, None)
    causal = flag("causal", causal)
    block = positive_int("block", block)
    lengths = _check_lengths(lengths, q, k.shape[-2])
    scale = q.dtype.type(1 / math.sqrt(q.shape[-1]))
    minus_inf = q.dtype.type(-np.inf)
    n_q, n_k = q.shape[-2], k.shape[-2]
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.empty((*lead, n_q, v.shape[-1]), dtype=q.dtype)
    for i0 in range(0, n_q, block):
        i1 = min(i0 + block, n_q)
        qi = q[..., i0:i1, :] * scale
        m = np.full((*lead, i1 - i0, 1), minus_inf, dtype=q.dtype)  # running max
        s = np.zeros_like(m)  # running sum of exp(score - m)
        o = np.zeros((*lead, i1 - i0, v.shape[-1]), dtype=q.dtype)  # running output
        for j0 in range(0, i1 if causal else n_k, block):  # causal: no key after i1
            j1 = min(j0 + block, n_k)
            with np.errstate(over="ignore", invalid="ignore"):  # refused by name
                scores = qi @ k[..., j0:j1, :].swapaxes(-1, -2)  # (..., block, block)
            allowed = _block_mask(i0, i1, j0, j1, causal, lengths, q.ndim)
            fits("q, k", "scores q·kᵀ/√d_k", scores, allowed, (i0, j0))  # as attend
            if allowed is not None:
                scores = np.where(allowed, scores, minus_inf)
            m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))
            shift = np.where(m_new == minus_inf, 0, m_new)  # a row masked so far
            rescale = np.exp(m - shift)  # 0 while nothing was seen, else <= 1
            p = np.exp(scores - shift)
            s = s * rescale + p.sum(axis=-1, keepdims=True)
            o = o * rescale + p @ v[..., j0:j1, :]
            m = m_new
        _refuse_fully_masked_rows(m, axis=-1, blame="lengths")
        out[..., i0:i1, :] = o / s
    return out


def _block_mask(
    i0: int, i1: int, j0: int, j1: int, causal: bool, lengths, ndim: int
) -> np.ndarray | None:
    """Which keys j0..j1 the queries i0..i1 may attend to, or None: all of them."""
    keys = np.arange(j0, j1)
    allowed = None
    if causal:
        allowed = keys <= np.arange(i0, i1)[:, None]  # (block, block)
    if lengths is not None:
        real = keys < lengths.reshape(-1, *[1] * (ndim - 1))  # (batch, 1, ..., block)
        allowed = real if allowed is None else allowed & real
    return allowed


def _softmax(
    x: np.ndarray, axis: int = -1, masked: bool = True, blame: str = "mask"
) -> np.ndarray:
    """exp(x - max) / sum: the softmax of ``x``, unchecked. ``masked=False`` says no
    entry is ``-inf``, so no row can be fully masked and that check is skipped; a
    fully masked row is refused naming ``blame``."""
    if x.size == 0:  # no rows (an empty sequence): nothing to normalise
        return np.empty_like(x)
    peak = x.max(axis=axis, keepdims=True)
    if masked:
        _refuse_fully_masked_rows(peak, axis, blame)
    with np.errstate(over="ignore"):  # a gap past the dtype's range: weight 0
        e = np.exp(x - peak)
    return e / e.sum(axis=axis, keepdims=True)


# --- input checks -------------------------------------------------------------------


def check_softmax_inputs(x: np.ndarray, axis: int) -> tuple[np.ndarray, int]:
    """``x`` as a float array and ``axis`` as one of its axes, or a clear error.

    ```python
    import numpy as np
    from mha.attention import check_softmax_inputs

    x, axis = check_softmax_inputs([[1.0, 2.0]], np.int64(-1))
    assert x.shape == (1, 2) and axis == 1
    ```
    """
    x = float_array("x", x, allow_neg_inf=True)
    if x.ndim == 0:
        raise ValueError(
            f"x: expected at least 1 dimension (a row of logits), got a scalar {x}"
        )
    axis = integer("axis", axis, minimum=-x.ndim)
    if axis >= x.ndim:
        raise ValueError(
            f"axis: expected an axis of x (shape {x.shape}), from {-x.ndim} to "
            f"{x.ndim - 1}, got {axis}"
        )
    axis %= x.ndim
    if x.shape[axis] == 0 and math.prod(x.shape[:axis] + x.shape[axis + 1 :]):
        raise ValueError(
            f"x: expected at least one logit per row along axis {axis}, "
            f"got shape {x.shape}"
        )
    return x, axis


def check_attention_inputs(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``q, k, v, mask`` as arrays, or a ``ValueError`` naming what is wrong.

    ```python
    import numpy as np
    from mha.attention import check_attention_inputs

    q, k, v, mask = check_attention_inputs(np.ones((2, 4)), np.ones((3, 4)),
                                           np.ones((3, 5)), None)
    assert mask is None and v.shape == (3, 5)
    ```
    """
    q, k, v = float_array("q", q), float_array("k", k), float_array("v", v)
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
    if q.shape[-1] == 0:
        raise ValueError(
            f"q: expected a last dimension d_k >= 1 (√d_k scales the scores), "
            f"got shape {q.shape}"
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
    if k.shape[-2] == 0 and q.shape[-2]:
        raise ValueError(
            f"k: expected at least one key for the {q.shape[-2]} queries of q, "
            f"got shape {k.shape}"
        )
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            "q, k, v: expected broadcastable leading dimensions, got shapes "
            f"{q.shape}, {k.shape}, {v.shape}"
        ) from None
    if mask is not None:
        mask = check_mask(mask, (*lead, q.shape[-2], k.shape[-2]))
    return q, k, v, mask


def check_mask(mask: np.ndarray, scores_shape: tuple[int, ...]) -> np.ndarray:
    """``mask`` as a boolean array broadcastable to ``scores_shape``, or a ``ValueError``.

    A 2-D mask whose rows could be the batch's (a ``(batch, key)`` padding mask) as
    well as the queries' (``batch == q_len``) is refused: its shape must say which.
    Only ``causal_mask(n)`` is read as ``(query, key)`` without being told.

    ```python
    import numpy as np
    from mha.attention import check_mask

    assert check_mask(np.ones((1, 3), bool), (2, 4, 3)).shape == (1, 3)
    try:  # (2, 2) could be (batch, key) padding or (query, key)
        check_mask(np.ones((2, 2), bool), (2, 2, 2))
    except ValueError as error:
        assert "ambiguous" in str(error)
    ```
    """
    mask = as_array("mask", mask)
    if mask.dtype != bool:
        raise ArgumentTypeError(
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
    batch, n_q = scores_shape[0], scores_shape[-2]
    if (
        mask.ndim == 2
        and len(scores_shape) > 2
        and mask.shape[0] == batch == n_q > 1
        and not np.array_equal(mask, np.tri(*mask.shape, dtype=bool))  # causal_mask
    ):
        raise ValueError(
            f"mask: a {mask.shape} mask is ambiguous when batch = query length = "
            f"{batch}: a (batch, key) padding mask or a (query, key) mask? Say "
            "which with its shape: mask[:, None, None, :] (or mask[:, None, :] "
            "without heads) for padding, mask[None] for (query, key)"
        )
    return mask


def _refuse_fully_masked_rows(peak: np.ndarray, axis: int, blame: str) -> None:
    if (peak == -np.inf).any():
        row = np.argwhere(np.squeeze(peak, axis=axis) == -np.inf)[0]
        where = f" (row {tuple(int(i) for i in row)})" if row.size else ""
        raise ValueError(
            f"{blame}: expected at least one key each query may attend to (an entry "
            f"above -inf in every row), got a row in which every key is masked{where}"
        )


def _check_lengths(lengths: object, q: np.ndarray, n_k: int) -> np.ndarray | None:
    if lengths is None:
        return None
    lengths = as_array("lengths", lengths)
    if q.ndim < 3 or lengths.shape != q.shape[:1] or lengths.dtype.kind not in "iu":
        raise ValueError(
            f"lengths: expected one integer per sequence of the batch, shape "
            f"({q.shape[0] if q.ndim >= 3 else 'batch'},), got {lengths.shape} "
            f"{lengths.dtype}"
        )
    if ((lengths < 0) | (lengths > n_k)).any():
        raise ValueError(
            f"lengths: expected counts of real keys from 0 to the {n_k} keys of k, "
            f"got {lengths}"
        )
    return lengths
