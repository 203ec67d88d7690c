"""What the KV cache of a published decoder costs, and what fits beside its weights.

Page: ``docs/kv-cache.md``.

Every figure is computed from a model's layers, K/V heads and head width
(``mha.data.published.DECODERS``), never from d_model:

    cache bytes = 2 · layers · h_kv · head_dim · tokens · batch · bytes per value

"With full MHA" asks the same of the model with one K/V head per query head
(h_kv = h), the counterfactual a grouped-query or multi-query model avoids.

The page's calculator takes any shape. Its data (``calculator_json``) is embedded in
the page; its script (``docs/assets/js/kv-calculator.js``) holds the one arithmetic of
the widget, a port of ``mha.accounting.kv_cache_bytes`` and of ``what_fits`` (and of
``size_text``, the way a size is written), which a browser test compares with these
functions on generated shapes and every published model. ``calculator_view`` is what
the calculator shows, computed here: the page prints it before the script runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.data.published import (
    DECODERS,
    GQA_GROUPS,
    GQA_TABLE_1,
    DecoderConfig,
    SpeedQuality,
    decoder,
)
from mha.heads import repeat_kv
from mha.support.claims import Claim
from mha.support.validate import positive_int

GIB = 2**30
BYTES_PER_VALUE = 2  # the page's cache and weights: 16-bit (float16, bfloat16)
HALF_BITS = 8 * BYTES_PER_VALUE
UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")  # each 1,024 of the last

# Example inputs of the page (a reader changes them in the calculator).
EXAMPLE_CONTEXT = 4096  # tokens per sequence
EXAMPLE_BATCH = 1
EXAMPLE_MEMORY_GIB = 80  # one accelerator's memory, for "how many sequences fit"
EXAMPLE_MEMORY = EXAMPLE_MEMORY_GIB * GIB
MQA_KV_HEADS = 1  # multi-query attention: one K/V head for every query head
CALCULATOR_MODEL = "Llama-3 8B"  # the model the calculator opens with
CONTEXTS = tuple(2**i for i in range(9, 18))  # 512 ... 131,072 tokens, for the curve
FIT_MODELS = (  # the models of similar size compared in the "what fits" figure
    "Llama-2 7B",
    "Llama-3 8B",
    "Mistral 7B",
    "Qwen2.5 7B",
    "Falcon-7B",
    "Gemma 2B",
)
# The head-sharing figure: 8 query heads with 8 (MHA), 2 (GQA) and 1 (MQA) K/V heads.
SHARING_HEADS = 8
SHARING_KV_HEADS = (8, 2, 1)


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    """``"MHA"``, ``"MQA"`` or ``"GQA-g"`` (g K/V heads): GQA-1 is MQA, GQA-h is MHA.

    ```python
    from mha.pages.kv_cache import attention_kind

    assert [attention_kind(64, g) for g in (64, 8, 1)] == ["MHA", "GQA-8", "MQA"]
    ```
    """
    n_heads, n_kv_heads = (
        positive_int("n_heads", n_heads),
        positive_int("n_kv_heads", n_kv_heads),
    )
    if n_heads % n_kv_heads:
        raise ValueError(
            f"n_kv_heads: expected a divisor of n_heads={n_heads}, got {n_kv_heads}"
        )
    if n_kv_heads == n_heads:
        return "MHA"
    return "MQA" if n_kv_heads == 1 else f"GQA-{n_kv_heads}"


def bytes_per_token(
    config: DecoderConfig,
    itemsize: int = BYTES_PER_VALUE,
    n_kv_heads: int | None = None,
) -> int:
    """Cache bytes one token adds, over all layers: 2 · layers · h_kv · head_dim · itemsize.

    ``n_kv_heads`` replaces the model's own (``config.n_heads`` gives full MHA).

    ```python
    from mha.pages.kv_cache import bytes_per_token
    from mha.data.published import decoder

    llama = decoder("Llama-2 70B")  # 80 layers, 8 K/V heads of 128
    assert bytes_per_token(llama) == 2 * 80 * 8 * 128 * 2 == 327_680
    assert bytes_per_token(llama, n_kv_heads=llama.n_heads) == 8 * 327_680
    ```
    """
    h_kv = config.n_kv_heads if n_kv_heads is None else n_kv_heads
    return config.n_layers * kv_cache_bytes(1, h_kv, config.head_dim, 1, itemsize)


def gib(n_bytes: int) -> float:
    """``n_bytes`` in GiB (2**30 bytes).

    ```python
    from mha.pages.kv_cache import gib

    assert gib(3 * 2**29) == 1.5
    ```
    """
    return n_bytes / GIB


def head_dim_from_d_model(config: DecoderConfig) -> tuple[int, float]:
    """The trap: d_model / h as head width, and how wrong the cache would then be.

    Returns ``(d_model // n_heads, that width / the real head_dim)``: a ratio above 1
    overstates the cache, below 1 understates it.

    ```python
    from mha.pages.kv_cache import head_dim_from_d_model
    from mha.data.published import decoder

    assert head_dim_from_d_model(decoder("PaLM 540B")) == (384, 1.5)
    assert head_dim_from_d_model(decoder("Llama-2 7B")) == (128, 1.0)
    ```
    """
    naive = config.d_model // config.n_heads
    return naive, naive / config.head_dim


def tokens_held(config: DecoderConfig, context: int) -> int:
    """Tokens the cache holds for a ``context``-token sequence (a window caps them).

    ```python
    from mha.pages.kv_cache import tokens_held
    from mha.data.published import decoder

    assert tokens_held(decoder("Mistral 7B"), 32_768) == 4096  # its sliding window
    assert tokens_held(decoder("Llama-3 8B"), 32_768) == 32_768
    ```
    """
    context = positive_int("context", context)
    window = config.sliding_window
    return context if window is None else min(context, window)


def cache_bytes(
    config: DecoderConfig,
    context: int,
    batch: int = 1,
    itemsize: int = BYTES_PER_VALUE,
    n_kv_heads: int | None = None,
) -> int:
    """The whole cache of ``batch`` sequences of ``context`` tokens, all layers.

    ```python
    from mha.pages.kv_cache import bytes_per_token, cache_bytes
    from mha.data.published import decoder

    gpt3 = decoder("GPT-3 175B")
    assert cache_bytes(gpt3, 2048, batch=4) == 4 * 2048 * bytes_per_token(gpt3)
    ```
    """
    batch = positive_int("batch", batch)
    per_token = bytes_per_token(config, itemsize, n_kv_heads)
    return per_token * tokens_held(config, context) * batch


def weight_bytes(config: DecoderConfig, itemsize: int = BYTES_PER_VALUE) -> int:
    """Bytes of the weights: the published parameter count times ``itemsize``.

    ```python
    from mha.pages.kv_cache import weight_bytes
    from mha.data.published import decoder

    assert weight_bytes(decoder("Llama-2 7B")) == 14_000_000_000
    ```
    """
    return config.params * positive_int("itemsize", itemsize)


def sequences_that_fit(
    config: DecoderConfig,
    memory: int,
    context: int,
    itemsize: int = BYTES_PER_VALUE,
    n_kv_heads: int | None = None,
) -> int:
    """Sequences of ``context`` tokens whose caches fit in ``memory`` after the weights.

    Weights and cache both in ``itemsize`` bytes per value; activations and other
    buffers are ignored, so this is an upper bound. 0 when the weights do not fit.

    ```python
    from mha.pages.kv_cache import GIB, sequences_that_fit
    from mha.data.published import decoder

    llama = decoder("Llama-2 7B")  # MHA: 512 KiB a token, 2 GiB for 4,096 tokens
    assert sequences_that_fit(llama, 80 * GIB, 4096) == 33
    assert sequences_that_fit(decoder("Llama-2 70B"), 80 * GIB, 4096) == 0
    ```
    """
    memory = positive_int("memory", memory)
    free = memory - weight_bytes(config, itemsize)
    per_sequence = cache_bytes(config, context, 1, itemsize, n_kv_heads)
    return max(free, 0) // per_sequence


@dataclass(frozen=True)
class Row:
    """One line of the page's table of published models."""

    config: DecoderConfig
    kind: str  # "MHA", "GQA-8", "MQA"
    per_token: int  # bytes per token, 16-bit, all layers
    per_token_mha: int  # the same with h_kv = h
    query_width: int  # n_heads * head_dim, next to d_model

    @property
    def saving(self) -> float:
        """How many times smaller than full MHA the cache is (h / h_kv)."""
        return self.per_token_mha / self.per_token


def table() -> list[Row]:
    """One `Row` per published decoder, in the order of ``DECODERS``.

    ```python
    from mha.pages.kv_cache import table

    rows = {row.config.name: row for row in table()}
    assert rows["Falcon-7B"].kind == "MQA" and rows["Falcon-7B"].saving == 71
    assert rows["GPT-3 175B"].per_token == rows["GPT-3 175B"].per_token_mha
    ```
    """
    return [
        Row(
            config=c,
            kind=attention_kind(c.n_heads, c.n_kv_heads),
            per_token=bytes_per_token(c),
            per_token_mha=bytes_per_token(c, n_kv_heads=c.n_heads),
            query_width=c.n_heads * c.head_dim,
        )
        for c in DECODERS
    ]


def kv_head_of_query(n_heads: int, n_kv_heads: int) -> list[int]:
    """The K/V head each query head reads, read off ``repeat_kv`` itself.

    K/V head ``j`` is filled with the number ``j`` and repeated as a GQA layer repeats
    it; query head ``i`` then finds its K/V head's number at position ``i``.

    ```python
    from mha.pages.kv_cache import kv_head_of_query

    assert kv_head_of_query(8, 2) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert kv_head_of_query(4, 4) == [0, 1, 2, 3] and kv_head_of_query(4, 1) == [0] * 4
    ```
    """
    attention_kind(n_heads, n_kv_heads)  # validates: n_kv_heads divides n_heads
    numbered = np.arange(n_kv_heads, dtype=float).reshape(n_kv_heads, 1, 1)
    repeated = repeat_kv(numbered, n_heads // n_kv_heads)  # (n_heads, 1, 1)
    return [int(j) for j in repeated[:, 0, 0]]


def size_text(n_bytes: int) -> str:
    """A size in the largest binary unit that keeps it at least 1, to 3 significant
    figures (halves rounded up, trailing zeros dropped): ``1.25 GiB``, ``10 GiB``.

    A size that rounds to 1,000 or more of a unit is written in the next unit
    (``0.977 KiB``, not ``1000 bytes``). The calculator's script writes sizes the
    same way (a browser test compares them).

    ```python
    from mha.pages.kv_cache import size_text

    assert size_text(1_342_177_280) == "1.25 GiB"
    assert size_text(10 * 2**30) == "10 GiB" and size_text(160 * 2**20) == "160 MiB"
    assert size_text(1000) == "0.977 KiB" and size_text(9 * 2**27) == "1.13 GiB"
    ```
    """
    n_bytes = positive_int("n_bytes", n_bytes)
    k = 0
    while k < len(UNITS) - 1 and n_bytes >= 1024 ** (k + 1):
        k += 1
    rounded = _three_figures(n_bytes / 1024**k)
    if rounded >= 1000 and k < len(UNITS) - 1:
        k += 1
        rounded = _three_figures(n_bytes / 1024**k)
    return f"{format(rounded.normalize(), 'f')} {UNITS[k]}"


def _three_figures(value: float) -> Decimal:
    """``value`` rounded to 3 significant figures, halves up (as JavaScript's
    ``toPrecision(3)`` rounds the exact binary value)."""
    exact = Decimal(value)
    return exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2), ROUND_HALF_UP)


@dataclass(frozen=True)
class Fit:
    """A cache beside its weights in a memory: sizes in bytes, and what still fits."""

    cache: int  # all layers, ``batch`` sequences of ``context`` tokens
    weights: int  # parameters × bytes per value
    memory: int
    longest_context: (
        int  # tokens per sequence that fit beside the weights, at the batch
    )
    largest_batch: int  # sequences of the context that fit beside the weights

    @property
    def free(self) -> int:
        """Memory left for the cache once the weights are in (0 when they do not fit)."""
        return max(self.memory - self.weights, 0)


def what_fits(
    layers: int,
    kv_heads: int,
    head_dim: int,
    context: int,
    batch: int,
    itemsize: int,
    params: int,
    memory: int,
) -> Fit:
    """The cache of a shape, and the longest context and largest batch that fit.

    Weights and cache both take ``itemsize`` bytes per value; ``memory`` is in bytes.
    Activations and the runtime's buffers are ignored: the counts are upper bounds.
    Every size goes through ``mha.accounting.kv_cache_bytes`` (one layer), times the
    layers. The calculator's script is a port of this function.

    ```python
    from mha.pages.kv_cache import GIB, what_fits

    # Llama-2 70B: 80 layers, 8 K/V heads of 128, 4,096 tokens, 16-bit, in 160 GiB
    fit = what_fits(80, 8, 128, 4096, 1, 2, 70_000_000_000, 160 * GIB)
    assert fit.cache == 1_342_177_280 == 80 * 2 * 8 * 128 * 4096 * 2
    assert fit.largest_batch == fit.free // fit.cache == 23
    ```
    """
    layers = positive_int("layers", layers)
    params = positive_int("params", params)
    memory = positive_int("memory", memory)
    cache = layers * kv_cache_bytes(batch, kv_heads, head_dim, context, itemsize)
    per_token = layers * kv_cache_bytes(batch, kv_heads, head_dim, 1, itemsize)
    per_sequence = layers * kv_cache_bytes(1, kv_heads, head_dim, context, itemsize)
    weights = params * itemsize
    free = max(memory - weights, 0)
    return Fit(cache, weights, memory, free // per_token, free // per_sequence)


@dataclass(frozen=True)
class Shape:
    """What the calculator's inputs hold: a model's shape, a workload, a memory."""

    layers: int
    query_heads: int
    kv_heads: int
    head_dim: int
    context: int
    batch: int
    itemsize: int  # bytes per value
    params: int
    memory_gib: float
    model: str | None = None  # the published model the shape was filled from

    @classmethod
    def of(cls, name: str, context: int = EXAMPLE_CONTEXT) -> Shape:
        """The calculator's inputs as a published model fills them (batch 1, 16-bit)."""
        c = decoder(name)
        return cls(
            c.n_layers,
            c.n_heads,
            c.n_kv_heads,
            c.head_dim,
            context,
            EXAMPLE_BATCH,
            BYTES_PER_VALUE,
            c.params,
            EXAMPLE_MEMORY_GIB,
            c.name,
        )

    @property
    def memory(self) -> int:
        """The memory in bytes, rounded down (the script computes it the same way)."""
        return int(np.floor(float(self.memory_gib) * GIB))


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit}" + ("" if n == 1 else "s")


def calculator_view(shape: Shape) -> dict[str, str]:
    """Every text the calculator shows for ``shape``, by the id of its element.

    The cache, longest context and largest batch for the K/V heads entered, full MHA
    (K/V heads = query heads) and MQA (one); the weights against the memory; and a
    warning past the published context of the model the shape was filled from.

    ```python
    from mha.pages.kv_cache import Shape, calculator_view

    view = calculator_view(Shape.of("Llama-2 70B"))
    assert (view["kv-cache-given"], view["kv-cache-mha"], view["kv-cache-mqa"]) == (
        "1.25 GiB", "10 GiB", "160 MiB")
    assert view["kv-kind"] == "GQA-8" and view["kv-warning"] == ""
    ```
    """
    columns = {
        "given": shape.kv_heads,
        "mha": shape.query_heads,
        "mqa": 1,
    }
    view = {"kv-kind": attention_kind(shape.query_heads, shape.kv_heads)}
    fit = None
    for column, kv_heads in columns.items():
        fit = what_fits(
            shape.layers,
            kv_heads,
            shape.head_dim,
            shape.context,
            shape.batch,
            shape.itemsize,
            shape.params,
            shape.memory,
        )
        view[f"kv-heads-{column}"] = f"{kv_heads:,}"
        view[f"kv-cache-{column}"] = size_text(fit.cache)
        view[f"kv-context-{column}"] = _count(fit.longest_context, "token")
        view[f"kv-batch-{column}"] = _count(fit.largest_batch, "sequence")
    weights = (
        f"Weights: {size_text(fit.weights)} ({shape.params:,} parameters × "
        f"{shape.itemsize} bytes) in {size_text(fit.memory)} of memory, "
    )
    if fit.free:
        weights += f"which leaves {size_text(fit.free)} for the cache."
    else:
        weights += "which they alone exceed: no cache fits."
    view["kv-weights"] = weights
    view["kv-warning"] = ""
    if shape.model is not None:
        c = decoder(shape.model)
        if shape.context > c.max_context:
            view["kv-warning"] = (
                f"{shape.context:,} tokens is past the {c.max_context:,} tokens "
                f"{c.name} was published for ({c.context_source.title}: "
                f"{c.context_source.where}); past it, quality is unknown."
            )
    return view


def calculator_data() -> dict:
    """The calculator's data: every published decoder's shape and context, and the
    defaults (the page embeds it as JSON).

    ```python
    from mha.pages.kv_cache import calculator_data

    data = calculator_data()
    smol = next(m for m in data["models"] if m["name"] == "SmolLM2-135M")
    assert (smol["layers"], smol["kv_heads"], smol["head_dim"]) == (30, 3, 64)
    assert data["default"]["model"] in [m["name"] for m in data["models"]]
    ```
    """
    return {
        "default": {
            "model": CALCULATOR_MODEL,
            "context": EXAMPLE_CONTEXT,
            "batch": EXAMPLE_BATCH,
            "itemsize": BYTES_PER_VALUE,
            "memory_gib": EXAMPLE_MEMORY_GIB,
        },
        "units": list(UNITS),
        "gib": GIB,
        "models": [
            {
                "name": c.name,
                "layers": c.n_layers,
                "query_heads": c.n_heads,
                "kv_heads": c.n_kv_heads,
                "head_dim": c.head_dim,
                "params": c.params,
                "max_context": c.max_context,
                "context_source": {
                    "title": c.context_source.title,
                    "where": c.context_source.where,
                },
            }
            for c in DECODERS
        ],
    }


def calculator_json() -> str:
    """``calculator_data()`` as JSON that is safe inside a ``<script>`` element.

    ```python
    import json
    from mha.pages.kv_cache import calculator_data, calculator_json

    assert json.loads(calculator_json()) == calculator_data()
    assert "<" not in calculator_json()
    ```
    """
    text = json.dumps(calculator_data(), sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@dataclass(frozen=True)
class Tradeoff:
    """A row of Ainslie et al.'s Table 1, against MHA-XXL (the model it was made from)."""

    row: SpeedQuality
    speedup: float  # MHA-XXL's time per sample over this row's
    score_drop: float  # MHA-XXL's average score minus this row's


def gqa_tradeoff(baseline: str = "MHA-XXL") -> list[Tradeoff]:
    """Speed-up and quality lost against ``baseline`` for each row of the GQA paper.

    ```python
    from mha.pages.kv_cache import gqa_tradeoff

    rows = {t.row.model: t for t in gqa_tradeoff()}
    assert round(rows["GQA-8-XXL"].score_drop, 1) == 0.1
    assert rows["MQA-XXL"].speedup > rows["GQA-8-XXL"].speedup > 5
    ```
    """
    base = next((r for r in GQA_TABLE_1 if r.model == baseline), None)
    if base is None:
        names = ", ".join(repr(r.model) for r in GQA_TABLE_1)
        raise ValueError(f"baseline: expected one of {names}, got {baseline!r}")
    return [
        Tradeoff(
            row=r,
            speedup=base.seconds_per_sample / r.seconds_per_sample,
            score_drop=base.average_score - r.average_score,
        )
        for r in GQA_TABLE_1
    ]


def tradeoff_row(model: str) -> Tradeoff:
    """The `Tradeoff` of one row of the GQA paper's Table 1 (``"MQA-XXL"``, ...).

    ```python
    from mha.pages.kv_cache import tradeoff_row

    assert tradeoff_row("MHA-XXL").speedup == 1.0
    ```
    """
    for t in gqa_tradeoff():
        if t.row.model == model:
            return t
    names = ", ".join(repr(r.model) for r in GQA_TABLE_1)
    raise ValueError(f"model: expected one of {names}, got {model!r}")


@dataclass(frozen=True)
class Option:
    """One model of the calculator's list."""

    name: str
    label: str  # the name and its attention kind
    selected: bool


def calculator_options() -> list[Option]:
    """The calculator's models, the one it opens with selected.

    ```python
    from mha.pages.kv_cache import CALCULATOR_MODEL, calculator_options

    assert [o.name for o in calculator_options() if o.selected] == [CALCULATOR_MODEL]
    ```
    """
    return [
        Option(
            r.config.name,
            f"{r.config.name} ({r.kind})",
            r.config.name == CALCULATOR_MODEL,
        )
        for r in table()
    ]


def _llama70() -> DecoderConfig:
    return decoder("Llama-2 70B")


CONTEXT_KV_HEADS = (
    _llama70().n_heads,
    _llama70().n_kv_heads,
    MQA_KV_HEADS,
)  # the lines of the "cache against context" figure: MHA, as published, MQA


@dataclass(frozen=True)
class FigureText:
    """A figure's alt text (what it shows) and caption (what to look at)."""

    alt: str
    caption: str


def figure_texts() -> dict[str, FigureText]:
    """The alt texts and captions of the page's figures, from the values they draw.

    ```python
    from mha.pages.kv_cache import figure_texts

    texts = figure_texts()
    assert set(texts) == {"head_sharing", "cache_vs_context", "fit_in_memory"}
    assert "KV0" in texts["head_sharing"].alt
    ```
    """
    h = SHARING_HEADS
    panels = []
    for h_kv in SHARING_KV_HEADS:
        group = h // h_kv
        reads = kv_head_of_query(h, h_kv)
        first = [i for i, j in enumerate(reads) if j == 0]
        panels.append(
            f"{attention_kind(h, h_kv)}, {h_kv} K/V head{'s' if h_kv > 1 else ''}: "
            + (
                "each query head has a line to its own K/V head"
                if group == 1
                else f"all {group} query heads share KV0"
                if h_kv == 1
                else f"{group} query heads share each K/V head (Q{first[0]} to "
                f"Q{first[-1]} read KV0)"
            )
        )
    sharing = FigureText(
        alt=f"Three panels of {h} query heads, Q0 to Q{h - 1}, drawn as circles "
        "above square K/V heads, with a line from each query head to the K/V head it "
        "reads. " + "; ".join(panels) + ".",
        caption="Which K/V head each query head reads, taken from repeat_kv: count the "
        "lines that meet at each square. The cache holds only the squares, so it "
        f"shrinks by the factor h / h_kv ({', '.join(str(h // g) for g in SHARING_KV_HEADS)}"
        " lines a square here).",
    )
    c = _llama70()
    sizes = [cache_bytes(c, EXAMPLE_CONTEXT, n_kv_heads=g) for g in CONTEXT_KV_HEADS]
    ratios = [sizes[0] / sizes[1], sizes[1] / sizes[2]]
    context = FigureText(
        alt=f"Cache of one sequence of {c.name}, in GiB on a log scale, against "
        f"context length from {CONTEXTS[0]:,} to {CONTEXTS[-1]:,} tokens, for "
        f"{', '.join(str(g) for g in CONTEXT_KV_HEADS[:-1])} and 1 K/V heads. The "
        "three lines are parallel straight lines: full multi-head attention is "
        f"{ratios[0]:g} times the published grouped-query model, which is "
        f"{ratios[1]:g} times multi-query attention.",
        caption="The cache grows in proportion to the context; the number of K/V "
        "heads only shifts the line (both axes are logarithmic). Compare the lines "
        "at any context: their gaps are the ratios of K/V heads.",
    )
    fits = {
        name: (
            sequences_that_fit(decoder(name), EXAMPLE_MEMORY, EXAMPLE_CONTEXT),
            sequences_that_fit(
                decoder(name),
                EXAMPLE_MEMORY,
                EXAMPLE_CONTEXT,
                n_kv_heads=decoder(name).n_heads,
            ),
        )
        for name in FIT_MODELS
    }
    full = [f[1] for f in fits.values()]
    most = max(fits, key=lambda name: fits[name][0])
    memory = FigureText(
        alt="Horizontal bars, log scale: how many sequences of "
        f"{EXAMPLE_CONTEXT:,} tokens fit in {EXAMPLE_MEMORY_GIB} GiB after the "
        f"weights, for {', '.join(FIT_MODELS)}, each as published and with full "
        f"multi-head attention. With full MHA they fit {min(full)} to {max(full)}; as "
        f"published, {most} fits the most, {fits[most][0]:,}.",
        caption="Two bars a model: as published, and the same model with one K/V "
        "head per query head. Compare the pairs: the gap is the factor h / h_kv, "
        "less what the weights take.",
    )
    return {
        "head_sharing": sharing,
        "cache_vs_context": context,
        "fit_in_memory": memory,
    }


def claims() -> dict[str, Claim]:
    """The page's sentences that compare computed values, checked against them.

    ```python
    from mha.pages.kv_cache import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    falcon, palm, gemma = (
        decoder("Falcon-7B"),
        decoder("PaLM 540B"),
        decoder("Gemma 7B"),
    )
    falcon_ratio = bytes_per_token(falcon, n_kv_heads=falcon.n_heads) / bytes_per_token(
        falcon
    )
    out = {
        "falcon_trap": Claim(
            f"{falcon_ratio:g} times the {bytes_per_token(falcon):,} the model uses",
            falcon_ratio == falcon.n_heads / falcon.n_kv_heads,
            f"per-token bytes with {falcon.n_heads} and {falcon.n_kv_heads} K/V heads",
        )
    }
    for key, config in (("palm_trap", palm), ("gemma_trap", gemma)):
        _, ratio = head_dim_from_d_model(config)
        text = (
            f"a cache {ratio:.1f} times too large"
            if ratio > 1
            else f"a cache only {ratio:.2f} of the true one"
        )
        out[key] = Claim(text, ratio != 1, f"d_model/h over head_dim = {ratio}")
    c = _llama70()
    longest = cache_bytes(c, CONTEXTS[-1], n_kv_heads=c.n_heads)
    weights = weight_bytes(c)
    out["mha_beyond_weights"] = Claim(
        f"At {CONTEXTS[-1]:,} tokens the MHA cache of a single sequence would be "
        f"{gib(longest):.2f} GiB, {'more' if longest > weights else 'less'} than the "
        f"{gib(weights):.2f} GiB of the model's own {HALF_BITS}-bit weights.",
        True,
        f"{longest} vs {weights} bytes",
    )
    llama2, llama3 = decoder("Llama-2 7B"), decoder("Llama-3 8B")
    fit = {
        (m.name, h): sequences_that_fit(
            m, EXAMPLE_MEMORY, EXAMPLE_CONTEXT, n_kv_heads=h
        )
        for m in (llama2, llama3, falcon)
        for h in (m.n_kv_heads, m.n_heads)
    }
    same_heads = (llama2.n_heads, llama2.head_dim) == (llama3.n_heads, llama3.head_dim)
    slightly_more = 1 < llama3.params / llama2.params < 1.25
    out["fit_llama"] = Claim(
        f"{llama2.name} ({attention_kind(llama2.n_heads, llama2.n_kv_heads)}) fits "
        f"{fit[llama2.name, llama2.n_kv_heads]:,} sequences. {llama3.name} has the same "
        f"{llama3.n_heads} query heads of {llama3.head_dim} and slightly more "
        f"parameters, but with {llama3.n_kv_heads} K/V heads it fits "
        f"{fit[llama3.name, llama3.n_kv_heads]:,}; {falcon.name}, with one, fits "
        f"{fit[falcon.name, falcon.n_kv_heads]:,}. Given full MHA they would fit "
        f"{fit[llama3.name, llama3.n_heads]:,} and {fit[falcon.name, falcon.n_heads]:,}.",
        same_heads
        and slightly_more
        and fit[llama3.name, llama3.n_kv_heads] > fit[llama2.name, llama2.n_kv_heads],
        f"heads/head_dim {llama2.n_heads}/{llama2.head_dim} vs "
        f"{llama3.n_heads}/{llama3.head_dim}, params {llama2.params} vs {llama3.params}",
    )
    out["llama70_absent"] = Claim(
        f"{c.name} does not appear because its weights alone, {gib(weights):.2f} GiB, "
        "exceed the memory.",
        weights > EXAMPLE_MEMORY,
        f"{weights} bytes of weights, {EXAMPLE_MEMORY} of memory",
    )
    mqa, gqa, large = (tradeoff_row(m) for m in ("MQA-XXL", "GQA-8-XXL", "MHA-Large"))
    out["tradeoff"] = Claim(
        f"MQA made the XXL model {mqa.speedup:.1f} times faster for "
        f"{mqa.score_drop:.1f} points of average score; GQA with {GQA_GROUPS} groups kept all but "
        f"{gqa.score_drop:.1f} point at {gqa.speedup:.1f} times the speed.",
        mqa.speedup > gqa.speedup > 1 and mqa.score_drop > gqa.score_drop >= 0,
        f"speed-ups {mqa.speedup}, {gqa.speedup}; drops {mqa.score_drop}, "
        f"{gqa.score_drop}",
    )
    out["tradeoff_large"] = Claim(
        "Both beat the smaller MHA-Large, which is slower than either and scores lower.",
        large.row.seconds_per_sample
        > max(mqa.row.seconds_per_sample, gqa.row.seconds_per_sample)
        and large.row.average_score < min(mqa.row.average_score, gqa.row.average_score),
        f"MHA-Large {large.row}",
    )
    recovered = (mqa.score_drop - gqa.score_drop) / mqa.score_drop
    out["tradeoff_middle"] = Claim(
        f"The paper chose {GQA_GROUPS} groups as the middle ground: in its Table 1, GQA-{GQA_GROUPS} keeps "
        f"{gqa.speedup / mqa.speedup:.0%} of MQA's speed-up and wins back "
        f"{recovered:.0%} of the score MQA loses (its Figure 6: time per sample grows "
        f"little from one group to {GQA_GROUPS}).",
        recovered > 0.5 and gqa.speedup / mqa.speedup > 0.5,
        f"recovered {recovered}, speed-up share {gqa.speedup / mqa.speedup}",
    )
    return out
