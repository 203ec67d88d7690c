"""The KV cache of published decoders, and what fits beside their weights:
``docs/kv-cache.md``. Every size comes from a model's layers, K/V heads and head width
(``mha.data.published.DECODERS``), never d_model: 2 · layers · h_kv · head_dim · tokens
· batch · bytes per value; "with full MHA" sets h_kv = h. Weights are the parameters
counted from the model's shape (``mha.data.totals``), not its nominal size ("7B"). The
calculator's script (``docs/assets/js/kv-calculator.js``) ports ``_what_fits`` and
``_size_text`` (a browser test compares them); ``_calculator_view`` is its first state.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from itertools import pairwise

import numpy as np

from mha.accounting import kv_cache_bytes
from mha.data import totals
from mha.data.kv_designs import KV_DESIGNS, MLA_CLAIM, KVDesign, from_decoder
from mha.data.published import (
    DECODERS,
    GQA_GROUPS,
    GQA_SOURCE,
    GQA_TABLE_1,
    GQA_UPTRAIN_FRACTION,
    DecoderConfig,
    SpeedQuality,
)
from mha.heads import repeat_kv
from mha.support.page import Fact, Figure, Page
from mha.support.validate import positive_int

_GIB = 2**30
_BYTES_PER_VALUE = 2  # the page's cache and weights: 16-bit (float16, bfloat16)
_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")  # each 1,024 of the last
# The page's example (a reader changes it in the calculator).
_EXAMPLE_CONTEXT = 4096  # tokens per sequence
_EXAMPLE_BATCH = 1
_EXAMPLE_MEMORY_GIB = 80  # one accelerator's memory, for "how many sequences fit"
_EXAMPLE_MEMORY = _EXAMPLE_MEMORY_GIB * _GIB
_CALCULATOR_MODEL = "Llama-3 8B"  # the model the calculator opens with
_CONTEXT_MODEL = "Llama-2 70B"  # the model of the "cache against context" figure
_CONTEXTS = tuple(2**i for i in range(9, 18))  # 512 ... 131,072 tokens, for the curve
# The models of similar size compared in the "what fits" figure, two of them MQA.
_FIT_MODELS = ("Llama-2 7B", "Llama-3 8B", "Mistral 7B v0.1", "Qwen2.5 7B")
_FIT_MODELS += ("Falcon-7B", "Gemma 2B")


@functools.cache
def page() -> Page:
    """What the page prints: the published models, the traps, what fits, the
    calculator's first state and the GQA paper's trade-off.
    """
    rows = [_Row.of(c) for c in DECODERS]  # the table of published models
    models = {r.config.name: r for r in rows}
    counted = {name: totals.breakdown(name).total for name in models}
    c = models[_CONTEXT_MODEL].config
    fits = {}  # sequences whose caches fit beside the weights: as published, with MHA
    for shape in map(_Shape.of, _FIT_MODELS):  # as the calculator counts them
        fits[shape.model] = tuple(
            shape.fits(h).largest_batch for h in (shape.kv_heads, shape.query_heads)
        )
    tradeoff = _tradeoffs(GQA_TABLE_1)
    mqa, gqa = tradeoff["MQA-XXL"], tradeoff["GQA-8-XXL"]
    naive = {}  # the trap: d_model / h as head width, and that width / the real one
    for d in (models[name].config for name in ("PaLM 540B", "Gemma 7B")):
        naive[d.name] = (d.d_model // d.n_heads, d.d_model // d.n_heads / d.head_dim)
    table = []  # the KV designs, cached as the calculator computes, against full MHA
    for kv in KV_DESIGNS:
        windows = [w for w in kv.windows if w is not None]
        longest = _Shape.of(kv.name, kv.max_context).fits().cache
        mha = kv.mha_width * kv.n_layers * kv.max_context * _BYTES_PER_VALUE
        table.append(
            {
                "design": kv,
                "width": kv.widths[0],
                "local_layers": len(windows),
                "window": windows[0] if windows else None,
                "per_token": _Shape.of(kv.name, 1).fits().cache,
                "longest": _size_text(longest),
                "mha_longest": _size_text(mha),
                "share": longest / mha,
            }
        )
    start = _Shape.of(_CALCULATOR_MODEL)
    mla = next(d for d in KV_DESIGNS if d.latent is not None)
    kinds = ("MHA", "GQA-8", "MQA", "MLA")
    latent = dict(zip(kinds, _latent_table(mla), strict=True))
    stated = [d for d in _calculator_models().values() if d.params_stated_why]
    return Page(
        rows=rows,
        models=models,
        bits=8 * _BYTES_PER_VALUE,
        naive=naive,
        context=_EXAMPLE_CONTEXT,
        gib={  # Llama-2 70B, one sequence of the example's context, and its weights
            "mha": _cache_bytes(c, _EXAMPLE_CONTEXT, n_kv_heads=c.n_heads) / _GIB,
            "published": _cache_bytes(c, _EXAMPLE_CONTEXT) / _GIB,
            "mqa": _cache_bytes(c, _EXAMPLE_CONTEXT, n_kv_heads=1) / _GIB,
            "longest": _cache_bytes(c, _CONTEXTS[-1], n_kv_heads=c.n_heads) / _GIB,
            "weights": counted[c.name] * _BYTES_PER_VALUE / _GIB,
        },
        longest=_CONTEXTS[-1],
        counted=counted,
        memory_gib=_EXAMPLE_MEMORY_GIB,
        fits=fits,
        start=start,
        view=_calculator_view(start),
        options=[  # (name, kind, opens with it): the decoders, then the designs
            (
                name,
                "MLA" if _Shape.of(name).latent else d.kind,
                name == _CALCULATOR_MODEL,
            )
            for name, d in _calculator_models().items()
        ],
        calculator_json=_calculator_json(),
        tradeoffs=list(tradeoff.values()),
        tradeoff=tradeoff,
        speed_share=gqa.speedup / mqa.speedup,
        recovered=(mqa.score_drop - gqa.score_drop) / mqa.score_drop,
        groups=GQA_GROUPS,
        uptrain=GQA_UPTRAIN_FRACTION,
        gqa_source=GQA_SOURCE,
        # where Ainslie et al. give speed and quality by model, time by groups
        cited={"table": 1, "figure": 6},
        designs=table,
        mla=mla,
        latent=latent,
        latent_groups=latent["MLA"]["per_token"] / latent["MQA"]["per_token"],
        mla_claim=MLA_CLAIM,
        stated=stated,
        mla_cached=latent["MLA"]["per_token"],  # MLA's cached values a token and layer
        stated_count=len(stated),
        facts=_facts(models, naive, fits, tradeoff, counted, table)
        | _latent_facts(latent),
        figures=_figures(models, fits, mla.latent),
    )


def _latent_table(mla: KVDesign) -> list[dict]:
    """Values cached per token and layer at ``mla``'s sizes (its heads and head
    width) for MHA, GQA-8, MQA and its latent, and the bytes at the page's context,
    every layer, 16-bit (the calculator's sums: ``kv_cache_bytes`` for K/V heads)."""
    d_c, d_rope = mla.latent
    rows = []
    for kind, h_kv in (("MHA", mla.n_heads), ("GQA-8", 8), ("MQA", 1)):
        values = kv_cache_bytes(1, h_kv, mla.head_dim, 1, 1)  # 2 · h_kv · d_h
        heads = f"{h_kv:,} K/V head" + ("s" if h_kv > 1 else "")
        rows.append({"label": f"{kind} ({heads})", "h_kv": h_kv, "per_token": values})
    rows.append({"label": "MLA (latent, position key)", "h_kv": None})
    rows[-1]["per_token"] = d_c + d_rope
    for row in rows:
        total = row["per_token"] * mla.n_layers * _EXAMPLE_CONTEXT * _BYTES_PER_VALUE
        row["cache"] = _size_text(total)
        row["bytes"] = total
    return rows


def _attention_kind(n_heads: int, n_kv_heads: int) -> str:
    """``"MHA"``, ``"MQA"`` or ``"GQA-g"`` (g K/V heads): GQA-1 is MQA, GQA-h is MHA."""
    n_heads = positive_int("n_heads", n_heads)
    if n_heads % positive_int("n_kv_heads", n_kv_heads):
        raise ValueError(
            f"n_kv_heads: expected a divisor of n_heads={n_heads}, got {n_kv_heads}"
        )
    if n_kv_heads == n_heads:
        return "MHA"
    return "MQA" if n_kv_heads == 1 else f"GQA-{n_kv_heads}"


def _cache_bytes(
    config: DecoderConfig,
    context: int,
    batch: int = 1,
    itemsize: int = _BYTES_PER_VALUE,
    n_kv_heads: int | None = None,
) -> int:
    """The whole cache of ``batch`` sequences of ``context`` tokens, all layers (a
    sliding window caps the tokens held); ``n_kv_heads`` replaces the model's own.
    """
    held = positive_int("context", context)
    if config.sliding_window is not None:
        held = min(held, config.sliding_window)
    h_kv = config.n_kv_heads if n_kv_heads is None else n_kv_heads
    per_token = config.n_layers * kv_cache_bytes(1, h_kv, config.head_dim, 1, itemsize)
    return per_token * held * positive_int("batch", batch)


@dataclass(frozen=True)
class _Row:
    """One line of the page's table of published models."""

    config: DecoderConfig
    kind: str  # "MHA", "GQA-8", "MQA"
    per_token: int  # bytes per token, 16-bit, all layers
    per_token_mha: int  # the same with h_kv = h
    saving: float  # how many times smaller than full MHA the cache is (h / h_kv)
    query_width: int  # n_heads * head_dim, next to d_model

    @classmethod
    def of(cls, c: DecoderConfig) -> _Row:
        """The row of published decoder ``c``."""
        per_token, mha = _cache_bytes(c, 1), _cache_bytes(c, 1, n_kv_heads=c.n_heads)
        kind = _attention_kind(c.n_heads, c.n_kv_heads)
        return cls(c, kind, per_token, mha, mha / per_token, c.n_heads * c.head_dim)


def _size_text(n_bytes: int) -> str:
    """A size in the largest binary unit that keeps it at least 1, to 3 significant
    figures (halves rounded up, trailing zeros dropped, thousands separated); one that
    rounds to 1,000 of a unit is written in the next, past EiB with separators. The
    calculator's script writes sizes the same way.
    """
    n_bytes = positive_int("n_bytes", n_bytes)
    k = 0
    while k < len(_UNITS) - 1 and n_bytes >= 1024 ** (k + 1):
        k += 1
    rounded = _three_figures(n_bytes / 1024**k)
    if rounded >= 1000 and k < len(_UNITS) - 1:
        k += 1
        rounded = _three_figures(n_bytes / 1024**k)
    return f"{format(rounded.normalize(), ',f')} {_UNITS[k]}"


def _three_figures(value: float) -> Decimal:
    """``value`` to 3 significant figures, halves up (as JavaScript's
    ``toPrecision(3)`` rounds the exact binary value)."""
    exact = Decimal(value)
    return exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2), ROUND_HALF_UP)


@dataclass(frozen=True)
class _Fit:
    """A cache beside its weights in a memory: sizes in bytes, and what still fits."""

    cache: int  # all layers, ``batch`` sequences of ``context`` tokens
    weights: int  # parameters × bytes per value
    memory: int
    free: int  # memory left for the cache once the weights are in (0 if they do not)
    longest_context: int | None  # at the batch; None: every layer windowed, no limit
    largest_batch: int  # sequences of the context that fit beside the weights


def _what_fits(
    layers: int,
    kv_heads: int,
    head_dim: int,
    context: int,
    batch: int,
    itemsize: int,
    params: int,
    memory: int,
    latent: int = 0,
    window: int = 0,
    windowed_layers: int = 0,
) -> _Fit:
    """The cache of a shape, and the longest context and largest batch that fit in
    ``memory`` bytes beside the weights (``itemsize`` bytes per value; activations
    ignored: upper bounds). The calculator's script is a port of this.

    ``latent`` > 0: each layer caches that many values per token instead of
    ``2 · kv_heads · head_dim`` (latent attention). ``window`` > 0: ``windowed_layers``
    of the layers hold at most ``window`` tokens (sliding-window layers), the others
    every token; ``longest_context`` is ``None`` when every layer is windowed and the
    full window fits: the cache then stops growing.
    """
    layers = positive_int("layers", layers)
    params = positive_int("params", params)
    memory = positive_int("memory", memory)
    latent, window = _count_or_zero("latent", latent), _count_or_zero("window", window)
    windowed = _count_or_zero("windowed_layers", windowed_layers) if window else 0
    if windowed > layers:
        raise ValueError(
            f"windowed_layers: expected at most the {layers} layers, got {windowed}"
        )
    if latent:  # values a layer caches per token, times the bytes of one, per sequence
        unit = latent * positive_int("itemsize", itemsize)
    else:
        unit = kv_cache_bytes(1, kv_heads, head_dim, 1, itemsize)
    batch = positive_int("batch", batch)
    context = positive_int("context", context)

    def sequence(tokens: int) -> int:  # one sequence's cache, all layers
        held = min(tokens, window) if windowed else tokens
        return unit * ((layers - windowed) * tokens + windowed * held)

    weights = params * itemsize
    free = max(memory - weights, 0)
    if not windowed or free < batch * sequence(window):
        longest = free // (batch * unit * layers)  # no window is full yet
    elif windowed == layers:
        longest = None  # every layer capped: any context fits
    else:
        rest = free - batch * sequence(window)
        longest = window + rest // (batch * unit * (layers - windowed))
    cache = batch * sequence(context)
    return _Fit(cache, weights, memory, free, longest, free // sequence(context))


def _count_or_zero(name: str, value: int) -> int:
    """``value`` as a count that may be 0 (none), or a clear error naming ``name``."""
    return 0 if value == 0 else positive_int(name, value)


@dataclass(frozen=True)
class _Shape:
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
    latent: int = 0  # values a layer caches per token instead of K and V; 0: none
    window: int = 0  # tokens a windowed layer holds at most; 0: no window
    windowed_layers: int = 0  # how many layers have the window

    @classmethod
    def of(cls, name: str, context: int = _EXAMPLE_CONTEXT) -> _Shape:
        """The calculator's inputs as a published model fills them (batch 1, 16-bit;
        parameters counted for a published decoder, stated for a design row)."""
        c = _calculator_models()[name]
        latent = c.widths[0] if c.widths[0] != 2 * c.n_kv_heads * c.head_dim else 0
        windows = [w for w in c.windows if w is not None]
        shape = (c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, context)
        rest = (_EXAMPLE_BATCH, _BYTES_PER_VALUE, c.params, _EXAMPLE_MEMORY_GIB, c.name)
        return cls(*shape, *rest, latent, windows[0] if windows else 0, len(windows))

    @property
    def memory(self) -> int:
        """The memory in bytes, rounded down (the script computes it the same way)."""
        return int(np.floor(float(self.memory_gib) * _GIB))

    def fits(self, kv_heads: int | None = None, latent: int | None = None) -> _Fit:
        """``_what_fits`` of this shape; ``kv_heads`` and ``latent``, when given,
        replace its own (the calculator's columns with full MHA and with MQA).
        """
        given = ("layers", "head_dim", "context", "batch", "itemsize", "params")
        return _what_fits(
            **{name: getattr(self, name) for name in given},
            kv_heads=self.kv_heads if kv_heads is None else kv_heads,
            memory=self.memory,
            latent=self.latent if latent is None else latent,
            window=self.window,
            windowed_layers=self.windowed_layers,
        )


def _count(n: int | None, unit: str) -> str:
    if n is None:
        return "no limit (every layer windowed)"
    return f"{n:,} {unit}" + ("" if n == 1 else "s")


@functools.cache
def _calculator_models() -> dict[str, KVDesign]:
    """The models the calculator offers: every published decoder (K and V of its K/V
    heads in every layer, capped by its sliding window), then the KV designs of
    ``mha.data.kv_designs`` that are not among them (a design's row wins).
    """
    models = {
        c.name: from_decoder(c, _attention_kind(c.n_heads, c.n_kv_heads))
        for c in DECODERS
    }
    return models | {d.name: d for d in KV_DESIGNS}


def _calculator_view(shape: _Shape) -> dict[str, str]:
    """Every text the calculator shows for ``shape``, by the id of its element: for
    the K/V heads entered, full MHA and MQA, the cache, longest context and largest
    batch; the weights against the memory; a warning past the model's context.
    """
    kind = _attention_kind(shape.query_heads, shape.kv_heads)
    view = {"kv-kind": "MLA" if shape.latent else kind, "kv-warning": ""}
    columns = {"given": shape.kv_heads, "mha": shape.query_heads, "mqa": 1}
    for column, kv_heads in columns.items():
        fit = shape.fits(kv_heads, None if column == "given" else 0)
        view[f"kv-heads-{column}"] = f"{kv_heads:,}"
        view[f"kv-cache-{column}"] = _size_text(fit.cache)
        view[f"kv-context-{column}"] = _count(fit.longest_context, "token")
        view[f"kv-batch-{column}"] = _count(fit.largest_batch, "sequence")
    room = "which they alone exceed: no cache fits."
    if fit.free:
        room = f"which leaves {_size_text(fit.free)} for the cache."
    view["kv-weights"] = (
        f"Weights: {_size_text(fit.weights)} ({shape.params:,} parameters × "
        f"{shape.itemsize} bytes) in {_size_text(fit.memory)} of memory, {room}"
    )
    c = _calculator_models().get(shape.model)
    if c is not None and shape.context > c.max_context:
        view["kv-warning"] = (
            f"{shape.context:,} tokens is past the {c.max_context:,} tokens "
            f"{c.name} was published for ({c.context_source.title}: "
            f"{c.context_source.where}); past it, quality is unknown."
        )
    return view


def _calculator_json() -> str:
    """The calculator's data, as JSON that is safe inside a ``<script>`` element:
    every published decoder's shape and context, and the defaults.
    """
    fields = ("layers", "query_heads", "kv_heads", "head_dim", "params")
    fields += ("latent", "window", "windowed_layers")
    opens = ("model", "context", "batch", "itemsize", "memory_gib")  # its first state
    data = {"units": list(_UNITS), "gib": _GIB, "models": []}
    data["default"] = {key: getattr(_Shape.of(_CALCULATOR_MODEL), key) for key in opens}
    for c in _calculator_models().values():
        shape, source = _Shape.of(c.name), c.context_source
        model = {field: getattr(shape, field) for field in fields}
        model |= {"name": c.name, "max_context": c.max_context}
        model["context_source"] = {"title": source.title, "where": source.where}
        data["models"].append(model)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@dataclass(frozen=True)
class _Tradeoff:
    """A row of Ainslie et al.'s Table 1, against MHA-XXL (the model it was made from)."""

    row: SpeedQuality
    speedup: float  # MHA-XXL's time per sample over this row's
    score_drop: float  # MHA-XXL's average score minus this row's


def _tradeoffs(table: Sequence[SpeedQuality]) -> dict[str, _Tradeoff]:
    """Each row of a speed and quality ``table`` (Ainslie et al.'s Table 1 on the
    page) against its ``MHA-XXL`` row, the model GQA was made from, by model name.
    """
    base = next(r for r in table if r.model == "MHA-XXL")
    return {
        r.model: _Tradeoff(
            r,
            base.seconds_per_sample / r.seconds_per_sample,
            base.average_score - r.average_score,
        )
        for r in table
    }


def _facts(
    models: dict[str, _Row],
    naive: dict[str, tuple[int, float]],
    fits: dict[str, tuple[int, int]],
    tradeoff: dict[str, _Tradeoff],
    counted: dict[str, int],
    designs: list[dict],
) -> dict[str, Fact]:
    """The facts the page states about the published models, fits, the GQA paper
    and the KV designs (``counted``: each model's parameters, from its shape).
    """
    falcon = models["Falcon-7B"].config
    llama2, llama3 = models["Llama-2 7B"].config, models["Llama-3 8B"].config
    c = models[_CONTEXT_MODEL].config
    longest = _cache_bytes(c, _CONTEXTS[-1], n_kv_heads=c.n_heads)
    weights = counted[c.name] * _BYTES_PER_VALUE
    params2, params3 = counted[llama2.name], counted[llama3.name]
    fit2, fit3 = fits[llama2.name], fits[llama3.name]
    mqa, gqa, large = (tradeoff[m] for m in ("MQA-XXL", "GQA-8-XXL", "MHA-Large"))
    recovered = (mqa.score_drop - gqa.score_drop) / mqa.score_drop
    palm, gemma = naive["PaLM 540B"][1], naive["Gemma 7B"][1]  # d_model/h over head_dim
    seconds = (mqa.row.seconds_per_sample, gqa.row.seconds_per_sample)
    scores = (mqa.row.average_score, gqa.row.average_score)
    mla, gemma2 = designs[0], designs[1]  # DeepSeek-V2, Gemma 2 9B
    layers = gemma2["design"].n_layers
    return {
        "falcon_trap": Fact(
            models["Falcon-7B"].saving == falcon.n_heads / falcon.n_kv_heads,
            f"per-token bytes with {falcon.n_heads} and {falcon.n_kv_heads} K/V heads",
            says="reading Falcon-7B's num_kv_heads overstates its cache by exactly h / h_kv",
        ),
        "mha_beyond_weights": Fact(
            longest > weights,
            f"{longest} vs {weights} bytes "
            f"({longest / _GIB:.2f} vs {weights / _GIB:.2f} GiB)",
            says="full MHA Llama-2 70B's cache at the longest context is larger than its weights",
        ),
        "fit_llama": Fact(
            (llama2.n_heads, llama2.head_dim) == (llama3.n_heads, llama3.head_dim)
            and 1 < params3 / params2 < 1.25
            and fit3[0] > fit2[0],
            f"heads/head_dim {llama2.n_heads}/{llama2.head_dim} vs "
            f"{llama3.n_heads}/{llama3.head_dim}, params {params2} vs "
            f"{params3}, fits {fit2} vs {fit3}",
            says="Llama-2 7B and Llama-3 8B share heads and head width, Llama-3 has up to 25% more parameters and fits more sequences",
        ),
        "llama70_absent": Fact(
            weights > _EXAMPLE_MEMORY,
            f"{weights} bytes ({weights / _GIB:.2f} GiB) of weights, "
            f"{_EXAMPLE_MEMORY} ({_EXAMPLE_MEMORY_GIB} GiB) of memory",
            says="Llama-2 70B's weights alone take more than the example's memory",
        ),
        "tradeoff": Fact(
            mqa.speedup > gqa.speedup > 1 and mqa.score_drop > gqa.score_drop >= 0,
            f"speed-ups {mqa.speedup}, {gqa.speedup}; drops {mqa.score_drop}, "
            f"{gqa.score_drop}",
            says="in the GQA paper, MQA is faster than GQA-8, which is faster than MHA, and MQA loses more score than GQA-8",
        ),
        "tradeoff_large": Fact(
            large.row.seconds_per_sample > max(seconds)
            and large.row.average_score < min(scores),
            f"MHA-Large {large.row}",
            says="MHA-Large is slower and scores lower than both MQA-XXL and GQA-8-XXL",
            qualitative="an ordering read from the paper's table above",
        ),
        "tradeoff_middle": Fact(
            recovered > 0.5 and gqa.speedup / mqa.speedup > 0.5,
            f"recovered {recovered}, speed-up share {gqa.speedup / mqa.speedup}",
            says="GQA-8 wins back over half of the score MQA loses and keeps over half of MQA's speed-up",
        ),
        "palm_trap": Fact(
            palm != 1,
            f"PaLM 540B: {palm}",
            says="taking d_head = d_model / h for PaLM 540B gives a cache of the wrong size",
        ),
        "palm_too_large": Fact(
            palm > 1,
            f"PaLM 540B: {palm}",
            says="taking d_head = d_model / h for PaLM 540B gives a cache larger than the true one",
        ),
        "gemma_trap": Fact(
            gemma != 1,
            f"Gemma 7B: {gemma}",
            says="taking d_head = d_model / h for Gemma 7B gives a cache of the wrong size",
        ),
        "gemma_too_small": Fact(
            gemma < 1,
            f"Gemma 7B: {gemma}",
            says="taking d_head = d_model / h for Gemma 7B gives a cache smaller than the true one",
        ),
        "mla_small": Fact(
            mla["share"] < 0.05 and mla["share"] == min(r["share"] for r in designs),
            f"shares of full MHA: {[round(r['share'], 4) for r in designs]}",
            says="DeepSeek-V2's latent cache is under 5% of full MHA and the smallest share of the table",
        ),
        "half_local": Fact(
            2 * gemma2["local_layers"] == layers,
            f"{gemma2['local_layers']} local of {layers} layers",
            says="exactly half of Gemma 2 9B's layers are windowed",
        ),
    }


def _latent_facts(latent: dict[str, dict]) -> dict[str, Fact]:
    """MLA's cache against MQA's and GQA-8's at DeepSeek-V2's sizes."""
    mla, mqa, gqa = (latent[k]["per_token"] for k in ("MLA", "MQA", "GQA-8"))
    return {
        "mla_over_twice_mqa": Fact(
            mla > 2 * mqa,
            f"MLA {mla}, MQA {mqa} values per token and layer",
            "DeepSeek-V2's latent caches more than twice what MQA with its heads "
            "of 128 would",
        ),
        "mla_under_gqa8": Fact(
            mla < gqa,
            f"MLA {mla}, GQA-8 {gqa} values per token and layer",
            "DeepSeek-V2's latent caches less than GQA with 8 K/V heads of 128",
        ),
    }


def _sharing(h: int, h_kv: int) -> tuple[tuple[str, int, list[int]], str]:
    """A panel of the head-sharing figure (the K/V head each of ``h`` query heads
    reads, from ``repeat_kv`` itself: K/V head j holds j) and what its alt text says."""
    kind = _attention_kind(h, h_kv)  # validates: h_kv divides h
    numbered = np.arange(h_kv, dtype=float).reshape(h_kv, 1, 1)
    reads = [int(j) for j in repeat_kv(numbered, h // h_kv)[:, 0, 0]]
    first = [i for i, j in enumerate(reads) if j == 0]
    if h_kv == h:
        said = "each query head has a line to its own K/V head"
    elif h_kv == 1:
        said = f"all {h} query heads share KV0"
    else:
        said = f"{h // h_kv} query heads share each K/V head (Q{first[0]} to "
        said += f"Q{first[-1]} read KV0)"
    heads = f"{h_kv} K/V head{'s' if h_kv > 1 else ''}"
    return (kind, h_kv, reads), f"{kind}, {heads}: {said}"


def _figures(
    models: dict[str, _Row],
    fits: dict[str, tuple[int, int]],
    latent: tuple[int, int],
) -> dict[str, Figure]:
    """Which K/V head each query head reads, the cache against context, what fits."""
    h, sharing = 8, (8, 2, 1)  # 8 query heads: MHA, GQA, MQA
    panels, said = zip(*(_sharing(h, h_kv) for h_kv in sharing), strict=True)
    d_c, d_rope = latent  # DeepSeek-V2's: every head reads one latent
    c = models[_CONTEXT_MODEL].config
    kv_heads = (c.n_heads, c.n_kv_heads, 1)  # MHA, as published, MQA
    lines = [
        (
            f"{_attention_kind(c.n_heads, g)} (h_kv = {g})"
            + (", as published" if g == c.n_kv_heads else ""),
            [_cache_bytes(c, n, n_kv_heads=g) / _GIB for n in _CONTEXTS],
        )
        for g in kv_heads
    ]
    ratios = [a[-1] / b[-1] for (_, a), (_, b) in pairwise(lines)]  # of the lines
    bars = [(f"{n} ({models[n].kind})", *fits[n]) for n in _FIT_MODELS]
    full = [f[1] for f in fits.values()]
    most = max(fits, key=lambda name: fits[name][0])
    return {
        "head_sharing": Figure(
            "kv_cache.head_sharing",
            (h, panels, latent),
            alt=f"Four panels of {h} query heads, Q0 to Q{h - 1}, drawn as circles "
            "above square K/V heads, with a line from each query head to the K/V head "
            "it reads. " + "; ".join(said) + f"; MLA: a wide bar, the cached latent "
            f"of {d_c} values, and beside it a small square, the position key of "
            f"{d_rope} values; above the bar each query head has its own K/V pair, "
            "drawn hollow because it is projected from the latent, not cached.",
            caption="Which K/V head each query head reads, taken from repeat_kv: count "
            "the lines that meet at each square. The cache holds only the squares, so "
            "it shrinks by the factor h / h_kv ("
            + ", ".join(str(h // g) for g in sharing)
            + " lines a square here). The last panel caches no K/V heads: only the "
            "filled shapes, a latent and one small position key, are cached; each "
            "head's own keys and values, hollow, are projected from the latent.",
        ),
        "cache_vs_context": Figure(
            "kv_cache.cache_vs_context",
            (c.name, c.n_layers, _CONTEXTS, tuple(lines)),
            alt=f"Cache of one sequence of {c.name}, in GiB on a log scale, against "
            f"context length from {_CONTEXTS[0]:,} to {_CONTEXTS[-1]:,} tokens, for "
            f"{', '.join(str(g) for g in kv_heads[:-1])} and 1 K/V heads. The three "
            "lines are parallel straight lines: full multi-head attention is "
            f"{ratios[0]:g} times the published grouped-query model, which is "
            f"{ratios[1]:g} times multi-query attention.",
            caption="The cache grows in proportion to the context; the number of K/V "
            "heads only shifts the line (both axes are logarithmic). Compare the "
            "lines at any context: their gaps are the ratios of K/V heads. The MHA "
            f"and MQA lines, and every point past the {c.max_context:,} tokens "
            f"{c.name} was published for, are hypothetical.",
        ),
        "fit_in_memory": Figure(
            "kv_cache.fit_in_memory",
            (tuple(bars), _EXAMPLE_CONTEXT),
            alt="Horizontal bars, log scale: how many sequences of "
            f"{_EXAMPLE_CONTEXT:,} tokens fit in {_EXAMPLE_MEMORY_GIB} GiB after the "
            f"weights, for {', '.join(_FIT_MODELS)}, each as published and with full "
            f"multi-head attention. With full MHA they fit {min(full)} to "
            f"{max(full)}; as published, {most} fits the most, {fits[most][0]:,}.",
            caption="Two bars a model: as published, and the same model with one K/V "
            "head per query head. Compare the pairs: the gap is the factor h / h_kv, "
            "less what the weights take.",
        ),
    }
