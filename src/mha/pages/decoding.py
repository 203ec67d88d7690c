"""Decoding with a KV cache, taught: ``docs/decoding.md``.

A prompt is prefilled, then tokens come one at a time or in chunks. The page computes
the step's mask for t new queries on L cached tokens, decodes a small layer with RoPE
by hand (keys rotated at their absolute positions before they are cached, grouped
heads read by index) and against ``MultiHeadAttention.step``, measures what rotating
a key at its position within the chunk does to the output, and counts the bytes a
step reads with and without copying the shared K/V heads.
"""

from __future__ import annotations

import functools
from itertools import pairwise

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.attention import causal_mask, softmax
from mha.data import published
from mha.heads import merge_heads, split_heads
from mha.kv_cache import KVCache
from mha.layer import MultiHeadAttention
from mha.rope import RotaryEmbedding
from mha.support.page import Fact, Figure, Page

_D_MODEL, _N_HEADS = 16, 4  # the page's small layer: d_k = 4, even for RoPE
_KV_HEADS = {"MHA": 4, "GQA": 2, "MQA": 1}
_CHUNKS = (4, 1, 1, 3)  # a prompt of 4, two single tokens, a chunk of 3
_MASK_CASES = ((0, 4), (4, 1), (4, 3))  # (cached L, new t) of the figure's panels
_EXACT = 1e-12  # float64: the cache changes the order of no sum that matters
_BYTES_MODEL = "Llama-3 8B"  # the published model whose step is counted
_BYTES_CONTEXT = 4096  # tokens cached when the step is counted
_BYTES_PER_VALUE = 2  # 16-bit cache


def _step_mask(cached: int, new: int) -> np.ndarray:
    """``(new, cached + new)``: True where new query i may read key j, j <= cached + i."""
    return np.arange(cached + new) <= (cached + np.arange(new))[:, None]


@functools.cache
def page() -> Page:
    """What the page prints; its facts and its figure."""
    x = np.random.default_rng(0).normal(size=(1, sum(_CHUNKS), _D_MODEL))
    equal, wrong = {}, {}
    for kind, h_kv in _KV_HEADS.items():
        layer = _layer(h_kv)
        full = layer(x, mask=causal_mask(x.shape[1]))[0]
        core, by_hand = _core_decode(layer, x), _decode(layer, x, "absolute")
        equal[kind] = {
            "core": float(np.abs(core - full).max()),
            "by_hand": float(np.abs(by_hand - full).max()),
        }
        error = np.abs(_decode(layer, x, "within chunk") - full).max(axis=(0, 2))
        wrong[kind] = error  # per token
    masks = [(cached, new, _step_mask(cached, new)) for cached, new in _MASK_CASES]
    zeros = _core_zeros(*_MASK_CASES[-1])
    per_step = _bytes_per_step()
    values = {
        "chunks": _CHUNKS,
        "d_model": _D_MODEL,
        "n_heads": _N_HEADS,
        "d_k": _D_MODEL // _N_HEADS,
        "kv_heads": _KV_HEADS,
        "equal": {k: {w: f"{v:.1e}" for w, v in e.items()} for k, e in equal.items()},
        "exact": f"{_EXACT:g}",
        "prompt": _CHUNKS[0],
        "wrong_max": {k: float(e.max()) for k, e in wrong.items()},
        "wrong_prompt": {k: float(e[: _CHUNKS[0]].max()) for k, e in wrong.items()},
        "mask_cached": _MASK_CASES[-1][0],
        "mask_new": _MASK_CASES[-1][1],
        "mask_seen": [int(row.sum()) for row in masks[-1][2]],
        "bytes": per_step,
    }
    return Page(
        **values,
        facts=_facts(equal, wrong, masks[-1][2], zeros, per_step),
        figures=_figures(masks),
    )


def _layer(n_kv_heads: int) -> MultiHeadAttention:
    layer = MultiHeadAttention(
        _D_MODEL, _N_HEADS, n_kv_heads, rng=np.random.default_rng(1)
    )
    layer.rope = RotaryEmbedding(_D_MODEL // _N_HEADS)
    return layer


def _core_decode(layer: MultiHeadAttention, x: np.ndarray) -> np.ndarray:
    """``layer.step`` over ``_CHUNKS``: the prompt, then tokens and a chunk."""
    cache = KVCache(x.shape[0], layer.n_kv_heads, layer.d_k, x.shape[1])
    starts = np.cumsum((0, *_CHUNKS))
    steps = [layer.step(x[:, a:b], cache)[0] for a, b in pairwise(starts)]
    return np.concatenate(steps, axis=1)


def _decode(layer: MultiHeadAttention, x: np.ndarray, positions: str) -> np.ndarray:
    """The decode step written out over ``_CHUNKS``: keys rotated at their
    ``positions`` ("absolute": L + i; "within chunk": i) before they are cached,
    grouped heads read by index, the step's mask."""
    rope, group = layer.rope, layer.n_heads // layer.n_kv_heads
    k_cache = np.zeros((x.shape[0], layer.n_kv_heads, 0, layer.d_k))
    v_cache, outputs, cached = k_cache, [], 0
    for new in _CHUNKS:
        x_new = x[:, cached : cached + new]
        where = np.arange(new) + (cached if positions == "absolute" else 0)
        q = rope(split_heads(x_new @ layer.w_q, layer.n_heads), where)
        k = rope(split_heads(x_new @ layer.w_k, layer.n_kv_heads), where)
        v = split_heads(x_new @ layer.w_v, layer.n_kv_heads)
        k_cache = np.concatenate([k_cache, k], axis=2)  # appended, never overwritten
        v_cache = np.concatenate([v_cache, v], axis=2)
        # query head i reads K/V head i // group: a view, no copy of the cache
        q = q.reshape(q.shape[0], layer.n_kv_heads, group, new, layer.d_k)
        scores = q @ k_cache[:, :, None].swapaxes(-1, -2) / np.sqrt(layer.d_k)
        scores = np.where(_step_mask(cached, new), scores, -np.inf)
        heads = (softmax(scores) @ v_cache[:, :, None]).reshape(
            x.shape[0], layer.n_heads, new, layer.d_k
        )
        outputs.append(merge_heads(heads) @ layer.w_o)
        cached += new
    return np.concatenate(outputs, axis=1)


def _core_zeros(cached: int, new: int) -> np.ndarray:
    """Where ``layer.step``'s weights are zero for ``new`` tokens on ``cached``."""
    layer = _layer(_KV_HEADS["GQA"])
    x = np.random.default_rng(2).normal(size=(1, cached + new, _D_MODEL))
    cache = KVCache(1, layer.n_kv_heads, layer.d_k, cached + new)
    if cached:
        layer.step(x[:, :cached], cache)
    weights = layer.step(x[:, cached:], cache)[1]  # (1, h, new, cached + new)
    return (weights == 0).all(axis=(0, 1))


def _bytes_per_step() -> dict:
    """One decode step of ``_BYTES_MODEL`` at ``_BYTES_CONTEXT`` cached tokens: the
    K/V bytes the attention reads, by index and after repeating each head."""
    c = published.decoder(_BYTES_MODEL)
    read = c.n_layers * kv_cache_bytes(
        1, c.n_kv_heads, c.head_dim, _BYTES_CONTEXT, _BYTES_PER_VALUE
    )
    repeated = c.n_layers * kv_cache_bytes(
        1, c.n_heads, c.head_dim, _BYTES_CONTEXT, _BYTES_PER_VALUE
    )
    return {
        "model": c.name,
        "context": _BYTES_CONTEXT,
        "bits": 8 * _BYTES_PER_VALUE,
        "n_heads": c.n_heads,
        "n_kv_heads": c.n_kv_heads,
        "group": c.n_heads // c.n_kv_heads,
        "by_index_mib": round(read / 2**20),  # whole MiB at these sizes
        "repeated_mib": round(repeated / 2**20),
        "ratio": repeated / read,
    }


def _facts(
    equal: dict,
    wrong: dict,
    mask: np.ndarray,
    zeros: np.ndarray,
    per_step: dict,
) -> dict[str, Fact]:
    worst = max(max(e.values()) for e in equal.values())
    smallest_wrong = min(float(e.max()) for e in wrong.values())
    prompt_wrong = max(float(e[: _CHUNKS[0]].max()) for e in wrong.values())
    return {
        "decode_equals_full": Fact(
            worst <= _EXACT,
            f"largest difference {worst:.2e} (limit {_EXACT:g}) over {list(equal)}",
            "the core's step and the step written out both give the full causal pass, "
            "within 1e-12, for MHA, GQA and MQA with RoPE",
        ),
        "mask_is_the_steps": Fact(
            np.array_equal(zeros, ~mask),
            f"mask {mask.astype(int).tolist()}, zero weights {zeros.astype(int).tolist()}",
            "the step's weights are zero exactly where the computed mask is False",
            qualitative="an identity of two boolean arrays: the mask is printed and "
            "drawn just above the sentence",
        ),
        "wrong_position_breaks": Fact(
            smallest_wrong > 1e3 * _EXACT,
            f"largest error per design {[round(float(e.max()), 4) for e in wrong.values()]}",
            "rotating at the position within the chunk moves the output by far more "
            "than rounding, in every design",
        ),
        "prompt_unharmed": Fact(
            prompt_wrong <= _EXACT,
            f"largest error over the prompt {prompt_wrong:.2e}",
            "the prompt's outputs are right either way: its chunk starts at position 0",
        ),
        "index_reads_less": Fact(
            np.isclose(per_step["ratio"], per_step["group"]) and per_step["group"] > 1,
            f"{per_step['repeated_mib']:.1f} MiB vs {per_step['by_index_mib']:.1f} MiB, "
            f"ratio {per_step['ratio']:g}, group {per_step['group']}",
            "repeating the K/V heads makes a step read group-size times the bytes",
        ),
    }


def _figures(masks: list) -> dict[str, Figure]:
    cached, new, _ = masks[-1]
    return {
        "step_masks": Figure(
            "decoding.step_masks",
            (masks,),
            alt=(
                "Three grids of queries against keys: the prompt's causal triangle, "
                "one new token that reads every key, and a chunk of new tokens that "
                "reads every cached key and the new keys up to itself."
            ),
            caption=(
                f"Look at the last grid: each of the {new} new queries reads all "
                f"{cached} cached keys, then the new keys up to itself, never a later "
                "one of its chunk."
            ),
        )
    }
