"""SmolLM2's fused layer attends grouped: each K/V head read in place by its query
heads, with no copy of the cache; the same outputs and weights as the readable path."""

from __future__ import annotations

import numpy as np
import pytest

import mha.layer
from mha import KVCache, MultiHeadAttention, causal_mask
from mha.pretrained.smollm2 import FusedQKV


def _pair(h: int, h_kv: int) -> tuple[MultiHeadAttention, FusedQKV]:
    readable = MultiHeadAttention(12, h, n_kv_heads=h_kv)
    fused = FusedQKV(12, h, n_kv_heads=h_kv)
    fused.w_o = readable.w_o
    fused.fuse(np.concatenate([readable.w_q, readable.w_k, readable.w_v], axis=1))
    return readable, fused


@pytest.mark.parametrize("h, h_kv", [(6, 2), (6, 1), (4, 4)])
def test_decoding_grouped_equals_the_readable_path(h, h_kv):
    readable, fused = _pair(h, h_kv)
    x = np.random.default_rng(h_kv).normal(size=(1, 7, 12))
    caches = [KVCache(1, h_kv, 12 // h, 7, np.float64) for _ in range(2)]
    for chunk in (slice(0, 4), slice(4, 5), slice(5, 6), slice(6, 7)):  # prompt, steps
        want, want_w = readable.step(x[:, chunk], caches[0])
        got, got_w = fused.step(x[:, chunk], caches[1])
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_allclose(got_w, want_w, atol=1e-12)
    whole, weights = fused(x, mask=causal_mask(7))
    np.testing.assert_allclose(whole, readable(x, mask=causal_mask(7))[0], atol=1e-12)
    assert weights.shape == (1, h, 7, 7)


def test_a_grouped_step_copies_no_kv_head(monkeypatch):
    readable, fused = _pair(6, 2)
    calls, repeat = [], mha.layer._repeat
    monkeypatch.setattr(
        mha.layer, "_repeat", lambda x, n: calls.append(n) or repeat(x, n)
    )
    fused.step(np.ones((1, 1, 12)), KVCache(1, 2, 2, 4, np.float64))
    assert calls == []
    readable.step(np.ones((1, 1, 12)), KVCache(1, 2, 2, 4, np.float64))
    assert calls == [3, 3]  # the readable path repeats K and V for 3 query heads each


def test_a_head_mask_or_a_bad_mask_takes_the_checked_path():
    _, fused = _pair(6, 2)
    x = np.random.default_rng(0).normal(size=(1, 3, 12))
    with pytest.raises(ValueError, match="mask"):
        fused(x, mask=np.ones((2, 2), bool))
    per_head = np.ones((1, 6, 3, 3), bool) & causal_mask(3)
    np.testing.assert_allclose(fused(x, mask=per_head)[0], fused(x, causal_mask(3))[0])
