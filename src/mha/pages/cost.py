"""What changes with the number of heads h at a fixed width d_model: ``docs/cost.md``.

Counted from real layers: the parameters. Computed: the score multiply-adds, the
whole layer's multiply-adds at every published model's shape and context, the
scores the softmax normalises and the rank of each head's score matrix. Measured by
``make bench``: the layer's time, read back from ``mha/data/bench/heads.json``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from mha.accounting import (
    LayerMultiplyAdds,
    layer_multiply_adds,
    param_count,
    score_flops,
    score_multiply_adds,
)
from mha.data import published, totals, vaswani2017
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.support import measured
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page
from mha.support.validate import generator
from mha.worked.cricket import COST_N as N  # tokens, as in the seed's cost example

_D_MODEL = published.model("Transformer base").d_model
_FORMULA = (4 * _D_MODEL**2, 4 * _D_MODEL**2 + 4 * _D_MODEL)  # without and with biases
_HEADS = (1, 2, 4, 8, 16, 32, 64)
# The rank study: narrow, so that d_k runs down to 1 in a few SVDs, and n > d_model
# tokens, so that every head is capped by its d_k.
_RANK_D_MODEL = 64
# Vaswani et al. (2017), section 3.1: each encoder layer has a self-attention
# sublayer, each decoder layer a masked one and an encoder-decoder one. BERT is one
# encoder stack, GPT-2 one decoder stack.
_ENCODER, _DECODER = "encoder self-attention", "masked decoder self-attention"
_SUBLAYERS_PER_LAYER = {
    "Transformer base": (_ENCODER, _DECODER, "encoder-decoder attention"),
    "BERT-base": ("self-attention",),
    "BERT-large": ("self-attention",),
    "GPT-2 small": ("masked self-attention",),
}


@functools.cache
def page() -> Page:
    """What the page prints: the sweep over h, published shapes, timings, ranks."""
    rows, ranks, t = cached(_sweep), cached(_score_ranks), _timings()  # computed once
    costs, layers, parts = _published_costs(), _layer_costs(), []
    for b in map(totals.breakdown, totals.ARCHITECTURES):  # every model, part by part
        counts = (b.embeddings, b.attention, b.ffn, b.norms + b.other, b.total)
        millions = (round(n / 1e6) for n in (*counts, b.stated))
        parts.append(_ModelParts(b.name, *millions, b.attention_share, b.stated_source))
    base, bert = published.model("Transformer base"), published.model("BERT-base")
    whole = layer_multiply_adds(N, _D_MODEL, base.n_heads)  # the count table's shape
    by_share = sorted(parts, key=lambda p: p.attention_share)
    by_name = {p.name: p for p in parts}
    bleu = [r.bleu for r in vaswani2017.ROW_A]  # Table 3 (A): BLEU by number of heads
    return Page(
        d_model=_D_MODEL,
        n=N,
        rows=rows,
        formula=_FORMULA,  # written from d_model, no layer at all
        costs=costs,
        sublayers=[(kind, base.n_layers) for kind in _SUBLAYERS_PER_LAYER[base.name]],
        bert=bert,
        bert_one_head=param_count(bert.d_model, 1),
        parts=parts,
        share_range=(by_share[0], by_share[-1]),
        exact_tolerance=totals.EXACT_TOLERANCE,
        mismatches=[(by_name[n], why) for n, why in totals.KNOWN_MISMATCHES.items()],
        timings=t,
        base_heads=base.n_heads,
        ranks=ranks,
        whole=whole,
        timed_whole=layer_multiply_adds(t.n, t.d_model, 1),  # the timed layer's
        layers=layers,
        windowed=[c for c in published.DECODERS if c.sliding_window is not None],
        vaswani=vaswani2017.ROW_A,  # Table 3 (A): BLEU by number of heads
        vaswani_best=vaswani2017.best_bleu(),
        facts=_facts(rows, costs, t, ranks, bleu, whole, layers),
        figures=_figures(t, ranks, layers),
    )


@dataclass(frozen=True)
class _HeadCount:
    """One layer shape ``(d_model, n_heads)`` and what it costs for ``n`` tokens."""

    n_heads: int
    d_k: int
    params: int  # counted from the arrays of a layer without biases
    params_bias: int  # ... with biases
    per_head_multiply_adds: int  # n²·d_k for one head's n × n score matrix
    multiply_adds: int  # all heads together: n²·d_model
    flops: int  # two per multiply-add
    scores: int  # h·n² entries the softmax exponentiates and normalises


def _sweep(
    d_model: int = _D_MODEL, heads: tuple[int, ...] = _HEADS, n: int = N
) -> tuple[_HeadCount, ...]:
    """Instantiate a layer for every head count and count what it holds and does."""
    rows = []
    for h in heads:
        plain, biased = (MultiHeadAttention(d_model, h, bias=b) for b in (False, True))
        params = (plain.param_count, biased.param_count)
        madds = (n * n * (d_model // h), score_multiply_adds(n, d_model, h))
        counts = (*params, *madds, score_flops(n, d_model, h), h * n * n)
        rows.append(_HeadCount(h, d_model // h, *counts))
    return tuple(rows)


@dataclass(frozen=True)
class _PublishedCost:
    """The attention parameters of one published model, per layer and in all layers."""

    shape: published.ModelShape
    params: int  # one layer's W_Q, W_K, W_V, W_O
    params_bias: int  # the same with their biases
    sublayers: int  # multi-head attention sublayers in the whole model
    all_layers: int  # params_bias × sublayers


def _published_costs() -> tuple[_PublishedCost, ...]:
    """``param_count`` at the shape of every model of ``published.MODELS``."""
    costs = []
    for s in published.MODELS:
        bias = param_count(s.d_model, s.n_heads, bias=True)
        sublayers = len(_SUBLAYERS_PER_LAYER[s.name]) * s.n_layers
        params = param_count(s.d_model, s.n_heads)
        costs.append(_PublishedCost(s, params, bias, sublayers, bias * sublayers))
    return tuple(costs)


@dataclass(frozen=True)
class _ModelParts:
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


@dataclass(frozen=True)
class _LayerCost:
    """One published model's attention layer at its full context: what it computes
    and the attention weights it holds."""

    name: str
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_k: int
    context: int  # the longest context the model was published for
    context_source: published.Source
    cost: LayerMultiplyAdds  # one layer, one sequence of ``context`` tokens

    @property
    def weights(self) -> int:
        """The attention weights one layer holds for one sequence: h·n²."""
        return self.n_heads * self.context**2

    @property
    def share(self) -> float:
        """The share of the layer's multiply-adds in the scores and weighted sum."""
        return self.cost.attention / self.cost.total

    @property
    def billions(self) -> tuple[float, float]:
        """The projections' and the n² part's multiply-adds, in billions (10⁹)."""
        return self.cost.projections / 1e9, self.cost.attention / 1e9

    @property
    def weights_millions(self) -> float:
        """``weights`` in millions (10⁶)."""
        return self.weights / 1e6

    @property
    def weights_gb(self) -> float:
        """``weights`` in gigabytes (10⁹ bytes) at 2 bytes a weight (16-bit floats)."""
        return self.weights * 2 / 1e9


def _layer_costs() -> tuple[_LayerCost, ...]:
    """Every published model with a context length (learned positions, or the
    published context of a decoder that attends to every past token): its layer's
    multiply-adds at that length, sorted by the n² part's share.
    """
    shapes = []
    for s in published.MODELS:  # multi-head: as many K/V heads as query heads
        arch = totals.ARCHITECTURES[s.name]
        if arch.learned_positions:  # the base Transformer's sinusoids set no length
            shapes.append((s.name, s.d_model, s.n_heads, s.n_heads, s.d_k))
            shapes[-1] += (arch.learned_positions, arch.source)
    for c in published.DECODERS:  # a window (Mistral's) caps a query's keys: not n²
        if c.sliding_window is None and c.max_context and c.context_source:
            shapes.append((c.name, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim))
            shapes[-1] += (c.max_context, c.context_source)
    rows = []
    for name, d, h, h_kv, d_k, n, source in shapes:
        cost = layer_multiply_adds(n, d, h, n_kv_heads=h_kv, d_k=d_k)
        rows.append(_LayerCost(name, d, h, h_kv, d_k, n, source, cost))
    return tuple(sorted(rows, key=lambda r: r.share))


@dataclass(frozen=True)
class _ScoreRank:
    """The ranks of the ``n × n`` score matrices QᵢKᵢᵀ of every head of one layer."""

    n_heads: int
    d_k: int
    n: int
    ranks: np.ndarray  # (n_heads,) rank of each head's score matrix
    bound: int  # min(n, d_k): a product of n × d_k and d_k × n matrices

    @property
    def ranks_text(self) -> str:
        """The heads' ranks as the page's table shows them: ``"16"`` or ``"15 to 16"``."""
        low, high = int(self.ranks.min()), int(self.ranks.max())
        return f"{low}" if low == high else f"{low} to {high}"

    @property
    def on_bound(self) -> bool:
        """Whether every head's rank is the bound min(n, d_k)."""
        return bool((self.ranks == self.bound).all())


def _score_ranks(
    d_model: int = _RANK_D_MODEL,
    heads: tuple[int, ...] = _HEADS,
    n: int = N,
    rng: np.random.Generator | None = None,
) -> tuple[_ScoreRank, ...]:
    """Rank of every head's score matrix ``Qᵢ Kᵢᵀ`` (at most d_k) for random tokens,
    one layer per head count.
    """
    rng = generator(rng)
    x = rng.normal(size=(n, d_model))  # (n, d_model) random tokens
    rows = []
    for h in heads:
        layer = MultiHeadAttention(d_model, h, rng=rng)
        q = split_heads(x @ layer.w_q, h)  # (h, n, d_k)
        k = split_heads(x @ layer.w_k, h)
        ranks = np.linalg.matrix_rank(q @ np.swapaxes(k, -1, -2))  # of (h, n, n)
        rows.append(_ScoreRank(h, layer.d_k, n, ranks, min(n, layer.d_k)))
    return tuple(rows)


@dataclass(frozen=True)
class _Timing:
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
class _Timings:
    """The ``heads`` benchmark as measured by ``make bench``, with its machine."""

    d_model: int
    n: int
    batch: int
    dtype: str
    repeats: int  # rounds; each round samples every head count once
    burst: int  # back-to-back calls per sample, of which the fastest is kept
    threads: int  # BLAS threads
    rows: tuple[_Timing, ...]
    machine: dict
    seal: measured.Seal  # when, at which commit and under which load it was sealed

    def ratio(self, n_heads: int, baseline: int, part: str = "layer") -> float:
        """How many times longer ``part`` (``"layer"``, or ``"attention"``: the core)
        takes with ``n_heads`` heads than with ``baseline``."""
        times = {r.n_heads: getattr(r, f"{part}_ms") for r in self.rows}
        if not {n_heads, baseline} <= times.keys():
            raise ValueError(
                f"n_heads: expected two of {list(times)}, got {n_heads} and {baseline}"
            )
        return times[n_heads] / times[baseline]

    @property
    def load(self) -> float:
        """The one-minute load average recorded when the run started."""
        return float(self.machine["load_average_1min"])

    @property
    def projection_range(self) -> tuple[float, float]:
        """Smallest and largest measured time of the rest of the layer (ms)."""
        rest = [r.projection_ms for r in self.rows]
        return min(rest), max(rest)

    @property
    def fastest(self) -> _Timing:
        """The head count whose whole layer has the smallest median time."""
        return min(self.rows, key=lambda r: r.layer_ms)

    @property
    def slowest(self) -> _Timing:
        """The head count whose whole layer has the largest median time."""
        return max(self.rows, key=lambda r: r.layer_ms)


def _timings() -> _Timings:
    """The committed result of the ``heads`` benchmark (run ``make bench`` to refresh)."""
    data = measured.load("heads")
    fields = ("d_model", "n", "batch", "dtype", "repeats", "burst", "threads")
    rows = tuple(
        _Timing(**{k: v for k, v in row.items() if not k.startswith("samples_")})
        for row in data["rows"]  # the raw samples stay in the file, checked by load
    )
    return _Timings(
        **{f: data[f] for f in fields},
        rows=rows,
        machine=data["machine"],
        seal=measured.Seal.of(data),
    )


def _facts(
    rows: tuple[_HeadCount, ...],
    costs: tuple[_PublishedCost, ...],
    t: _Timings,
    ranks: tuple[_ScoreRank, ...],
    bleu: list[float],
    whole: LayerMultiplyAdds,
    layers: tuple[_LayerCost, ...],
) -> dict[str, Fact]:
    """The facts the page states about counts, timings, ranks, Vaswani's BLEU and
    the ``whole`` layer's multiply-adds (at the count table's shape, and ``layers``).
    """
    by_name = {c.shape.name: c for c in costs}
    bert, gpt2 = by_name["BERT-base"], by_name["GPT-2 small"]
    one, eight, many = rows[0], rows[3], rows[-1]
    core = t.rows[-1].attention_ms - t.rows[0].attention_ms  # how much the core grows
    low, high = t.projection_range
    apart = t.rows[-1].attention_q1_ms > t.rows[0].attention_q3_ms  # quartile ranges
    cores = t.machine["cpu_count"]
    # a load past the cores: other jobs shared them, no ratio of medians to headline
    quiet = t.load <= cores
    best = bleu.index(max(bleu))
    mha = [
        r
        for r in layers
        if r.n_heads == r.n_kv_heads and r.d_k * r.n_heads == r.d_model
    ]
    below = [r for r in layers if r.context < r.cost.crossover]
    return {
        "flat": Fact(
            {(r.params, r.params_bias) for r in rows} == {_FORMULA},
            f"params {sorted({r.params for r in rows})}",
            says="every row's parameters, with and without biases, equal the formula's 4 d_model^2 and 4 d_model^2 + 4 d_model",
        ),
        "shared_shape": Fact(
            (bert.shape.d_model, bert.shape.n_heads, bert.params)
            == (gpt2.shape.d_model, gpt2.shape.n_heads, gpt2.params),
            f"{bert.shape} vs {gpt2.shape}",
            says="BERT-base and GPT-2 small have the same d_model, number of heads and parameter count",
        ),
        "both_cost": Fact(
            (one.multiply_adds, one.flops) == (eight.multiply_adds, eight.flops),
            f"multiply-adds {one.multiply_adds} and {eight.multiply_adds}",
            says="one head and eight heads cost the same multiply-adds and the same FLOPs",
        ),
        "either_way": Fact(
            (one.params, one.multiply_adds) == (many.params, many.multiply_adds),
            f"params {one.params}, {many.params}; multiply-adds "
            f"{one.multiply_adds}, {many.multiply_adds}",
            says="the fewest and the most heads of the table have the same parameters and the same multiply-adds",
        ),
        "scores_grow": Fact(
            all(a.scores < b.scores for a, b in pairwise(rows))
            and len({r.multiply_adds for r in rows}) == 1,
            f"scores {[r.scores for r in rows]}",
            says="the number of scores grows at every row while the multiply-adds stay the same",
        ),
        "quiet": Fact(
            quiet,
            f"load average {t.load} on {cores} cores",
            says="the benchmark's load average was at most the machine's number of cores",
        ),
        "growth_in_core": Fact(
            core > 0 and core > high - low and apart,
            f"core grows {core:.2f} ms; the rest spans {high - low:.2f} ms; the core's "
            f"quartile ranges {'do not overlap' if apart else 'overlap'}",
            says="the attention core's growth from one head to the most is larger than the rest's span, and their quartile ranges do not overlap",
            qualitative="an ordering of measured medians and quartiles, printed in the table above",
        ),
        "rest_flat": Fact(  # under load the page says only that it cannot tell
            not quiet or high - low < core,
            f"rest spans {high - low:.2f} ms, core grows {core:.2f} ms, "
            f"load average {t.load} on {cores} cores",
            says="on a quiet machine, the rest of the layer spans less than the core's growth (under load, the page says it cannot tell)",
        ),
        "on_bound": Fact(
            all(r.on_bound for r in ranks),
            f"ranks {[(r.ranks_text, r.bound) for r in ranks]}",
            says="every head's score matrix has exactly the rank of its bound min(n, d_k)",
        ),
        "vaswani_heads": Fact(
            0 < best < len(bleu) - 1 and bleu[0] < bleu[best] > bleu[-1],
            f"dev BLEU by heads {bleu}",
            says="Vaswani et al.'s dev BLEU peaks at a middle number of heads, above both one head and the most",
        ),
        "projections_dominate": Fact(
            whole.projections > 10 * whole.scores,
            f"projections {whole.projections}, scores {whole.scores}",
            says="the worked layer's projections cost over ten times its scores",
        ),
        "crossover_2d": Fact(
            bool(mha) and all(r.cost.crossover == 2 * r.d_model for r in mha),
            f"crossovers {[(r.name, r.cost.crossover, r.d_model) for r in mha]}",
            says="every multi-head model of the table crosses over at exactly 2 d_model tokens",
        ),
        "most_below": Fact(
            2 * len(below) > len(layers),
            f"{len(below)} of {len(layers)} contexts under their crossover",
            says="more than half of the models have a context shorter than their crossover",
            qualitative="a count over the rows of the table above, each context against its crossover",
        ),
    }


def _figures(
    t: _Timings, ranks: tuple[_ScoreRank, ...], layers: tuple[_LayerCost, ...]
) -> dict[str, Figure]:
    """The whole layer's multiply-adds at every published model's context, the
    measured times and the score ranks, in the page's order; the alt texts say what
    they show.
    """
    first, last = t.rows[0], t.rows[-1]
    trend = "neither rises steadily"
    if last.layer_ms > first.layer_ms:
        core_rises = last.attention_ms > first.attention_ms
        trend = "both rise" if core_rises else "the whole layer rises"
    heads = (last.n_heads, first.n_heads)
    steeper = t.ratio(*heads, "attention") > t.ratio(*heads)
    low, high = layers[0], layers[-1]
    return {
        "layer_split": Figure(
            "cost.layer_split",
            (layers,),
            alt="One horizontal bar per published model, at its full context length, "
            "split into the projections' share of the layer's multiply-adds and the "
            f"share of the scores and weighted sum, from {low.share:.0%} for "
            f"{low.name} to {high.share:.0%} for {high.name}; a dashed line marks "
            "half, where the context equals the crossover.",
            caption="Where one attention layer's multiply-adds go at each model's full "
            "context: look at the blue part of each bar, the projections, which is the "
            "larger part for every model whose context is under its crossover.",
        ),
        "head_timings": Figure(
            "cost.head_timings",
            (t,),
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
        "score_ranks": Figure(
            "cost.score_ranks",
            (ranks,),
            alt="Rank of each head's score matrix against d_k on log scales: "
            + (
                "every head's rank sits exactly on the dashed bound line"
                if all(r.on_bound for r in ranks)
                else "the heads' ranks fall below the dashed bound line"
            )
            + f", falling from {ranks[0].bound} to {ranks[-1].bound} as the heads get "
            "narrower.",
            caption="Rank of each head's n × n score matrix against its width d_k: the "
            "dots sit on the dashed line min(n, d_k), so a narrower head can express "
            "fewer independent patterns.",
        ),
    }
