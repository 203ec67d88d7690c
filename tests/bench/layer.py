"""The core's layer against a ten-line naive NumPy layer and torch.nn.MultiheadAttention.

Same weights, float32, batch 1, one thread for every implementation (the build and the
tests run on one BLAS thread). Four implementations at each design shape
(n, d_model, h) of ``SHAPES``:

- ``naive``: projections, reshape, one softmax, merge, in ten lines (``naive_layer``);
- ``core``: ``mha.MultiHeadAttention``, weights returned;
- ``torch_weights``: ``torch.nn.MultiheadAttention`` returning per-head weights;
- ``torch_fused``: the same module with ``need_weights=False`` (its fused kernel).

The machine is shared, so every round calls every implementation once per shape, in
an order that rotates from round to round (a change in load hits all of them alike);
each sample is the fastest of a short burst; the result keeps the median and the
quartiles over the rounds, and the load average before and after. Target: the core
within 1.15x the naive layer's median at each shape. Torch has
no target: its fused path skips the weights that the core returns by design.
Without torch installed, the torch columns are left out (``torch: null``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from mha import MultiHeadAttention
from mha_site.bench import quartiles

SHAPES = [(128, 512, 8), (512, 512, 8), (2048, 512, 8), (512, 512, 64)]  # (n, d, h)
DTYPE = np.float32
THREADS = 1
ROUNDS = 21
TARGET_VS_NAIVE = 1.15


def naive_layer(x, w_q, w_k, w_v, w_o, h):
    """Multi-head self-attention the obvious way: x (batch, n, d) -> out, weights."""
    batch, n, d = x.shape
    q, k, v = (
        (x @ w).reshape(batch, n, h, d // h).transpose(0, 2, 1, 3)
        for w in (w_q, w_k, w_v)
    )
    s = (q @ k.transpose(0, 1, 3, 2)) * x.dtype.type(1 / np.sqrt(d // h))
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    out = (w @ v).transpose(0, 2, 1, 3).reshape(batch, n, d)
    return out @ w_o, w


def _burst(n: int) -> int:
    return 3 if n <= 512 else 1  # calls per sample; the sample is the fastest


def _seconds(fn: Callable[[], object], calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _torch_calls(layer: MultiHeadAttention, x: np.ndarray) -> dict[str, Callable]:
    import torch

    twin = torch.nn.MultiheadAttention(
        layer.d_model, layer.n_heads, bias=False, batch_first=True
    )
    with torch.no_grad():
        in_proj = np.concatenate([layer.w_q, layer.w_k, layer.w_v], axis=1).T
        twin.in_proj_weight.copy_(torch.from_numpy(np.ascontiguousarray(in_proj)))
        twin.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(layer.w_o.T)))
    twin.eval()
    xt = torch.from_numpy(x)

    def weights():
        with torch.inference_mode():
            return twin(xt, xt, xt, average_attn_weights=False)

    def fused():
        with torch.inference_mode():
            return twin(xt, xt, xt, need_weights=False)

    return {"torch_weights": weights, "torch_fused": fused}


def _agreement(reference: tuple, out: np.ndarray, weights: np.ndarray | None) -> dict:
    diff = {"max_abs_diff_out": float(np.abs(np.asarray(out) - reference[0]).max())}
    if weights is not None:
        diff["max_abs_diff_weights"] = float(
            np.abs(np.asarray(weights) - reference[1]).max()
        )
    return diff


def run() -> dict:
    """Median and quartiles (ms) of the four implementations at each shape."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(THREADS)
    load_before = round(os.getloadavg()[0], 2)
    with threadpool_limits(THREADS):
        rows = [_shape(n, d, h, torch is not None) for n, d, h in SHAPES]
    return {
        "dtype": np.dtype(DTYPE).name,
        "batch": 1,
        "threads": THREADS,
        "rounds": ROUNDS,
        "torch": None if torch is None else torch.__version__,
        "numpy": np.__version__,
        "load_average_1min": {
            "before": load_before,
            "after": round(os.getloadavg()[0], 2),
        },
        "target_vs_naive": TARGET_VS_NAIVE,
        "shapes": rows,
        "within_target": all(r["core_vs_naive"] <= TARGET_VS_NAIVE for r in rows),
    }


def _shape(n: int, d: int, h: int, with_torch: bool) -> dict:
    rng = np.random.default_rng(0)
    layer = MultiHeadAttention(d, h, rng=rng, dtype=DTYPE)
    x = rng.normal(size=(1, n, d)).astype(DTYPE)
    weights = (layer.w_q, layer.w_k, layer.w_v, layer.w_o)
    calls: dict[str, Callable] = {
        "naive": lambda: naive_layer(x, *weights, h),
        "core": lambda: layer(x),
    }
    if with_torch:
        calls |= _torch_calls(layer, x)
    reference = calls["naive"]()  # also the warm-up of every call
    agreement = {}
    for name, fn in calls.items():
        result = fn()
        out, w = (result[0].numpy(), None) if name == "torch_fused" else result
        agreement[name] = _agreement(
            reference, out, None if w is None else np.asarray(w)
        )
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(ROUNDS):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate
            samples[name].append(_seconds(calls[name], _burst(n)))
    stats = {}
    for name, values in samples.items():
        fields = {"median_ms": "median", "q1_ms": "q1", "q3_ms": "q3"}
        stats[name] = quartiles(values, fields, scale=1e3, digits=3)  # and samples

    def ratio(name: str) -> float | None:
        if name not in stats:
            return None
        return round(stats["core"]["median_ms"] / stats[name]["median_ms"], 3)

    row = {
        "n": n,
        "d_model": d,
        "heads": h,
        "burst": _burst(n),
        "ms": stats,
        "agreement_with_naive": agreement,
        "core_vs_naive": ratio("naive"),
        "core_vs_torch_weights": ratio("torch_weights"),
        "core_vs_torch_fused": ratio("torch_fused"),
    }
    print({k: row[k] for k in ("n", "d_model", "heads")}, stats, flush=True)
    return row
