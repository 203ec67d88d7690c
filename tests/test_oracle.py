"""The core against an independent reference: multi-head attention in a dozen lines.

The oracle is written as picoGPT writes it (github.com/jaymody/picoGPT, gpt2.py): one
head at a time, a plain softmax, an additive mask, float64 throughout, and nothing
imported from ``mha``. It is slow and obvious; the core must agree with it on random
shapes (MHA, GQA, MQA), masks and dtypes, so the core is checked where torch is absent.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mha import MultiHeadAttention, causal_mask, scaled_dot_product_attention


def oracle_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def oracle_attention(q, k, v, allowed):  # [n_q, d_k] [n_k, d_k] [n_k, d_v] [n_q, n_k]
    w = oracle_softmax(q @ k.T / np.sqrt(q.shape[-1]) + np.where(allowed, 0.0, -1e10))
    return w @ v, w


def oracle_mha(x, w_q, w_k, w_v, w_o, b, n_head, n_kv_head, allowed):  # x [n, d_model]
    q, k, v = x @ w_q + b[0], x @ w_k + b[1], x @ w_v + b[2]
    qs, ks, vs = (
        np.split(a, m, axis=-1)
        for a, m in ((q, n_head), (k, n_kv_head), (v, n_kv_head))
    )
    group = n_head // n_kv_head  # query head i reads K/V head i // group
    heads = [
        oracle_attention(qs[i], ks[i // group], vs[i // group], allowed[i])
        for i in range(n_head)
    ]
    return np.hstack([o for o, _ in heads]) @ w_o + b[3], np.stack(
        [w for _, w in heads]
    )


settings.register_profile("oracle", max_examples=50, deadline=None)
F64 = np.float64


def tolerance(dtype: np.dtype) -> dict[str, float]:
    return (
        {"rtol": 1e-10, "atol": 1e-12} if dtype == F64 else {"rtol": 2e-4, "atol": 2e-5}
    )


@settings(settings.get_profile("oracle"))
@given(
    st.integers(1, 6),  # query positions
    st.integers(1, 6),  # key positions
    st.integers(1, 9),  # d_k
    st.integers(1, 5),  # d_v
    st.integers(1, 3),  # leading batch size
    st.sampled_from([np.float32, np.float64]),
    st.sampled_from(["none", "random"]),
    st.integers(0, 2**16),
)
def test_attention_matches_the_oracle(n_q, n_k, d_k, d_v, batch, dtype, kind, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (
        rng.normal(size=(batch, *s)) for s in ((n_q, d_k), (n_k, d_k), (n_k, d_v))
    )
    mask = None if kind == "none" else rng.random((batch, n_q, n_k)) < 0.6
    if mask is not None:
        mask[..., rng.integers(n_k)] = True
    out, weights = scaled_dot_product_attention(
        q.astype(dtype), k.astype(dtype), v.astype(dtype), mask
    )
    assert out.dtype == weights.dtype == dtype
    allowed = np.ones((batch, n_q, n_k), bool) if mask is None else mask
    for b in range(batch):
        want_out, want_w = oracle_attention(q[b], k[b], v[b], allowed[b])
        np.testing.assert_allclose(weights[b], want_w, **tolerance(dtype))
        np.testing.assert_allclose(out[b], want_out, **tolerance(dtype))


@settings(settings.get_profile("oracle"))
@given(
    st.sampled_from([1, 2, 3, 4]),  # K/V heads (1: MQA)
    st.sampled_from([1, 2, 3]),  # query heads per K/V head (1: MHA, more: GQA)
    st.integers(1, 6),  # d_k
    st.integers(1, 7),  # tokens
    st.integers(1, 2),  # batch
    st.booleans(),  # biases
    st.sampled_from([np.float32, np.float64]),
    st.sampled_from(["none", "causal", "random"]),
    st.integers(0, 2**16),
)
def test_layer_matches_the_oracle(n_kv, group, d_k, n, batch, bias, dtype, kind, seed):
    n_heads = n_kv * group
    d_model = n_heads * d_k
    rng = np.random.default_rng(seed)
    layer = MultiHeadAttention(d_model, n_heads, n_kv, bias=bias, rng=rng, dtype=dtype)
    if bias:  # non-zero biases, so that a dropped bias would show
        for name in ("b_q", "b_k", "b_v", "b_o"):
            setattr(
                layer, name, rng.normal(size=getattr(layer, name).shape).astype(dtype)
            )
    x = rng.normal(size=(batch, n, d_model)).astype(dtype)
    mask = {"none": None, "causal": causal_mask(n)}.get(kind)
    if kind == "random":
        mask = rng.random((batch, n_heads, n, n)) < 0.6
        mask[..., rng.integers(n)] = True
    out, weights = layer(x, mask=mask)
    assert out.dtype == weights.dtype == dtype
    assert out.shape == x.shape and weights.shape == (batch, n_heads, n, n)
    w = [np.asarray(a, F64) for a in (layer.w_q, layer.w_k, layer.w_v, layer.w_o)]
    b = [
        np.zeros(1) if a is None else np.asarray(a, F64)
        for a in (layer.b_q, layer.b_k, layer.b_v, layer.b_o)
    ]
    allowed = np.broadcast_to(True if mask is None else mask, (batch, n_heads, n, n))
    for i in range(batch):
        want_out, want_w = oracle_mha(
            x[i].astype(F64), *w, b, n_heads, n_kv, allowed[i]
        )
        np.testing.assert_allclose(weights[i], want_w, **tolerance(dtype))
        np.testing.assert_allclose(out[i], want_out, **tolerance(dtype))


def test_the_oracle_is_not_the_core():
    """A planted fault: the oracle notices a softmax over the wrong axis."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4, 2))
    out, _ = scaled_dot_product_attention(q, k, v)
    want, _ = oracle_attention(q, k, v, np.ones((4, 4), bool))
    np.testing.assert_allclose(out, want, rtol=1e-12)
    w_wrong = np.exp(q @ k.T / np.sqrt(2))
    w_wrong /= w_wrong.sum(axis=0, keepdims=True)
    assert not np.allclose(w_wrong @ v, want)


def oracle_cross(x, memory, w_q, w_k, w_v, w_o, n_head, n_kv_head):
    """Cross-attention by hand: queries from ``x``, keys and values from ``memory``."""
    q, k, v = x @ w_q, memory @ w_k, memory @ w_v
    qs, ks, vs = (
        np.split(a, m, axis=-1)
        for a, m in ((q, n_head), (k, n_kv_head), (v, n_kv_head))
    )
    group = n_head // n_kv_head
    allowed = np.ones((len(x), len(memory)), bool)
    heads = [
        oracle_attention(qs[i], ks[i // group], vs[i // group], allowed)[0]
        for i in range(n_head)
    ]
    return np.hstack(heads) @ w_o


@settings(settings.get_profile("oracle"))
@given(
    st.integers(1, 6),  # query positions
    st.integers(1, 6),  # memory positions
    st.sampled_from([(4, 4), (4, 2), (4, 1), (2, 2)]),  # (h, h_kv)
    st.integers(0, 2**32 - 1),
)
def test_cross_attention_matches_the_oracle(n_q, n_kv, heads, seed):
    """``layer(x, kv=memory)``: queries from one sequence, keys and values from
    another, with grouped-query sharing, as the oracle computes it."""
    n_head, n_kv_head = heads
    layer = MultiHeadAttention(8, n_head, n_kv_head, rng=np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    x, memory = rng.normal(size=(n_q, 8)), rng.normal(size=(n_kv, 8))
    out, weights = layer(x, kv=memory)
    expected = oracle_cross(
        x, memory, layer.w_q, layer.w_k, layer.w_v, layer.w_o, n_head, n_kv_head
    )
    assert weights.shape == (n_head, n_q, n_kv)
    np.testing.assert_allclose(out, expected, **tolerance(F64))
