"""The six active-recall questions of the cost chapter (seed 004), answered by the core.

Each function computes what one answer needs; the exercises page renders it.
(The answer to question 3, the tripled value of "century", is
``mha.worked.cricket.solve(v=tripled_century())``.)

```python
from mha.recall import bert_base, four_heads

assert four_heads().d_k == 1
assert bert_base().params == 2_359_296
```
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha import published
from mha._validate import generator
from mha.accounting import param_count, score_flops, score_multiply_adds
from mha.attention import scaled_dot_product_attention
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.worked import cricket


@dataclass(frozen=True)
class FourHeads:
    """The cricket example with h = 4 heads of one dimension each."""

    d_model: int
    n_heads: int
    d_k: int
    scale: float  # √d_k
    two_head_scale: float  # √d_k with two heads, for comparison
    weights: np.ndarray  # (4, 3): each head's weights of "his" over the three keys


def four_heads() -> FourHeads:
    """Question 1: d_model = 4 split into 4 heads; each head sees one dimension.

    ```python
    import numpy as np
    from mha.recall import four_heads

    ans = four_heads()
    assert ans.scale == 1.0 and np.allclose(ans.weights.sum(axis=1), 1)
    ```
    """
    d_model, h = cricket.Q_HIS.shape[0], 4
    q = split_heads(cricket.Q_HIS[None], h)  # (4, 1, 1)
    k, v = split_heads(cricket.K, h), split_heads(cricket.V, h)  # (4, 3, 1)
    _, weights = scaled_dot_product_attention(q, k, v)  # (4, 1, 3)
    d_k = d_model // h
    return FourHeads(
        d_model,
        h,
        d_k,
        float(np.sqrt(d_k)),
        float(np.sqrt(d_model // 2)),
        weights[:, 0],
    )


@dataclass(frozen=True)
class BertBase:
    """Question 2: BERT-base's attention projections, counted two ways."""

    d_model: int
    n_heads: int
    d_k: int
    params: int  # 4·d_model², from mha.accounting
    params_from_arrays: int  # the sizes of the four weight arrays of a real layer
    four_d_squared: int
    d_squared: int


def bert_base() -> BertBase:
    """d_k, 4·d² and the parameter count of a layer built at BERT-base's shape.

    ```python
    from mha.recall import bert_base

    ans = bert_base()
    assert ans.params == ans.params_from_arrays == ans.four_d_squared
    ```
    """
    shape = published.model("BERT-base")
    layer = MultiHeadAttention(shape.d_model, shape.n_heads)
    return BertBase(
        d_model=shape.d_model,
        n_heads=shape.n_heads,
        d_k=layer.d_k,
        params=param_count(shape.d_model, shape.n_heads),
        params_from_arrays=layer.param_count,
        four_d_squared=4 * shape.d_model**2,
        d_squared=shape.d_model**2,
    )


@dataclass(frozen=True)
class ScoreVariance:
    """Sampled variance of q·k, raw and scaled by 1/√d_k, for one head count."""

    n_heads: int
    d_k: int
    raw: float  # theory: d_k σ⁴
    scaled: float  # theory: σ⁴
    theory_raw: float


def score_variance(
    d_model: int = 512,
    heads: tuple[int, ...] = (1, 8, 64),
    samples: int = 4000,
    sigma: float = 1.0,
    rng: np.random.Generator | None = None,
) -> tuple[ScoreVariance, ...]:
    """Question 4: sample q, k with independent N(0, σ²) entries for each head width.

    ```python
    from mha.recall import score_variance

    rows = score_variance(d_model=64, heads=(1, 16), samples=2000)
    assert all(abs(r.scaled - 1) < 0.15 for r in rows)
    ```
    """
    rng = generator(rng)
    rows = []
    for h in heads:
        d_k = d_model // h
        q = rng.normal(0.0, sigma, size=(samples, d_k))
        k = rng.normal(0.0, sigma, size=(samples, d_k))
        dots = (q * k).sum(axis=1)  # (samples,)
        rows.append(
            ScoreVariance(
                h,
                d_k,
                float(dots.var()),
                float((dots / np.sqrt(d_k)).var()),
                d_k * sigma**4,
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class Pruning:
    """Question 5: what pruning removes, against what the architecture holds."""

    result: published.PruningResult
    d_model: int
    d_k: int
    layers: int
    per_head: int  # parameters one head owns: its columns of W_Q, W_K, W_V, rows of W_O
    pruned: int  # per_head × heads pruned
    total: int  # all encoder self-attention projections
    kept_heads: int

    @property
    def pruned_share(self) -> float:
        """Fraction of the encoder's attention parameters that the pruned heads held."""
        return self.pruned / self.total


def pruning() -> Pruning:
    """Voita et al.'s pruning, counted in parameters of the model's shape.

    ```python
    from mha.recall import pruning

    ans = pruning()
    assert ans.per_head * ans.result.heads_total == ans.total
    ```
    """
    result = published.VOITA_2019
    shape = published.model(result.model)
    per_head = 4 * shape.d_model * shape.d_k
    return Pruning(
        result=result,
        d_model=shape.d_model,
        d_k=shape.d_k,
        layers=shape.n_layers,
        per_head=per_head,
        pruned=per_head * result.heads_pruned,
        total=shape.n_layers * param_count(shape.d_model, shape.n_heads),
        kept_heads=result.heads_total - result.heads_pruned,
    )


@dataclass(frozen=True)
class Flops:
    """Question 6: the score cost of one head and of h heads at the same width."""

    n: int
    d_model: int
    n_heads: int
    d_k: int
    one_head: int  # multiply-adds, one head of d_k = d_model
    per_head: int  # multiply-adds of one of the h narrow heads: n²·d_k
    many_heads: int  # all h narrow heads
    one_head_flops: int
    many_heads_flops: int


def flops(n: int = cricket.COST_N, d_model: int = cricket.COST_D_MODEL) -> Flops:
    """n²·d for one head and h·n²·(d/h) for h heads (the seed's n and d_model).

    ```python
    from mha.recall import flops

    ans = flops()
    assert ans.one_head == ans.many_heads == 5_120_000
    ```
    """
    h = cricket.COST_HEADS
    return Flops(
        n=n,
        d_model=d_model,
        n_heads=h,
        d_k=d_model // h,
        one_head=score_multiply_adds(n, d_model, 1),
        per_head=n * n * (d_model // h),
        many_heads=score_multiply_adds(n, d_model, h),
        one_head_flops=score_flops(n, d_model, 1),
        many_heads_flops=score_flops(n, d_model, h),
    )
