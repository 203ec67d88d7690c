"""Tiled attention (the online softmax) equals the formula, and never forms n×n.

``tiled_attention`` against ``attend`` on random shapes, causal and length masks and
block sizes that do not divide n, to 1e-12 in float64; both refuse a query with no
key; and its peak memory at n = 2,048 (tracemalloc sees NumPy's buffers) is at most
an eighth of the naive path's, which holds three n×n float64 arrays.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.attention import (
    attend,
    causal_mask,
    scaled_dot_product_attention,
    tiled_attention,
)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 3),  # batch
    st.integers(1, 40),  # n
    st.integers(1, 9),  # d_k
    st.integers(1, 17),  # block
    st.booleans(),  # causal
    st.booleans(),  # padded
    st.integers(0, 2**32 - 1),
)
def test_tiled_equals_attend(batch, n, d_k, block, causal, padded, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(batch, 2, n, d_k)) for _ in range(3))  # 2 heads
    lengths = rng.integers(1, n + 1, size=batch) if padded else None
    mask = np.ones((batch, 1, n, n), bool)
    if causal:
        mask &= causal_mask(n)
    if padded:
        mask &= np.arange(n) < lengths[:, None, None, None]
    expected, _ = attend(q, k, v, mask)
    out = tiled_attention(q, k, v, causal=causal, lengths=lengths, block=block)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


def test_float32_stays_float32():
    q = np.random.default_rng(0).normal(size=(1, 5, 4)).astype(np.float32)
    out = tiled_attention(q, q, q, block=2)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, attend(q, q, q)[0], atol=1e-6)


def test_both_refuse_a_query_with_no_key():
    q = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="lengths: expected at least one key"):
        tiled_attention(q, q, q, lengths=np.array([3, 0]))
    mask = np.arange(3) < np.array([3, 0])[:, None, None]
    with pytest.raises(ValueError, match="at least one key"):
        attend(q, q, q, mask)


@pytest.mark.parametrize(
    "lengths, message",
    [
        (np.array([1.5]), "lengths: expected one integer"),
        (np.array([-1]), "from 0 to the 3 keys of k"),
        (np.array([4]), r"^lengths: expected counts of real keys from 0 to the 3 keys"),
    ],
)
def test_bad_lengths_are_named(lengths, message):
    q = np.ones((1, 3, 4))
    with pytest.raises(ValueError, match=message):
        tiled_attention(q, q, q, lengths=lengths)


def _peak(fn) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_at_2048_tokens_the_peak_is_under_an_eighth_of_the_naive_path():
    n, d_k = 2048, 64
    q, k, v = (np.random.default_rng(i).normal(size=(n, d_k)) for i in range(3))
    naive = _peak(lambda: attend(q, k, v, causal_mask(n)))
    tiled = _peak(lambda: tiled_attention(q, k, v, causal=True))
    assert naive >= 3 * n * n * 8  # scores, masked scores, weights: n² float64 each
    assert tiled <= naive / 8, (tiled, naive)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # the error, not a warning first
def test_scores_that_overflow_are_refused_as_attend_refuses_them(dtype):
    big = (
        np.sqrt(np.finfo(dtype).max).astype(dtype) * 4
    )  # q·k overflows, q and k do not
    q = np.full((1, 3, 2), big, dtype)
    message = r"^q, k: expected values whose scores q·kᵀ/√d_k fits in"
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(q, q, q)
    with pytest.raises(ValueError, match=message):
        tiled_attention(q, q, q, block=2)
    late = np.ones((1, 3, 2), dtype)
    late[0, 2] = big  # only query 2 with key 2 overflows: named at its place
    with pytest.raises(ValueError, match=r"at index \(0, 2, 2\)"):
        tiled_attention(late, late, late, block=2)
    # hidden by the mask (a padding key), an overflow is harmless, as in attend
    k = q.copy()
    k[0, 0] = k[0, 1] = dtype(1)
    out = tiled_attention(np.ones_like(q), k, q, lengths=np.array([2]), block=2)
    assert np.isfinite(out).all()
