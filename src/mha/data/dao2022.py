"""Dao, Fu, Ermon, Rudra, Ré (2022): FlashAttention, and the online softmax it builds on.

Cited, not computed. The argument of section 2.1 and Theorem 2: a GPU has a large,
slow high-bandwidth memory (HBM) and a small, fast on-chip SRAM; standard attention
writes the n×n scores and weights to HBM and reads them back, Θ(n d + n²) HBM
accesses, while FlashAttention computes them a block at a time in SRAM and makes
Θ(n² d² / M) accesses for an SRAM of M elements, with the same FLOPs. Attention is
limited by memory traffic, not arithmetic, so fewer bytes moved is faster. The running
maximum and running sum are Milakov and Gimelshein's online softmax (2018).

```python
from mha.data import dao2022

assert dao2022.URL.startswith("https://arxiv.org/") and "Theorem 2" in dao2022.CITATION
```
"""

from __future__ import annotations

SHORT = "Dao et al. (2022)"
CITATION = (
    "Dao, Fu, Ermon, Rudra, Ré (2022), FlashAttention: Fast and Memory-Efficient "
    "Exact Attention with IO-Awareness, NeurIPS 2022, section 2.1 and Theorem 2"
)
URL = "https://arxiv.org/abs/2205.14135"
ONLINE_SOFTMAX_SHORT = "Milakov and Gimelshein (2018)"
ONLINE_SOFTMAX = (
    "Milakov, Gimelshein (2018), Online normalizer calculation for softmax, "
    "arXiv:1805.02867"
)
ONLINE_SOFTMAX_URL = "https://arxiv.org/abs/1805.02867"
