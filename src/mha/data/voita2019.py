"""Voita, Talbot, Moiseev, Sennrich, Titov (2019): specialised heads, the rest pruned.

Cited, not computed. Heads are switched off by stochastic gates trained with a
relaxed L0 penalty while the model is fine-tuned, so the remaining heads adapt:
pruning with retraining, unlike masking at test time. English-Russian WMT,
Transformer-base encoder (6 layers of 8 heads).
"""

from __future__ import annotations

SHORT = "Voita et al. (2019)"
CITATION = (
    "Voita, Talbot, Moiseev, Sennrich, Titov (2019), Analyzing Multi-Head "
    "Self-Attention: Specialized Heads Do the Heavy Lifting, the Rest Can Be Pruned, "
    "ACL 2019"
)
URL = "https://arxiv.org/abs/1905.09418"

# The source's own words (arXiv 1905.09418, abstract), which the numbers below must
# quote as written (tests/test_published.py):
QUOTE = (
    "For example, on the English-Russian WMT dataset, pruning 38 out of 48 encoder "
    "heads results in a drop of only 0.15 BLEU."
)
ENCODER_HEADS = 48  # abstract
PRUNED_HEADS = 38  # of them pruned (abstract)
BLEU_COST = 0.15  # BLEU lost by pruning them (abstract)
MODEL = (
    "Transformer base"  # the shape of the pruned model (a name in mha.data.published)
)
WHERE = (
    f"abstract: English-Russian WMT, {PRUNED_HEADS} of {ENCODER_HEADS} encoder heads "
    f"pruned for {BLEU_COST} BLEU"
)


def pruned_share() -> float:
    """The share of encoder heads pruned, 38 of 48.

    ```python
    from mha.data.voita2019 import pruned_share

    assert round(pruned_share(), 3) == 0.792
    ```
    """
    return PRUNED_HEADS / ENCODER_HEADS
