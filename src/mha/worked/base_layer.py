"""The whole layer at the base Transformer's shape, on the cat sentence: every array of
one forward pass, step by step, through the layer's public weights.

The multi-head page draws it (and the home page shows that figure); the position page
runs the same layer on the same words without their position encodings.

```python
import numpy as np
from mha.worked.base_layer import whole_layer

w = whole_layer()  # d_model 512, 8 heads, on "the cat sat on the warm mat ."
out, weights = w.layer(w.x)
assert np.allclose(out, w.out) and np.allclose(weights, w.weights)
```
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import scaled_dot_product_attention
from mha.data import published
from mha.heads import merge_heads, split_heads
from mha.layer import MultiHeadAttention
from mha.positions import sinusoidal
from mha.worked import cat_mat

_SEED = 7  # the multi-head page's seed, for its small layer too
_BASE = published.model("Transformer base")


@dataclass(frozen=True)
class WholeLayer:
    """Every array of one forward pass, step by step, through the layer's weights."""

    layer: MultiHeadAttention
    tokens: tuple[str, ...]
    x: np.ndarray  # (n, d_model) token embeddings + positions
    q: np.ndarray  # (n, d_model) X W_Q, and likewise k, v
    k: np.ndarray
    v: np.ndarray
    q_heads: np.ndarray  # (h, n, d_k) split_heads(q)
    weights: np.ndarray  # (h, n, n) one attention map per head
    heads: np.ndarray  # (h, n, d_k) each head's output
    concat: np.ndarray  # (n, h d_k)
    out: np.ndarray  # (n, d_model) concat W_O
    sizes: dict[str, int]  # n, d_model, h, d_k, read off the arrays


def whole_layer() -> WholeLayer:
    """One seeded ``MultiHeadAttention`` at the base Transformer's shape on the cat
    sentence (a random embedding per word plus the sinusoidal position encoding):
    each step of its forward pass, from the layer's public weights.

    ```python
    from mha.worked.base_layer import whole_layer

    w = whole_layer()
    assert w.sizes == {"n": 8, "d_model": 512, "h": 8, "d_k": 64}
    assert w.weights.shape == (8, 8, 8) and w.out.shape == w.x.shape == (8, 512)
    ```
    """
    rng, d_model, h = np.random.default_rng(_SEED), _BASE.d_model, _BASE.n_heads
    layer = MultiHeadAttention(d_model, h, rng=rng)
    words = {word: rng.standard_normal(d_model) for word in cat_mat.VOCAB}
    n = len(cat_mat.TOKENS)  # + the base Transformer's sinusoidal position encodings
    x = np.stack([words[t] for t in cat_mat.TOKENS]) + sinusoidal(n, d_model)
    q, k, v = x @ layer.w_q, x @ layer.w_k, x @ layer.w_v
    q_heads, k_heads, v_heads = (split_heads(a, h) for a in (q, k, v))
    heads, weights = scaled_dot_product_attention(q_heads, k_heads, v_heads)
    concat = merge_heads(heads)
    arrays = (x, q, k, v, q_heads, weights, heads, concat, concat @ layer.w_o)
    sizes = {"n": n, "d_model": d_model, "h": h, "d_k": q_heads.shape[-1]}
    return WholeLayer(layer, cat_mat.TOKENS, *arrays, sizes)
