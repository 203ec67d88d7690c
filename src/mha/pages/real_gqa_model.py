"""Grouped-query attention in a real model: what ``docs/real-gqa-model.md`` prints.

SmolLM2-135M-Instruct shares 3 K/V heads among 9 query heads. The study (``results()``,
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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.data import published
from mha.experiments import head_grid
from mha.heads import repeat_kv
from mha.layer import MultiHeadAttention
from mha.pretrained import smollm2
from mha.rope import RotaryEmbedding
from mha.support import measured
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page
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
NOISE = 2.0  # "within noise": closer than this many standard errors of the difference
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


def swap_rope_pairing(attention: MultiHeadAttention) -> MultiHeadAttention:
    """The layer with the other RoPE pairing: interleaved (2j, 2j+1) <-> half-split (j, j+d_k/2).

    The GGUF file's Q/K weights are permuted for the interleaved pairing; under the
    half-split one (Hugging Face's layout) the same weights see scrambled positions.
    The copy gets a rotation of its own (a shallow copy would share, and corrupt, the
    original's cached cos/sin tables).

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
    rope = attention.rope
    swapped = copy.copy(attention)
    swapped.rope = RotaryEmbedding(
        rope.d_k, rope.base, interleaved=not rope.interleaved
    )
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
) -> np.ndarray:
    """Per-token losses ``(layers, tokens - 1)`` of ``text`` (nats, each token after the
    first) with ``change`` applied to layer 0 only, then 1 only, ...

    The blocks before the changed one compute what they always do, so the residual
    stream entering each block is computed once, and each variant runs from its
    changed block on.

    ```python
    import numpy as np
    from mha.pages.real_gqa_model import one_layer_at_a_time
    from mha.pretrained import smollm2

    model = smollm2.load()
    text = "The cat sat on the mat."
    unchanged = one_layer_at_a_time(model, lambda attention: attention, text)
    assert unchanged.shape == (30, len(model.encode(text)) - 1)
    perplexity = np.exp(unchanged.mean(axis=1))
    assert np.ptp(perplexity) < 1e-6 * model.perplexity(text)
    ```
    """
    ids = model.encode(text)
    tokens, targets = ids[:-1], ids[1:]
    x = model.embed(tokens)  # (1, n, d_model)
    entering = []  # the residual stream entering each block
    losses = []
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
            losses.append(smollm2.token_losses(variant.head(x[0]), targets))
    return np.array(losses)


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
    mqa_model = model.map_attention(_to_mqa)
    prompt = smollm2.chat_prompt(question)
    ids = model.encode(text)
    logits = model.logits(ids)  # (n, vocab); row i predicts token i + 1
    mha_logits = mha_model.logits(ids)
    token_loss = smollm2.token_losses(logits[:-1], ids[1:])
    layer_loss = one_layer_at_a_time(model, _to_mqa, text)
    return Study(
        config=model.config,
        param_count=model.param_count,
        n_tokens=len(ids),
        gqa=trace_cache(model, prompt, new_tokens),
        mha=trace_cache(mha_model, prompt, new_tokens),
        mqa=trace_cache(mqa_model, prompt, new_tokens),
        mha_max_logit_diff=float(np.abs(mha_logits - logits).max()),
        logit_scale=float(np.abs(logits).max()),
        perplexity=float(np.exp(np.mean(token_loss))),  # as perplexity_of computes it
        mha_perplexity=smollm2.perplexity_of(mha_logits[:-1], ids[1:]),
        mqa_perplexity=mqa_model.perplexity(text),
        swapped_rope_perplexity=model.map_attention(swap_rope_pairing).perplexity(text),
        mqa_layer_perplexity=tuple(np.exp(layer_loss.mean(axis=1)).tolist()),
        token_loss=token_loss,
        mqa_layer_loss=layer_loss,
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


def ranking(r: Study) -> dict:
    """How far apart one paragraph can tell the layers converted alone: per-token
    differences of loss, paired on the same tokens, against their standard error.

    For the ``best`` and ``worst`` layer: the change of perplexity against the
    published model (``change``, a fraction) and the standard error of that paired
    difference (``error``, as a fraction of perplexity); ``tied``, the layers whose
    difference from the best is within NOISE standard errors (the best among them).

    ```python
    from mha.pages.real_gqa_model import ranking, results

    rank = ranking(results())
    assert abs(rank["best"]["change"]) < rank["best"]["error"]
    assert rank["worst"]["change"] > 2 * rank["worst"]["error"]
    ```
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
        return layer == best or abs(mean) < NOISE * error

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
    """What the page prints: the study, the published sizes, the benchmark, the widget.

    ```python
    from mha.pages.real_gqa_model import page
    from mha.support.page import WIDGET_BYTES

    p = page()
    assert p.group == 3 and p.cache_ratio == 3 and p.speed["n_products"] == 4 * 30 + 1
    assert p.every.n_heads == 270 and p.every.nbytes <= WIDGET_BYTES
    # every fact holds but the two that pick a sentence: whether the speed target is
    # met, and whether the expanded model's logits are the original's to the last bit
    # (they are on some CPUs, not on others)
    picks = {"target", "logits_exact"}
    assert all(f.holds for name, f in p.facts.items() if name not in picks)
    ```
    """
    r, bench = results(), measured.load("smollm2")
    paper = {row.model: row for row in published.GQA_TABLE_1}  # the GQA paper's
    decode_bench = measured.load("decode")
    decoded = decoding(
        decode_bench,
        r.config,
        bench["weight_bytes_per_token"],
        bench["read_bandwidth_one_thread_gb_per_s"] * 1e9,
    )
    stored = cached(_stored_bytes, smollm2.gguf_digest())
    c, itemsize = r.config, CACHE_ITEMSIZE
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
        question=QUESTION,
        group=c.n_heads // c.n_kv_heads,
        cache_ratio=r.mha.bytes_per_token / r.gqa.bytes_per_token,
        paper=paper,
        uptrain=published.GQA_UPTRAIN_FRACTION,
        bench=bench,
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
        ranking=ranking(r),
        noise=NOISE,
        decode_bench=decode_bench,
        decoding=decoded,
        speeds=speeds(bench, decoded, stored),
        stored_mb=stored / 1e6,
        stored_ratio=bench["weight_bytes_per_token"] / stored,
        stored_bound=bench["read_bandwidth_gb_per_s"] * 1e9 / stored,
        one_thread_bandwidth=bench["read_bandwidth_one_thread_gb_per_s"],
        facts={**facts(r, bench, every.counts, paper), **decoding_facts(decoded)},
        figures=figures(r),
    )


def facts(
    r: Study,
    bench: dict,
    kinds: dict[str, int],
    paper: dict[str, published.SpeedQuality],
) -> dict[str, Fact]:
    """The facts the page's sentences state about the study, the benchmark, the
    ``kinds`` of SmolLM2's heads (kind -> heads) and the GQA ``paper``'s Table 1 rows
    (model -> row).

    ```python
    import dataclasses
    from mha.pages.real_gqa_model import facts, page

    p = page()
    other = dataclasses.replace(p.study.mha, answer="Lyon")
    study = dataclasses.replace(p.study, mha=other)
    stale = facts(study, p.bench, p.every.counts, p.paper)
    assert not stale["same_answer"].holds and stale["rows_agree"].holds
    ```
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
    rank = ranking(r)
    best, worst = rank["best"], rank["worst"]
    return {
        "best_is_noise": Fact(
            abs(best["change"]) < best["error"] and len(rank["tied"]) > 1,
            f"best layer {best}, tied with it: {rank['tied']}",
        ),
        "worst_is_not": Fact(
            worst["change"] > NOISE * worst["error"], f"worst layer {worst}"
        ),
        "rows_agree": Fact(g.nbytes == g.formula, f"{g.nbytes} vs {g.formula}"),
        "same_answer": Fact(m.answer == g.answer, f"{m.answer!r} vs {g.answer!r}"),
        "mha_logits": Fact(diff < 1e-4 * r.logit_scale, f"{diff} of {r.logit_scale}"),
        "logits_exact": Fact(diff == 0, f"largest difference {diff}"),
        "same_perplexity": Fact(
            abs(r.mha_perplexity - ppl) < 1e-3 * ppl, f"{r.mha_perplexity} vs {ppl}"
        ),
        "no_longer_answers": Fact(
            q.answer != g.answer and mqa_ppl > 10 * ppl,
            f"MQA says {q.answer!r}, perplexity {mqa_ppl:.1f} vs {ppl:.1f}",
        ),
        "uneven": Fact(
            mqa_ppl / 10 > layers.max() > 2 * layers.min(), f"perplexity {spread}"
        ),
        "bars": Fact(
            close.mean() > 0.5 and (~close).any() and layers.max() < mqa_ppl / 10,
            f"{close.sum()} of {len(layers)} within 1.5 times {ppl:.1f}; {spread}",
        ),
        "mqa_breaks": Fact(mqa_ppl > 10 * layers.max(), f"perplexity {spread}"),
        "uptrained_close": Fact(
            abs(uptrained - multi_head) < 1, f"{uptrained} vs {multi_head}"
        ),
        "products_slower": Fact(
            b["products_gb_per_s"] < b["read_bandwidth_gb_per_s"], f"GB/s: {b}"
        ),
        "prefill_faster": Fact(prefill > 3 * decode, f"{prefill} vs {decode} tokens/s"),
        "target": Fact(ratio >= budget, f"{ratio} of the bound, target {budget}"),
        "sink_heads": Fact(
            kinds["first token"] > sum(kinds.values()) / 2, f"kinds {kinds}"
        ),
    }


def figures(r: Study) -> dict[str, Figure]:
    """The page's figure: perplexity with one layer at a time converted to MQA.

    ```python
    from mha.pages.real_gqa_model import figures, results

    assert figures(results())["mqa_by_layer"].caption.startswith("Perplexity")
    ```
    """
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
PRODUCT_FUNCTIONS = ("feed_forward", "head", "_project", "_linear", "_attend")


def _stored_bytes(digest: str) -> int:
    """The bytes of every tensor of SmolLM2's GGUF file as stored (4-bit Q4_1, 8-bit
    Q8_0 and float32 tensors; the tied embedding once): what a runtime that keeps the
    quantised weights reads per decode step (``digest`` names the file)."""
    if smollm2.gguf_digest() != digest:
        raise ValueError(f"digest: expected {smollm2.gguf_digest()}, got {digest}")
    import gguf  # the reader of the model file, as smollm2 itself uses it

    return sum(int(t.n_bytes) for t in gguf.GGUFReader(smollm2.gguf_path()).tensors)


def speeds(bench: dict, decoded: dict, stored_bytes: int) -> list[dict]:
    """Every decode speed the page shows, in tokens per second, each with the BLAS
    threads and the load average it was measured under (recorded by ``make bench``):
    the bandwidth bounds (float32 weights, and the GGUF file's own weights as
    stored), the whole decode step, and the decode benchmark's steps at each context
    (with the cache, recomputing the prefix, grouped and expanded K/V heads).

    ```python
    from mha.pages.real_gqa_model import page

    rows = page().speeds
    assert all(row["tokens_per_s"] > 0 and row["threads"] >= 1 for row in rows)
    ```
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


def step_bytes(
    config: smollm2.Config, weight_bytes: int, n_kv_heads: int, context: int
) -> int:
    """Bytes one decode step reads at ``context``: every weight once, the K and V
    projections grown to ``n_kv_heads`` heads, and the whole float32 cache.

    ```python
    from mha.pages.real_gqa_model import step_bytes
    from mha.pretrained import smollm2

    model = smollm2.load()
    c, weights = model.config, model.weight_nbytes
    gap = step_bytes(c, weights, 9, 512) - step_bytes(c, weights, 3, 512)
    assert gap == 30 * 2 * 6 * 64 * (576 + 512) * 4  # 6 more K/V heads a layer
    ```
    """
    extra_heads = n_kv_heads - config.n_kv_heads
    projections = 2 * extra_heads * config.d_k * config.d_model * CACHE_ITEMSIZE
    cache = kv_cache_bytes(1, n_kv_heads, config.d_k, context, CACHE_ITEMSIZE)
    return weight_bytes + config.n_layers * (projections + cache)


def decoding(
    data: dict, config: smollm2.Config, weight_bytes: int, bandwidth: float
) -> dict:
    """The decode benchmark's tables, with the bytes each step is predicted to read.

    A grouped step reads ``gqa_bytes``; at ``bandwidth`` (bytes per second, one BLAS
    thread as the benchmark ran) that takes ``gqa_bytes / bandwidth``, the step's
    ``bound_fraction`` of its measured time. The byte ratio predicts the expanded
    step's time only at the bound; at the measured fraction, the rest of the step
    unchanged, it predicts ``1 + (predicted_ratio - 1) * bound_fraction``.

    ```python
    from mha.pages.real_gqa_model import decoding, page

    p = page()
    d = decoding(
        p.decode_bench, p.study.config, p.bench["weight_bytes_per_token"], 28e9
    )
    row = d["grouped"][0]
    assert 1 < row["at_fraction_ratio"] < row["predicted_ratio"]
    ```
    """
    grouped = []
    for row in data["gqa_or_expansion"]:
        t = row["context"]
        gqa, mha = (
            step_bytes(config, weight_bytes, h, t)
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
        1, config.n_kv_heads, config.d_k, 1, CACHE_ITEMSIZE
    )
    profile = [
        {**p, "products": p["function"].split("(")[-1].rstrip(")") in PRODUCT_FUNCTIONS}
        for p in data["overhead"]["profile"]
    ]
    return {
        "recompute": data["cache_or_recompute"],
        "grouped": grouped,
        "overhead": data["overhead"],
        "profile": profile,
        "rounds": data["rounds"],
        "steps": data["steps_per_round"],
        "load": max(load["before"], load["after"]),
        "cores": cores,
        "busy": max(load["before"], load["after"]) > cores,
        "cache_per_token": per_token,
        "weights_mb": weight_bytes / 1e6,
    }


def decoding_facts(d: dict) -> dict[str, Fact]:
    """The facts the decoding section states.

    ```python
    from mha.pages.real_gqa_model import decoding_facts, page

    p = page()
    quiet = dict(p.decoding, busy=False)
    assert decoding_facts(quiet)["busy"].holds is False
    ```
    """
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
        ),
        "gap_grows": Fact(
            speedups[-1] > 4 * speedups[0], f"speed-ups by context {speedups}"
        ),
        "predicted_grows": Fact(
            predicted == sorted(predicted) and predicted[0] < 1.25 < predicted[-1],
            f"predicted MHA/GQA bytes by context {predicted}",
        ),
        "busy": Fact(d["busy"], f"load {d['load']} on {d['cores']} cores"),
        "far_from_bound": Fact(
            max(fractions) < 0.5,
            f"grouped steps' fractions of the bound {fractions}",
            "every grouped step ran at under half of its bandwidth bound",
        ),
    }
