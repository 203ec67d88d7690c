"""Notation: what ``docs/notation.md`` prints beside its table of symbols.

The table itself is prose, in the Markdown. The page's values are a small
grouped-query layer and its input, whose arrays show each symbol's shape.
"""

from __future__ import annotations

import functools

import numpy as np

from mha.layer import MultiHeadAttention
from mha.support.page import Page

_D_MODEL, _N_HEADS, _N_KV_HEADS, _N_TOKENS, _SEED = 8, 4, 2, 5, 0


@functools.cache
def page() -> Page:
    """``MultiHeadAttention(8, 4, n_kv_heads=2)`` on 5 tokens, and the shape of each
    symbol's array (``shapes``). The page states no comparing sentence, no figure.
    """
    rng = np.random.default_rng(_SEED)
    layer = MultiHeadAttention(_D_MODEL, _N_HEADS, n_kv_heads=_N_KV_HEADS, rng=rng)
    x = rng.standard_normal((_N_TOKENS, _D_MODEL))
    out, weights = layer(x)
    w_q_0 = layer.w_q[:, : layer.d_k]  # head 0's block of W_Q
    shapes = {
        "X": x.shape,
        "W_Q": layer.w_q.shape,
        "W_K": layer.w_k.shape,
        "W_V": layer.w_v.shape,
        "W_Q^(i)": w_q_0.shape,
        "Q_i": (x @ w_q_0).shape,
        "A": weights.shape,
        "W_O": layer.w_o.shape,
        "output": out.shape,
    }
    return Page(layer=layer, x=x, shapes=shapes, facts={}, figures={})
