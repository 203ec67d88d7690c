"""Vaswani et al. (2017), Table 3, row (A): the number of heads at constant computation.

Cited, not computed. English-German, newstest2013 (the development set); every row
keeps d_model = 512 and changes h and d_k = d_v together, so the attention layers'
parameters and computation stay constant. The base model (h = 8) is Table 3's first
row. Section 6.2 of the paper: "While single-head attention is 0.9 BLEU worse than the
best setting, quality also drops off with too many heads."
"""

from __future__ import annotations

from dataclasses import dataclass

from mha.data import published

CITATION = (
    "Vaswani, Shazeer, Parmar, Uszkoreit, Jones, Gomez, Kaiser, Polosukhin (2017), "
    "Attention Is All You Need, NeurIPS 2017, Table 3, rows (base) and (A)"
)
URL = "https://arxiv.org/abs/1706.03762"
D_MODEL = published.model("Transformer base").d_model  # every row of Table 3 (A)


@dataclass(frozen=True)
class HeadsRow:
    """One row of Table 3 (A): heads, head width, dev perplexity and dev BLEU."""

    n_heads: int
    d_k: int  # = d_v
    perplexity: float  # per word-piece, newstest2013
    bleu: float  # newstest2013
    base: bool = False  # the paper's base model


ROW_A: tuple[HeadsRow, ...] = (
    HeadsRow(1, 512, 5.29, 24.9),
    HeadsRow(4, 128, 5.00, 25.5),
    HeadsRow(8, 64, 4.92, 25.8, base=True),
    HeadsRow(16, 32, 4.91, 25.8),
    HeadsRow(32, 16, 5.01, 25.4),
)


def best_bleu() -> float:
    """The best dev BLEU of row (A), base model included.

    ```python
    from mha.data.vaswani2017 import ROW_A, best_bleu

    assert all(row.n_heads * row.d_k == 512 for row in ROW_A)
    assert round(best_bleu() - ROW_A[0].bleu, 1) == 0.9  # section 6.2's gap
    ```
    """
    return max(row.bleu for row in ROW_A)
