"""What changes with the number of heads h at a fixed width d_model, and what does not.

Page: ``docs/cost.md``.

Counted from real layers: the parameters (the same for every h). Computed: the
score multiply-adds (the same for every h), the number of scores the softmax
normalises (grows with h) and the rank of each head's score matrix (at most d_k,
so it shrinks with h). Measured by ``make bench``: the wall-clock time of the
layer (read back from ``mha/data/bench/heads.json``; nothing is timed here).

```python
from mha.pages.cost import sweep

rows = sweep(d_model=64, heads=(1, 8))
assert rows[0].params == rows[1].params == 4 * 64**2
```
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from mha.accounting import param_count, score_flops, score_multiply_adds
from mha.data import published, vaswani2017
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.support import measured
from mha.support.cache import cached
from mha.support.claims import Claim
from mha.support.validate import generator

D_MODEL = published.model("Transformer base").d_model
HEADS = (1, 2, 4, 8, 16, 32, 64)
N = 100  # tokens, as in the seed's cost example
# The rank study: a narrower layer, so that d_k runs from the full width down to 1
# in a few SVDs, and n > d_model tokens, so that every head is capped by its d_k.
RANK_D_MODEL = 64
RANK_HEADS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class HeadCount:
    """One layer shape ``(d_model, n_heads)`` and what it costs for ``n`` tokens."""

    n_heads: int
    d_k: int
    params: int  # counted from the arrays of a layer without biases
    params_bias: int  # counted from the arrays of a layer with biases
    per_head_multiply_adds: int  # n²·d_k for one head's n × n score matrix
    multiply_adds: int  # all heads together: n²·d_model
    flops: int  # two per multiply-add
    scores: int  # h·n² entries the softmax exponentiates and normalises


def sweep(
    d_model: int = D_MODEL, heads: tuple[int, ...] = HEADS, n: int = N
) -> tuple[HeadCount, ...]:
    """Instantiate a layer for every head count and count what it holds and does.

    ```python
    from mha.pages.cost import sweep

    rows = sweep(d_model=512, heads=(1, 8), n=100)
    assert [r.multiply_adds for r in rows] == [5_120_000, 5_120_000]
    assert rows[1].params_bias == 4 * 512**2 + 4 * 512
    ```
    """
    rows = []
    for h in heads:
        plain = MultiHeadAttention(d_model, h)
        with_bias = MultiHeadAttention(d_model, h, bias=True)
        rows.append(
            HeadCount(
                n_heads=h,
                d_k=plain.d_k,
                params=plain.param_count,
                params_bias=with_bias.param_count,
                per_head_multiply_adds=n * n * plain.d_k,
                multiply_adds=score_multiply_adds(n, d_model, h),
                flops=score_flops(n, d_model, h),
                scores=h * n * n,
            )
        )
    return tuple(rows)


def formula_param_count(d_model: int, bias: bool = False) -> int:
    """The textbook count, 4·d_model² (+ 4·d_model with biases), with no layer at all.

    ```python
    from mha.pages.cost import formula_param_count

    assert formula_param_count(512) == 1_048_576 and formula_param_count(512, bias=True) == 1_050_624
    ```
    """
    return 4 * d_model**2 + (4 * d_model if bias else 0)


@dataclass(frozen=True)
class PublishedCost:
    """The attention parameters of one published model, per layer and in all layers."""

    shape: published.ModelShape
    params: int  # one layer's W_Q, W_K, W_V, W_O
    params_bias: int  # the same with their biases
    sublayers: int  # multi-head attention sublayers in the whole model
    all_layers: int  # params × sublayers (biases included)


def published_costs() -> tuple[PublishedCost, ...]:
    """``mha.accounting.param_count`` at the shape of every model in ``published.MODELS``.

    ```python
    from mha.pages.cost import published_costs

    costs = {c.shape.name: c for c in published_costs()}
    assert costs["BERT-base"].params == 4 * 768**2
    assert costs["Transformer base"].sublayers == 18  # 6 encoder, 12 decoder
    ```
    """
    costs = []
    for shape in published.MODELS:
        with_bias = param_count(shape.d_model, shape.n_heads, bias=True)
        sublayers = sum(n for _, n in attention_sublayers(shape))
        costs.append(
            PublishedCost(
                shape,
                param_count(shape.d_model, shape.n_heads),
                with_bias,
                sublayers,
                with_bias * sublayers,
            )
        )
    return tuple(costs)


@dataclass(frozen=True)
class ScoreRank:
    """The ranks of the ``n × n`` score matrices QᵢKᵢᵀ of every head of one layer."""

    n_heads: int
    d_k: int
    n: int
    ranks: np.ndarray  # (n_heads,) rank of each head's score matrix
    bound: int  # min(n, d_k): a product of n × d_k and d_k × n matrices

    @property
    def heads(self) -> int:
        """How many heads were measured (one rank each)."""
        return len(self.ranks)

    @property
    def ranks_text(self) -> str:
        """The heads' ranks as the page's table shows them: ``"16"`` or ``"15 to 16"``."""
        low, high = int(self.ranks.min()), int(self.ranks.max())
        return f"{low}" if low == high else f"{low} to {high}"


def score_ranks(
    d_model: int = RANK_D_MODEL,
    heads: tuple[int, ...] = RANK_HEADS,
    n: int = N,
    rng: np.random.Generator | None = None,
) -> tuple[ScoreRank, ...]:
    """Rank of every head's score matrix for random tokens, one layer per head count.

    Each head's scores are ``Qᵢ Kᵢᵀ`` with ``Qᵢ, Kᵢ (n, d_k)``, so the rank is at most
    d_k whatever the tokens: a head of width d_k can express at most d_k independent
    patterns of similarity. (Scaling by 1/√d_k does not change a rank.)

    ```python
    from mha.pages.cost import score_ranks

    one, many = score_ranks(d_model=16, heads=(1, 16), n=20)
    assert one.ranks.tolist() == [16] and set(many.ranks.tolist()) == {1}
    ```
    """
    rng = generator(rng)
    x = rng.normal(size=(n, d_model))  # (n, d_model) random tokens
    rows = []
    for h in heads:
        layer = MultiHeadAttention(d_model, h, rng=rng)
        q = split_heads(x @ layer.w_q, h)  # (h, n, d_k)
        k = split_heads(x @ layer.w_k, h)
        scores = q @ np.swapaxes(k, -1, -2)  # (h, n, n)
        ranks = np.linalg.matrix_rank(scores)
        rows.append(ScoreRank(h, layer.d_k, n, ranks, min(n, layer.d_k)))
    return tuple(rows)


@dataclass(frozen=True)
class Timing:
    """Median wall-clock of one head count (milliseconds, with the quartiles)."""

    n_heads: int
    d_k: int
    layer_ms: float  # the whole layer: projections, attention, W_O
    layer_q1_ms: float
    layer_q3_ms: float
    attention_ms: float  # scores, softmax and weighted sum only, on split Q, K, V
    attention_q1_ms: float
    attention_q3_ms: float

    @property
    def projection_ms(self) -> float:
        """What the rest of the layer costs: the four projections and the reshapes."""
        return self.layer_ms - self.attention_ms


@dataclass(frozen=True)
class Timings:
    """The ``heads`` benchmark as measured by ``make bench``, with its machine."""

    d_model: int
    n: int
    batch: int
    dtype: str
    repeats: int  # rounds; each round samples every head count once
    burst: int  # back-to-back calls per sample, of which the fastest is kept
    threads: int  # BLAS threads
    rows: tuple[Timing, ...]
    machine: dict

    def row(self, n_heads: int) -> Timing:
        """The timing of ``n_heads`` heads."""
        for r in self.rows:
            if r.n_heads == n_heads:
                return r
        raise ValueError(
            f"n_heads: expected one of {[r.n_heads for r in self.rows]}, got {n_heads}"
        )

    def ratio(self, n_heads: int, baseline: int) -> float:
        """How many times longer the whole layer takes with ``n_heads`` than ``baseline``."""
        return self.row(n_heads).layer_ms / self.row(baseline).layer_ms

    def attention_ratio(self, n_heads: int, baseline: int) -> float:
        """The same ratio for the attention core alone."""
        return self.row(n_heads).attention_ms / self.row(baseline).attention_ms

    @property
    def projection_range(self) -> tuple[float, float]:
        """Smallest and largest measured time of the rest of the layer (ms)."""
        rest = [r.projection_ms for r in self.rows]
        return min(rest), max(rest)

    @property
    def fastest(self) -> Timing:
        """The head count with the smallest median time for the whole layer."""
        return min(self.rows, key=lambda r: r.layer_ms)

    @property
    def slowest(self) -> Timing:
        """The head count with the largest median time for the whole layer."""
        return max(self.rows, key=lambda r: r.layer_ms)


def timings() -> Timings:
    """The committed result of the ``heads`` benchmark (run ``make bench`` to refresh).

    ```python
    from mha.pages.cost import timings

    t = timings()
    assert t.row(1).d_k == t.d_model and t.slowest.layer_ms >= t.fastest.layer_ms
    ```
    """
    data = measured.load("heads")
    return Timings(
        d_model=data["d_model"],
        n=data["n"],
        batch=data["batch"],
        dtype=data["dtype"],
        repeats=data["repeats"],
        burst=data["burst"],
        threads=data["threads"],
        rows=tuple(Timing(**row) for row in data["rows"]),
        machine=data["machine"],
    )


def one_head_params(shape: published.ModelShape) -> int:
    """The attention parameters of ``shape``'s layer with its whole width in one head.

    ```python
    from mha.data.published import model
    from mha.pages.cost import one_head_params

    bert = model("BERT-base")
    assert one_head_params(bert) == 4 * bert.d_model**2
    ```
    """
    return param_count(shape.d_model, 1)


# --- Attention sublayers of the published shapes -------------------------------------

# Vaswani et al. (2017), section 3.1: the base Transformer stacks N encoder layers, each
# with one self-attention sublayer, and N decoder layers, each with a masked
# self-attention sublayer and an encoder-decoder attention sublayer over the encoder's
# output. The other published shapes are one stack: BERT an encoder, GPT-2 a decoder.
SUBLAYERS_PER_LAYER = {
    "Transformer base": (
        "encoder self-attention",
        "masked decoder self-attention",
        "encoder-decoder attention",
    ),
    "BERT-base": ("self-attention",),
    "BERT-large": ("self-attention",),
    "GPT-2 small": ("masked self-attention",),
}


def attention_sublayers(shape: published.ModelShape) -> tuple[tuple[str, int], ...]:
    """Each kind of multi-head attention sublayer of ``shape`` and how many it has.

    ```python
    from mha.data.published import model
    from mha.pages.cost import attention_sublayers

    kinds = attention_sublayers(model("Transformer base"))
    assert [n for _, n in kinds] == [6, 6, 6]  # 18 in all
    ```
    """
    kinds = SUBLAYERS_PER_LAYER.get(shape.name)
    if kinds is None:
        raise ValueError(
            f"shape: expected one of {sorted(SUBLAYERS_PER_LAYER)}, got {shape.name!r}"
        )
    return tuple((kind, shape.n_layers) for kind in kinds)


def sublayers_sentence(name: str = "Transformer base") -> str:
    """Which attention sublayers a published model has, as the page says it.

    ```python
    from mha.pages.cost import sublayers_sentence

    assert sublayers_sentence().startswith("18 multi-head attention sublayers: 6 ")
    ```
    """
    kinds = attention_sublayers(published.model(name))
    total = sum(n for _, n in kinds)
    parts = ", ".join(f"{n} {kind}" for kind, n in kinds[:-1])
    listed = f"{parts} and {kinds[-1][1]} {kinds[-1][0]}" if parts else kinds[0][0]
    return f"{total} multi-head attention sublayers: {listed}"


@dataclass(frozen=True)
class FigureText:
    """A figure's alt text (what it shows) and caption (what to look at)."""

    alt: str
    caption: str


def figure_texts(
    t: Timings | None = None, ranks: tuple[ScoreRank, ...] | None = None
) -> dict[str, FigureText]:
    """Alt texts and captions of the page's figures, from the values they draw.

    ```python
    from mha.pages.cost import figure_texts, score_ranks

    texts = figure_texts(ranks=score_ranks(d_model=16, heads=(1, 16), n=20))
    assert "on the dashed bound line" in texts["score_ranks"].alt
    ```
    """
    t = timings() if t is None else t
    ranks = cached(score_ranks) if ranks is None else ranks
    first, last = t.rows[0], t.rows[-1]
    layer_rises = last.layer_ms > first.layer_ms
    core_rises = last.attention_ms > first.attention_ms
    steeper = t.attention_ratio(last.n_heads, first.n_heads) > t.ratio(
        last.n_heads, first.n_heads
    )
    trend = (
        "both rise"
        if layer_rises and core_rises
        else "the whole layer rises"
        if layer_rises
        else "neither rises steadily"
    )
    on_bound = all(int(r.ranks.min()) == int(r.ranks.max()) == r.bound for r in ranks)
    return {
        "head_timings": FigureText(
            alt="Median time per call against the number of heads, on log scales. The "
            "whole layer is the upper line and the attention core the lower one; "
            f"{trend} as the number of heads grows from {first.n_heads} to "
            f"{last.n_heads}"
            + (", the core's line most steeply" if steeper else "")
            + ", with shaded bands for the spread between rounds.",
            caption="Measured time of one layer and of its attention core for each "
            "number of heads, at a fixed width: look at the lower line, the core, "
            "which grows while the multiply-adds stay the same.",
        ),
        "score_ranks": FigureText(
            alt="Rank of each head's score matrix against d_k on log scales: "
            + (
                "every head's rank sits exactly on the dashed bound line"
                if on_bound
                else "the heads' ranks fall below the dashed bound line"
            )
            + f", falling from {ranks[0].bound} to {ranks[-1].bound} as the heads get "
            "narrower.",
            caption="Rank of each head's n × n score matrix against its width d_k: the "
            "dots sit on the dashed line min(n, d_k), so a narrower head can express "
            "fewer independent patterns.",
        ),
    }


def claims() -> dict[str, Claim]:
    """The page's sentences that compare computed values, checked against them.

    ```python
    from mha.pages.cost import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    rows = cached(sweep)  # the page's own results: computed once, then read back
    costs = {c.shape.name: c for c in published_costs()}
    bert, gpt2 = costs["BERT-base"], costs["GPT-2 small"]
    t = timings()
    ranks = cached(score_ranks)
    first, last = t.rows[0], t.rows[-1]
    rest = [r.projection_ms for r in t.rows]
    core_growth = last.attention_ms - first.attention_ms
    rest_spread = max(rest) - min(rest)
    bleu = [row.bleu for row in vaswani2017.ROW_A]
    best = bleu.index(max(bleu))
    return {
        "flat": Claim(
            "Every row is the same number, and it is the formula's.",
            {r.params for r in rows} == {formula_param_count(D_MODEL)}
            and {r.params_bias for r in rows}
            == {formula_param_count(D_MODEL, bias=True)},
            f"params {sorted({r.params for r in rows})}",
        ),
        "shared_shape": Claim(
            "BERT-base and GPT-2 small share a shape, so they share a count.",
            (bert.shape.d_model, bert.shape.n_heads)
            == (gpt2.shape.d_model, gpt2.shape.n_heads)
            and bert.params == gpt2.params,
            f"{bert.shape} vs {gpt2.shape}",
        ),
        "both_cost": Claim(
            "both cost",
            rows[0].multiply_adds == rows[3].multiply_adds
            and rows[0].flops == rows[3].flops,
            f"multiply-adds {rows[0].multiply_adds} and {rows[3].multiply_adds}",
        ),
        "either_way": Claim(
            "either way",
            rows[0].params == rows[-1].params
            and rows[0].multiply_adds == rows[-1].multiply_adds,
            f"params {rows[0].params}, {rows[-1].params}; multiply-adds "
            f"{rows[0].multiply_adds}, {rows[-1].multiply_adds}",
        ),
        "scores_grow": Claim(
            "The last column is the one that is not flat",
            all(a.scores < b.scores for a, b in pairwise(rows))
            and len({r.multiply_adds for r in rows}) == 1,
            f"scores {[r.scores for r in rows]}",
        ),
        "growth_in_core": Claim(
            "The growth is in the attention core",
            core_growth > 0 and core_growth > rest_spread,
            f"core grows {core_growth:.2f} ms; the rest spans {rest_spread:.2f} ms",
        ),
        "rest_flat": Claim(
            "the difference of two noisy medians, with no steady trend of the size of "
            "the core's",
            rest_spread < core_growth,
            f"rest spans {rest_spread:.2f} ms, core grows {core_growth:.2f} ms",
        ),
        "on_bound": Claim(
            "Every head reaches its bound and none exceeds it.",
            all(int(r.ranks.min()) == int(r.ranks.max()) == r.bound for r in ranks),
            f"ranks {[(int(r.ranks.min()), int(r.ranks.max()), r.bound) for r in ranks]}",
        ),
        "vaswani_heads": Claim(
            "found that translation quality rises from one head to several and falls "
            "again with too many",
            0 < best < len(bleu) - 1 and bleu[0] < bleu[best] > bleu[-1],
            f"dev BLEU by heads {bleu}",
        ),
    }


# --- Where a real model's parameters go (mha.data.totals) ------------------------------


@dataclass(frozen=True)
class ModelParts:
    """One published model's parameters by part, in millions, with attention's share."""

    name: str
    embeddings_m: int  # token, position and segment tables
    attention_m: int
    ffn_m: int
    rest_m: int  # norms, an untied output projection, BERT's pooler
    total_m: int  # counted from the parts
    stated_m: int  # what the model's source states
    attention_share: float
    source: published.Source  # where the stated total was read


def model_parts() -> tuple[ModelParts, ...]:
    """Every published model counted part by part (``mha.data.totals.breakdown``).

    Importing ``mha.data.totals`` checks every count against its source first.

    ```python
    from mha.pages.cost import model_parts

    gpt2 = next(p for p in model_parts() if p.name == "GPT-2 small")
    assert gpt2.total_m == 124 and 0.2 < gpt2.attention_share < 0.25
    ```
    """
    from mha.data import totals

    def millions(n: int) -> int:
        return round(n / 1e6)

    parts = []
    for name in totals.ARCHITECTURES:
        b = totals.breakdown(name)
        parts.append(
            ModelParts(
                name,
                millions(b.embeddings),
                millions(b.attention),
                millions(b.ffn),
                millions(b.norms + b.other),
                millions(b.total),
                millions(b.stated),
                b.attention_share,
                b.stated_source,
            )
        )
    return tuple(parts)


def attention_share_extremes() -> tuple[ModelParts, ModelParts]:
    """The published models with the smallest and the largest attention share.

    ```python
    from mha.pages.cost import attention_share_extremes

    low, high = attention_share_extremes()
    assert low.attention_share <= high.attention_share
    ```
    """
    parts = model_parts()
    by_share = sorted(parts, key=lambda p: p.attention_share)
    return by_share[0], by_share[-1]


def known_mismatches() -> tuple[tuple[ModelParts, str], ...]:
    """Each model whose counted total does not match its source, with the reason.

    ```python
    from mha.pages.cost import known_mismatches

    base, reason = known_mismatches()[0]
    assert base.name == "Transformer base" and base.total_m < base.stated_m
    ```
    """
    from mha.data import totals

    parts = {p.name: p for p in model_parts()}
    return tuple((parts[name], why) for name, why in totals.KNOWN_MISMATCHES.items())
