"""SmolLM2 decoding measured: the KV cache against recomputing the prefix, grouped-query
K/V heads against the model's own 9-head expansion, and where a step's time goes.

Three studies, each interleaved over ``ROUNDS`` rounds so that both sides of a
comparison cover the same minutes of a shared machine:

- **cache or recompute**: one new token at context t, either one step with the KV
  cache (the t earlier tokens' keys and values are kept) or the whole prefix of t + 1
  tokens run again with no cache, for t in ``RECOMPUTE_CONTEXTS``.
- **GQA or its expansion**: one decode step at context t with SmolLM2's 3 K/V heads and
  with the same model whose K/V heads are repeated to 9 (``expand_kv_heads``, fused
  again so both take the same one-product projection path), for t in ``GQA_CONTEXTS``.
  The bytes a step reads are predicted first: every weight once plus the whole cache.
  The caches are filled with random keys and values (a step's time depends on the
  cache's length, not on what it holds), so no 4,096-token prefill is needed.
- **where the rest of a step goes**: the step (``decode_seconds``) beside its weight
  products alone (``products_seconds``), both of ``tests/bench/smollm2.py``, with the
  grouped attention of ``FusedQKV`` and with the readable one that copies each K/V
  head per query head (``repeat_kv``), in turn; and one cProfile of
  ``PROFILE_STEPS`` steps: the functions that take the time outside the products.

Everything runs with BLAS on one thread (a busy, shared machine). Shorter runs:
``DECODE_ROUNDS`` and ``DECODE_MAX_CONTEXT`` in the environment; the result records
what was run, and the load average before and after.
"""

from __future__ import annotations

import copy
import cProfile
import os
import pstats
import time

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.layer import MultiHeadAttention
from mha.pages.real_gqa_model import _PARAGRAPH, expand_kv_heads
from mha.pretrained import smollm2
from mha.support.threads import one_blas_thread
from mha_site.bench import quartiles
from tests.bench.smollm2 import decode_seconds, products_seconds

ROUNDS = int(os.environ.get("DECODE_ROUNDS", 7))
MAX_CONTEXT = int(os.environ.get("DECODE_MAX_CONTEXT", 4096))
RECOMPUTE_CONTEXTS = tuple(t for t in (32, 64, 128, 256, 512) if t <= MAX_CONTEXT)
GQA_CONTEXTS = tuple(t for t in (256, 512, 1024, 2048, 4096) if t <= MAX_CONTEXT)
STEPS = 4  # cached decode steps timed per context and round (their median is kept)
PROFILE_STEPS = 16
ITEMSIZE = np.dtype(np.float32).itemsize


def spread(values: list[float], scale: float = 1.0, digits: int = 3) -> dict:
    """Median and quartiles of ``values`` (times ``scale``), rounded, with the raw
    samples they come from (``mha_site.bench.quartiles``)."""
    return quartiles(values, QUARTILES, scale=scale, digits=digits)


QUARTILES = {"q1": "q1", "median": "median", "q3": "q3"}


def filled_caches(model: smollm2.SmolLM2, length: int, room: int) -> list:
    """The model's caches holding ``length`` random tokens, with ``room`` to grow."""
    rng = np.random.default_rng(0)
    caches = model.new_caches(length + room)
    for cache in caches:
        shape = (1, cache.n_kv_heads, length, cache.d_k)
        k = rng.standard_normal(shape, dtype=np.float32)
        cache.append(k, k)
    return caches


def cached_step(model: smollm2.SmolLM2, caches: list, token: int) -> float:
    """Seconds of one decode step: the new token through every block, then the head."""
    start = time.perf_counter()
    model.head(model.hidden([token], caches)[0, -1])
    return time.perf_counter() - start


def recompute_step(model: smollm2.SmolLM2, ids: list[int]) -> float:
    """Seconds to get the next token's logits with no cache: the whole prefix again."""
    start = time.perf_counter()
    model.head(model.hidden(ids, model.new_caches(len(ids)))[0, -1])
    return time.perf_counter() - start


def step_bytes(model: smollm2.SmolLM2, context: int) -> int:
    """Bytes a decode step reads at ``context``: every weight once, the whole cache."""
    cache = sum(
        kv_cache_bytes(1, b.attention.n_kv_heads, b.attention.d_k, context, ITEMSIZE)
        for b in model.blocks
    )
    return model.weight_nbytes + cache


def expanded(model: smollm2.SmolLM2) -> smollm2.SmolLM2:
    """The model with each layer's K/V heads repeated to one per query head, its
    Q/K/V projection fused again (the same one-product path as the original)."""

    def expand(attention):
        wide = expand_kv_heads(attention)
        wide.fuse(np.concatenate([wide.w_q, wide.w_k, wide.w_v], axis=1))
        return wide

    return model.map_attention(expand)


def cache_or_recompute(model: smollm2.SmolLM2, ids: list[int]) -> list[dict]:
    """Tokens per second with the cache and recomputing, per context, interleaved."""
    caches = {
        t: filled_caches(model, t, ROUNDS * STEPS + 1) for t in RECOMPUTE_CONTEXTS
    }
    cached = {t: [] for t in RECOMPUTE_CONTEXTS}
    again = {t: [] for t in RECOMPUTE_CONTEXTS}
    for _ in range(ROUNDS):
        for t in RECOMPUTE_CONTEXTS:
            steps = [cached_step(model, caches[t], ids[t]) for _ in range(STEPS)]
            cached[t].append(float(np.median(steps)))
            again[t].append(recompute_step(model, ids[: t + 1]))
    rows = []
    for t in RECOMPUTE_CONTEXTS:
        ratios = [a / c for a, c in zip(again[t], cached[t], strict=True)]
        rows.append(
            {
                "context": t,
                "cached_tokens_per_s": spread([1 / s for s in cached[t]], digits=2),
                "recompute_tokens_per_s": spread([1 / s for s in again[t]], digits=2),
                "speedup": spread(ratios, digits=1),
            }
        )
    return rows


def gqa_or_expansion(model: smollm2.SmolLM2, wide: smollm2.SmolLM2) -> list[dict]:
    """Milliseconds per step of the model and its 9-head expansion, per context,
    interleaved (the order alternates from round to round)."""
    room = ROUNDS * STEPS + 1
    rows = []
    for t in GQA_CONTEXTS:
        models = {"gqa": model, "mha": wide}
        caches = {name: filled_caches(m, t, room) for name, m in models.items()}
        times = {name: [] for name in models}
        for r in range(ROUNDS):
            order = ("gqa", "mha") if r % 2 == 0 else ("mha", "gqa")
            for name in order:
                steps = [
                    cached_step(models[name], caches[name], 0) for _ in range(STEPS)
                ]
                times[name].append(float(np.median(steps)))
        del caches
        ratios = [m / g for m, g in zip(times["mha"], times["gqa"], strict=True)]
        predicted = {name: step_bytes(m, t) for name, m in models.items()}
        rows.append(
            {
                "context": t,
                "predicted_bytes": predicted,
                "predicted_ratio": round(predicted["mha"] / predicted["gqa"], 3),
                "ms": {name: spread(v, 1e3, 2) for name, v in times.items()},
                "measured_ratio": spread(ratios),
            }
        )
    return rows


class _Repeating(smollm2.FusedQKV):
    """The fused layer with the readable attention step: ``repeat_kv`` copies each
    K/V head for its group's query heads (what ``FusedQKV._attend`` avoids)."""

    _attend = MultiHeadAttention._attend


def repeating(model: smollm2.SmolLM2) -> smollm2.SmolLM2:
    """The model whose layers attend through ``repeat_kv``, the same arrays."""

    def readable(attention):
        layer = copy.copy(attention)
        layer.__class__ = _Repeating
        return layer

    return model.map_attention(readable)


def overhead(model: smollm2.SmolLM2, prompt: list[int]) -> dict:
    """A step's time beside its weight products, interleaved, and where the rest goes;
    the same beside the model that attends through ``repeat_kv`` (turns alternate)."""
    variants = {"grouped": model, "repeat_kv": repeating(model)}
    decode = {name: [] for name in variants}
    products, rest = [], {name: [] for name in variants}
    for r in range(ROUNDS):
        p = float(np.median(products_seconds(model)))
        products.append(p)
        for name in sorted(variants, reverse=r % 2 == 1):
            d = float(np.median(decode_seconds(variants[name], prompt)))
            decode[name].append(d)
            rest[name].append(d - p)
    cut = [g / k for g, k in zip(rest["grouped"], rest["repeat_kv"], strict=True)]
    caches = model.new_caches(len(prompt) + PROFILE_STEPS + 1)
    hidden = model.hidden(prompt, caches)[0, -1]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(PROFILE_STEPS):
        hidden = model.hidden([int(np.argmax(model.head(hidden)))], caches)[0, -1]
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tt, ct, ...)
    top = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:15]
    return {
        "context": len(prompt),
        "decode_ms": spread(decode["grouped"], 1e3, 2),
        "products_ms": spread(products, 1e3, 2),
        "rest_ms": spread(rest["grouped"], 1e3, 2),
        "repeat_kv_decode_ms": spread(decode["repeat_kv"], 1e3, 2),
        "repeat_kv_rest_ms": spread(rest["repeat_kv"], 1e3, 2),
        "rest_grouped_over_repeat_kv": spread(cut),
        "profile_steps": PROFILE_STEPS,
        "profile": [
            {
                "function": f"{os.path.basename(file)}:{line}({name})",
                "calls_per_token": round(calls / PROFILE_STEPS, 1),
                "own_ms_per_token": round(own / PROFILE_STEPS * 1e3, 3),
            }
            for (file, line, name), (_, calls, own, _, _) in top
        ],
    }


def run() -> dict:
    """The three decoding studies of SmolLM2-135M, on one BLAS thread."""
    before = os.getloadavg()[0]
    model = smollm2.load()
    text = model.encode(_PARAGRAPH)
    ids = (text * (max(RECOMPUTE_CONTEXTS) // len(text) + 2))[
        : max(RECOMPUTE_CONTEXTS) + 1
    ]
    with one_blas_thread():
        recompute = cache_or_recompute(model, ids)
        grouped = gqa_or_expansion(model, expanded(model))
        rest = overhead(model, text)
    return {
        "rounds": ROUNDS,
        "steps_per_round": STEPS,
        "max_context": MAX_CONTEXT,
        "blas_threads": 1,
        "load_average_1min": {
            "before": round(before, 2),
            "after": round(os.getloadavg()[0], 2),
        },
        "cache_or_recompute": recompute,
        "gqa_or_expansion": grouped,
        "overhead": rest,
    }
