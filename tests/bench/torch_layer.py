"""The core's MultiHeadAttention against torch.nn.MultiheadAttention, same weights.

float32, batch 1, 2 threads for both, attention weights returned by both (per head).
Target (DESIGN.md): the core takes <= 1.25x torch's time at each shape.
"""

from __future__ import annotations

import platform

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from mha import MultiHeadAttention
from tests.bench import median_seconds

SHAPES = [(128, 512, 8), (512, 512, 8), (2048, 512, 8), (512, 512, 64)]  # (n, d, h)
THREADS = 2
TARGET_RATIO = 1.25


def _torch_twin(layer: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    twin = torch.nn.MultiheadAttention(
        layer.d_model, layer.n_heads, bias=False, batch_first=True
    )
    with torch.no_grad():
        in_proj = np.concatenate([layer.w_q, layer.w_k, layer.w_v], axis=1).T
        twin.in_proj_weight.copy_(torch.from_numpy(np.ascontiguousarray(in_proj)))
        twin.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(layer.w_o.T)))
    return twin


def run() -> dict:
    torch.set_num_threads(THREADS)
    rows = []
    with threadpool_limits(THREADS):
        for n, d, h in SHAPES:
            layer = MultiHeadAttention(d, h, dtype=np.float32)
            x = np.random.default_rng(0).normal(size=(1, n, d)).astype(np.float32)
            twin, x_torch = _torch_twin(layer), torch.from_numpy(x)

            def core(layer=layer, x=x):
                return layer(x)

            def reference(twin=twin, x_torch=x_torch):
                with torch.inference_mode():
                    return twin(x_torch, x_torch, x_torch, average_attn_weights=False)

            out, weights = core()
            out_t, weights_t = reference()
            repeats = 20 if n <= 512 else 7
            t_core, t_torch = (
                median_seconds(core, repeats),
                median_seconds(reference, repeats),
            )
            rows.append(
                {
                    "n": n,
                    "d_model": d,
                    "heads": h,
                    "core_ms": round(1e3 * t_core, 2),
                    "torch_ms": round(1e3 * t_torch, 2),
                    "ratio": round(t_core / t_torch, 2),
                    "max_abs_diff_out": float(np.abs(out - out_t.numpy()).max()),
                    "max_abs_diff_weights": float(
                        np.abs(weights - weights_t.numpy()).max()
                    ),
                }
            )
            print(rows[-1], flush=True)
    return {
        "machine": {"processor": platform.machine(), "threads": THREADS},
        "versions": {"numpy": np.__version__, "torch": torch.__version__},
        "target_ratio": TARGET_RATIO,
        "shapes": rows,
        "within_target": all(r["ratio"] <= TARGET_RATIO for r in rows),
    }
