"""Clark, Khandelwal, Levy, Manning (2019): what BERT-base's attention heads look at.

Cited, not computed. The paper averages the attention maps of BERT-base (12 layers of
12 heads) over Wikipedia segments of two paragraphs, ``[CLS] p1 [SEP] p2 [SEP]``, at
most 128 tokens, and then probes single heads for syntax and coreference. Layers are
counted from 1, as in the paper.

```python
from mha.data import clark2019

assert clark2019.SEP_FIRST_LAYER < clark2019.SEP_LAST_LAYER <= 12
```
"""

from __future__ import annotations

SHORT = "Clark et al. (2019)"
CITATION = (
    "Clark, Khandelwal, Levy, Manning (2019), What Does BERT Look At? An Analysis of "
    "BERT's Attention, BlackboxNLP 2019"
)
URL = "https://arxiv.org/abs/1906.04341"

N_HEADS = 144  # BERT-base: 12 layers x 12 heads (section 2)
N_SEGMENTS = 1000  # random Wikipedia segments behind the averages (section 3)
SEP_SHARE = 0.5  # "over half" of the attention in layers 6-10 goes to [SEP] (3.2)
SEP_FIRST_LAYER = 6  # section 3.2, Figure 2
SEP_LAST_LAYER = 10
SEP_SELF_SHARE = 0.9  # those heads' [SEP] attends to [SEP] tokens (> 90%, Figure 2)
SYNTAX_ACCURACY = 0.75  # single heads find direct objects, determiners, objects of
# prepositions and objects of possessive pronouns with > 75% accuracy (section 4)

# Surface patterns of section 3, in the paper's order.
PATTERNS = (
    "heads that attend to the previous or the next token, mostly in early layers",
    "heads that attend broadly over the whole input, mostly in the lowest layers",
    "early heads attend to [CLS], middle heads to [SEP] (read as a no-op: a head "
    "with nothing to do parks its attention there), deep heads to periods and commas",
    "heads in the same layer often behave alike",
)
