"""Multi-head attention in NumPy: the core that computes every number on the site.

```python
import numpy as np
import mha

layer = mha.MultiHeadAttention(d_model=8, n_heads=2)
out, weights = layer(np.ones((1, 3, 8)), mask=mha.causal_mask(3))
assert weights[0, 0, 0].tolist() == [1.0, 0.0, 0.0]
```
"""

from mha.accounting import param_count, score_multiply_adds
from mha.attention import (
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
    tiled_attention,
)
from mha.heads import mean_pool_heads, merge_heads, repeat_kv, split_heads
from mha.kv_cache import KVCache
from mha.layer import MultiHeadAttention
from mha.rope import RotaryEmbedding

__all__ = [
    "KVCache",
    "MultiHeadAttention",
    "RotaryEmbedding",
    "causal_mask",
    "mean_pool_heads",
    "merge_heads",
    "padding_mask",
    "param_count",
    "repeat_kv",
    "scaled_dot_product_attention",
    "score_multiply_adds",
    "softmax",
    "split_heads",
    "tiled_attention",
]
