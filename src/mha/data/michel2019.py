"""Michel, Levy, Neubig (2019): removing attention heads at test time.

Cited, not computed. Heads are masked after training, with no retraining: one at a
time (section 3), then greedily by an importance score estimated from gradients
(section 4). The WMT model is a Transformer-large translating English to French;
BERT is BERT-base fine-tuned on MNLI.

```python
from mha.data import michel2019

assert michel2019.WMT_SIGNIFICANT < michel2019.WMT_ENCODER_HEADS
assert michel2019.WMT_PRUNABLE < michel2019.BERT_PRUNABLE
```
"""

from __future__ import annotations

SHORT = "Michel et al. (2019)"
CITATION = (
    "Michel, Levy, Neubig (2019), Are Sixteen Heads Really Better than One?, "
    "NeurIPS 2019"
)
URL = "https://arxiv.org/abs/1905.10650"

WMT_ENCODER_HEADS = 96  # encoder self-attention heads of the WMT model (section 3.2)
WMT_SIGNIFICANT = 8  # of them change BLEU significantly when removed alone; about
# half of those improve it (section 3.2, Table 1)
WMT_PRUNABLE = 0.2  # share of the WMT model's heads pruned with no noticeable loss
BERT_PRUNABLE = 0.4  # share of BERT's heads pruned with no noticeable loss
# (both section 4.2, Figure 2)
