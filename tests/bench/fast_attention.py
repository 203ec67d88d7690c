"""Peak memory of causal attention through ``attend`` and ``tiled_attention``, from
n = 256 to 8,192 tokens (the build measures up to 2,048; ``mha.pages.fast_attention``).

One head of d_k = 64 in float64, blocks of 128; tracemalloc's peak, which sees NumPy's
array buffers. Memory, not time: the load of the machine does not move it, and it is
recorded anyway.
"""

from __future__ import annotations

import os

from mha.pages.fast_attention import _D_K, _TILE, _memory

SIZES = (256, 512, 1024, 2048, 4096, 8192)


def run() -> dict:
    """Both paths' peak bytes at each n."""
    before = os.getloadavg()[0]
    rows = _memory(SIZES)
    return {
        "d_k": _D_K,
        "block": _TILE,
        "dtype": "float64",
        "rows": rows,
        "load_average_1min": {
            "before": round(before, 2),
            "after": round(os.getloadavg()[0], 2),
        },
    }
