"""RotaryEmbedding against the definition: pair j of a head turns by pos * base^(-2j/d)."""

from __future__ import annotations

import numpy as np
import pytest

from mha.rope import RotaryEmbedding


def rotate_by_definition(x: np.ndarray, positions, base: float, interleaved: bool):
    """Each pair (a, b) -> (a cos t - b sin t, a sin t + b cos t), one at a time."""
    d_k = x.shape[-1]
    out = x.astype(np.float64).copy()
    for i, pos in enumerate(positions):
        for j in range(d_k // 2):
            a, b = (2 * j, 2 * j + 1) if interleaved else (j, j + d_k // 2)
            t = pos * base ** (-2 * j / d_k)
            xa, xb = x[..., i, a], x[..., i, b]
            out[..., i, a] = xa * np.cos(t) - xb * np.sin(t)
            out[..., i, b] = xa * np.sin(t) + xb * np.cos(t)
    return out


@pytest.mark.parametrize(
    "interleaved", [False, True], ids=["half-split", "interleaved"]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rotation_follows_the_definition(interleaved, dtype):
    rope = RotaryEmbedding(8, base=500.0, interleaved=interleaved)
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 8)).astype(dtype)
    for positions in ([0, 1, 2, 3], [5, 70, 300, 1000]):  # the second grows the table
        got = rope(x, np.array(positions))
        assert got.dtype == dtype
        expected = rotate_by_definition(x, positions, 500.0, interleaved)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("positions", [[0.5, 1.0], [-1, 0]])
def test_positions_must_be_token_indices(positions):
    with pytest.raises(ValueError, match="positions: expected token indices"):
        RotaryEmbedding(4)(np.ones((2, 4)), np.array(positions))


def test_the_pairing_is_read_only_so_cached_tables_cannot_go_stale():
    """The cos/sin tables depend on the pairing: changing it in place would leave
    the other pairing's tables behind (a copy sharing them would rotate wrongly)."""
    rope = RotaryEmbedding(d_k=4, interleaved=False)
    with pytest.raises(AttributeError):
        rope.interleaved = True
    other = RotaryEmbedding(d_k=4, interleaved=True)
    x = np.random.default_rng(0).normal(size=(2, 5, 4))
    assert not np.allclose(rope.from_position(x, 3), other.from_position(x, 3))
