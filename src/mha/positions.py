"""Absolute position encodings: a vector per position, added to the token embeddings.

The base Transformer (Vaswani et al., "Attention Is All You Need", section 3.5) adds a
fixed sinusoidal vector: dims 2i and 2i + 1 of position t hold ``sin(t·ω_i)`` and
``cos(t·ω_i)``, with ``ω_i = 10000**(-2i / d_model)``. BERT-style models learn the
vectors instead (``mha.pretrained.minilm``'s ``position_embeddings``). Rotary
positions, which act on the queries and keys instead, are ``mha.rope``.
"""

from __future__ import annotations

import numpy as np

from mha.support.validate import integer, positive_int

BASE = 10_000.0  # Vaswani et al.'s wavelength base


def sinusoidal(n: int, d_model: int) -> np.ndarray:
    """The sinusoidal encodings of positions ``0 .. n - 1``: ``(n, d_model)``, float64.

    Pair i (dims 2i, 2i + 1) turns at the angular frequency ``10000**(-2i/d_model)``,
    so the dot product of two positions' encodings depends only on their distance.

    ```python
    import numpy as np
    from mha.positions import sinusoidal

    p = sinusoidal(50, 16)
    assert p.shape == (50, 16) and np.allclose(p[0], [0, 1] * 8)  # sin 0, cos 0
    assert np.allclose(np.linalg.norm(p, axis=-1), np.sqrt(8))  # every pair: sin² + cos²
    assert np.isclose(p[3] @ p[10], p[30] @ p[37])  # only the distance counts
    ```
    """
    n = integer("n", n, minimum=0)
    d_model = positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(
            f"d_model: expected an even width (sin/cos pairs), got {d_model}"
        )
    angles = np.arange(n)[:, None] / BASE ** (np.arange(0, d_model, 2) / d_model)
    encodings = np.empty((n, d_model))
    encodings[:, 0::2], encodings[:, 1::2] = np.sin(angles), np.cos(angles)
    return encodings
