"""Wall-clock of one multi-head attention layer at a fixed width, for h = 1 ... 64.

Parameters and score multiply-adds do not depend on h (see ``mha.pages.cost``); this
measures what the time does. For every head count it times the whole layer and, on
the same already-split Q, K, V, the attention core alone (scores, softmax, weighted
sum). The machine is shared, so three defences against other jobs' load:

- BLAS is limited to one thread: the numbers are one core's work, and no BLAS thread
  waits on a sibling that the scheduler has parked;
- rounds are interleaved (every head count once per round), so a change in the load
  spreads over all head counts instead of biasing one of them;
- each sample is the best of a few back-to-back calls, and the result keeps the
  median and quartiles of those samples over the rounds.

The result is rendered by docs/cost.md through ``mha.pages.cost._timings()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from mha import MultiHeadAttention, scaled_dot_product_attention, split_heads
from mha.data import published
from mha.pages.cost import _HEADS
from mha_site.bench import machine, quartiles

D_MODEL = published.model("Transformer base").d_model
N = 512  # tokens: one of the shapes of the layer benchmark (tests/bench/layer.py)
BATCH = 1
DTYPE = np.float32
ROUNDS = 15
BURST = 3  # calls per sample; the sample is the fastest of them
THREADS = 1


def _layer(h: int, rng: np.random.Generator) -> MultiHeadAttention:
    layer = MultiHeadAttention(D_MODEL, h, rng=rng)
    for name in ("w_q", "w_k", "w_v", "w_o"):  # float32 weights: no cast per call
        setattr(layer, name, getattr(layer, name).astype(DTYPE))
    return layer


def _seconds(fn: Callable[[], object]) -> float:
    """The fastest of ``BURST`` back-to-back calls (seconds)."""
    best = float("inf")
    for _ in range(BURST):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run() -> dict:
    """Median and quartiles (ms) of the layer and of its attention core, per h."""
    with threadpool_limits(THREADS):
        return _measure()


def _measure() -> dict:
    started_on = machine()  # with the load average before the run
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, N, D_MODEL)).astype(DTYPE)  # (batch, seq, d_model)
    calls = {}
    for h in _HEADS:
        layer = _layer(h, rng)
        q, k, v = (split_heads(x @ w, h) for w in (layer.w_q, layer.w_k, layer.w_v))
        calls[h] = (
            lambda layer=layer: layer(x),
            lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v),
        )
        for fn in calls[h]:  # warm up
            fn()
    times = {h: ([], []) for h in _HEADS}
    for _ in range(ROUNDS):
        for h in _HEADS:
            for samples, fn in zip(times[h], calls[h], strict=True):
                samples.append(_seconds(fn))

    def stats(samples: list[float], prefix: str) -> dict:
        fields = {
            f"{prefix}_ms": "median",
            f"{prefix}_q1_ms": "q1",
            f"{prefix}_q3_ms": "q3",
        }
        return quartiles(samples, fields, scale=1e3, digits=3)  # with the samples

    rows = [
        {
            "n_heads": h,
            "d_k": D_MODEL // h,
            **stats(times[h][0], "layer"),
            **stats(times[h][1], "attention"),
        }
        for h in _HEADS
    ]
    for row in rows:
        print(
            f"h={row['n_heads']:>3}  layer {row['layer_ms']:8.2f} ms"
            f"  attention core {row['attention_ms']:8.2f} ms"
        )
    return {
        "machine": started_on,
        "d_model": D_MODEL,
        "n": N,
        "batch": BATCH,
        "dtype": np.dtype(DTYPE).name,
        "repeats": ROUNDS,
        "burst": BURST,
        "threads": THREADS,
        "rows": rows,
    }
