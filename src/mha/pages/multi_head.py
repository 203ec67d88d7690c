"""The multi-head mechanism: what ``docs/multi-head.md`` prints (and the home page's
whole-layer figure): a seeded ``MultiHeadAttention(8, 4)`` on six tokens, read through
its public weights; no W_O is the identity, one wide head the same arrays in one head.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import numpy as np

from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.support.page import Fact, Figure, Page
from mha.worked.base_layer import WholeLayer, whole_layer

_D_MODEL, _N_HEADS, _N_TOKENS, _SEED = 8, 4, 6, 7
_SPLIT_TOKENS = 3  # tokens of the reshape figure (the code block below it too)


def example() -> tuple[MultiHeadAttention, np.ndarray]:
    """The page's layer and its input ``x (N_TOKENS, D_MODEL)``, the same on every call."""
    rng = np.random.default_rng(_SEED)
    layer = MultiHeadAttention(_D_MODEL, _N_HEADS, rng=rng)
    return layer, rng.standard_normal((_N_TOKENS, _D_MODEL))


def without_w_o(layer: MultiHeadAttention) -> MultiHeadAttention:
    """A copy of ``layer`` whose output is the bare concatenation of its heads."""
    bare = copy.copy(layer)
    bare.w_o = np.eye(layer.n_heads * layer.d_k, layer.d_model, dtype=layer.w_o.dtype)
    bare.b_o = None
    return bare


def head_outputs(layer: MultiHeadAttention, x: np.ndarray) -> np.ndarray:
    """Each head's own output, before W_O: ``(..., seq, d_model) -> (..., h, seq, d_k)``."""
    concat, _ = without_w_o(layer)(x)  # (..., seq, h*d_k)
    return split_heads(concat, layer.n_heads)


def head_writes(layer: MultiHeadAttention, x: np.ndarray) -> np.ndarray:
    """What each head adds to the output, ``head_i @ W_O[rows of head i]``:
    ``(..., h, seq, d_model)``; their sum, plus b_O, is the layer's output.
    """
    rows = layer.w_o.reshape(layer.n_heads, layer.d_k, layer.d_model)
    return np.einsum("...hsk,hkm->...hsm", head_outputs(layer, x), rows)


@dataclass(frozen=True)
class _Dependence:
    """Which output slices move when one head's projections change."""

    moved: np.ndarray  # (h, h): [j, i] = largest change of slice i when head j changes

    @property
    def slices_moved(self) -> np.ndarray:  # (h,): slices each head's change moves
        return np.count_nonzero(self.moved, axis=1)

    @property
    def outside_own_slice(self) -> float:  # largest change off the diagonal
        return float((self.moved - np.diag(np.diag(self.moved))).max())

    @property
    def smallest(self) -> float:  # above 0 when every head reaches every slice
        return float(self.moved.min())


def dependence(layer: MultiHeadAttention, x: np.ndarray) -> _Dependence:
    """How far each output slice moves when one head's projections change: entry
    ``[j, i]`` of ``moved`` is the largest change in output columns ``i*d_k:(i+1)*d_k``
    when head j's columns of W_Q, W_K and W_V get the same seeded random noise.
    """
    _one_kv_head_per_query_head(layer)
    h, d_k = layer.n_heads, layer.d_k
    noise = np.random.default_rng(_SEED).standard_normal((3, layer.d_model, d_k))
    before, _ = layer(x)
    moved = np.zeros((h, h))
    for j in range(h):
        changed = copy.copy(layer)
        for name, extra in zip(("w_q", "w_k", "w_v"), noise, strict=True):
            w = getattr(layer, name).copy()
            w[:, j * d_k : (j + 1) * d_k] += extra
            setattr(changed, name, w)
        slices = np.abs(changed(x)[0] - before).reshape(
            -1, h, d_k
        )  # (tokens, slice, d_k)
        moved[j] = slices.max(axis=(0, 2))
    return _Dependence(moved)


def wide_head(layer: MultiHeadAttention) -> MultiHeadAttention:
    """A one-head layer holding the very same weight arrays as ``layer``: only the
    scores change, one dot product over all d_model columns, one softmax per query.
    """
    _one_kv_head_per_query_head(layer)
    wide = MultiHeadAttention(layer.d_model, 1, bias=layer.b_q is not None)
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        setattr(wide, name, getattr(layer, name))
    return wide


def _one_kv_head_per_query_head(layer: MultiHeadAttention) -> None:
    """A ValueError unless ``layer`` has one K/V head per query head."""
    if layer.n_kv_heads != layer.n_heads:
        raise ValueError(
            f"layer: expected one K/V head per query head, got n_heads={layer.n_heads} "
            f"and n_kv_heads={layer.n_kv_heads}"
        )


@dataclass(frozen=True)
class _Contrast:
    """One query's weights under h heads and under one wide head with the same weights."""

    query: int  # position of the query, from 0
    heads: np.ndarray  # (h, k_len) each head's distribution over the keys
    wide: np.ndarray  # (k_len,) the wide head's one distribution

    @property
    def head_tops(self) -> list[int]:  # each head's most weighted position, from 0
        return [int(j) for j in self.heads.argmax(axis=-1)]

    @property
    def wide_top(self) -> int:  # the wide head's most weighted position
        return int(self.wide.argmax())


def _one_vs_many(layer: MultiHeadAttention, x: np.ndarray) -> _Contrast:
    """The query of ``x`` whose heads have the most distinct top keys (first on ties),
    against one wide head."""
    (_, weights), (_, wide) = layer(x), wide_head(layer)(x)  # (h or 1, seq, seq)
    tops = weights.argmax(axis=-1)  # (h, seq)
    query = int(np.argmax([len(set(t)) for t in tops.T.tolist()]))
    return _Contrast(query=query, heads=weights[:, query], wide=wide[0, query])


def column_block(w: np.ndarray, i: int, n_heads: int) -> np.ndarray:
    """``W^(i)``: the columns ``i*d_k:(i+1)*d_k`` of ``w (d_model, h*d_k)``, head i's."""
    if not 0 <= i < n_heads:
        raise ValueError(f"i: expected a head from 0 to {n_heads - 1}, got {i!r}")
    d_k = w.shape[-1] // n_heads
    return w[:, i * d_k : (i + 1) * d_k]


@functools.cache
def page() -> Page:
    """What the page prints: the small example layer, the whole layer at the base
    Transformer's shape, what W_O mixes, and one wide head against several.
    """
    layer, x = example()
    values = dict(
        layer=layer,
        x=x,
        bare=dependence(without_w_o(layer), x),
        mixed=dependence(layer, x),
        wide=wide_head(layer),
        contrast=_one_vs_many(layer, x),
        whole=whole_layer(),
        params_one=MultiHeadAttention(_D_MODEL, 1).param_count,
        cross_gap=float(np.abs(layer(x, kv=x)[0] - layer(x)[0]).max()),
    )
    drawn = _figures(*(values[k] for k in ("bare", "mixed", "contrast", "whole")))
    return Page(**values, facts=_facts(**values), figures=drawn)


def _facts(
    layer: MultiHeadAttention,
    x: np.ndarray,
    bare: _Dependence,
    mixed: _Dependence,
    wide: MultiHeadAttention,
    contrast: _Contrast,
    whole: WholeLayer,
    params_one: int,
    cross_gap: float,  # largest |layer(x, kv=x) - layer(x)| of the outputs
) -> dict[str, Fact]:
    """The facts the page's sentences state about its layers."""
    h, params = layer.n_heads, layer.param_count
    out, weights = whole.layer(whole.x)
    own, every = bare.slices_moved.tolist(), mixed.slices_moved.tolist()
    return {
        "whole_matches": Fact(
            np.allclose(out, whole.out) and np.allclose(weights, whole.weights),
            "whole_layer() against layer(x)",
            says="the step-by-step layer's outputs and weights equal the layer's own call",
            qualitative="an identity over every output and weight (np.allclose), which the block below prints",
        ),
        "same_params": Fact(
            params_one == params,
            f"{params_one} vs {params}",
            says="the layer holds the same number of parameters with one head as with h heads",
        ),
        "bare_own": Fact(
            own == [1] * h and bare.outside_own_slice == 0,
            f"slices moved {own}, largest change outside {bare.outside_own_slice}",
            says="without W_O, changing a head moves its own output slice only, and nothing outside it",
        ),
        "mixed_every": Fact(
            every == [h] * h,
            f"slices moved {every}",
            says="with W_O, changing any head moves every slice of the output",
            qualitative="a count of the output slices each head moves; the smallest move is printed beside it",
        ),
        "wide_same": Fact(
            wide.param_count == params,
            f"{wide.param_count} vs {params}",
            says="the one wide head holds as many parameters as the h-head layer",
        ),
        "tops_differ": Fact(
            len(set(contrast.head_tops)) == h,
            f"tops {contrast.head_tops}",
            says="at the chosen query, each head's largest weight falls on a different token",
        ),
        "cross_is_self": Fact(
            bool(np.isclose(cross_gap, 0)),
            f"layer(x, kv=x) against layer(x): largest difference {cross_gap}",
            says="cross-attention given the same tokens as x and kv returns the layer's own output (np.isclose to zero difference)",
        ),
    }


def _figures(
    bare: _Dependence, mixed: _Dependence, contrast: _Contrast, whole: WholeLayer
) -> dict[str, Figure]:
    """The page's four figures (the home page shows ``whole_layer`` too); their alt
    texts state what the facts check and the shapes of the arrays drawn.
    """
    s = whole.sizes
    n, d, h = s["n"], s["d_model"], s["h"]
    return {
        "whole_layer": Figure(
            "multi_head.whole_layer",
            (whole,),
            alt=f"The whole multi-head attention layer, top to bottom: the {n} tokens "
            f"of the cat sentence as X of shape ({n}, {d}); three projections W_Q, "
            f"W_K, W_V, each ({d}, {d}), give Q, K and V of shape ({n}, {d}); each is "
            f"split into {h} heads of d_k = {s['d_k']}; {h} small attention maps, H0 "
            f"to H{h - 1}, each {n} by {n}, their rows and columns labelled with the "
            f"tokens, above a colour scale from 0 to {whole.weights.max():.2f}; the "
            f"heads' outputs are concatenated back to ({n}, {d}) and multiplied by W_O "
            "into the output of the same shape.",
            caption="The whole layer at the base Transformer's shape on the cat "
            "sentence, each arrow labelled with the shape of the array it carries. "
            'Follow one token down, say "cat": its row of X becomes the row labelled '
            '"cat" in each head\'s map (rows are queries, columns keys), and one row '
            "of the output. The weights are random, an untrained layer: read the maps "
            "for the shapes and the eight separate distributions, not for meaning.",
        ),
        "split_heads_reshape": Figure(
            "multi_head.split_heads_reshape",
            (_SPLIT_TOKENS, _D_MODEL, _N_HEADS),
            alt="A grid with one row per token and one column per feature, each cell "
            "showing its position in the array, the columns coloured by the head that "
            "owns them. An arrow labelled reshape, swap axes leads to one small grid "
            "per head, holding exactly the numbers of that head's coloured columns, in "
            "the same order.",
            caption="Splitting into heads is a reshape. Look at the colours: each "
            "head's grid holds its own columns of x, unchanged.",
        ),
        "head_dependence": Figure(
            "multi_head.head_dependence",
            (bare, mixed),
            alt="Two heatmaps of how far each output slice moves when one head "
            "changes. Without W_O only the diagonal is non-zero: each head moves its "
            "own slice and no other. With W_O every cell is non-zero: every head moves "
            "every slice.",
            caption="How far each output slice moves when one head changes. Look at "
            "the left panel's empty off-diagonal: without W_O the heads never mix.",
        ),
        "one_vs_many": Figure(
            "multi_head.one_vs_many",
            (contrast,),
            alt="A heatmap of one query's attention weights over the key tokens, one "
            "row per head and a last row for the wide head. Each head's largest weight "
            "falls on a different token; the wide head has a single row, one "
            "distribution.",
            caption="One query's weights in each head and in one wide head with the "
            "same parameters. Look at the bold cells: each head picks its own token.",
        ),
    }
