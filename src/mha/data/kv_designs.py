"""KV-cache designs past grouped-query attention, each with its source.

Cited, not computed. Two ways to shrink the cache beside sharing K/V heads:

- **latent attention** (MLA, DeepSeek-V2): each layer caches one compressed latent
  vector per token plus one small key that carries the rotary position, shared by
  every head; keys and values of all heads are projected back from the latent.
- **sliding windows**: a layer attends to the last ``window`` tokens only, so its
  cache holds no more. The window can differ from layer to layer: Gemma 2 alternates
  local layers (a 4,096-token window) and global ones (the whole context); Mistral 7B
  windows every layer.

A design gives, per layer, the values it caches per token (``2 · h_kv · d_k`` for
keys and values; the latent plus the position key for MLA) and the window that caps
its tokens (``None``: every token). These rows are not in the parameter-totals check
(``mha.data.totals``), which needs an architecture for each total: DeepSeek-V2's
236B parameters are a mixture of experts (160 routed experts a layer, 6 of them and 2
shared experts active per token), whose breakdown is a project of its own, and Gemma
2 9B's cache is all this table uses. GPT-3 also alternated dense layers with "locally
banded sparse" ones, but its paper gives no band width, so it has no row.

```python
from mha.data.kv_designs import design

mla = design("DeepSeek-V2")
assert mla.widths == (512 + 64,) * 60 and mla.windows == (None,) * 60
assert mla.latent == (512, 64)
gemma = design("Gemma 2 9B")
assert gemma.windows[:2] == (4096, None) and len(gemma.windows) == 42
```
"""

from __future__ import annotations

from dataclasses import dataclass

from mha.data.published import DecoderConfig, Source, decoder
from mha.data.totals import breakdown
from mha.support.validate import lookup


@dataclass(frozen=True)
class KVDesign:
    """A decoder's cache, layer by layer: values per token, and the window (or None)."""

    name: str
    kind: str  # what shrinks the cache
    n_heads: int  # query heads
    n_kv_heads: int  # K/V heads (MLA: as many as query heads, from the latent)
    head_dim: int
    widths: tuple[int, ...]  # values cached per token, one entry a layer
    windows: tuple[int | None, ...]  # tokens a layer holds at most; None: all
    mha_width: int  # values per token a layer would cache with full multi-head K/V
    params: int  # total for what fits beside the weights (counted where it can be)
    max_context: int
    source: Source
    context_source: Source  # where ``max_context`` was read
    # MLA: (latent width d_c, decoupled RoPE key width d_h^R), cached per token and
    # layer in place of K/V heads; None for a design that caches K/V heads
    latent: tuple[int, int] | None = None
    # why ``params`` is the total the source states and not a count from the shape
    # (``mha.data.totals``); empty for a counted total
    params_stated_why: str = ""

    @property
    def n_layers(self) -> int:
        """Number of layers."""
        return len(self.widths)


_DEEPSEEK = Source(
    "DeepSeek-AI 2024, DeepSeek-V2: A Strong, Economical, and Efficient "
    "Mixture-of-Experts Language Model",
    "https://arxiv.org/abs/2405.04434",
    "section 2.1.2 and Table 1: the cache holds the latent c_t^KV (d_c = 512) and the "
    "decoupled RoPE key k_t^R (d_h^R = 64) per token per layer, (d_c + d_h^R)·l "
    "elements; section 3.1.1: 60 layers, 128 heads of d_h = 128; 236B parameters, "
    "21B active per token; a context of 128K",
)
# Why DeepSeek-V2 chose MLA, in its own words (the page computes the cache itself)
MLA_CLAIM = Source(
    _DEEPSEEK.title,
    _DEEPSEEK.url,
    "section 2.1.4 and Table 1: MLA's cache per token, (d_c + d_h^R)·l elements, "
    "equals GQA with only 2.25 groups, while achieving stronger performance than MHA; "
    "section 2.1.3: RoPE is incompatible with absorbing W_UK into W_Q, hence the "
    "decoupled key shared by the heads; Appendix D.2: MLA against MHA",
)
_GEMMA2 = Source(
    "Gemma Team 2024, Gemma 2: Improving Open Language Models at a Practical Size",
    "https://arxiv.org/abs/2408.00118",
    "Table 1, 9B: 42 layers, 16 heads, 8 K/V heads, head size 256; section 2: local "
    "sliding window and global attention alternate in every other layer, window 4096 "
    "tokens, global span 8192 tokens",
)
_LATENT, _ROPE_KEY, _DEEPSEEK_LAYERS = 512, 64, 60
_GEMMA2_LAYERS, _GEMMA2_KV_HEADS, _GEMMA2_HEADS, _GEMMA2_HEAD = 42, 8, 16, 256
_GEMMA2_WINDOW = 4096


def from_decoder(c: DecoderConfig, kind: str) -> KVDesign:
    """A published decoder's cache as a ``KVDesign`` (its parameters counted from its
    shape): K and V of its K/V heads in every layer, capped by its sliding window.

    ```python
    from mha.data.kv_designs import from_decoder
    from mha.data.published import decoder

    llama = from_decoder(decoder("Llama-2 70B"), "GQA")
    assert llama.widths == (2 * 8 * 128,) * 80 and llama.windows == (None,) * 80
    ```
    """
    return KVDesign(
        c.name,
        kind,
        c.n_heads,
        c.n_kv_heads,
        c.head_dim,
        (2 * c.n_kv_heads * c.head_dim,) * c.n_layers,
        (c.sliding_window,) * c.n_layers,
        2 * c.n_heads * c.head_dim,
        breakdown(c.name).total,
        c.max_context,
        c.source,
        c.context_source,
    )


_mistral = decoder("Mistral 7B v0.1")

KV_DESIGNS: tuple[KVDesign, ...] = (
    KVDesign(
        "DeepSeek-V2",
        "latent (MLA)",
        128,
        128,
        128,
        (_LATENT + _ROPE_KEY,) * _DEEPSEEK_LAYERS,
        (None,) * _DEEPSEEK_LAYERS,
        2 * 128 * 128,  # 128 heads of 128, keys and values
        236_000_000_000,
        131_072,
        _DEEPSEEK,
        Source(
            _DEEPSEEK.title, _DEEPSEEK.url, "section 1: a context length of 128K tokens"
        ),
        (_LATENT, _ROPE_KEY),
        "a mixture of experts (160 routed and 2 shared experts a layer, 6 routed "
        "active a token), which the counting rule of mha.data.totals does not cover",
    ),
    KVDesign(
        "Gemma 2 9B",
        "GQA, windowed layers alternating",
        _GEMMA2_HEADS,
        _GEMMA2_KV_HEADS,
        _GEMMA2_HEAD,
        (2 * _GEMMA2_KV_HEADS * _GEMMA2_HEAD,) * _GEMMA2_LAYERS,
        (_GEMMA2_WINDOW, None) * (_GEMMA2_LAYERS // 2),  # layer 0 is local
        2 * _GEMMA2_HEADS * _GEMMA2_HEAD,
        9_000_000_000,
        8192,
        _GEMMA2,
        Source(
            _GEMMA2.title, _GEMMA2.url, "section 2: a context length of 8192 tokens"
        ),
        None,
        "its architecture (four norms a layer, tied embeddings) has no entry in "
        "mha.data.totals yet, so its total is not counted",
    ),
    from_decoder(_mistral, "GQA, every layer windowed"),
)


def design(name: str) -> KVDesign:
    """The design called ``name`` (one of ``KV_DESIGNS``).

    ```python
    from mha.data.kv_designs import design

    assert design("Mistral 7B v0.1").windows[0] == 4096
    ```
    """
    return lookup("name", name, {d.name: d for d in KV_DESIGNS})
