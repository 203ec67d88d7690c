"""Bad input to the core gets a clear error: one that names the argument, says what
was expected and what came. First the cases found by hand (an audit of 194 calls), then Hypothesis
feeding malformed arguments to every public function of the core."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import mha.kv_cache
import mha.layer
import mha.rope
import mha.support.validate
from mha import (
    KVCache,
    MultiHeadAttention,
    RotaryEmbedding,
    causal_mask,
    mean_pool_heads,
    merge_heads,
    padding_mask,
    param_count,
    repeat_kv,
    scaled_dot_product_attention,
    score_multiply_adds,
    softmax,
    split_heads,
)
from mha.accounting import kv_cache_bytes, score_flops
from mha.positions import sinusoidal
from mha.support.validate import ArgumentTypeError

ONES = np.ones((1, 3, 4))


def layer() -> MultiHeadAttention:
    return MultiHeadAttention(4, 2)


# --- the cases of the issue, one by one ----------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: MultiHeadAttention(4, 2, dtype=int),
            TypeError,
            r"^dtype: expected a floating-point dtype \(float32 or float64\), got int64$",
        ),
        (
            lambda: MultiHeadAttention(4, 2, dtype=bool),
            TypeError,
            r"^dtype: expected a floating-point dtype .*, got bool$",
        ),
        (
            lambda: MultiHeadAttention(4, 2, dtype="banana"),
            TypeError,
            r"^dtype: expected a floating-point dtype .*, got 'banana' \(str\)$",
        ),
        (
            lambda: KVCache(1, 2, 2, 4, dtype=np.float16),
            TypeError,
            r"^dtype: expected a floating-point dtype .*, got float16$",
        ),
        (
            lambda: MultiHeadAttention(4, 2, bias="no"),
            TypeError,
            r"^bias: expected True or False, got 'no'$",
        ),
        (
            lambda: param_count(8, 2, bias="no"),
            TypeError,
            r"^bias: expected True or False, got 'no'$",
        ),
        (
            lambda: layer()(ONES.astype(np.float16)),
            TypeError,
            r"^x: expected a floating-point array \(float32 or float64\), got dtype float16$",
        ),
        (
            lambda: scaled_dot_product_attention(*[np.ones((2, 3), np.float16)] * 3),
            TypeError,
            r"^q: expected a floating-point array .*, got dtype float16$",
        ),
        (
            lambda: layer()(ONES, head_mask=np.array([1.0, np.nan])),
            ValueError,
            r"^head_mask: expected finite values, got \[ 1\. nan\]$",
        ),
        (
            lambda: layer()(ONES, head_mask=np.array(["a", "b"])),
            TypeError,
            r"^head_mask: expected numbers \(one factor per head\), got dtype <U1$",
        ),
        (
            lambda: softmax(np.ones((2, 0))),
            ValueError,
            r"^x: expected at least one logit per row along axis 1, got shape \(2, 0\)$",
        ),
        (
            lambda: scaled_dot_product_attention(
                np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 3))
            ),
            ValueError,
            r"^k: expected at least one key for the 2 queries of q, got shape \(0, 3\)$",
        ),
        (
            lambda: MultiHeadAttention(2, 4),
            ValueError,
            r"^d_model: expected a multiple of n_heads=4, got 2 \(fewer dimensions",
        ),
        (
            lambda: split_heads(np.ones((1, 3, 0)), 4),
            ValueError,
            r"^x: expected a last dimension divisible by n_heads=4 \(d_model = n_heads \* d_k, d_k >= 1\), got shape \(1, 3, 0\)$",
        ),
        (
            lambda: scaled_dot_product_attention(*[np.ones((2, 0))] * 3),
            ValueError,
            r"^q: expected a last dimension d_k >= 1",
        ),
        (
            lambda: layer().step(np.ones((1, 1, 4)), None),
            TypeError,
            r"^cache: expected a KVCache, got NoneType None$",
        ),
        (
            lambda: softmax(np.ones((2, 3)), axis=2),
            ValueError,
            r"^axis: expected an axis of x \(shape \(2, 3\)\), from -2 to 1, got 2$",
        ),
        (
            lambda: RotaryEmbedding(4).from_position(np.ones((2, 4)), -3),
            ValueError,
            r"^start: expected an integer >= 0, got -3$",
        ),
        (
            lambda: RotaryEmbedding(4, base="x"),
            TypeError,
            r"^base: expected a number above 1, got 'x'$",
        ),
        (
            lambda: KVCache(1, 1, 1, 4).append([[[[np.nan]]]], [[[[1.0]]]]),
            ValueError,
            r"^k: expected finite values, got nan at index \(0, 0, 0, 0\)$",
        ),
    ],
)
def test_each_case_of_the_issue_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message) as raised:
        call()
    assert isinstance(raised.value, ValueError)  # a bad input is always a ValueError


def test_a_wrong_type_is_both_a_type_error_and_a_value_error():
    with pytest.raises(TypeError):
        MultiHeadAttention(4.0, 2)
    with pytest.raises(
        ValueError, match=r"^d_model: expected a positive integer, got 4\.0 \(float\)$"
    ):
        MultiHeadAttention(4.0, 2)
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(
        ArgumentTypeError, ValueError
    )


@pytest.mark.parametrize("int_type", [np.int8, np.int16, np.int32, np.uint32, np.int64])
def test_sizes_of_any_integer_type_are_counted_without_overflow(int_type):
    big = min(32768, np.iinfo(int_type).max)  # 2**15, or int8's largest
    sizes = [int_type(s) for s in (8, 32, 64, big, 2)]
    got = kv_cache_bytes(*sizes)
    assert type(got) is int and got == 2 * 8 * 32 * 64 * big * 2  # 2**31 for int32
    d, h = int_type(64), int_type(8)  # 4·d² = 16,384: past int8
    assert param_count(d, h) == 4 * 64**2
    assert param_count(d, h, n_kv_heads=int_type(2)) == 2 * 64**2 + 2 * 64 * 16
    assert score_multiply_adds(d, d, h) == score_flops(d, d, h) // 2 == 64**3


def test_an_empty_sequence_gives_empty_results_of_the_right_shape():
    out, weights = layer()(np.ones((2, 0, 4)))
    assert out.shape == (2, 0, 4) and weights.shape == (2, 2, 0, 0)
    cache = KVCache(2, 2, 2, 4)
    out, weights = layer().step(np.ones((2, 0, 4)), cache)
    assert (
        out.shape == (2, 0, 4) and weights.shape == (2, 2, 0, 0) and cache.length == 0
    )
    out, weights = scaled_dot_product_attention(
        np.ones((0, 3)), np.ones((2, 3)), np.ones((2, 5))
    )
    assert out.shape == (0, 5) and weights.shape == (0, 2)
    assert softmax(np.ones((0, 3))).shape == (0, 3)
    assert RotaryEmbedding(4)(np.ones((0, 4)), np.arange(0)).shape == (0, 4)


def test_a_cache_refuses_a_layer_of_another_shape():
    cache = KVCache(1, n_kv_heads=2, d_k=2, max_len=4)
    small, big = MultiHeadAttention(4, 2), MultiHeadAttention(8, 4, n_kv_heads=2)
    small.step(np.ones((1, 1, 4)), cache)
    assert cache.layer_shape == (4, 2, 2)
    with pytest.raises(
        ValueError,
        match=r"^cache: expected the cache of a layer of shape \(d_model, n_heads, "
        r"n_kv_heads\) = \(8, 4, 2\), got one holding the keys of a layer of shape "
        r"\(4, 2, 2\); make one KVCache per layer$",
    ):
        big.step(np.ones((1, 1, 8)), cache)
    assert cache.length == 1  # refused before anything was appended
    small.step(np.ones((1, 1, 4)), cache)  # its own layer goes on
    fresh = KVCache(1, n_kv_heads=2, d_k=2, max_len=4)
    big.step(np.ones((1, 1, 8)), fresh)  # an empty cache takes any fitting layer
    assert fresh.layer_shape == (8, 4, 2)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "w_q",
            np.full((4, 4), np.nan),
            r"^w_q: expected finite values, got nan at index \(0, 0\)$",
        ),
        (
            "w_k",
            np.ones((4, 3)),
            r"^w_k: expected shape \(d_model, n_kv_heads\*d_k\) = \(4, 4\), got \(4, 3\)$",
        ),
        (
            "w_o",
            np.ones((4, 4), int),
            r"^w_o: expected a floating-point array .*, got dtype int64$",
        ),
        (
            "w_v",
            None,
            r"^w_v: expected an array of shape \(d_model, n_kv_heads\*d_k\), got None$",
        ),
        (
            "b_q",
            np.ones(3),
            r"^b_q: expected shape \(n_heads\*d_k,\) = \(4,\), got \(3,\)$",
        ),
        ("b_o", np.array([np.inf, 0, 0, 0]), r"^b_o: expected finite values, got inf"),
    ],
)
def test_weights_are_checked_when_assigned(name, value, message):
    attention = MultiHeadAttention(4, 2, bias=True)
    before = getattr(attention, name)
    with pytest.raises(ValueError, match=message):
        setattr(attention, name, value)
    assert getattr(attention, name) is before  # the layer is unchanged


def test_an_assigned_weight_is_the_very_object_and_none_removes_a_bias():
    attention = MultiHeadAttention(4, 2, bias=True)
    w = np.zeros((4, 4), np.float32)
    attention.w_q = w
    assert attention.w_q is w
    attention.b_q = None
    assert attention.b_q is None and attention.param_count == 4 * 16 + 3 * 4
    x = np.random.default_rng(0).normal(size=(1, 3, 4))
    assert np.allclose(attention(x)[1], 1 / 3)  # zero queries: uniform weights


def test_a_decoding_step_checks_the_new_tokens_and_never_the_weights(monkeypatch):
    attention = MultiHeadAttention(8, 4, n_kv_heads=2)
    attention.rope = RotaryEmbedding(2)
    cache = KVCache(1, 2, 2, 8)
    attention.step(np.ones((1, 2, 8)), cache)  # a prompt
    checked = []
    real = mha.support.validate.float_array

    def spy(name, x, **kwargs):
        checked.append((name, np.shape(x)))
        return real(name, x, **kwargs)

    for module in (mha.layer, mha.kv_cache, mha.rope, mha.support.validate):
        monkeypatch.setattr(module, "float_array", spy)
    attention.step(np.ones((1, 1, 8)), cache)
    names = [name for name, _ in checked]
    assert "x_new" in names and not any(name.startswith(("w_", "b_")) for name in names)
    assert all(np.prod(shape) <= 8 for _, shape in checked)  # one token's arrays
    checked.clear()
    attention.w_q = attention.w_q.copy()
    assert [name for name, _ in checked] == ["w_q"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: layer()(np.full((1, 2, 4), np.inf)),
        lambda: layer().step(np.full((1, 1, 4), np.nan), KVCache(1, 2, 2, 4)),
        lambda: scaled_dot_product_attention(
            np.ones((2, 3)), np.ones((2, 3)), np.full((2, 3), -np.inf)
        ),
        lambda: softmax(np.array([np.nan, 1.0])),
        lambda: softmax(np.array([np.inf, 1.0])),
        lambda: RotaryEmbedding(4)(np.full((2, 4), np.nan), np.arange(2)),
        lambda: mean_pool_heads(np.full((2, 4), np.nan), 2, 1),
    ],
)
def test_nan_and_inf_are_refused_in_every_call(call):
    with pytest.raises(
        ValueError,
        match=r"^(x|x_new|v|w): expected finite values, got (nan|inf|-inf) at index",
    ):
        call()


# --- Hypothesis: malformed arguments to every public function --------------------------

FINITE_OR_NOT = st.one_of(
    st.floats(-4, 4, width=16), st.sampled_from([np.nan, np.inf, -np.inf])
)
SHAPES = array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
BAD_ARRAYS = st.one_of(
    arrays(
        st.sampled_from([np.float16, np.float32, np.float64]),
        SHAPES,
        elements=FINITE_OR_NOT,
    ),
    arrays(st.sampled_from([np.int64, np.int8]), SHAPES, elements=st.integers(-3, 9)),
    arrays(st.sampled_from([np.bool_, np.complex128]), SHAPES, elements=st.just(1)),
)
BAD_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 0),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.sampled_from(
        [
            np.int32(-1),
            np.float64(2.0),
            np.bool_(True),
            [1.0, [2.0]],
            object(),
            "float32",
        ]
    ),
)
BAD = st.one_of(BAD_ARRAYS, BAD_SCALARS)


def assign_weights(**weights: object) -> MultiHeadAttention:
    attention = MultiHeadAttention(4, 2, bias=True)
    for name, value in weights.items():
        setattr(attention, name, value)
    return attention


# A valid call of each public function of the core, by argument name. (``attend`` is
# the formula on inputs already checked: ``scaled_dot_product_attention`` checks them.)
CALLS = {
    "softmax": (softmax, {"x": np.ones((2, 3)), "axis": -1}),
    "scaled_dot_product_attention": (
        scaled_dot_product_attention,
        {
            "q": np.ones((2, 3)),
            "k": np.ones((4, 3)),
            "v": np.ones((4, 5)),
            "mask": np.ones((2, 4), bool),
        },
    ),
    "causal_mask": (causal_mask, {"n": 3}),
    "padding_mask": (padding_mask, {"lengths": np.array([2, 3]), "n": 3, "left": True}),
    "split_heads": (split_heads, {"x": np.ones((1, 3, 4)), "n_heads": 2}),
    "merge_heads": (merge_heads, {"x": np.ones((1, 2, 3, 2))}),
    "repeat_kv": (repeat_kv, {"x": np.ones((1, 2, 3, 2)), "n_rep": 2}),
    "mean_pool_heads": (
        mean_pool_heads,
        {"w": np.ones((3, 8)), "n_heads": 4, "n_groups": 2},
    ),
    "MultiHeadAttention": (
        MultiHeadAttention,
        {
            "d_model": 4,
            "n_heads": 2,
            "n_kv_heads": 1,
            "bias": True,
            "rng": None,
            "dtype": np.float32,
        },
    ),
    "MultiHeadAttention.__call__": (
        lambda x, mask, head_mask, start: layer()(x, mask, head_mask, start=start),
        {
            "x": ONES,
            "mask": causal_mask(3),
            "head_mask": np.array([1.0, 0.0]),
            "start": 2,
        },
    ),
    "MultiHeadAttention.step": (
        lambda x_new, cache: layer().step(x_new, cache),
        {"x_new": np.ones((1, 2, 4)), "cache": KVCache(1, 2, 2, 4)},
    ),
    "MultiHeadAttention.to_gqa": (
        lambda n_kv_heads: layer().to_gqa(n_kv_heads),
        {"n_kv_heads": 1},
    ),
    "MultiHeadAttention weights": (
        assign_weights,
        {name: np.ones((4, 4)) for name in ("w_q", "w_k", "w_v", "w_o")}
        | {name: np.ones(4) for name in ("b_q", "b_k", "b_v", "b_o")},
    ),
    "KVCache": (
        KVCache,
        {"batch": 1, "n_kv_heads": 2, "d_k": 2, "max_len": 4, "dtype": np.float64},
    ),
    "KVCache.append": (
        lambda k, v: KVCache(1, 2, 2, 4).append(k, v),
        {"k": np.ones((1, 2, 3, 2)), "v": np.ones((1, 2, 3, 2))},
    ),
    "RotaryEmbedding": (
        RotaryEmbedding,
        {"d_k": 4, "base": 100.0, "interleaved": True},
    ),
    "RotaryEmbedding.__call__": (
        lambda x, positions: RotaryEmbedding(4)(x, positions),
        {"x": np.ones((2, 3, 4)), "positions": np.arange(3)},
    ),
    "RotaryEmbedding.from_position": (
        lambda x, start: RotaryEmbedding(4).from_position(x, start),
        {"x": np.ones((2, 3, 4)), "start": 5},
    ),
    "sinusoidal": (sinusoidal, {"n": 5, "d_model": 4}),
    "param_count": (
        param_count,
        {"d_model": 8, "n_heads": 4, "n_kv_heads": 2, "bias": False},
    ),
    "score_multiply_adds": (score_multiply_adds, {"n": 5, "d_model": 8, "n_heads": 4}),
    "score_flops": (score_flops, {"n": 5, "d_model": 8, "n_heads": 4}),
    "kv_cache_bytes": (
        kv_cache_bytes,
        {"batch": 1, "n_kv_heads": 2, "d_k": 4, "length": 9, "itemsize": 2},
    ),
}
# Reshapes move values without computing with them: NaN in, NaN out at its place.
RESHAPES = {"split_heads", "merge_heads", "repeat_kv"}
# An error names the argument, says what it expected and what it got ...
CLEAR = re.compile(r"^(?P<names>[a-z_]+(, [a-z_]+)*): expected .+, got ", re.DOTALL)
# ... or names the argument that a bad one contradicts (a size against a shape).
RELATED = {
    "q": {"k", "v", "k, v", "q, k, v", "mask"},
    "k": {"v", "k, v", "q, k, v", "mask"},
    "v": {"k, v", "q, k, v", "mask"},
    "x": {"mask", "positions"},
    "x_new": {"cache"},
    "n_heads": {"d_model", "x", "w", "n_kv_heads"},
    "n_groups": {"w"},
    "n_kv_heads": {"n_heads"},
    "n": {"lengths"},  # padding_mask: a valid but small n leaves lengths too long
}


def sound(result: object) -> bool:
    """Whether every float array in ``result`` is finite."""
    if isinstance(result, tuple | list):
        return all(sound(r) for r in result)
    if isinstance(result, np.ndarray) and result.dtype.kind == "f":
        return bool(np.isfinite(result).all())
    return True


@pytest.mark.parametrize("function", CALLS)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_malformed_arguments_get_a_clear_error(function, data):
    call, kwargs = CALLS[function]
    name = data.draw(st.sampled_from(sorted(kwargs)), label="argument")
    bad = data.draw(BAD, label=name)
    try:
        result = call(**{**kwargs, name: bad})
    except ValueError as error:  # ArgumentTypeError is one too
        clear = CLEAR.match(str(error))
        assert clear, f"unclear message: {error}"
        assert clear["names"] in {name} | RELATED.get(name, set()), str(error)
    else:  # the value drawn happened to be valid: then the result is sound
        assert function in RESHAPES or sound(result)


# --- Hypothesis: extreme finite values (about 1e300) to every call taking floats ------

EXTREME = st.sampled_from([1e300, -1e300, 1.7e308, -1.7e308, 3e38, -3e38, 1e-300, 0.0])


@pytest.mark.parametrize(
    "function",
    [
        f
        for f, (_, kwargs) in CALLS.items()
        if f not in RESHAPES
        and any(
            isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in kwargs.values()
        )
    ],
)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
@pytest.mark.filterwarnings("error::RuntimeWarning")  # the error, not a warning first
def test_extreme_finite_values_give_a_sound_result_or_a_clear_error(function, data):
    call, kwargs = CALLS[function]
    floats = sorted(
        k for k, v in kwargs.items() if isinstance(v, np.ndarray) and v.dtype == float
    )
    name = data.draw(st.sampled_from(floats), label="argument")
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    shape = kwargs[name].shape
    values = data.draw(arrays(np.float64, shape, elements=EXTREME), label=name)
    with np.errstate(over="ignore"):
        bad = values.astype(dtype) if function != "KVCache.append" else values
    others = {k: v for k, v in kwargs.items() if k != name}
    if dtype == np.float32 and function in {"scaled_dot_product_attention"}:
        others = {k: v.astype(dtype) if k in floats else v for k, v in others.items()}
    if not np.isfinite(bad).all():
        return  # a float64 value past float32's range: not a finite input
    try:
        result = call(**others, **{name: bad})
    except ValueError as error:
        clear = CLEAR.match(str(error))
        assert clear, f"unclear message: {error}"
        overflow = {"q, k", "v", "x"}  # blamed for an overflow of what they give
        assert clear["names"] in {name} | RELATED.get(name, set()) | overflow, str(
            error
        )
    else:
        assert sound(result), f"{function} gave a non-finite result silently"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_that_overflow_are_refused_by_name(dtype):
    big = np.full((2, 3), np.finfo(dtype).max / 4, dtype)
    with pytest.raises(
        ValueError, match=rf"^q, k: expected values whose scores .* {np.dtype(dtype)}"
    ):
        scaled_dot_product_attention(big, big, np.ones((2, 3), dtype))


def test_an_overflow_hidden_by_the_mask_is_harmless():
    q = np.array([[1.0, 0.0], [1e200, 1e200]])
    k = np.array([[1.0, 0.0], [1e200, 1e200]])
    mask = np.array([[True, False], [True, False]])  # the huge key is masked
    _, weights = scaled_dot_product_attention(q, k, np.eye(2), mask)
    assert np.array_equal(weights, [[1.0, 0.0], [1.0, 0.0]])


def test_a_weight_edited_to_nan_in_place_is_stopped_at_the_scores():
    attention = layer()
    attention.w_q[0, 0] = np.nan  # after the check on assignment: not checked again
    with pytest.raises(
        ValueError, match=r"^q, k: expected values whose scores .* got nan"
    ):
        attention(ONES)


def test_a_padding_mask_as_wide_as_the_batch_is_refused_unless_its_shape_says():
    x = np.random.default_rng(0).normal(size=(3, 3, 4))  # batch = seq = 3
    padding = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0]], bool)  # (batch, key)
    with pytest.raises(ValueError, match=r"^mask: a \(3, 3\) mask is ambiguous"):
        layer()(x, mask=padding)
    _, weights = layer()(x, mask=padding[:, None, None, :])  # said: per sequence
    assert (weights[1, :, :, 2] == 0).all() and (weights[1, :, :, 1] > 0).all()
    layer()(x, mask=causal_mask(3))  # the causal mask is read as (query, key)
    scaled_dot_product_attention(x, x, x, padding[None])  # said: (query, key)


def test_rope_positions_past_float64_precision_are_refused():
    rope = RotaryEmbedding(4)
    x = np.ones((1, 2, 4))
    with pytest.raises(ValueError, match=r"^positions: expected indices below 2\*\*32"):
        rope(x, np.array([2**60, 2**60 + 1]))
    with pytest.raises(
        ValueError, match=r"^start: expected start \+ seq below 2\*\*32"
    ):
        rope.from_position(x, 2**60)
    far = 2**31  # far positions are computed, not tabled: no MemoryError
    assert np.array_equal(rope.from_position(x, far), rope(x, np.arange(far, far + 2)))


def test_one_cache_is_bound_to_one_layer_object():
    first, second = layer(), layer()  # the same shape
    cache = KVCache(1, 2, 2, 4)
    first.step(np.ones((1, 1, 4)), cache)
    with pytest.raises(ValueError, match=r"^cache: .* another layer of the same shape"):
        second.step(np.ones((1, 1, 4)), cache)
    first.step(np.ones((1, 1, 4)), cache)  # its own layer goes on


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: KVCache(1, 32, 128, 10**12, np.float32), "max_len"),
        (lambda: MultiHeadAttention(2**24, 2), "d_model"),
        (lambda: causal_mask(10**7), "n"),
    ],
)
def test_memory_requests_past_the_machine_are_refused_by_name(call, name):
    with pytest.raises(ValueError, match=rf"^{name}: .* more than this machine's"):
        call()


def test_cross_attention_to_no_token_is_refused():
    layer = MultiHeadAttention(d_model=4, n_heads=2)
    with pytest.raises(ValueError, match=r"^kv: expected at least one token to attend"):
        layer(ONES, kv=np.ones((1, 0, 4)))
    out, weights = layer(np.ones((1, 0, 4)), kv=np.ones((1, 0, 4)))  # no query: fine
    assert out.shape == (1, 0, 4) and weights.shape == (1, 2, 0, 0)
