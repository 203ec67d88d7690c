"""Grouped-query attention in a real model: what ``docs/real-gqa-model.md`` prints.

SmolLM2-135M-Instruct shares 3 K/V heads among 9 query heads. The study (``_results()``,
cached by content hash of the code and the model file) measures, on the model in
NumPy, the bytes its KV cache holds while it answers, against the formula; that
repeating each K/V head 3 times (multi-head attention) gives the same logits with 3
times the cache; and what mean-pooling them into 1 (multi-query attention, Ainslie et
al. 2023's conversion) does to perplexity without retraining, in every layer at once
and in one layer at a time, token by token, so that the page can tell a difference
from the noise of one paragraph.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.attention import causal_mask
from mha.data import published
from mha.experiments import head_grid
from mha.heads import repeat_kv
from mha.layer import MultiHeadAttention
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm
from mha.rope import RotaryEmbedding
from mha.support import measured
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page
from mha.support.threads import one_blas_thread

# An ordinary English paragraph written for this project (no digits, no names).
_PARAGRAPH = (
    "A library is a quiet place where people can borrow books for free. Most "
    "libraries also lend films and music, and many offer computers that anyone can "
    "use. Children often come after school to read or to do their homework, while "
    "older visitors read the newspaper or look for information about their families. "
    "The librarians help people find what they are looking for, and they are happy "
    "to recommend a good book. In many towns, the library is one of the few places "
    "where everyone is welcome and nobody has to pay."
)
_QUESTION = "What is the capital of France?"
_NEW_TOKENS = 12
_NOISE = 2.0  # "within noise": closer than this many standard errors of the difference
_CACHE_ITEMSIZE = np.dtype(np.float32).itemsize  # the model computes in float32


def expand_kv_heads(attention: MultiHeadAttention) -> MultiHeadAttention:
    """A multi-head copy of a grouped-query layer: each K/V head repeated per group.

    Query head i read K/V head ``i // group``; now it reads its own copy of that
    head, so the outputs are the same while ``n_kv_heads`` (and the cache) grows to
    ``n_heads``. The inverse direction, mean-pooling, is ``attention.to_gqa``.
    """
    group = attention.n_heads // attention.n_kv_heads
    expanded = copy.copy(attention)
    expanded.n_kv_heads = attention.n_heads
    for name in ("w_k", "w_v"):
        w = getattr(attention, name)  # (d_model, h_kv*d_k) -> (h_kv, d_k, d_model)
        heads = w.T.reshape(attention.n_kv_heads, attention.d_k, -1)
        setattr(expanded, name, repeat_kv(heads, group).reshape(-1, w.shape[0]).T)
    for name in ("b_k", "b_v"):
        b = getattr(attention, name)  # (h_kv*d_k,) or None
        if b is not None:
            heads = b.reshape(attention.n_kv_heads, 1, attention.d_k)
            setattr(expanded, name, repeat_kv(heads, group).reshape(-1))
    return expanded


def _to_mqa(attention: MultiHeadAttention) -> MultiHeadAttention:
    """The layer with its K/V heads mean-pooled into one (multi-query attention)."""
    return attention.to_gqa(1)


def _swap_rope_pairing(attention: MultiHeadAttention) -> MultiHeadAttention:
    """The layer with the other RoPE pairing: interleaved (2j, 2j+1) <-> half-split (j, j+d_k/2).

    The GGUF file's Q/K weights are permuted for the interleaved pairing; under the
    half-split one (Hugging Face's layout) the same weights see scrambled positions.
    The copy gets a rotation of its own (a shallow copy would share, and corrupt, the
    original's cached cos/sin tables).
    """
    rope = attention.rope
    swapped = copy.copy(attention)
    swapped.rope = RotaryEmbedding(
        rope.d_k, rope.base, interleaved=not rope.interleaved
    )
    return swapped


@dataclass(frozen=True)
class _CacheTrace:
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


def _trace_cache(
    model: smollm2.SmolLM2, prompt: str, max_new_tokens: int
) -> _CacheTrace:
    """Generate greedily from ``prompt``, recording the caches' bytes after each step."""
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
                    1, b.attention.n_kv_heads, b.attention.d_k, length, _CACHE_ITEMSIZE
                )
                for b in model.blocks
            )
        )
    return _CacheTrace(
        model.decode(new),
        model.blocks[0].attention.n_kv_heads,
        tuple(lengths),
        tuple(nbytes),
        tuple(formula),
    )


def _streams(model: smollm2.SmolLM2, ids: Sequence[int]) -> list[np.ndarray]:
    """The unchanged model's residual stream entering each block on ``ids``, then
    after the last: ``layers + 1`` arrays ``(1, len(ids), d_model)``."""
    x = model.embed(ids)
    streams = [x]
    for block, cache in zip(model.blocks, model.new_caches(len(ids)), strict=True):
        x = block(x, cache)
        streams.append(x)
    return streams


def _through(block: smollm2.Block, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``block`` on the whole sequences ``x (B, n, d_model)`` at once (no cache)."""
    normed = rms_norm(x, block.attention_norm, block.eps)
    x = x + block.attention(normed, mask=mask)[0]
    # token by token: one matrix product over every sequence's rows
    return x + block.feed_forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)


def _one_layer_at_a_time(
    model: smollm2.SmolLM2,
    change: Callable[[MultiHeadAttention], MultiHeadAttention],
    entering: Sequence[np.ndarray],
    targets: Sequence[int],
) -> np.ndarray:
    """Per-token losses ``(layers, len(targets))`` (nats) with ``change`` applied to
    layer 0 only, then 1 only, ...; ``entering[layer] (1, n, d_model)`` is the
    unchanged model's stream entering each block (``_streams``), row t predicting
    ``targets[t]``.

    The blocks before the changed one compute what they always do, so each variant
    starts from its changed block. The variants past their changed block then run
    stacked, ``(variants, n, d_model)``, through each later block: one pass per block,
    not one per variant.
    """
    mask = causal_mask(entering[0].shape[1])
    stacked = None
    for layer, x in enumerate(entering):
        changed = model.map_attention(change, layers=[layer]).blocks[layer]
        new = _through(changed, x, mask)
        if stacked is None:
            stacked = new
        else:
            stacked = np.concatenate(
                [_through(model.blocks[layer], stacked, mask), new]
            )
    return np.array([smollm2.token_losses(model.head(x), targets) for x in stacked])


@dataclass(frozen=True)
class _Study:
    """Every number the page "A real grouped-query model" prints."""

    config: smollm2.Config  # as the GGUF file declares it
    param_count: int  # weights counted from the arrays (the tied head once)
    n_tokens: int  # tokens of PARAGRAPH
    gqa: _CacheTrace  # the model as published: 3 K/V heads
    mha: _CacheTrace  # K/V heads repeated to 9
    mqa: _CacheTrace  # K/V heads mean-pooled to 1 in every layer
    mha_max_logit_diff: float  # max |logits(MHA) - logits(GQA)| over PARAGRAPH
    logit_scale: float  # max |logits(GQA)|, for scale
    perplexity: float  # of PARAGRAPH, as published
    mha_perplexity: float
    mqa_perplexity: float  # MQA in every layer
    swapped_rope_perplexity: float  # the wrong RoPE pairing for these weights
    mqa_layer_perplexity: tuple[float, ...]  # MQA in layer i only
    token_loss: np.ndarray  # (n_tokens - 1,) nats, as published
    mqa_layer_loss: np.ndarray  # (layers, n_tokens - 1) nats, MQA in layer i only

    @property
    def worst_layer(self) -> int:
        """The layer whose conversion to MQA alone raises perplexity most."""
        return int(np.argmax(self.mqa_layer_perplexity))

    @property
    def best_layer(self) -> int:
        """The layer whose conversion to MQA alone raises perplexity least."""
        return int(np.argmin(self.mqa_layer_perplexity))


def _study(text: str, question: str, new_tokens: int, model_digest: str) -> _Study:
    """Run the whole study (tens of seconds of computing); ``_results()`` caches it.

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
    mqa_model = model.map_attention(_to_mqa)
    prompt = smollm2.chat_prompt(question)
    ids = model.encode(text)
    with one_blas_thread():
        streams = _streams(model, ids)  # the unchanged pass, once
        logits = model.head(streams[-1][0])  # (n, vocab); row i predicts token i + 1
        # the variants on every token but the last, which predicts none
        entering = [x[:, :-1] for x in streams[:-1]]
        layer_loss = _one_layer_at_a_time(model, _to_mqa, entering, ids[1:])
    mha_logits = mha_model.logits(ids)
    token_loss = smollm2.token_losses(logits[:-1], ids[1:])
    return _Study(
        config=model.config,
        param_count=model.param_count,
        n_tokens=len(ids),
        gqa=_trace_cache(model, prompt, new_tokens),
        mha=_trace_cache(mha_model, prompt, new_tokens),
        mqa=_trace_cache(mqa_model, prompt, new_tokens),
        mha_max_logit_diff=float(np.abs(mha_logits - logits).max()),
        logit_scale=float(np.abs(logits).max()),
        perplexity=float(np.exp(np.mean(token_loss))),  # as perplexity_of computes it
        mha_perplexity=smollm2.perplexity_of(mha_logits[:-1], ids[1:]),
        mqa_perplexity=mqa_model.perplexity(text),
        swapped_rope_perplexity=model.map_attention(_swap_rope_pairing).perplexity(
            text
        ),
        mqa_layer_perplexity=tuple(np.exp(layer_loss.mean(axis=1)).tolist()),
        token_loss=token_loss,
        mqa_layer_loss=layer_loss,
    )


def _results() -> _Study:
    """The study on ``_PARAGRAPH`` and ``_QUESTION``, computed once per code and model."""
    return cached(_study, _PARAGRAPH, _QUESTION, _NEW_TOKENS, smollm2.gguf_digest())


def _ranking(r: _Study) -> dict:
    """How far apart one paragraph can tell the layers converted alone: per-token
    differences of loss, paired on the same tokens, against their standard error.

    For the ``best`` and ``worst`` layer: the change of perplexity against the
    published model (``change``, a fraction) and the standard error of that paired
    difference (``error``, as a fraction of perplexity); ``tied``, the layers whose
    difference from the best is within NOISE standard errors (the best among them).
    """
    losses, published = r.mqa_layer_loss, r.token_loss
    n = published.shape[-1]

    def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
        difference = a - b
        return float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(n))

    def against_published(layer: int) -> dict:
        mean, error = paired(losses[layer], published)
        change, spread = np.expm1([mean, error]).tolist()
        return {"layer": layer, "change": change, "error": spread}

    def tied_with(best: int, layer: int) -> bool:
        mean, error = paired(losses[layer], losses[best])
        return layer == best or abs(mean) < _NOISE * error

    order = np.argsort(losses.mean(axis=1), kind="stable").tolist()
    best, worst = order[0], order[-1]
    tied = [layer for layer in order if tied_with(best, layer)]
    return {
        "best": against_published(best),
        "worst": against_published(worst),
        "tied": tied,
        "n_tied": len(tied),
        "n": n,
    }


@functools.cache
def page() -> Page:
    """What the page prints: the study, the published sizes, the benchmark, the widget."""
    r, bench = _results(), measured.load("smollm2")
    paper = {row.model: row for row in published.GQA_TABLE_1}  # the GQA paper's
    decode_bench = measured.load("decode")
    decoded = _decoding(
        decode_bench,
        r.config,
        bench["weight_bytes_per_token"],
        bench["read_bandwidth_one_thread_gb_per_s"] * 1e9,
    )
    stored = cached(_stored_bytes, smollm2.gguf_digest())
    c, itemsize = r.config, _CACHE_ITEMSIZE
    # every head on the corpus's short sentences, its kind by the atlas's rule
    data = cached(head_grid.smollm2_payload, head_grid.texts(), smollm2.gguf_digest())
    every = head_grid.Widget(
        data,
        label=f"Every head of SmolLM2-135M-Instruct, {data['layers']} layers by "
        f"{data['heads']} query heads: choose one to see its attention map",
        caption="A button per head, a column per layer, lettered and coloured by its "
        "kind. Choose one to draw its map on the chosen sentence (a query sees only "
        "the tokens up to itself: the hatched cells are hidden from it); hover over or "
        "focus a query token to draw its arcs, one line per key, as opaque as its "
        "weight.",
        note="The interactive grid needs JavaScript.",
    )
    return Page(
        study=r,
        published=published.decoder("SmolLM2-135M"),
        question=_QUESTION,
        group=c.n_heads // c.n_kv_heads,
        cache_ratio=r.mha.bytes_per_token / r.gqa.bytes_per_token,
        paper=paper,
        uptrain=published.GQA_UPTRAIN_FRACTION,
        bench=bench,
        seal=measured.Seal.of(bench),
        speed={
            "read_gib": bench["read_bytes"] / 2**30,  # the array streamed
            "bound_ms": 1000 / bench["bound_tokens_per_s"],  # every weight byte
            "n_products": 4 * c.n_layers + 1,  # weight products: 4 a layer, the head
            "step_gb_per_s": bench["weight_bytes_per_token"]
            / bench["decode_ms_per_token"]
            / 1e6,
            "qkv_mb": c.d_model
            * (c.n_heads + 2 * c.n_kv_heads)
            * c.d_k
            * itemsize
            / 1e6,
            "w_o_mb": c.d_model * c.n_heads * c.d_k * itemsize / 1e6,
        },
        every=every,
        ranking=_ranking(r),
        noise=_NOISE,
        decode_bench=decode_bench,
        decoding=decoded,
        speeds=_speeds(bench, decoded, stored),
        stored_mb=stored / 1e6,
        stored_ratio=bench["weight_bytes_per_token"] / stored,
        stored_bound=bench["read_bandwidth_gb_per_s"] * 1e9 / stored,
        one_thread_bandwidth=bench["read_bandwidth_one_thread_gb_per_s"],
        facts={**_facts(r, bench, every.counts, paper), **_decoding_facts(decoded)},
        figures=_figures(r),
    )


def _facts(
    r: _Study,
    bench: dict,
    kinds: dict[str, int],
    paper: dict[str, published.SpeedQuality],
) -> dict[str, Fact]:
    """The facts the page's sentences state about the study, the benchmark, the
    ``kinds`` of SmolLM2's heads (kind -> heads) and the GQA ``paper``'s Table 1 rows
    (model -> row).
    """
    g, m, q, ppl, mqa_ppl = r.gqa, r.mha, r.mqa, r.perplexity, r.mqa_perplexity
    diff, layers = r.mha_max_logit_diff, np.array(r.mqa_layer_perplexity)
    close = layers < 1.5 * ppl  # "close to the published model's"
    spread = f"{layers.min():.1f} to {layers.max():.1f} by layer, {mqa_ppl:.1f} in all"
    uptrained = paper["MQA-XXL"].average_score
    multi_head = paper["MHA-XXL"].average_score
    b = {name: bench[name] for name in ("products_gb_per_s", "read_bandwidth_gb_per_s")}
    prefill, decode = bench["prefill_tokens_per_s"], bench["decode_tokens_per_s"]
    ratio, budget = bench["decode_bound_ratio"], bench["budget_decode_bound_ratio"]
    rank = _ranking(r)
    best, worst = rank["best"], rank["worst"]
    return {
        "best_is_noise": Fact(
            abs(best["change"]) < best["error"] and len(rank["tied"]) > 1,
            f"best layer {best}, tied with it: {rank['tied']}",
            says="the kindest layer's perplexity change is smaller than its standard error, and other layers tie with it",
        ),
        "worst_is_not": Fact(
            worst["change"] > _NOISE * worst["error"],
            f"worst layer {worst}",
            says="the worst layer's perplexity change is over NOISE (2) standard errors",
        ),
        "rows_agree": Fact(
            g.nbytes == g.formula,
            f"{g.nbytes} vs {g.formula}",
            says="the grouped cache's bytes equal the formula's at every step",
        ),
        "same_answer": Fact(
            m.answer == g.answer,
            f"{m.answer!r} vs {g.answer!r}",
            says="the model expanded to full MHA gives the same answer as the published one",
            qualitative="an identity of two answers; the answer is printed beside it",
        ),
        "mha_logits": Fact(
            diff < 1e-4 * r.logit_scale,
            f"{diff} of {r.logit_scale}",
            says="the expanded model's largest logit difference is under 1e-4 of the logits' scale",
        ),
        "logits_exact": Fact(
            diff == 0,
            f"largest difference {diff}",
            says="the expanded model's logits equal the original's exactly",
        ),
        "same_perplexity": Fact(
            abs(r.mha_perplexity - ppl) < 1e-3 * ppl,
            f"{r.mha_perplexity} vs {ppl}",
            says="the expanded model's perplexity is within 0.1% of the published model's",
        ),
        "no_longer_answers": Fact(
            q.answer != g.answer and mqa_ppl > 10 * ppl,
            f"MQA says {q.answer!r}, perplexity {mqa_ppl:.1f} vs {ppl:.1f}",
            says="converted to MQA in every layer, the model answers differently and its perplexity is over ten times as high",
        ),
        "uneven": Fact(
            mqa_ppl / 10 > layers.max() > 2 * layers.min(),
            f"perplexity {spread}",
            says="layer by layer, the worst MQA perplexity is over twice the best and under a tenth of converting all at once",
        ),
        "bars": Fact(
            close.mean() > 0.5 and (~close).any() and layers.max() < mqa_ppl / 10,
            f"{close.sum()} of {len(layers)} within 1.5 times {ppl:.1f}; {spread}",
            says="most layers stay under 1.5 times the published perplexity, some do not, and all stay under a tenth of all at once",
            qualitative="an ordering of the bars of the figure above",
        ),
        "mqa_breaks": Fact(
            mqa_ppl > 10 * layers.max(),
            f"perplexity {spread}",
            says="converting every layer at once gives over ten times the worst single layer's perplexity",
        ),
        "uptrained_close": Fact(
            abs(uptrained - multi_head) < 1,
            f"{uptrained} vs {multi_head}",
            says="the paper's uptrained MQA-XXL scores within one point of MHA-XXL",
        ),
        "products_slower": Fact(
            b["products_gb_per_s"] < b["read_bandwidth_gb_per_s"],
            f"GB/s: {b}",
            says="the weight products stream fewer GB/s than one long read",
        ),
        "prefill_faster": Fact(
            prefill > 3 * decode,
            f"{prefill} vs {decode} tokens/s",
            says="prefill processes over three times as many tokens per second as decoding",
            qualitative="a ratio of the measured speeds, printed in the table above",
        ),
        "target": Fact(
            ratio >= budget,
            f"{ratio} of the bound, target {budget}",
            says="decoding reaches the budget's share of the memory-bandwidth bound",
        ),
        "sink_heads": Fact(
            kinds["first token"] > sum(kinds.values()) / 2,
            f"kinds {kinds}",
            says="more than half of SmolLM2's heads are first-token heads",
        ),
    }


def _figures(r: _Study) -> dict[str, Figure]:
    """The page's figure: perplexity with one layer at a time converted to MQA."""
    return {
        "mqa_by_layer": Figure(
            "real_gqa_model.mqa_by_layer",
            (r.mqa_layer_perplexity, r.perplexity, r.mqa_perplexity),
            alt="Bar chart, one bar per layer (numbered from 0), of the paragraph's "
            "perplexity when only that layer's key/value heads are averaged into one. "
            "Most bars stay close to the published model's perplexity; a few layers "
            "rise well above it; all stay far below the dashed line of the model with "
            "every layer converted at once.",
            caption="Perplexity of the paragraph with one layer converted to "
            "multi-query attention, layer by layer. Compare each bar with the "
            "published model's level, and all of them with the dashed line: every "
            "layer converted.",
        )
    }


# --- decoding, measured by make bench (tests/bench/decode.py) -----------------------

# The functions whose own time in the decode profile holds the step's weight products
# (a matrix product is counted in the function that calls it).
_PRODUCT_FUNCTIONS = ("feed_forward", "head", "_project", "_linear", "_attend")


def _stored_bytes(digest: str) -> int:
    """The bytes of every tensor of SmolLM2's GGUF file as stored (4-bit Q4_1, 8-bit
    Q8_0 and float32 tensors; the tied embedding once): what a runtime that keeps the
    quantised weights reads per decode step (``digest`` names the file)."""
    if smollm2.gguf_digest() != digest:
        raise ValueError(f"digest: expected {smollm2.gguf_digest()}, got {digest}")
    import gguf  # the reader of the model file, as smollm2 itself uses it

    return sum(int(t.n_bytes) for t in gguf.GGUFReader(smollm2.gguf_path()).tensors)


def _speeds(bench: dict, decoded: dict, stored_bytes: int) -> list[dict]:
    """Every decode speed the page shows, in tokens per second, each with the BLAS
    threads and the load average it was measured under (recorded by ``make bench``):
    the bandwidth bounds (float32 weights, and the GGUF file's own weights as
    stored), the whole decode step, and the decode benchmark's steps at each context
    (with the cache, recomputing the prefix, grouped and expanded K/V heads).
    """
    threads, load = bench["machine"]["cpu_count"], bench["machine"]["load_average_1min"]
    one, busy = 1, decoded["load"]
    bandwidth = bench["read_bandwidth_gb_per_s"] * 1e9
    rows = [
        (
            "the bound, float32 weights",
            None,
            bench["bound_tokens_per_s"],
            threads,
            load,
        ),
        (
            "the bound, the weights as stored (4-bit)",
            None,
            bandwidth / stored_bytes,
            threads,
            load,
        ),
        (
            "decode with the KV cache",
            bench["prefill_tokens"],
            bench["decode_tokens_per_s"],
            threads,
            load,
        ),
    ]
    for r in decoded["recompute"]:
        rows.append(
            (
                "decode with the KV cache",
                r["context"],
                r["cached_tokens_per_s"]["median"],
                one,
                busy,
            )
        )
        rows.append(
            (
                "recomputing the prefix",
                r["context"],
                r["recompute_tokens_per_s"]["median"],
                one,
                busy,
            )
        )
    for r in decoded["grouped"]:
        for kind, name in (("gqa", "grouped K/V heads"), ("mha", "expanded K/V heads")):
            rows.append((name, r["context"], 1000 / r["ms"][kind]["median"], one, busy))
    keys = ("what", "context", "tokens_per_s", "threads", "load")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _step_bytes(
    config: smollm2.Config, weight_bytes: int, n_kv_heads: int, context: int
) -> int:
    """Bytes one decode step reads at ``context``: every weight once, the K and V
    projections grown to ``n_kv_heads`` heads, and the whole float32 cache.
    """
    extra_heads = n_kv_heads - config.n_kv_heads
    projections = 2 * extra_heads * config.d_k * config.d_model * _CACHE_ITEMSIZE
    cache = kv_cache_bytes(1, n_kv_heads, config.d_k, context, _CACHE_ITEMSIZE)
    return weight_bytes + config.n_layers * (projections + cache)


def _decoding(
    data: dict, config: smollm2.Config, weight_bytes: int, bandwidth: float
) -> dict:
    """The decode benchmark's tables, with the bytes each step is predicted to read.

    A grouped step reads ``gqa_bytes``; at ``bandwidth`` (bytes per second, one BLAS
    thread as the benchmark ran) that takes ``gqa_bytes / bandwidth``, the step's
    ``bound_fraction`` of its measured time. The byte ratio predicts the expanded
    step's time only at the bound; at the measured fraction, the rest of the step
    unchanged, it predicts ``1 + (predicted_ratio - 1) * bound_fraction``.
    """
    grouped = []
    for row in data["gqa_or_expansion"]:
        t = row["context"]
        gqa, mha = (
            _step_bytes(config, weight_bytes, h, t)
            for h in (config.n_kv_heads, config.n_heads)
        )
        fraction = gqa / bandwidth / (row["ms"]["gqa"]["median"] / 1000)
        grouped.append(
            {
                **row,
                "gqa_bytes": gqa,
                "mha_bytes": mha,
                "gqa_mb": round(gqa / 1e6),  # whole MB, printed with separators
                "mha_mb": round(mha / 1e6),
                "predicted_ratio": mha / gqa,
                "bound_fraction": fraction,
                "at_fraction_ratio": 1 + (mha / gqa - 1) * fraction,
            }
        )
    load, cores = data["load_average_1min"], data["provenance"]["machine"]["cpu_count"]
    per_token = config.n_layers * kv_cache_bytes(
        1, config.n_kv_heads, config.d_k, 1, _CACHE_ITEMSIZE
    )
    profile = [
        {
            **p,
            "products": p["function"].split("(")[-1].rstrip(")") in _PRODUCT_FUNCTIONS,
        }
        for p in data["overhead"]["profile"]
    ]
    return {
        "recompute": data["cache_or_recompute"],
        "grouped": grouped,
        "fractions": (  # the slowest and the fastest grouped step, of their bound
            min(r["bound_fraction"] for r in grouped),
            max(r["bound_fraction"] for r in grouped),
        ),
        "overhead": data["overhead"],
        "profile": profile,
        "rounds": data["rounds"],
        "steps": data["steps_per_round"],
        "load": max(load["before"], load["after"]),
        "cores": cores,
        "busy": max(load["before"], load["after"]) > cores,
        "cache_per_token": per_token,
        "weights_mb": weight_bytes / 1e6,
        "seal": measured.Seal.of(data),
    }


def _decoding_facts(d: dict) -> dict[str, Fact]:
    """The facts the decoding section states."""
    rows, grouped = d["recompute"], d["grouped"]
    spans = [
        (
            r["context"],
            r["cached_tokens_per_s"]["q1"],
            r["recompute_tokens_per_s"]["q3"],
        )
        for r in rows
    ]
    speedups = [r["speedup"]["median"] for r in rows]
    predicted = [round(r["predicted_ratio"], 3) for r in grouped]
    fractions = [round(r["bound_fraction"], 3) for r in grouped]
    return {
        "cache_always": Fact(
            all(cached > again for _, cached, again in spans),
            f"(context, cached q1, recompute q3) tokens/s: {spans}",
            says="at every context, the cached decode's first quartile is faster than recomputing's third quartile",
        ),
        "gap_grows": Fact(
            speedups[-1] > 4 * speedups[0],
            f"speed-ups by context {speedups}",
            says="the median speed-up at the longest context is over four times that at the shortest",
        ),
        "predicted_grows": Fact(
            predicted == sorted(predicted) and predicted[0] < 1.25 < predicted[-1],
            f"predicted MHA/GQA bytes by context {predicted}",
            says="the predicted MHA/GQA ratio rises with the context, from under 1.25 to over it",
        ),
        "busy": Fact(
            d["busy"],
            f"load {d['load']} on {d['cores']} cores",
            says="the decode benchmark's machine was busy (load over its cores)",
        ),
        "far_from_bound": Fact(
            max(fractions) < 0.5,
            f"grouped steps' fractions of the bound {fractions}",
            says="every grouped step ran at under half of its bandwidth bound",
        ),
    }
