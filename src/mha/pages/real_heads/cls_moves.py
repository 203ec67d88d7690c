"""What MiniLM's [CLS] heads move: their weight on [CLS] beside [CLS]'s share of what
they move (Kobayashi et al., 2020: weight times the norm of the value through W_O)."""

from __future__ import annotations

from collections.abc import Sequence

from mha.experiments.value_norms import value_norms, weighted_by_norm
from mha.pretrained import minilm


def cls_shares(
    texts: Sequence[str], heads: Sequence[tuple[int, int]]
) -> tuple[float, float]:
    """The mean weight of word-token queries on [CLS] in ``heads`` over ``texts``, and
    [CLS]'s mean share of what those heads move.

    ```python
    from mha.pages.real_heads.cls_moves import cls_shares

    weight, moved = cls_shares(["The cat sat on the mat."], [(3, 0)])
    assert 0 < weight < 1 and 0 < moved < 1
    ```
    """
    if not heads:
        raise ValueError("heads: expected at least one (layer, head), got none")
    model = minilm.load()
    weight = moved = 0.0
    count = 0
    for text in texts:
        forward = model.forward(model.batch([text]))
        n = forward.hidden.shape[2]
        shares = {}  # layer -> (1, h, n, n), computed once for all its heads
        for layer, head in heads:
            w = forward.weights[layer]  # (1, h, n, n)
            if layer not in shares:
                attention = model.layers[layer].attention
                norms = value_norms(attention, forward.hidden[layer])
                shares[layer] = weighted_by_norm(w, norms)
            weight += float(w[0, head, 1 : n - 1, 0].sum())
            moved += float(shares[layer][0, head, 1 : n - 1, 0].sum())
            count += n - 2
    return weight / count, moved / count
