"""Notation: every symbol of the site beside its name in ``mha`` and in PyTorch.

Page: ``docs/notation.md``. The table's rows live here, so the page only prints them;
``example()`` is a small grouped-query layer whose arrays show each symbol's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.heads import split_heads
from mha.layer import MultiHeadAttention

D_MODEL, N_HEADS, N_KV_HEADS, N_TOKENS, SEED = 8, 4, 2, 5, 0


@dataclass(frozen=True)
class Symbol:
    """One row of the notation table: the symbol, its meaning, its names in code."""

    math: str  # LaTeX, without the dollars
    meaning: str
    mha: str  # the name in mha (Markdown: inline code)
    torch: str  # the name in PyTorch (Markdown: inline code)


SYMBOLS = (
    Symbol(
        "n",
        "tokens in the sequence (the sequence length)",
        "the `seq` axis: `x.shape[-2]`",
        "`L` (queries) and `S` (keys) in `nn.MultiheadAttention`'s shapes",
    ),
    Symbol(
        "d_{model}",
        "width of every token's vector, in and out of the layer",
        "`MultiHeadAttention(d_model, ...)`, `layer.d_model`",
        "`embed_dim`",
    ),
    Symbol(
        "h",
        "query heads",
        "`n_heads`, `layer.n_heads`",
        "`num_heads`",
    ),
    Symbol(
        "h_{kv}",
        "key/value heads; $h_{kv} = h$ is multi-head attention, $h_{kv} = 1$ "
        "multi-query, in between grouped-query",
        "`n_kv_heads`, `layer.n_kv_heads`",
        "`num_key_value_heads` (transformers' configs); `enable_gqa=True` in "
        "`F.scaled_dot_product_attention`; `nn.MultiheadAttention` has none",
    ),
    Symbol(
        "d_k",
        "width of one head's queries and keys, $d_{model} / h$",
        "`layer.d_k`",
        "`head_dim` (`embed_dim // num_heads`)",
    ),
    Symbol(
        "d_v",
        "width of one head's values; equal to $d_k$ in `mha` and in "
        "`nn.MultiheadAttention`, but the formula does not need it (the original "
        "paper names it apart, and `F.scaled_dot_product_attention` accepts values "
        "of another width)",
        "`layer.d_k` (the same)",
        "`head_dim`; the last axis of `value` in `F.scaled_dot_product_attention`",
    ),
    Symbol(
        "X",
        "the layer's input, one row per token, $(n, d_{model})$",
        "`x`, shape `(..., seq, d_model)`",
        "`query` (and `key`, `value`: the same tensor for self-attention)",
    ),
    Symbol(
        "W_Q, W_K, W_V",
        "the projections, applied as $X W$: $W_Q$ is $(d_{model}, h\\,d_k)$, $W_K$ "
        "and $W_V$ are $(d_{model}, h_{kv}\\,d_k)$",
        "`layer.w_q`, `layer.w_k`, `layer.w_v`",
        "`in_proj_weight`: the three stacked, each transposed (torch computes "
        "$X W^\\top$)",
    ),
    Symbol(
        "W_Q^{(i)}",
        "head $i$'s block of $W_Q$: its columns $i\\,d_k$ to $(i + 1)\\,d_k - 1$ "
        "(likewise $W_K^{(i)}$, $W_V^{(i)}$ for key/value head $i$)",
        "`column_block(layer.w_q, i, h)` of `mha.pages.multi_head`",
        "rows `i * head_dim:(i + 1) * head_dim` of the query part of `in_proj_weight`",
    ),
    Symbol(
        "Q_i = X W_Q^{(i)}",
        "head $i$'s queries, $(n, d_k)$; also slice $i$ of the reshaped $Q = X W_Q$ "
        "(likewise $K_i$, $V_i$)",
        "`split_heads(x @ layer.w_q, h)[..., i, :, :]`",
        "`q.view(B, L, num_heads, head_dim).transpose(1, 2)[:, i]`",
    ),
    Symbol(
        "W_O",
        "the output projection, $(h\\,d_k, d_{model})$; its rows $W_O^{(i)}$ meet head "
        "$i$'s output",
        "`layer.w_o`",
        "`out_proj.weight` (transposed)",
    ),
    Symbol(
        "\\text{head}_i",
        "head $i$'s output, $\\operatorname{softmax}(Q_i K_i^\\top / \\sqrt{d_k})\\,V_i$, "
        "$(n, d_k)$",
        "`head_outputs(layer, x)[..., i, :, :]` of `mha.pages.multi_head`",
        "(internal to `nn.MultiheadAttention`)",
    ),
    Symbol(
        "A_i",
        "head $i$'s attention weights, $(n, n)$, each row sums to one",
        "`layer(x)[1][..., i, :, :]`",
        "`attn_output_weights[:, i]` with `average_attn_weights=False`",
    ),
    Symbol(
        "M",
        "a mask, `True` where a query may attend to a key",
        "`mask`, `causal_mask(n)`",
        "`attn_mask` of `F.scaled_dot_product_attention` (same meaning); in "
        "`nn.MultiheadAttention` a boolean `attn_mask` means the opposite",
    ),
)


@dataclass(frozen=True)
class Example:
    """A small grouped-query layer and its input, to show each symbol's shape."""

    layer: MultiHeadAttention
    x: np.ndarray  # (n, d_model)
    shapes: dict[str, tuple[int, ...]]  # symbol -> shape of its array

    @property
    def q_i_is_the_reshape_view(self) -> bool:
        """Whether X W_Q^(i) equals slice i of split_heads(X W_Q) for every head."""
        layer, d_k = self.layer, self.layer.d_k
        view = split_heads(self.x @ layer.w_q, layer.n_heads)
        return all(
            np.allclose(self.x @ layer.w_q[:, i * d_k : (i + 1) * d_k], view[i])
            for i in range(layer.n_heads)
        )


def example() -> Example:
    """The page's example: ``MultiHeadAttention(8, 4, n_kv_heads=2)`` on 5 tokens.

    ```python
    from mha.pages.notation import example

    ex = example()
    assert ex.shapes["W_K"] == (8, 4) and ex.q_i_is_the_reshape_view
    ```
    """
    rng = np.random.default_rng(SEED)
    layer = MultiHeadAttention(D_MODEL, N_HEADS, n_kv_heads=N_KV_HEADS, rng=rng)
    x = rng.standard_normal((N_TOKENS, D_MODEL))
    out, weights = layer(x)
    d_k = layer.d_k
    shapes = {
        "X": x.shape,
        "W_Q": layer.w_q.shape,
        "W_K": layer.w_k.shape,
        "W_V": layer.w_v.shape,
        "W_Q^(i)": layer.w_q[:, :d_k].shape,
        "Q_i": (x @ layer.w_q[:, :d_k]).shape,
        "A": weights.shape,
        "W_O": layer.w_o.shape,
        "output": out.shape,
    }
    return Example(layer=layer, x=x, shapes=shapes)
