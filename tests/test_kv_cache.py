"""The KV cache, `MultiHeadAttention.step` and grouped-query attention.

Decoding with the cache must give exactly what full causal attention gives; a GQA layer
is an MHA layer whose K/V heads are repeated per group; mean-pooling converts MHA to
GQA. Every check here has a negative control or a hand-computed value, so it can fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha import KVCache, MultiHeadAttention, causal_mask, mean_pool_heads, repeat_kv
from mha.rope import RotaryEmbedding

D_MODEL, N_HEADS = 12, 6  # d_k = 2
KINDS = {"MHA": 6, "GQA": 2, "MQA": 1}  # name -> n_kv_heads


def make_layer(
    n_kv_heads: int, seed: int = 0, bias: bool = False
) -> MultiHeadAttention:
    layer = MultiHeadAttention(
        D_MODEL, N_HEADS, n_kv_heads, bias=bias, rng=np.random.default_rng(seed)
    )
    if bias:  # random biases, so that pooling and repeating them is tested too
        rng = np.random.default_rng(seed + 100)
        for name in ("b_q", "b_k", "b_v", "b_o"):
            setattr(layer, name, rng.normal(size=getattr(layer, name).shape))
    return layer


def make_input(seq: int = 7, batch: int = 2, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(batch, seq, D_MODEL))


def new_cache(layer: MultiHeadAttention, max_len: int, batch: int = 2) -> KVCache:
    return KVCache(batch, layer.n_kv_heads, layer.d_k, max_len, dtype=np.float64)


def decode(layer: MultiHeadAttention, x: np.ndarray, chunks: list[int]):
    """Feed ``x`` to ``layer.step`` in chunks of the given sizes; outputs and weights."""
    cache = new_cache(layer, max_len=x.shape[1], batch=x.shape[0])
    outs, weights, start = [], [], 0
    for size in chunks:
        out, w = layer.step(x[:, start : start + size], cache)
        outs.append(out)
        weights.append(w)
        start += size
    assert start == x.shape[1] == cache.length
    return np.concatenate(outs, axis=1), weights, cache


# --- the cache gives what full causal attention gives ------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rope", [False, True], ids=["no-rope", "rope"])
@pytest.mark.parametrize(
    "chunks",
    [[1] * 7, [4, 1, 1, 1], [7]],
    ids=["token-by-token", "prompt-then-tokens", "whole-prompt"],
)
def test_decoding_equals_full_causal_attention(kind, rope, chunks):
    layer = make_layer(KINDS[kind])
    if rope:  # positions in a step must continue from the cache's length
        layer.rope = RotaryEmbedding(layer.d_k)
    x = make_input()
    full_out, full_weights = layer(x, mask=causal_mask(7))

    out, weights, _ = decode(layer, x, chunks)

    np.testing.assert_allclose(out, full_out, rtol=0, atol=1e-6)
    start = 0
    for w in weights:  # (batch, h, n_new, length): the rows of the full weights
        n_new, length = w.shape[-2:]
        assert length == start + n_new
        expected = full_weights[..., start : start + n_new, :length]
        np.testing.assert_allclose(w, expected, rtol=0, atol=1e-6)
        start += n_new


def test_decoding_without_the_causal_mask_would_differ():
    """Negative control: the comparison above can fail (the future is not attended)."""
    layer, x = make_layer(2), make_input()
    out, _, _ = decode(layer, x, [1] * 7)
    unmasked, _ = layer(x)
    assert not np.allclose(out, unmasked, atol=1e-3)


def test_step_in_float32_stays_float32():
    layer = make_layer(2)
    x = make_input().astype(np.float32)
    cache = KVCache(2, 2, layer.d_k, 7, dtype=np.float32)
    out, weights = layer.step(x[:, :3], cache)
    assert out.dtype == weights.dtype == cache.k.dtype == np.float32
    full, _ = layer(x[:, :3], mask=causal_mask(3))
    np.testing.assert_allclose(out, full, rtol=0, atol=1e-5)


# --- GQA is MHA with K/V repeated per group; one K/V head is MQA --------------------


def repeated_per_group(w: np.ndarray, n_kv_heads: int, group: int) -> np.ndarray:
    """``(..., h_kv*d_k) -> (..., h_kv*group*d_k)``: each head's block ``group`` times."""
    blocks = w.reshape(*w.shape[:-1], n_kv_heads, -1)
    return np.repeat(blocks, group, axis=-2).reshape(*w.shape[:-1], -1)


def as_mha(layer: MultiHeadAttention, expand=repeated_per_group) -> MultiHeadAttention:
    """An MHA layer holding ``layer``'s weights, its K/V heads expanded by ``expand``."""
    mha = MultiHeadAttention(D_MODEL, N_HEADS, bias=layer.b_q is not None)
    group = layer.n_heads // layer.n_kv_heads
    for name in ("w_q", "b_q", "w_o", "b_o"):
        setattr(mha, name, getattr(layer, name))
    for name in ("w_k", "b_k", "w_v", "b_v"):
        array = getattr(layer, name)
        if array is not None:
            setattr(mha, name, expand(array, layer.n_kv_heads, group))
    return mha


@pytest.mark.parametrize("kind", ["GQA", "MQA"])
@pytest.mark.parametrize("bias", [False, True])
def test_grouped_layer_equals_mha_with_kv_repeated_per_group(kind, bias):
    layer = make_layer(KINDS[kind], bias=bias)
    x = make_input()
    out, weights = layer(x, mask=causal_mask(7))
    mha_out, mha_weights = as_mha(layer)(x, mask=causal_mask(7))
    np.testing.assert_allclose(out, mha_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, mha_weights, rtol=0, atol=1e-12)


def test_repeating_heads_in_the_wrong_order_differs():
    """Negative control: tiling (head j -> query heads j, j+h_kv, ...) is not GQA."""

    def tiled(w, n_kv_heads, group):
        blocks = w.reshape(*w.shape[:-1], n_kv_heads, -1)
        return np.tile(blocks, (group, 1)).reshape(*w.shape[:-1], -1)

    layer, x = make_layer(2), make_input()
    out, _ = layer(x)
    wrong, _ = as_mha(layer, expand=tiled)(x)
    assert not np.allclose(out, wrong, atol=1e-3)


def test_query_head_i_reads_kv_head_i_over_group():
    kv = np.random.default_rng(0).normal(size=(2, 3, 5, 4))  # (batch, h_kv, seq, d_k)
    repeated = repeat_kv(kv, 4)  # 12 query heads, groups of 4
    assert repeated.shape == (2, 12, 5, 4)
    for i in range(12):
        np.testing.assert_array_equal(repeated[:, i], kv[:, i // 4])


def test_one_kv_head_is_multi_query_attention():
    mqa = make_layer(1)
    assert mqa.w_k.shape == mqa.w_v.shape == (D_MODEL, mqa.d_k)  # one K/V head
    x = make_input()
    out, weights = mqa(x)
    # every query head attends over the same keys: a hand-written MQA forward
    q = (x @ mqa.w_q).reshape(2, 7, N_HEADS, 2).transpose(0, 2, 1, 3)
    k, v = x @ mqa.w_k, x @ mqa.w_v  # (batch, seq, d_k), shared by all heads
    scores = q @ k[:, None].swapaxes(-1, -2) / np.sqrt(mqa.d_k)
    expected_w = np.exp(scores - scores.max(-1, keepdims=True))
    expected_w /= expected_w.sum(-1, keepdims=True)
    heads = expected_w @ v[:, None]  # (batch, h, seq, d_k)
    expected = heads.transpose(0, 2, 1, 3).reshape(2, 7, D_MODEL) @ mqa.w_o
    np.testing.assert_allclose(weights, expected_w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    # and its cache holds one head: 1/h of the MHA cache for the same tokens
    mha = make_layer(N_HEADS)
    caches = [new_cache(layer, 7) for layer in (mqa, mha)]
    for layer, cache in zip((mqa, mha), caches, strict=True):
        layer.step(x, cache)
    assert caches[0].k.shape[1] == 1
    assert caches[1].nbytes == N_HEADS * caches[0].nbytes


# --- cache.nbytes is the formula ---------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", KINDS)
def test_nbytes_is_the_formula(dtype, kind):
    layer = make_layer(KINDS[kind])
    x = make_input(seq=5, batch=3).astype(dtype)
    cache = KVCache(3, layer.n_kv_heads, layer.d_k, max_len=9, dtype=dtype)
    assert cache.nbytes == 0
    for n_new, length in ((3, 3), (1, 4), (1, 5)):
        layer.step(x[:, length - n_new : length], cache)
        itemsize = np.dtype(dtype).itemsize
        formula = 2 * 3 * layer.n_kv_heads * layer.d_k * length * itemsize
        filled = cache.k[:, :, :length].nbytes + cache.v[:, :, :length].nbytes
        assert cache.length == length
        assert cache.nbytes == formula == filled
    # the preallocated arrays are larger than what nbytes counts
    assert cache.k.nbytes + cache.v.nbytes == cache.nbytes * 9 // 5


# --- bad input is a clear ValueError -----------------------------------------------


def test_step_past_max_len_raises_and_keeps_the_cache():
    layer = make_layer(2)
    x = make_input(seq=5)
    cache = new_cache(layer, max_len=4)
    layer.step(x[:, :3], cache)
    keys = cache.k.copy()
    with pytest.raises(
        ValueError,
        match=r"k: expected at most 1 new tokens \(max_len=4, 3 cached\), got 2",
    ):
        layer.step(x[:, 3:5], cache)
    assert cache.length == 3 and np.array_equal(cache.k, keys)
    layer.step(x[:, 3:4], cache)  # one more still fits
    with pytest.raises(ValueError, match=r"max_len=4"):
        layer.step(x[:, 4:5], cache)


def test_step_with_another_dtype_than_the_cache_raises():
    layer = make_layer(2)
    cache = new_cache(layer, max_len=4)  # float64
    with pytest.raises(ValueError, match=r"x_new: .*cache's dtype float64.*float32"):
        layer.step(make_input(seq=1).astype(np.float32), cache)
    assert cache.length == 0


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.zeros((7, D_MODEL)), r"x_new: expected shape \(batch, n_new, 12\)"),
        (np.zeros((2, 1, 1, D_MODEL)), r"x_new: expected shape \(batch, n_new, 12\)"),
        (np.zeros((2, 1, 8)), r"x_new: expected shape \(\.\.\., seq, d_model=12\)"),
        (np.zeros((3, 1, D_MODEL)), r"x_new: expected batch=2 \(the cache.s\)"),
        (np.zeros((2, 1, D_MODEL), dtype=int), r"floating-point"),
    ],
    ids=["2-d", "4-d", "d_model", "batch", "integer"],
)
def test_step_with_a_wrong_shape_raises(x, message):
    layer = make_layer(2)
    cache = new_cache(layer, max_len=4)
    with pytest.raises(ValueError, match=message):
        layer.step(x, cache)
    assert cache.length == 0


@pytest.mark.parametrize(
    ("cache_args", "message"),
    [((2, 3, 2, 4), r"cache: expected n_kv_heads=2, d_k=2, got n_kv_heads=3, d_k=2")],
)
def test_step_with_a_cache_of_another_layer_raises(cache_args, message):
    with pytest.raises(ValueError, match=message):
        make_layer(2).step(make_input(seq=1), KVCache(*cache_args))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch": 0}, r"batch: expected a positive integer, got 0"),
        ({"max_len": 2.5}, r"max_len: expected a positive integer, got 2.5"),
        (
            {"dtype": np.int32},
            r"dtype: expected a floating-point dtype \(float32 or float64\), got int32",
        ),
    ],
)
def test_cache_constructor_rejects_bad_arguments(kwargs, message):
    args = {"batch": 1, "n_kv_heads": 2, "d_k": 4, "max_len": 8, **kwargs}
    with pytest.raises(ValueError, match=message):
        KVCache(**args)


@pytest.mark.parametrize(
    ("k_shape", "v_shape", "message"),
    [
        ((1, 3, 1, 4), (1, 3, 1, 4), r"k: expected shape \(batch=1, n_kv_heads=2"),
        (
            (1, 2, 1, 5),
            (1, 2, 1, 5),
            r"k: expected shape .*d_k=4\), got \(1, 2, 1, 5\)",
        ),
        ((1, 2, 4), (1, 2, 4), r"k: expected shape"),
        ((1, 2, 1, 4), (1, 2, 2, 4), r"v: expected the shape of k"),
    ],
)
def test_append_rejects_wrong_shapes(k_shape, v_shape, message):
    cache = KVCache(1, 2, 4, 8, dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        cache.append(np.zeros(k_shape, np.float32), np.zeros(v_shape, np.float32))
    assert cache.length == 0


# --- MHA -> GQA by mean-pooling (Ainslie et al.) -----------------------------------


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_to_gqa_pools_each_groups_columns_to_their_mean(n_groups):
    layer = make_layer(N_HEADS, bias=True)
    grouped = layer.to_gqa(n_groups)
    d_k, size = layer.d_k, N_HEADS // n_groups
    assert grouped.n_kv_heads == n_groups
    for name in ("w_k", "w_v", "b_k", "b_v"):
        original, pooled = getattr(layer, name), getattr(grouped, name)
        assert pooled.shape[-1] == n_groups * d_k
        for g in range(n_groups):
            members = [
                original[..., h * d_k : (h + 1) * d_k]
                for h in range(g * size, (g + 1) * size)
            ]
            np.testing.assert_allclose(
                pooled[..., g * d_k : (g + 1) * d_k],
                sum(members) / size,
                rtol=0,
                atol=1e-15,
            )
    for name in ("w_q", "b_q", "w_o", "b_o"):  # queries and output are kept
        assert getattr(grouped, name) is getattr(layer, name)
    assert layer.n_kv_heads == N_HEADS and layer.w_k.shape == (D_MODEL, D_MODEL)


def test_to_gqa_of_a_layer_with_identical_heads_per_group_changes_nothing():
    """If the K/V heads of each group already agree, pooling is exact: GQA = MHA."""
    source = make_layer(2, bias=True)  # its 2 K/V heads, repeated 3 times each
    layer = as_mha(source)  # an MHA layer whose heads agree within each group of 3
    grouped = layer.to_gqa(2)
    for name in ("w_k", "w_v", "b_k", "b_v"):
        np.testing.assert_allclose(
            getattr(grouped, name), getattr(source, name), rtol=0, atol=1e-15
        )
    x = make_input()
    for mask in (None, causal_mask(7)):
        out, weights = layer(x, mask=mask)
        pooled_out, pooled_weights = grouped(x, mask=mask)
        np.testing.assert_allclose(pooled_out, out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(pooled_weights, weights, rtol=0, atol=1e-12)


def test_to_gqa_of_distinct_heads_changes_the_output():
    """Negative control: with distinct heads, pooling loses information."""
    layer, x = make_layer(N_HEADS), make_input()
    assert not np.allclose(layer.to_gqa(2)(x)[0], layer(x)[0], atol=1e-3)


def test_to_gqa_with_h_groups_is_the_layer_itself_and_one_group_is_mqa():
    layer, x = make_layer(N_HEADS), make_input()
    same = layer.to_gqa(N_HEADS)  # GQA-h is MHA
    np.testing.assert_array_equal(same(x)[0], layer(x)[0])
    mqa = layer.to_gqa(1)  # GQA-1 is MQA
    assert mqa.n_kv_heads == 1 and mqa.w_k.shape == (D_MODEL, layer.d_k)
    np.testing.assert_allclose(
        mqa.w_k, layer.w_k.reshape(D_MODEL, N_HEADS, -1).mean(axis=1), atol=1e-15
    )
    cache = new_cache(mqa, max_len=7)
    out, _ = mqa.step(x, cache)
    np.testing.assert_allclose(out, mqa(x, mask=causal_mask(7))[0], atol=1e-12)


@pytest.mark.parametrize(
    ("layer_kv", "n_kv_heads", "message"),
    [
        (N_HEADS, 4, r"n_kv_heads: expected a divisor of n_heads=6, got 4"),
        (2, 3, r"n_kv_heads: expected a divisor of the current 2, got 3"),
        (N_HEADS, 0, r"n_kv_heads: expected a positive integer, got 0"),
    ],
)
def test_to_gqa_rejects_group_counts_that_do_not_divide(layer_kv, n_kv_heads, message):
    with pytest.raises(ValueError, match=message):
        make_layer(layer_kv).to_gqa(n_kv_heads)


def test_mean_pool_heads_small_example_and_bad_groups():
    w = np.array([[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]])  # 4 heads, d_k 2
    assert mean_pool_heads(w, 4, 2).tolist() == [[2.0, 3.0, 20.0, 30.0]]
    assert mean_pool_heads(w, 4, 1).tolist() == [[11.0, 16.5]]
    assert mean_pool_heads(w, 4, 4).tolist() == w.tolist()
    with pytest.raises(ValueError, match=r"4 heads splitting into 3 equal groups"):
        mean_pool_heads(w, 4, 3)
