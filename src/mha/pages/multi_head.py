"""The multi-head mechanism on one seeded layer: heads, their writes through W_O.

Page: ``docs/multi-head.md``.

Input data: ``MultiHeadAttention(d_model=8, n_heads=4)`` and six tokens, all drawn
from ``np.random.default_rng(SEED)``. Everything here goes through the layer's
public weights (``w_q w_k w_v w_o``, applied as ``x @ w``): dropping W_O is
replacing it with the identity, one wide head is a one-head layer holding the
very same arrays.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from mha.heads import split_heads
from mha.layer import MultiHeadAttention

D_MODEL, N_HEADS, N_TOKENS, SEED = 8, 4, 6, 7
SPLIT_TOKENS = 3  # tokens of the reshape figure (the code block below it too)


def example() -> tuple[MultiHeadAttention, np.ndarray]:
    """The page's layer and its input ``x (N_TOKENS, D_MODEL)``, the same on every call.

    ```python
    from mha.pages.multi_head import example

    layer, x = example()
    assert (layer.n_heads, x.shape) == (4, (6, 8))
    ```
    """
    rng = np.random.default_rng(SEED)
    layer = MultiHeadAttention(D_MODEL, N_HEADS, rng=rng)
    return layer, rng.standard_normal((N_TOKENS, D_MODEL))


def without_w_o(layer: MultiHeadAttention) -> MultiHeadAttention:
    """A copy of ``layer`` whose output is the bare concatenation of its heads.

    W_O becomes the identity and b_O disappears; ``layer`` itself is unchanged.

    ```python
    import numpy as np
    from mha.pages.multi_head import example, without_w_o

    layer, x = example()
    bare = without_w_o(layer)
    assert np.array_equal(bare.w_o, np.eye(8)) and not np.array_equal(layer.w_o, np.eye(8))
    ```
    """
    bare = copy.copy(layer)
    bare.w_o = np.eye(layer.n_heads * layer.d_k, layer.d_model, dtype=layer.w_o.dtype)
    bare.b_o = None
    return bare


def head_outputs(layer: MultiHeadAttention, x: np.ndarray) -> np.ndarray:
    """Each head's own output, before W_O: ``(..., seq, d_model) -> (..., h, seq, d_k)``.

    ```python
    from mha.pages.multi_head import example, head_outputs

    layer, x = example()
    assert head_outputs(layer, x).shape == (4, 6, 2)
    ```
    """
    concat, _ = without_w_o(layer)(x)  # (..., seq, h*d_k)
    return split_heads(concat, layer.n_heads)


def head_writes(layer: MultiHeadAttention, x: np.ndarray) -> np.ndarray:
    """What each head adds to the output: ``head_i @ W_O[rows of head i]``, ``(..., h, seq, d_model)``.

    Their sum, plus b_O, is the layer's output: concatenating and applying W_O is
    the same as letting each head write through its own rows and adding the writes.

    ```python
    import numpy as np
    from mha.pages.multi_head import example, head_writes

    layer, x = example()
    out, _ = layer(x)
    assert np.allclose(head_writes(layer, x).sum(axis=-3), out)
    ```
    """
    rows = layer.w_o.reshape(
        layer.n_heads, layer.d_k, layer.d_model
    )  # (h, d_k, d_model)
    return np.einsum("...hsk,hkm->...hsm", head_outputs(layer, x), rows)


@dataclass(frozen=True)
class Dependence:
    """Which output slices move when one head's projections change."""

    moved: (
        np.ndarray
    )  # (h, h): [j, i] = largest change of output slice i when head j changes

    @property
    def slices_moved(self) -> np.ndarray:
        """``(h,)``: how many output slices each head's change moves at all."""
        return np.count_nonzero(self.moved, axis=1)

    @property
    def outside_own_slice(self) -> float:
        """Largest change a head causes outside its own slice (off the diagonal)."""
        return float((self.moved - np.diag(np.diag(self.moved))).max())

    @property
    def smallest(self) -> float:
        """Smallest change anywhere: above 0 when every head reaches every slice."""
        return float(self.moved.min())


def dependence(
    layer: MultiHeadAttention, x: np.ndarray, rng: np.random.Generator | None = None
) -> Dependence:
    """How far each output slice moves when one head's projections change.

    Entry ``[j, i]`` of ``moved``: the largest change in output columns
    ``i*d_k:(i+1)*d_k`` when head j's columns of W_Q, W_K and W_V get random noise
    (the same noise for every j's turn, drawn from ``rng``).

    ```python
    from mha.pages.multi_head import dependence, example, without_w_o

    layer, x = example()
    assert dependence(without_w_o(layer), x).slices_moved.tolist() == [1, 1, 1, 1]
    assert dependence(layer, x).slices_moved.tolist() == [4, 4, 4, 4]
    ```
    """
    if layer.n_kv_heads != layer.n_heads:
        raise ValueError(
            f"layer: expected one K/V head per query head, got n_heads={layer.n_heads} "
            f"and n_kv_heads={layer.n_kv_heads}"
        )
    rng = np.random.default_rng(SEED) if rng is None else rng
    h, d_k = layer.n_heads, layer.d_k
    noise = rng.standard_normal((3, layer.d_model, d_k))
    before, _ = layer(x)
    moved = np.zeros((h, h))
    for j in range(h):
        changed = copy.copy(layer)
        for name, extra in zip(("w_q", "w_k", "w_v"), noise, strict=True):
            w = getattr(layer, name).copy()
            w[:, j * d_k : (j + 1) * d_k] += extra
            setattr(changed, name, w)
        after, _ = changed(x)
        slices = np.abs(after - before).reshape(-1, h, d_k)  # (tokens, slice, d_k)
        moved[j] = slices.max(axis=(0, 2))
    return Dependence(moved)


def wide_head(layer: MultiHeadAttention) -> MultiHeadAttention:
    """A one-head layer holding the very same weight arrays as ``layer``.

    Same parameters, same projections; only the scores change: one dot product
    over all d_model columns, one softmax per query.

    ```python
    from mha.pages.multi_head import example, wide_head

    layer, x = example()
    wide = wide_head(layer)
    assert wide.param_count == layer.param_count and wide(x)[1].shape == (1, 6, 6)
    ```
    """
    if layer.n_kv_heads != layer.n_heads:
        raise ValueError(
            f"layer: expected one K/V head per query head, got n_heads={layer.n_heads} "
            f"and n_kv_heads={layer.n_kv_heads}"
        )
    wide = MultiHeadAttention(layer.d_model, 1, bias=layer.b_q is not None)
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        setattr(wide, name, getattr(layer, name))
    return wide


@dataclass(frozen=True)
class Contrast:
    """One query's weights under h heads and under one wide head with the same weights."""

    query: int  # 0-based position of the query
    heads: np.ndarray  # (h, k_len) each head's distribution over the keys
    wide: np.ndarray  # (k_len,) the wide head's one distribution

    @property
    def query_number(self) -> int:
        """The query as a reader counts tokens, from 1."""
        return self.query + 1

    @property
    def head_tops(self) -> list[int]:
        """For each head, the token (counted from 1) it gives the largest weight."""
        return [int(j) + 1 for j in self.heads.argmax(axis=-1)]

    @property
    def wide_top(self) -> int:
        """The token (counted from 1) the wide head gives the largest weight."""
        return int(self.wide.argmax()) + 1


def one_vs_many(layer: MultiHeadAttention, x: np.ndarray) -> Contrast:
    """The query of ``x (seq, d_model)`` whose heads disagree most, against one wide head.

    "Disagree most": the most distinct top keys among the heads (first on ties).

    ```python
    from mha.pages.multi_head import example, one_vs_many

    contrast = one_vs_many(*example())
    assert contrast.heads.shape == (4, 6) and contrast.wide.shape == (6,)
    assert len(set(contrast.head_tops)) > 1  # the heads route this query differently
    ```
    """
    _, weights = layer(x)  # (h, seq, seq)
    _, wide = wide_head(layer)(x)  # (1, seq, seq)
    tops = weights.argmax(axis=-1)  # (h, seq)
    distinct = [len(set(tops[:, t].tolist())) for t in range(tops.shape[1])]
    query = int(np.argmax(distinct))
    return Contrast(query=query, heads=weights[:, query], wide=wide[0, query])
