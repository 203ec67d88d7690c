"""Rotary position embeddings (RoPE): rotate query/key pairs by a position angle.

Pair j of a head is rotated by ``position * base**(-2j / d_k)``. Two pairings are in
use: the half-split one pairs dims (j, j + d_k/2) (Hugging Face Llama), the
interleaved one pairs (2j, 2j + 1) (the original paper, and GGUF files, whose Q/K
weights are permuted to match it). The same weights give garbage under the wrong one.
"""

from __future__ import annotations

import math

import numpy as np

from mha.support.validate import (
    ArgumentTypeError,
    as_array,
    fits,
    flag,
    float_array,
    integer,
    positive_int,
)

# Angles p·θ are computed in float64: past 2**32 their rounding error passes 1e-6
# radian (2**32 · 2**-52), more than a float32 rotation resolves.
MAX_POSITION = 2**32
TABLE_LIMIT = 2**16  # positions kept in the cos/sin table; farther ones computed


class RotaryEmbedding:
    """Rotate ``x (..., seq, d_k)`` by the angles of ``positions (seq,)``.

    ```python
    import numpy as np
    from mha.rope import RotaryEmbedding

    rope = RotaryEmbedding(d_k=4)
    q = np.random.default_rng(0).normal(size=(2, 3, 4))  # (heads, seq, d_k)
    k = np.random.default_rng(1).normal(size=(2, 3, 4))
    # a rotation keeps lengths, and q·k depends only on the distance of positions
    turned = rope(q, np.arange(3))
    assert np.allclose(np.linalg.norm(turned, axis=-1), np.linalg.norm(q, axis=-1))
    near = rope(q, np.arange(3))[..., 0, :] @ rope(k, np.arange(3))[..., 1, :].T
    far = rope(q, np.arange(3) + 7)[..., 0, :] @ rope(k, np.arange(3) + 7)[..., 1, :].T
    assert np.allclose(near, far)
    ```
    """

    def __init__(self, d_k: int, base: float = 10_000.0, interleaved: bool = False):
        self.d_k = positive_int("d_k", d_k)
        if self.d_k % 2:
            raise ValueError(f"d_k: expected an even head dimension, got {d_k}")
        if isinstance(base, (bool, np.bool_)) or not isinstance(
            base, (int, float, np.integer, np.floating)
        ):
            raise ArgumentTypeError(f"base: expected a number above 1, got {base!r}")
        if not (math.isfinite(base) and base > 1):
            raise ValueError(f"base: expected a finite number above 1, got {base}")
        self.base = float(base)
        self.inv_freq = self.base ** (-np.arange(0, self.d_k, 2) / self.d_k)
        self._interleaved = flag("interleaved", interleaved)
        # cos/sin tables by dtype; they depend on the pairing, which cannot change
        self._tables: dict[np.dtype, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def interleaved(self) -> bool:
        """The pairing: (2j, 2j + 1) if True, (j, j + d_k/2) if False. Read-only: the
        cached tables depend on it; build another ``RotaryEmbedding`` for the other."""
        return self._interleaved

    def __call__(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        x, positions = self._check_inputs(x, positions)
        cos, sin = self._cos_sin(positions, x.dtype)  # (seq, d_k) each
        return self._rotate(x, cos, sin)

    def from_position(self, x: np.ndarray, start: int) -> np.ndarray:
        """Rotate ``x (..., seq, d_k)`` as the tokens at ``start, start + 1, ...``.

        What a decoding step needs: new tokens follow the ``start`` cached ones.

        ```python
        import numpy as np
        from mha.rope import RotaryEmbedding

        rope = RotaryEmbedding(d_k=4)
        x = np.random.default_rng(0).normal(size=(2, 3, 4))
        assert np.array_equal(rope.from_position(x, 5), rope(x, np.arange(5, 8)))
        ```
        """
        x = self._check_x(x)
        return self._from_position(x, self._check_start(start, x.shape[-2]))

    def _from_position(self, x: np.ndarray, start: int) -> np.ndarray:
        """``from_position`` on checked inputs (the layer checks its own on entry)."""
        stop = start + x.shape[-2]
        if stop > TABLE_LIMIT:  # far positions: their own angles, not a table
            cos, sin = self._cos_sin(np.arange(start, stop), x.dtype)
            return self._rotate(x, cos, sin)
        cos, sin = self._table(stop, x.dtype)
        return self._rotate(x, cos[start:stop], sin[start:stop])

    def _rotate(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        # pair (a, b) -> (a cos - b sin, b cos + a sin): x * cos + partner(x) * ±sin
        with np.errstate(over="ignore"):  # refused by name just below
            rotated = x * cos + self._partner(x) * sin
        return fits("x", "rotation", rotated)

    def _partner(self, x: np.ndarray) -> np.ndarray:
        """Each entry's partner in its pair: x1, x0, x3, x2, ... or the other half."""
        if self.interleaved:
            return x.reshape(*x.shape[:-1], -1, 2)[..., ::-1].reshape(x.shape)
        half = self.d_k // 2
        return np.concatenate((x[..., half:], x[..., :half]), axis=-1)

    def _cos_sin(
        self, positions: np.ndarray, dtype: np.dtype
    ) -> tuple[np.ndarray, np.ndarray]:
        """cos and signed sin ``(len(positions), d_k)`` of the positions' angles, each
        angle once per entry of its pair (computed in float64, returned in ``dtype``)."""
        angles = positions[:, None] * self.inv_freq  # (n, d_k/2)
        cos, sin = np.cos(angles), np.sin(angles)
        if self.interleaved:  # pair j is entries 2j, 2j+1
            cos = np.repeat(cos, 2, axis=-1)
            sin = np.stack((-sin, sin), axis=-1).reshape(len(positions), -1)
        else:  # pair j is entries j, j + d_k/2
            cos = np.concatenate((cos, cos), axis=-1)
            sin = np.concatenate((-sin, sin), axis=-1)
        return cos.astype(dtype), sin.astype(dtype)

    def _table(self, n: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """``_cos_sin`` of positions 0, 1, ... (at least ``n`` of them), kept in a
        table grown by doubling, so that decoding one token does not recompute them."""
        table = self._tables.get(dtype)
        if table is None or len(table[0]) < n:
            n = max(n, 2 * len(table[0]) if table else 0, 64)
            table = self._tables[dtype] = self._cos_sin(np.arange(n), dtype)
        return table

    # --- input checks ---------------------------------------------------------------

    def _check_x(self, x: np.ndarray) -> np.ndarray:
        x = float_array("x", x)
        self._check_shape(x.shape)
        return x

    def _check_shape(self, shape: tuple[int, ...]) -> None:
        if len(shape) < 2 or shape[-1] != self.d_k:
            raise ValueError(
                f"x: expected shape (..., seq, d_k={self.d_k}), got {shape}"
            )

    def _check_start(self, start: int, seq: int) -> int:
        start = integer("start", start, minimum=0)
        if start + seq > MAX_POSITION:
            raise ValueError(
                f"start: expected start + seq below 2**{MAX_POSITION.bit_length() - 1}"
                f" (past it the float64 angles lose the precision of a rotation), "
                f"got {start} + {seq}"
            )
        return start

    def _check_inputs(
        self, x: np.ndarray, positions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        x = self._check_x(x)
        positions = as_array("positions", positions)
        if positions.shape != x.shape[-2:-1]:
            raise ValueError(
                f"positions: expected shape ({x.shape[-2]},) (one per token), "
                f"got {positions.shape}"
            )
        if positions.dtype.kind not in "iu" or (positions < 0).any():
            raise ValueError(
                f"positions: expected token indices (integers >= 0), got {positions}"
            )
        if positions.size and positions.max() >= MAX_POSITION:
            raise ValueError(
                f"positions: expected indices below 2**{MAX_POSITION.bit_length() - 1}"
                f" (past it the float64 angles lose the precision of a rotation), "
                f"got {positions.max()}"
            )
        return x, positions
