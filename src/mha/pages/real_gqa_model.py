"""Grouped-query attention in a real model: SmolLM2-135M's cache, and its K/V heads changed.

Page: ``docs/real-gqa-model.md``.

SmolLM2-135M-Instruct shares 3 K/V heads among 9 query heads (groups of 3). This study
measures, on the real model running in NumPy:

1. the bytes its KV cache holds while it generates an answer, step by step, against
   the formula 2 · layers · h_kv · d_k · length · itemsize;
2. that repeating each K/V head 3 times (a full multi-head model with 9 K/V heads)
   gives the same logits with 3 times the cache;
3. what mean-pooling the 3 K/V heads into 1 (multi-query attention, the conversion of
   Ainslie et al. 2023) does to perplexity without any retraining: in all layers at
   once, and in one layer at a time.

The results are computed once per version of the code and of the model file
(``results()``, cached by content hash).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.data import published
from mha.experiments import head_grid
from mha.heads import repeat_kv
from mha.layer import MultiHeadAttention
from mha.pretrained import smollm2
from mha.support import measured
from mha.support.cache import cached
from mha.support.claims import Claim
from mha.support.threads import one_blas_thread

# An ordinary English paragraph written for this project (no digits, no names).
PARAGRAPH = (
    "A library is a quiet place where people can borrow books for free. Most "
    "libraries also lend films and music, and many offer computers that anyone can "
    "use. Children often come after school to read or to do their homework, while "
    "older visitors read the newspaper or look for information about their families. "
    "The librarians help people find what they are looking for, and they are happy "
    "to recommend a good book. In many towns, the library is one of the few places "
    "where everyone is welcome and nobody has to pay."
)
QUESTION = "What is the capital of France?"
NEW_TOKENS = 12
CACHE_ITEMSIZE = np.dtype(np.float32).itemsize  # the model computes in float32


def expand_kv_heads(attention: MultiHeadAttention) -> MultiHeadAttention:
    """A multi-head copy of a grouped-query layer: each K/V head repeated per group.

    Query head i read K/V head ``i // group``; now it reads its own copy of that
    head, so the outputs are the same while ``n_kv_heads`` (and the cache) grows to
    ``n_heads``. The inverse direction, mean-pooling, is ``attention.to_gqa``.

    ```python
    import numpy as np
    from mha import MultiHeadAttention, causal_mask
    from mha.pages.real_gqa_model import expand_kv_heads

    gqa = MultiHeadAttention(d_model=8, n_heads=4, n_kv_heads=2)
    mha_layer = expand_kv_heads(gqa)
    x = np.random.default_rng(0).normal(size=(1, 3, 8))
    assert mha_layer.n_kv_heads == 4 and mha_layer.w_k.shape == (8, 8)
    assert np.allclose(mha_layer(x, causal_mask(3))[0], gqa(x, causal_mask(3))[0])
    ```
    """
    group = attention.n_heads // attention.n_kv_heads
    expanded = copy.copy(attention)
    expanded.n_kv_heads = attention.n_heads
    for name in ("w_k", "w_v"):
        w = getattr(attention, name)  # (d_model, h_kv*d_k)
        heads = w.T.reshape(
            attention.n_kv_heads, attention.d_k, -1
        )  # (h_kv, d_k, d_model)
        setattr(expanded, name, repeat_kv(heads, group).reshape(-1, w.shape[0]).T)
    for name in ("b_k", "b_v"):
        b = getattr(attention, name)  # (h_kv*d_k,) or None
        if b is not None:
            heads = b.reshape(attention.n_kv_heads, 1, attention.d_k)
            setattr(expanded, name, repeat_kv(heads, group).reshape(-1))
    return expanded


def to_mqa(attention: MultiHeadAttention) -> MultiHeadAttention:
    """The layer with its K/V heads mean-pooled into one (multi-query attention).

    ```python
    from mha import MultiHeadAttention
    from mha.pages.real_gqa_model import to_mqa

    assert to_mqa(MultiHeadAttention(d_model=8, n_heads=4, n_kv_heads=2)).n_kv_heads == 1
    ```
    """
    return attention.to_gqa(1)


def swap_rope_pairing(attention: MultiHeadAttention) -> MultiHeadAttention:
    """The layer with the other RoPE pairing: interleaved (2j, 2j+1) <-> half-split (j, j+d_k/2).

    The GGUF file's Q/K weights are permuted for the interleaved pairing; under the
    half-split one (Hugging Face's layout) the same weights see scrambled positions.

    ```python
    from mha import MultiHeadAttention
    from mha.pages.real_gqa_model import swap_rope_pairing
    from mha.rope import RotaryEmbedding

    layer = MultiHeadAttention(d_model=8, n_heads=2)
    layer.rope = RotaryEmbedding(4, interleaved=True)
    assert swap_rope_pairing(layer).rope.interleaved is False
    assert layer.rope.interleaved is True  # the original is unchanged
    ```
    """
    swapped = copy.copy(attention)
    swapped.rope = copy.copy(attention.rope)
    swapped.rope.interleaved = not attention.rope.interleaved
    return swapped


@dataclass(frozen=True)
class CacheTrace:
    """A greedy answer and the cache bytes held after each step, measured and by formula."""

    answer: str
    n_kv_heads: int
    lengths: tuple[int, ...]  # tokens held in each layer's cache after each step
    nbytes: tuple[int, ...]  # sum of cache.nbytes over the layers
    formula: tuple[int, ...]  # layers · 2 · h_kv · d_k · length · itemsize

    @property
    def bytes_per_token(self) -> int:
        """Cache bytes per token held, over all layers."""
        return self.formula[-1] // self.lengths[-1]


def trace_cache(model: smollm2.SmolLM2, prompt: str, max_new_tokens: int) -> CacheTrace:
    """Generate greedily from ``prompt``, recording the caches' bytes after each step.

    ```python
    from mha.pages.real_gqa_model import trace_cache
    from mha.pretrained import smollm2

    trace = trace_cache(smollm2.load(), "One, two, three,", 3)
    assert trace.nbytes == trace.formula and trace.answer == " four, five"
    ```
    """
    ids = model.encode(prompt)
    caches = model.new_caches(len(ids) + max_new_tokens)
    lengths, nbytes, formula, new = [], [], [], []
    for next_id in model.greedy(ids, caches, max_new_tokens):
        new.append(next_id)
        length = caches[0].length
        lengths.append(length)
        nbytes.append(sum(cache.nbytes for cache in caches))
        formula.append(
            sum(
                kv_cache_bytes(
                    1, b.attention.n_kv_heads, b.attention.d_k, length, CACHE_ITEMSIZE
                )
                for b in model.blocks
            )
        )
    return CacheTrace(
        model.decode(new),
        model.blocks[0].attention.n_kv_heads,
        tuple(lengths),
        tuple(nbytes),
        tuple(formula),
    )


def one_layer_at_a_time(
    model: smollm2.SmolLM2,
    change: Callable[[MultiHeadAttention], MultiHeadAttention],
    text: str,
) -> tuple[float, ...]:
    """Perplexity of ``text`` with ``change`` applied to layer 0 only, then 1 only, ...

    The blocks before the changed one compute what they always do, so the residual
    stream entering each block is computed once, and each variant runs from its
    changed block on.

    ```python
    from mha.pages.real_gqa_model import one_layer_at_a_time
    from mha.pretrained import smollm2

    model = smollm2.load()
    text = "The cat sat on the mat."
    unchanged = one_layer_at_a_time(model, lambda attention: attention, text)
    assert len(unchanged) == 30
    assert max(unchanged) - min(unchanged) < 1e-6 * model.perplexity(text)
    ```
    """
    ids = model.encode(text)
    tokens, targets = ids[:-1], ids[1:]
    x = model.embed(tokens)  # (1, n, d_model)
    entering = []  # the residual stream entering each block
    perplexities = []
    with one_blas_thread():
        for block, cache in zip(
            model.blocks, model.new_caches(len(tokens)), strict=True
        ):
            entering.append(x)
            x = block(x, cache)
        for layer, x in enumerate(entering):
            variant = model.map_attention(change, layers=[layer])
            caches = variant.new_caches(len(tokens))[layer:]
            for block, cache in zip(variant.blocks[layer:], caches, strict=True):
                x = block(x, cache)
            perplexities.append(smollm2.perplexity_of(variant.head(x[0]), targets))
    return tuple(perplexities)


@dataclass(frozen=True)
class Study:
    """Every number the page "A real grouped-query model" prints."""

    config: smollm2.Config  # as the GGUF file declares it
    param_count: int  # weights counted from the arrays (the tied head once)
    n_tokens: int  # tokens of PARAGRAPH
    gqa: CacheTrace  # the model as published: 3 K/V heads
    mha: CacheTrace  # K/V heads repeated to 9
    mqa: CacheTrace  # K/V heads mean-pooled to 1 in every layer
    mha_max_logit_diff: float  # max |logits(MHA) - logits(GQA)| over PARAGRAPH
    logit_scale: float  # max |logits(GQA)|, for scale
    perplexity: float  # of PARAGRAPH, as published
    mha_perplexity: float
    mqa_perplexity: float  # MQA in every layer
    swapped_rope_perplexity: float  # the wrong RoPE pairing for these weights
    mqa_layer_perplexity: tuple[float, ...]  # MQA in layer i only

    @property
    def worst_layer(self) -> int:
        """The layer whose conversion to MQA alone raises perplexity most."""
        return int(np.argmax(self.mqa_layer_perplexity))

    @property
    def best_layer(self) -> int:
        """The layer whose conversion to MQA alone raises perplexity least."""
        return int(np.argmin(self.mqa_layer_perplexity))


def _study(text: str, question: str, new_tokens: int, model_digest: str) -> Study:
    """Run the whole study (tens of seconds of computing); ``results()`` caches it.

    ``model_digest`` (``smollm2.gguf_digest()``) names the model file, so that a new
    file gives a new cache entry.
    """
    model = smollm2.load()
    if smollm2.gguf_digest() != model_digest:
        raise ValueError(
            f"model_digest: expected the digest of the installed model file "
            f"{smollm2.gguf_digest()}, got {model_digest}"
        )
    mha_model = model.map_attention(expand_kv_heads)
    mqa_model = model.map_attention(to_mqa)
    prompt = smollm2.chat_prompt(question)
    ids = model.encode(text)
    logits = model.logits(ids)  # (n, vocab); row i predicts token i + 1
    mha_logits = mha_model.logits(ids)
    return Study(
        config=model.config,
        param_count=model.param_count,
        n_tokens=len(ids),
        gqa=trace_cache(model, prompt, new_tokens),
        mha=trace_cache(mha_model, prompt, new_tokens),
        mqa=trace_cache(mqa_model, prompt, new_tokens),
        mha_max_logit_diff=float(np.abs(mha_logits - logits).max()),
        logit_scale=float(np.abs(logits).max()),
        perplexity=smollm2.perplexity_of(logits[:-1], ids[1:]),
        mha_perplexity=smollm2.perplexity_of(mha_logits[:-1], ids[1:]),
        mqa_perplexity=mqa_model.perplexity(text),
        swapped_rope_perplexity=model.map_attention(swap_rope_pairing).perplexity(text),
        mqa_layer_perplexity=one_layer_at_a_time(model, to_mqa, text),
    )


def results() -> Study:
    """The study on ``PARAGRAPH`` and ``QUESTION``, computed once per code and model.

    ```python
    from mha.pages.real_gqa_model import results

    r = results()
    assert r.gqa.nbytes == r.gqa.formula and r.mha.nbytes[-1] == 3 * r.gqa.nbytes[-1]
    assert r.mha.answer == r.gqa.answer and r.perplexity < r.mqa_perplexity
    ```
    """
    return cached(_study, PARAGRAPH, QUESTION, NEW_TOKENS, smollm2.gguf_digest())


# --- what the page prints -------------------------------------------------------------


def gqa_paper() -> tuple[published.SpeedQuality, published.SpeedQuality]:
    """The GQA paper's T5-XXL rows (its first table): uptrained MQA, and MHA.

    ```python
    from mha.pages.real_gqa_model import gqa_paper

    mqa, mha = gqa_paper()
    assert mqa.model == "MQA-XXL" and mha.model == "MHA-XXL"
    ```
    """
    rows = {row.model: row for row in published.GQA_TABLE_1}
    return rows["MQA-XXL"], rows["MHA-XXL"]


@dataclass(frozen=True)
class Speed:
    """What "How fast it runs" prints, derived from ``make bench``'s committed result."""

    bench: dict  # the result as committed (src/mha/data/bench/smollm2.json)
    read_gib: float  # size of the array the bandwidth is measured on
    bound_ms: float  # per token, every weight byte at that rate
    n_products: int  # weight products of a step: 4 per layer and the head
    step_gb_per_s: float  # weight bytes per token over the whole step's time
    qkv_mb: float  # W_Q, W_K, W_V of one layer, side by side, in float32
    w_o_mb: float  # W_O of one layer


def speed(config: smollm2.Config) -> Speed:
    """The benchmark's figures as the page prints them.

    ```python
    from mha.pages.real_gqa_model import results, speed

    s = speed(results().config)
    assert s.n_products == 4 * 30 + 1 and s.bound_ms > 0
    ```
    """
    bench = measured.load("smollm2")
    itemsize = CACHE_ITEMSIZE
    qkv_width = (config.n_heads + 2 * config.n_kv_heads) * config.d_k
    return Speed(
        bench=bench,
        read_gib=bench["read_bytes"] / 2**30,
        bound_ms=1000 / bench["bound_tokens_per_s"],
        n_products=4 * config.n_layers + 1,
        step_gb_per_s=bench["weight_bytes_per_token"]
        / bench["decode_ms_per_token"]
        / 1e6,
        qkv_mb=config.d_model * qkv_width * itemsize / 1e6,
        w_o_mb=config.d_model * config.n_heads * config.d_k * itemsize / 1e6,
    )


def cache_ratio(study: Study) -> float:
    """How many times the expanded (multi-head) model's cache per token is the GQA one's.

    ```python
    from mha.pages.real_gqa_model import cache_ratio, results

    assert cache_ratio(results()) == 3
    ```
    """
    return study.mha.bytes_per_token / study.gqa.bytes_per_token


def group(config: smollm2.Config) -> int:
    """Query heads per K/V head.

    ```python
    from mha.pages.real_gqa_model import group, results

    assert group(results().config) == 3
    ```
    """
    return config.n_heads // config.n_kv_heads


def claims(study: Study | None = None, bench: Speed | None = None) -> dict[str, Claim]:
    """The page's sentences about the study and the benchmark, checked.

    ```python
    from mha.pages.real_gqa_model import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    r = results() if study is None else study
    s = speed(r.config) if bench is None else bench
    b = s.bench
    layers = np.array(r.mqa_layer_perplexity)
    close = layers < 1.5 * r.perplexity  # "close to the published model's"
    return {
        "rows_agree": Claim(
            "Every row agrees.",
            r.gqa.nbytes == r.gqa.formula,
            f"measured {r.gqa.nbytes} vs formula {r.gqa.formula}",
        ),
        "same_answer": Claim(
            "it gives the same answer",
            r.mha.answer == r.gqa.answer,
            f"{r.mha.answer!r} vs {r.gqa.answer!r}",
        ),
        "mha_logits": Claim(
            "are the original's to the last bit (the largest difference is 0)"
            if r.mha_max_logit_diff == 0
            else "agree with the original's to floating-point precision (the largest "
            f"difference is {r.mha_max_logit_diff:.1e})",
            r.mha_max_logit_diff < 1e-4 * r.logit_scale,
            f"largest difference {r.mha_max_logit_diff} on scores up to {r.logit_scale}",
        ),
        "same_perplexity": Claim(
            "and the same perplexity",
            abs(r.mha_perplexity - r.perplexity) < 1e-3 * r.perplexity,
            f"{r.mha_perplexity} vs {r.perplexity}",
        ),
        "no_longer_answers": Claim(
            "The model no longer answers",
            r.mqa.answer != r.gqa.answer and r.mqa_perplexity > 10 * r.perplexity,
            f"MQA answer {r.mqa.answer!r}, perplexity {r.mqa_perplexity:.1f} "
            f"vs {r.perplexity:.1f}",
        ),
        "uneven": Claim(
            "One layer at a time, the damage is much smaller, and uneven",
            bool(
                layers.max() < r.mqa_perplexity / 10 and layers.max() > 2 * layers.min()
            ),
            f"per layer {layers.min():.1f} to {layers.max():.1f}, "
            f"all layers {r.mqa_perplexity:.1f}",
        ),
        "bars": Claim(
            "Most bars stay close to the published model's perplexity; a few layers "
            "rise well above it; all stay far below the dashed line of the model with "
            "every layer converted at once.",
            bool(
                close.mean() > 0.5
                and (~close).any()
                and layers.max() < r.mqa_perplexity / 10
            ),
            f"{int(close.sum())} of {len(layers)} layers within 1.5 times "
            f"{r.perplexity:.1f}; largest {layers.max():.1f}; all layers "
            f"{r.mqa_perplexity:.1f}",
        ),
        "mqa_breaks": Claim(
            "converted all together, the model breaks",
            r.mqa_perplexity > 10 * layers.max(),
            f"all layers {r.mqa_perplexity:.1f} vs worst single layer {layers.max():.1f}",
        ),
        "uptrained_close": Claim(
            "does their MQA model come close to the multi-head one",
            abs(gqa_paper()[0].average_score - gqa_paper()[1].average_score) < 1,
            f"{gqa_paper()[0].average_score} vs {gqa_paper()[1].average_score}",
        ),
        "products_slower": Claim(
            "They stream slower than one long read",
            b["products_gb_per_s"] < b["read_bandwidth_gb_per_s"],
            f"{b['products_gb_per_s']} vs {b['read_bandwidth_gb_per_s']} GB/s",
        ),
        "prefill_faster": Claim(
            "Prefill is much faster per token than decoding",
            b["prefill_tokens_per_s"] > 3 * b["decode_tokens_per_s"],
            f"{b['prefill_tokens_per_s']} vs {b['decode_tokens_per_s']} tokens/s",
        ),
        "target": Claim(
            "This run reaches the target."
            if b["decode_bound_ratio"] >= b["budget_decode_bound_ratio"]
            else "This run falls short of the target.",
            True,
            f"{b['decode_bound_ratio']} against {b['budget_decode_bound_ratio']}",
        ),
        "sink_heads": sink_heads(),
    }


def figure_text(study: Study | None = None) -> dict[str, str]:
    """The alt text and caption of the page's figure.

    ```python
    from mha.pages.real_gqa_model import figure_text

    assert figure_text()["caption"].startswith("Perplexity")
    ```
    """
    bars = claims(study)["bars"]
    return {
        "alt": "Bar chart, one bar per layer (numbered from 0), of the paragraph's "
        "perplexity when only that layer's key/value heads are averaged into one. "
        + bars.text,
        "caption": "Perplexity of the paragraph with one layer converted to "
        "multi-query attention, layer by layer. Compare each bar with the published "
        "model's level, and all of them with the dashed line: every layer converted.",
    }


# --- every head, interactive (the section "Explore every head") -----------------------


def every_head() -> head_grid.Widget:
    """The widget of SmolLM2's heads on the short sentences of the corpus, each head
    with its kind by the atlas's rule on a causal model's statistics (data cached).

    ```python
    from mha.pages.real_gqa_model import every_head

    widget = every_head()
    assert widget.n_heads == 270 and widget.nbytes <= 150_000
    assert sum(widget.counts.values()) == widget.n_heads
    ```
    """
    data = cached(head_grid.smollm2_payload, head_grid.texts(), smollm2.gguf_digest())
    layers, heads = data["layers"], data["heads"]
    return head_grid.Widget(
        data,
        label=f"Every head of SmolLM2-135M-Instruct, {layers} layers by {heads} "
        "query heads: choose one to see its attention map",
        caption="A button per head, a column per layer, lettered and coloured by its "
        "kind. Choose one to draw its map on the chosen sentence (a query sees only "
        "the tokens up to itself: the hatched cells are hidden from it); hover over or "
        "focus a query token to draw its arcs, one line per key, as opaque as its "
        "weight.",
        note="The interactive grid needs JavaScript.",
    )


def sink_heads() -> Claim:
    """The section's sentence about SmolLM2's kinds of head, checked.

    ```python
    from mha.pages.real_gqa_model import sink_heads

    assert sink_heads().holds
    ```
    """
    widget = every_head()
    return Claim(
        "most of its heads are first-token heads",
        widget.counts["first token"] > widget.n_heads / 2,
        f"kinds {widget.counts} of {widget.n_heads} heads",
    )
