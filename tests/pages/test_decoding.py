"""docs/decoding.md: the step's mask, the decode written out against the core, the
error of a key rotated at its place in the chunk, the bytes a step reads, and each
fact with values that make it false."""

from __future__ import annotations

import numpy as np
import pytest

from mha import KVCache, MultiHeadAttention, causal_mask
from mha.data import published
from mha.figures.decoding import step_masks
from mha.pages import decoding
from mha.rope import RotaryEmbedding


@pytest.fixture(scope="module")
def page():
    return decoding.page()


def test_every_fact_holds(page):
    assert all(fact.holds for fact in page.facts.values())
    assert all(fact.says for fact in page.facts.values())


def test_the_step_mask_lets_query_i_read_keys_up_to_l_plus_i():
    mask = decoding._step_mask(4, 3)
    assert mask.shape == (3, 7)
    assert [int(row.sum()) for row in mask] == [5, 6, 7]
    assert decoding._step_mask(4, 1).all()  # one token reads every key
    assert np.array_equal(decoding._step_mask(0, 5), causal_mask(5))  # the prefill


def test_the_step_accepts_a_batch_as_long_as_its_chunk():
    # the core's step built a (t, L) mask that check_mask refused as ambiguous when
    # batch = t > 1 (a (batch, key) padding mask or a (query, key) one?)
    layer = MultiHeadAttention(8, 2, rng=np.random.default_rng(0))
    x = np.random.default_rng(1).normal(size=(2, 5, 8))
    cache = KVCache(2, 2, layer.d_k, 5)
    steps = [layer.step(x[:, :3], cache)[0], layer.step(x[:, 3:], cache)[0]]
    full = layer(x, mask=causal_mask(5))[0]
    assert np.allclose(np.concatenate(steps, axis=1), full, rtol=0, atol=1e-12)


@pytest.mark.parametrize("h_kv", [4, 2, 1])
def test_the_written_out_decode_is_the_cores(h_kv):
    layer = decoding._layer(h_kv)
    x = np.random.default_rng(5).normal(size=(2, sum(decoding._CHUNKS), 16))
    ours = decoding._decode(layer, x, "absolute")
    assert np.allclose(ours, decoding._core_decode(layer, x), rtol=0, atol=1e-12)
    wrong = decoding._decode(layer, x, "within chunk")
    prompt = decoding._CHUNKS[0]
    assert np.allclose(wrong[:, :prompt], ours[:, :prompt], rtol=0, atol=1e-12)
    assert np.abs(wrong[:, prompt:] - ours[:, prompt:]).max(axis=-1).min() > 1e-6


def test_the_layers_rope_is_the_half_split_one_at_the_default_base():
    rope = decoding._layer(2).rope
    assert isinstance(rope, RotaryEmbedding) and not rope.interleaved
    assert rope.base == 10_000.0


def test_the_bytes_per_step_follow_the_cache_formula(page):
    c = published.decoder(page.bytes["model"])
    tokens, size = page.bytes["context"], 2
    by_index = 2 * c.n_layers * c.n_kv_heads * c.head_dim * tokens * size / 2**20
    assert page.bytes["by_index_mib"] == by_index
    assert page.bytes["repeated_mib"] == by_index * c.n_heads / c.n_kv_heads


def test_the_masks_fact_reads_the_cores_weights(page):
    zeros = decoding._core_zeros(4, 3)
    assert np.array_equal(zeros, ~decoding._step_mask(4, 3))
    assert page.mask_seen == [5, 6, 7]


def facts_with(**changed):
    page = decoding.page()
    wrong = {"MHA": np.r_[np.zeros(4), np.full(5, 0.5)]}
    args = {
        "equal": {"MHA": {"core": 1e-16, "by_hand": 1e-16}},
        "wrong": wrong,
        "mask": decoding._step_mask(4, 3),
        "zeros": ~decoding._step_mask(4, 3),
        "per_step": page.bytes,
    }
    return decoding._facts(**(args | changed))


def test_the_facts_hold_on_values_like_the_pages():
    assert all(f.holds for f in facts_with().values())


@pytest.mark.parametrize(
    "fact, changed",
    [
        ("decode_equals_full", {"equal": {"GQA": {"core": 1e-9, "by_hand": 0.0}}}),
        ("mask_is_the_steps", {"zeros": np.zeros((3, 7), bool)}),
        ("wrong_position_breaks", {"wrong": {"MQA": np.full(9, 1e-13)}}),
        ("prompt_unharmed", {"wrong": {"GQA": np.full(9, 0.5)}}),
        (
            "index_reads_less",
            {"per_step": decoding.page().bytes | {"ratio": 1.0, "group": 1}},
        ),
    ],
)
def test_each_fact_turns_false(fact, changed):
    assert not facts_with(**changed)[fact].holds


def test_the_figure_draws_one_grid_per_step_with_the_blocked_cells_empty(page):
    (masks,) = page.figures["step_masks"].data
    panels = step_masks(masks)
    assert len(panels) == len(masks) == 3
    for panel, (cached, new, mask) in zip(panels, masks, strict=True):
        image = panel.axes[0].images[0].get_array()
        assert image.shape == (new, cached + new)
        assert np.array_equal(np.asarray(image) > 0, mask)
        cached_cells = np.asarray(image)[:, :cached][mask[:, :cached]]
        assert (cached_cells == 1).all()  # cached keys in one colour
        assert (np.asarray(image)[:, cached:][mask[:, cached:]] == 2).all()  # new
