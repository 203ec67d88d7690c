"""What the KV cache of a published decoder costs, and what fits beside its weights.

Page: ``docs/kv-cache.md``.

Every figure is computed from a model's layers, K/V heads and head width
(``mha.data.published.DECODERS``), never from d_model:

    cache bytes = 2 · layers · h_kv · head_dim · tokens · batch · bytes per value

"With full MHA" asks the same of the model with one K/V head per query head
(h_kv = h), the counterfactual a grouped-query or multi-query model avoids.

The page's calculator reads ``payload()``, written by the build (an mkdocs hook calls
``write``) to ``SITE_PATH`` in the site output, never into ``docs/``. Its script only
multiplies the per-token bytes by the tokens held and the batch::

    {
      "version": 1,
      "unit": {"name": "GiB", "bytes": 1073741824},
      "dtypes": [{"id": str, "label": str, "bytes": int}, ...],
      "models": [
        {
          "name": str,
          "window": int | null,          # tokens held = min(context, window)
          "bytes_per_token": {"<dtype id>": int, ...}   # all layers, K and V
        }, ...
      ]
    }
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mha.accounting import kv_cache_bytes
from mha.data.published import (
    DECODERS,
    GQA_TABLE_1,
    DecoderConfig,
    SpeedQuality,
    decoder,
)
from mha.support.validate import positive_int

SCHEMA_VERSION = 1
SITE_PATH = "assets/data/kv-cache.json"  # relative to the site output
GIB = 2**30


@dataclass(frozen=True)
class Dtype:
    """A storage type for the cached keys and values."""

    id: str
    label: str
    bytes: int

    @property
    def bits(self) -> int:
        """Bits per value: 16 for float16."""
        return 8 * self.bytes


DTYPES: tuple[Dtype, ...] = (
    Dtype("fp32", "32-bit float (float32)", 4),
    Dtype("fp16", "16-bit float (float16, bfloat16)", 2),
    Dtype("int8", "8-bit (int8, fp8)", 1),
)
HALF = DTYPES[1]  # the 16-bit cache of the page's table and figures

# Example inputs of the page (a reader changes them in the calculator).
EXAMPLE_CONTEXT = 4096  # tokens per sequence
EXAMPLE_BATCH = 1
EXAMPLE_MEMORY = 80 * GIB  # one accelerator's memory, for "how many sequences fit"
CONTEXTS = tuple(2**i for i in range(9, 18))  # 512 ... 131,072 tokens, for the curve
FIT_MODELS = (  # the models of similar size compared in the "what fits" figure
    "Llama-2 7B",
    "Llama-3 8B",
    "Mistral 7B",
    "Qwen2.5 7B",
    "Falcon-7B",
    "Gemma 2B",
)


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
    config: DecoderConfig, itemsize: int = HALF.bytes, n_kv_heads: int | None = None
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
    itemsize: int = HALF.bytes,
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


def weight_bytes(config: DecoderConfig, itemsize: int = HALF.bytes) -> int:
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
    itemsize: int = HALF.bytes,
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


def payload() -> dict:
    """The calculator's data: per-token bytes of every model in every dtype.

    ```python
    from mha.pages.kv_cache import payload

    data = payload()
    smol = next(m for m in data["models"] if m["name"] == "SmolLM2-135M")
    assert smol["bytes_per_token"]["fp16"] == 2 * 30 * 3 * 64 * 2
    ```
    """
    return {
        "version": SCHEMA_VERSION,
        "unit": {"name": "GiB", "bytes": GIB},
        "dtypes": [{"id": d.id, "label": d.label, "bytes": d.bytes} for d in DTYPES],
        "models": [
            {
                "name": c.name,
                "window": c.sliding_window,
                "bytes_per_token": {d.id: bytes_per_token(c, d.bytes) for d in DTYPES},
            }
            for c in DECODERS
        ],
    }


def write(path: str | Path) -> Path:
    """Write ``payload()`` as JSON to ``path`` (parents created); return the path.

    ```python
    import json, tempfile
    from pathlib import Path
    from mha.pages.kv_cache import payload, write

    out = write(Path(tempfile.mkdtemp()) / "data" / "kv-cache.json")
    assert json.loads(out.read_text()) == payload()
    ```
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload(), indent=1, sort_keys=True) + "\n")
    return path


def calculator_text(name: str, context: int, batch: int, dtype_id: str) -> str:
    """What the calculator shows for these inputs (its script writes the same).

    ```python
    from mha.pages.kv_cache import calculator_text

    assert calculator_text("Llama-2 7B", 4096, 1, "fp16") == "2.00 GiB (2,147,483,648 bytes)"
    assert calculator_text("Mistral 7B", 8192, 1, "fp16").endswith(
        "(its sliding window holds 4,096 tokens)"
    )
    ```
    """
    config = decoder(name)
    itemsize = next((d.bytes for d in DTYPES if d.id == dtype_id), None)
    if itemsize is None:
        ids = ", ".join(repr(d.id) for d in DTYPES)
        raise ValueError(f"dtype_id: expected one of {ids}, got {dtype_id!r}")
    total = cache_bytes(config, context, batch, itemsize)
    held = tokens_held(config, context)
    note = f" (its sliding window holds {held:,} tokens)" if held < context else ""
    return f"{total / GIB:.2f} GiB ({total:,} bytes){note}"


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
