"""Properties of the core: softmax, attention, heads and the layer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import mha
from mha import (
    MultiHeadAttention,
    causal_mask,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

finite = st.floats(-50, 50, allow_nan=False, width=64)
settings.register_profile("mha", max_examples=40, deadline=None)
settings.load_profile("mha")


@st.composite
def layer_and_input(draw, dtype=np.float64):
    """A random layer shape (d_model, h, h_kv) and an input batch for it."""
    n_kv = draw(st.sampled_from([1, 2, 4]))
    n_heads = n_kv * draw(st.sampled_from([1, 2]))
    d_model = n_heads * draw(st.sampled_from([1, 2, 3]))
    seq = draw(st.integers(1, 6))
    batch = draw(st.integers(1, 2))
    x = draw(arrays(dtype, (batch, seq, d_model), elements=st.floats(-3, 3, width=32)))
    bias = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    layer = MultiHeadAttention(
        d_model, n_heads, n_kv, bias=bias, rng=np.random.default_rng(seed)
    )
    if bias:  # non-zero biases, so that a dropped bias would show
        for name in ("b_q", "b_k", "b_v", "b_o"):
            setattr(
                layer,
                name,
                np.random.default_rng(seed).normal(size=getattr(layer, name).shape),
            )
    return layer, x


@given(
    arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite)
)
def test_softmax_rows_are_distributions(x):
    w = softmax(x)
    assert (w >= 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)


def test_softmax_is_stable_for_huge_logits_and_masks():
    w = softmax(np.array([[1e4, -1e4, 0.0], [-np.inf, 1e4, 1e4]]))
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, [[1, 0, 0], [0, 0.5, 0.5]])


def test_softmax_refuses_a_fully_masked_row():
    with pytest.raises(ValueError, match="every key is masked"):
        softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))


@pytest.mark.parametrize(
    "x, message",
    [
        (np.array([1, 2]), "floating-point"),
        (np.array([1.0, np.nan]), "finite"),
        (np.array([np.inf, 0.0]), "finite"),
    ],
)
def test_softmax_refuses_bad_input(x, message):
    with pytest.raises(ValueError, match=message):
        softmax(x)


@given(layer_and_input())
def test_attention_weights_are_distributions(case):
    layer, x = case
    _, weights = layer(x)
    assert weights.shape == (x.shape[0], layer.n_heads, x.shape[1], x.shape[1])
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)


@given(layer_and_input(), st.randoms())
def test_self_attention_is_permutation_equivariant(case, random):
    layer, x = case
    order = list(range(x.shape[1]))
    random.shuffle(order)
    out, weights = layer(x)
    out_perm, weights_perm = layer(x[:, order])
    np.testing.assert_allclose(out_perm, out[:, order], atol=1e-10)
    np.testing.assert_allclose(
        weights_perm, weights[:, :, order][..., order], atol=1e-10
    )


@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.integers(1, 5), st.just(12)),
        elements=finite,
    ),
    st.sampled_from([1, 2, 3, 4, 6, 12]),
)
def test_merge_undoes_split(x, n_heads):
    heads = split_heads(x, n_heads)
    assert heads.shape == (x.shape[0], n_heads, x.shape[1], 12 // n_heads)
    np.testing.assert_array_equal(merge_heads(heads), x)


def test_split_gives_head_i_columns_i_dk_to_i_plus_1_dk():
    x = np.arange(24.0).reshape(2, 12)
    heads = split_heads(x, 3)
    for i in range(3):
        np.testing.assert_array_equal(heads[i], x[:, 4 * i : 4 * (i + 1)])


@given(layer_and_input())
def test_each_head_is_plain_attention_on_projected_inputs(case):
    layer, x = case
    _, weights = layer(x)
    group, d_k = layer.n_heads // layer.n_kv_heads, layer.d_k

    def project(w, b, head):
        y = x @ w[:, head * d_k : (head + 1) * d_k]
        return y if b is None else y + b[head * d_k : (head + 1) * d_k]

    for i in range(layer.n_heads):
        q = project(layer.w_q, layer.b_q, i)
        k = project(layer.w_k, layer.b_k, i // group)
        v = project(layer.w_v, layer.b_v, i // group)
        _, w_i = scaled_dot_product_attention(q, k, v)
        np.testing.assert_allclose(weights[:, i], w_i, atol=1e-12)


@given(layer_and_input())
def test_output_is_the_sum_of_each_heads_write_through_its_rows_of_w_o(case):
    layer, x = case
    out, weights = layer(x)
    group, d_k = layer.n_heads // layer.n_kv_heads, layer.d_k
    v = x @ layer.w_v + (0 if layer.b_v is None else layer.b_v)
    total = 0 if layer.b_o is None else layer.b_o
    for i in range(layer.n_heads):
        kv = i // group
        head_out = weights[:, i] @ v[..., kv * d_k : (kv + 1) * d_k]
        total = total + head_out @ layer.w_o[i * d_k : (i + 1) * d_k]
    np.testing.assert_allclose(out, total, atol=1e-10)


@given(layer_and_input(dtype=np.float32))
def test_float32_stays_float32(case):
    layer, x = case
    out, weights = layer(x, mask=causal_mask(x.shape[1]))
    assert out.dtype == weights.dtype == np.float32
    out64, _ = layer(x.astype(np.float64), mask=causal_mask(x.shape[1]))
    np.testing.assert_allclose(out, out64, rtol=1e-3, atol=1e-4)


def test_scalar_scale_keeps_float32():
    q = np.ones((2, 4), np.float32)
    out, weights = scaled_dot_product_attention(q, q, q)
    assert out.dtype == weights.dtype == np.float32


def test_causal_mask_blocks_the_future():
    layer = MultiHeadAttention(8, 2)
    x = np.random.default_rng(3).normal(size=(1, 4, 8))
    out, weights = layer(x, mask=causal_mask(4))
    assert np.triu(weights[0, 0], 1).max() == 0
    changed = x.copy()
    changed[0, 3] += 1.0  # the last token cannot influence the earlier outputs
    out2, _ = layer(changed, mask=causal_mask(4))
    np.testing.assert_allclose(out2[0, :3], out[0, :3])
    assert not np.allclose(out2[0, 3], out[0, 3])


@given(st.lists(st.integers(0, 6), min_size=1, max_size=4), st.integers(0, 3))
def test_padding_mask_marks_each_sequences_real_tokens(lengths, extra):
    n = max(max(lengths), 1) + extra
    right, left = padding_mask(lengths, n), padding_mask(lengths, n, left=True)
    assert right.shape == left.shape == (len(lengths), n)
    assert right.sum(axis=1).tolist() == left.sum(axis=1).tolist() == lengths
    assert np.array_equal(left, right[:, ::-1])  # the same tokens, moved to the end
    for row, length in zip(right, lengths, strict=True):
        assert row[:length].all() and not row[length:].any()  # real tokens first


@pytest.mark.parametrize(
    ("lengths", "n", "message"),
    [
        ([2, 5], 4, r"lengths: expected counts from 0 to n=4, got \[2 5\]"),
        ([-1], 4, "lengths: expected counts from 0 to n=4"),
        ([1.5], 4, r"lengths: expected one integer per sequence, shape \(batch,\)"),
        ([[1, 2]], 4, "lengths: expected one integer per sequence"),
        ([1], 0, "n: expected a positive integer, got 0"),
    ],
)
def test_padding_mask_refuses_bad_lengths(lengths, n, message):
    with pytest.raises(ValueError, match=message):
        padding_mask(lengths, n)


def test_a_fully_masked_row_is_refused():
    x = np.ones((1, 5, 2))
    mask = np.ones((5, 5), bool)
    mask[3] = False
    with pytest.raises(ValueError, match=r"every key is masked \(row \(0, 3\)\)"):
        scaled_dot_product_attention(x, x, x, mask)


def test_head_mask_removes_exactly_that_heads_write():
    layer = MultiHeadAttention(8, 4)
    x = np.random.default_rng(4).normal(size=(1, 3, 8))
    out, weights = layer(x)
    pruned, _ = layer(x, head_mask=np.array([1.0, 0.0, 1.0, 1.0]))
    v = x @ layer.w_v
    head_1 = weights[:, 1] @ v[..., 2:4] @ layer.w_o[2:4]
    np.testing.assert_allclose(pruned, out - head_1, atol=1e-12)


def test_weights_are_read_on_every_call():
    layer = MultiHeadAttention(4, 2)
    x = np.ones((1, 2, 4))
    layer.w_o = np.zeros_like(layer.w_o)
    out, _ = layer(x)
    assert not out.any()


def test_param_count_matches_the_arrays_and_accounting():
    for h in (1, 2, 4, 8):
        for bias in (False, True):
            layer = MultiHeadAttention(16, h, bias=bias)
            assert layer.param_count == mha.param_count(16, h, bias=bias)
            assert layer.param_count == 4 * 16**2 + (4 * 16 if bias else 0)
    gqa = MultiHeadAttention(16, 8, 2)
    assert gqa.param_count == mha.param_count(16, 8, 2) == 2 * 16 * 16 + 2 * 16 * 4


def test_score_multiply_adds_are_the_same_for_every_head_count():
    costs = {mha.score_multiply_adds(100, 512, h) for h in (1, 2, 4, 8, 16, 32, 64)}
    assert costs == {100 * 100 * 512}


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: MultiHeadAttention(10, 3),
            "d_model: expected a multiple of n_heads=3, got 10",
        ),
        (
            lambda: MultiHeadAttention(12, 6, 4),
            "n_kv_heads: expected a divisor of n_heads=6, got 4",
        ),
        (lambda: MultiHeadAttention(0, 1), "d_model: expected a positive integer"),
        (
            lambda: MultiHeadAttention(4, 2)(np.ones((1, 3, 5))),
            r"x: expected shape \(\.\.\., seq, d_model=4\), got \(1, 3, 5\)",
        ),
        (
            lambda: MultiHeadAttention(4, 2)(np.ones((1, 3, 4), int)),
            "x: expected a floating-point array.*int",
        ),
        (
            lambda: MultiHeadAttention(4, 2)(np.full((1, 3, 4), np.nan)),
            "x: expected finite values",
        ),
        (
            lambda: MultiHeadAttention(4, 2)(
                np.ones((1, 3, 4)), mask=np.ones((3, 2), bool)
            ),
            r"mask: expected a shape broadcastable to the scores \(1, 2, 3, 3\), got \(3, 2\)",
        ),
        (
            lambda: MultiHeadAttention(4, 2)(np.ones((1, 3, 4)), mask=np.ones((3, 3))),
            "mask: expected a boolean array",
        ),
        (
            lambda: MultiHeadAttention(4, 2)(np.ones((1, 3, 4)), head_mask=np.ones(3)),
            r"head_mask: expected shape \(2,\)",
        ),
        (
            lambda: scaled_dot_product_attention(
                np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 4))
            ),
            "k: expected last dimension d_k=3",
        ),
        (
            lambda: scaled_dot_product_attention(
                np.ones((2, 3)), np.ones((2, 3)), np.ones((4, 3))
            ),
            "v: expected 2 rows",
        ),
        (
            lambda: scaled_dot_product_attention(
                np.ones((2, 3)), np.ones((2, 3), np.float32), np.ones((2, 3))
            ),
            "k, v: expected the dtype of q",
        ),
        (
            lambda: split_heads(np.ones((2, 6)), 4),
            "x: expected a last dimension divisible by n_heads=4",
        ),
        (lambda: causal_mask(0), "n: expected a positive integer, got 0"),
        (
            lambda: MultiHeadAttention(4, 2, rng=42),
            "rng: expected a numpy.random.Generator",
        ),
    ],
)
def test_bad_input_is_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_every_public_name_is_importable_from_mha():
    for name in mha.__all__:
        assert getattr(mha, name) is not None
