"""Where a published model's parameters go, and the check that they add up to its source.

Every model of ``mha.data.published`` (``MODELS`` and ``DECODERS``) has an
``Architecture`` here: what a total parameter count needs beyond the attention shape
(vocabulary, FFN width and whether it is gated, tied embeddings, biases, norms,
position embeddings), read from the source each entry names. ``breakdown(name)``
counts embeddings, attention, FFN, norms and the rest from it; the total must match
the total the model's source states:

- within 2% where the source gives an exact count (more than four significant
  digits: Gemma's 2,506,434,560);
- otherwise within the rounding of the stated size: half a unit of its last
  significant digit ("7B" is 6.5B to 7.5B, "7.3B" is 7.25B to 7.35B, "70B" is 65B
  to 75B: the zero of an integer is a placeholder);
- and exactly, for a model in ``CHECKPOINTS``, the count of its released weights
  (where a nominal size could not tell 80 layers from 82).

A model whose total does not match is either on ``KNOWN_MISMATCHES``, with the reason,
or a contradiction: ``contradictions()`` lists it, and the build refuses to start
while the list is not empty (``docs/_glue/hooks.py``), as does a test. A listed model that starts to match is refused too,
so the list cannot hide a fix.

```python
from mha.data.totals import breakdown

gpt2 = breakdown("GPT-2 small")
assert gpt2.total == 124_439_808  # the released checkpoint
assert 0.2 < gpt2.attention / gpt2.total < 0.25
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from mha.data import published
from mha.data.published import DECODERS, MODELS, DecoderConfig, Source
from mha.support.validate import lookup

EXACT_TOLERANCE = 0.02  # relative, for a count given to more than four digits
EXACT_DIGITS = 4


@dataclass(frozen=True)
class Architecture:
    """What a total count needs beyond the attention shape, with its source."""

    vocab: int
    d_ff: int
    gated: bool  # SwiGLU/GeGLU: three FFN matrices (gate, up, down), else two
    tied: bool  # the output projection is the token embedding
    qkv_bias: bool
    out_bias: bool  # W_O's bias
    ffn_bias: bool
    norm_bias: bool  # LayerNorm (scale and shift) or RMSNorm/scale only
    norms_per_layer: int  # 2; 1 for parallel attention and FFN; 3 with cross-attention
    final_norm: bool
    positions: str  # "learned", "sinusoidal" or "rotary"
    source: Source
    learned_positions: int = 0  # rows of a learned position table
    stacks: int = 1  # 2 for an encoder-decoder (the second with cross-attention)
    token_types: int = 0  # BERT's segment embeddings
    embedding_norm: bool = False  # BERT normalises the summed embeddings
    pooler: bool = False  # BERT's [CLS] pooler, d_model x d_model with a bias


@dataclass(frozen=True)
class Breakdown:
    """A model's parameters by part, counted from its shape and its architecture."""

    name: str
    embeddings: int  # token, position and segment tables, and their norm
    attention: int  # W_Q, W_K, W_V, W_O and their biases, every layer
    ffn: int
    norms: int  # the layers' norms and the final one
    other: int  # an untied output projection, BERT's pooler
    stated: int  # the total the source states
    stated_source: Source
    stated_digits: int | None = None  # as printed, when more than ``stated`` shows

    @property
    def total(self) -> int:
        """Every parameter: the sum of the parts."""
        return self.embeddings + self.attention + self.ffn + self.norms + self.other

    @property
    def attention_share(self) -> float:
        """The fraction of the total held by attention."""
        return self.attention / self.total


def _config(repo: str, where: str) -> Source:
    return Source(
        f"{repo}, config.json",
        f"https://huggingface.co/{repo}/blob/main/config.json",
        where,
    )


_NO_BIAS = {"qkv_bias": False, "out_bias": False, "ffn_bias": False}
_ALL_BIAS = {"qkv_bias": True, "out_bias": True, "ffn_bias": True}
_RMS = {"norm_bias": False, "norms_per_layer": 2, "final_norm": True}
_LLAMA = {**_NO_BIAS, **_RMS, "gated": True, "tied": False, "positions": "rotary"}
_LLAMA_WHERE = "; LlamaForCausalLM: RMSNorm, SwiGLU MLP, no biases, rotary positions"


def _llama(repo: str, vocab: int, d_ff: int) -> Architecture:
    where = f"vocab_size {vocab}, intermediate_size {d_ff}, tie_word_embeddings false"
    return Architecture(
        vocab, d_ff, source=_config(repo, where + _LLAMA_WHERE), **_LLAMA
    )


_BERT_CONFIG = (
    "bert_config.json of the checkpoint (google-research/bert): vocab_size 30522, "
    "max_position_embeddings 512, type_vocab_size 2, intermediate_size {}; "
    "modeling.py: biases on every dense layer, LayerNorm after the embeddings and "
    "after each sublayer, a dense pooler on [CLS]"
)


def _bert(d_ff: int) -> Architecture:
    source = Source(
        "google-research/bert, modeling.py and bert_config.json",
        "https://github.com/google-research/bert/blob/master/modeling.py",
        _BERT_CONFIG.format(d_ff),
    )
    return Architecture(
        30522,
        d_ff,
        gated=False,
        tied=True,  # BertModel has no output projection (the MLM head reuses it)
        **_ALL_BIAS,
        norm_bias=True,
        norms_per_layer=2,
        final_norm=False,
        positions="learned",
        source=source,
        learned_positions=512,
        token_types=2,
        embedding_norm=True,
        pooler=True,
    )


ARCHITECTURES: dict[str, Architecture] = {
    "Transformer base": Architecture(
        37000,
        2048,
        gated=False,
        tied=True,
        **_ALL_BIAS,
        norm_bias=True,
        norms_per_layer=2,
        final_norm=False,
        positions="sinusoidal",
        stacks=2,
        source=Source(
            "Vaswani et al. 2017, Attention Is All You Need",
            "https://arxiv.org/abs/1706.03762",
            "section 3.1: encoder and decoder stacks, LayerNorm after each sublayer, "
            "the decoder's third sublayer attends over the encoder; section 3.3: "
            "FFN(x) = max(0, xW1 + b1)W2 + b2, d_ff = 2048; section 3.4: one weight "
            "matrix shared by both embeddings and the pre-softmax projection; section "
            "3.5: sinusoidal positions; section 5.1: a shared source-target vocabulary "
            "of about 37000 tokens (biases of the attention projections assumed, as "
            "in the paper's tensor2tensor code they are not: 0.02M either way)",
        ),
    ),
    "BERT-base": _bert(3072),
    "BERT-large": _bert(4096),
    "GPT-2 small": Architecture(
        50257,
        3072,
        gated=False,
        tied=True,
        **_ALL_BIAS,
        norm_bias=True,
        norms_per_layer=2,
        final_norm=True,
        positions="learned",
        learned_positions=1024,
        source=Source(
            "openai/gpt-2, src/model.py",
            "https://github.com/openai/gpt-2/blob/master/src/model.py",
            "default_hparams(): n_vocab=50257, n_ctx=1024 (wpe); mlp(x, n_state=4*nx); "
            "conv1d with a bias b; norm() with g and b, ln_1 and ln_2 in each block, "
            "ln_f at the end; logits = matmul(h, wte, transpose_b=True) (tied)",
        ),
    ),
    "Llama-2 7B": _llama("meta-llama/Llama-2-7b-hf", 32000, 11008),
    "Llama-2 13B": _llama("meta-llama/Llama-2-13b-hf", 32000, 13824),
    "Llama-2 70B": _llama("meta-llama/Llama-2-70b-hf", 32000, 28672),
    "Llama-3 8B": _llama("meta-llama/Meta-Llama-3-8B", 128256, 14336),
    "Llama-3 70B": _llama("meta-llama/Meta-Llama-3-70B", 128256, 28672),
    "Mistral 7B v0.1": _llama("mistralai/Mistral-7B-v0.1", 32000, 14336),
    "Falcon-7B": Architecture(
        65024,
        4 * 4544,
        gated=False,
        tied=True,
        **_NO_BIAS,
        norm_bias=True,
        norms_per_layer=1,
        final_norm=True,
        positions="rotary",
        source=_config(
            "tiiuae/falcon-7b",
            "vocab_size 65024, bias false, parallel_attn true (one input_layernorm "
            "per layer), hidden_size 4544; modeling_falcon.py: FalconMLP is "
            "4 x hidden_size with GELU, LayerNorm, ln_f, rotary positions, lm_head "
            "tied to word_embeddings",
        ),
    ),
    "PaLM 540B": Architecture(
        256000,
        4 * 18432,
        gated=True,
        tied=True,
        **_NO_BIAS,
        norm_bias=False,
        norms_per_layer=1,
        final_norm=True,
        positions="rotary",
        source=Source(
            "Chowdhery et al. 2022, PaLM: Scaling Language Modeling with Pathways",
            "https://arxiv.org/abs/2204.02311",
            "section 2: SwiGLU, parallel layers (one LayerNorm per layer), RoPE, "
            "shared input-output embeddings, no biases in dense kernels or layer "
            "norms, a 256k-token SentencePiece vocabulary; Table 1: the feed-forward "
            "size is 4 x d_model",
        ),
    ),
    "Gemma 2B": Architecture(
        256000,
        16384,
        gated=True,
        tied=True,
        **_NO_BIAS,
        **_RMS,
        positions="rotary",
        source=_config(
            "google/gemma-2b",
            "vocab_size 256000, intermediate_size 16384, GeGLU (GemmaMLP: gate, up, "
            "down), RMSNorm, no biases, embeddings tied to the output",
        ),
    ),
    "Gemma 7B": Architecture(
        256000,
        24576,
        gated=True,
        tied=True,
        **_NO_BIAS,
        **_RMS,
        positions="rotary",
        source=_config(
            "google/gemma-7b",
            "vocab_size 256000, intermediate_size 24576, GeGLU (GemmaMLP: gate, up, "
            "down), RMSNorm, no biases, embeddings tied to the output",
        ),
    ),
    "Qwen2.5 7B": Architecture(
        152064,
        18944,
        gated=True,
        tied=False,
        qkv_bias=True,
        out_bias=False,
        ffn_bias=False,
        **_RMS,
        positions="rotary",
        source=_config(
            "Qwen/Qwen2.5-7B",
            "vocab_size 152064, intermediate_size 18944, tie_word_embeddings false; "
            "Qwen2Attention: q_proj, k_proj, v_proj with bias, o_proj without; "
            "SwiGLU MLP, RMSNorm",
        ),
    ),
    "GPT-3 175B": Architecture(
        50257,
        4 * 12288,
        gated=False,
        tied=True,
        **_ALL_BIAS,
        norm_bias=True,
        norms_per_layer=2,
        final_norm=True,
        positions="learned",
        learned_positions=2048,
        source=Source(
            "Brown et al. 2020, Language Models are Few-Shot Learners",
            "https://arxiv.org/abs/2005.14165",
            "section 2.1: 'the same model and architecture as GPT-2' (its 50257-token "
            "vocabulary, biases, LayerNorm, tied output); Table 2.1: d_ff = 4 x "
            "d_model; n_ctx = 2048 tokens",
        ),
    ),
    "SmolLM2-135M": Architecture(
        49152,
        1536,
        gated=True,
        tied=True,
        **_NO_BIAS,
        **_RMS,
        positions="rotary",
        source=_config(
            "HuggingFaceTB/SmolLM2-135M",
            "vocab_size 49152, intermediate_size 1536, tie_word_embeddings true; "
            "LlamaForCausalLM: RMSNorm, SwiGLU MLP, no biases",
        ),
    ),
}

# Models whose computed total is outside the tolerance of the stated one, and why.
KNOWN_MISMATCHES: dict[str, str] = {
    "Transformer base": "the paper gives the size of its shared vocabulary only "
    "approximately and does not say what else its count includes",
    "Mistral 7B v0.1": "the announcement rounds the size up: the released weights hold less",
    "Qwen2.5 7B": "the model card truncates the count instead of rounding it",
    "GPT-3 175B": "the paper prints the size to a tenth of a billion, and does not say "
    "what its count includes beyond the layers and embeddings of its Table 2.1 shape",
}


# Exact totals of released checkpoints, which the count must equal to the unit: a
# nominal size ("70B" is 65B to 75B) cannot tell 80 layers from 82, these can.
CHECKPOINTS: dict[str, tuple[int, str]] = {
    "GPT-2 small": (
        124_439_808,
        "transformers' num_parameters() of openai-community/gpt2",
    ),
    "BERT-base": (109_482_240, "transformers' num_parameters() of bert-base-uncased"),
    "SmolLM2-135M": (
        134_515_008,
        "transformers' num_parameters() of HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "Llama-2 7B": (6_738_415_616, "transformers' num_parameters() of Llama-2-7b-hf"),
    "Llama-3 70B": (
        70_553_706_496,
        "model.safetensors.index.json of meta-llama/Meta-Llama-3-70B: total_size "
        "141,107,412,992 bytes of bfloat16 (2 bytes a parameter)",
    ),
}


def _shape(name: str) -> tuple[int, int, int, int, int, int, Source]:
    """(d_model, h, h_kv, head_dim, layers, stated total, its source) of a model."""
    row = lookup("name", name, {r.name: r for r in (*MODELS, *DECODERS)})
    if isinstance(row, DecoderConfig):
        return (
            row.d_model,
            row.n_heads,
            row.n_kv_heads,
            row.head_dim,
            row.n_layers,
            row.params,
            row.params_source,
        )
    return (
        row.d_model,
        row.n_heads,
        row.n_heads,
        row.d_k,
        row.n_layers,
        row.params,
        row.params_source,
    )


def breakdown(name: str) -> Breakdown:
    """Count the parameters of the published model ``name``, part by part.

    ```python
    from mha.data.totals import breakdown

    smol = breakdown("SmolLM2-135M")
    assert smol.total == 134_515_008 and smol.other == 0  # tied: no output matrix
    ```
    """
    d, h, h_kv, head_dim, layers, stated, stated_source = _shape(name)
    a = ARCHITECTURES[name]
    width_q, width_kv = h * head_dim, h_kv * head_dim
    one_attention = d * width_q + 2 * d * width_kv + width_q * d
    one_attention += (width_q + 2 * width_kv) * a.qkv_bias + d * a.out_bias
    one_ffn = (3 if a.gated else 2) * d * a.d_ff + (a.d_ff + d) * a.ffn_bias
    one_norm = 2 * d if a.norm_bias else d
    # an encoder-decoder's second stack has a cross-attention sublayer and its norm
    attention_sublayers = layers * a.stacks + layers * (a.stacks - 1)
    norms = one_norm * (
        a.norms_per_layer * layers * a.stacks + layers * (a.stacks - 1) + a.final_norm
    )
    embeddings = (a.vocab + a.learned_positions + a.token_types) * d
    embeddings += one_norm * a.embedding_norm
    other = (0 if a.tied else a.vocab * d) + (d * d + d) * a.pooler
    return Breakdown(
        name,
        embeddings=embeddings,
        attention=one_attention * attention_sublayers,
        ffn=one_ffn * layers * a.stacks,
        norms=norms,
        other=other,
        stated=stated,
        stated_source=stated_source,
        stated_digits=getattr(
            lookup("name", name, {r.name: r for r in (*MODELS, *DECODERS)}),
            "params_digits",
            None,
        ),
    )


def tolerance(stated: int, digits: int | None = None) -> float:
    """How far a computed total may be from ``stated``, in parameters; ``digits`` are
    the significant digits the source prints, when more than the integer shows.

    ```python
    from mha.data.totals import tolerance

    assert tolerance(7_000_000_000) == 500_000_000  # "7B": 6.5B to 7.5B
    assert tolerance(7_300_000_000) == 50_000_000
    assert tolerance(175_000_000_000, digits=4) == 50_000_000  # "175.0B"
    assert tolerance(2_506_434_560) == 0.02 * 2_506_434_560  # an exact count
    ```
    """
    if stated <= 0:
        raise ValueError(f"stated: expected a positive count, got {stated!r}")
    printed = digits or len(str(stated).rstrip("0"))
    if printed > EXACT_DIGITS:
        return EXACT_TOLERANCE * stated
    return 10 ** (len(str(stated)) - printed) / 2


def contradictions() -> list[str]:
    """Every model whose computed total contradicts its source, as a sentence each.

    A mismatch on ``KNOWN_MISMATCHES`` is not a contradiction; a listed model that
    matches is one (its entry is stale).

    ```python
    from mha.data.totals import contradictions

    assert contradictions() == []
    ```
    """
    names = [row.name for row in (*MODELS, *DECODERS)]
    found = [
        f"{n}: no Architecture in mha.data.totals"
        for n in names
        if n not in ARCHITECTURES
    ]
    for name in names:
        if name not in ARCHITECTURES:
            continue
        b = breakdown(name)
        allowed = tolerance(b.stated, b.stated_digits)
        matches = math.fabs(b.total - b.stated) <= allowed
        if not matches and name not in KNOWN_MISMATCHES:
            found.append(
                f"{name} ({_row(name)}): the shape and architecture in mha.data count "
                f"{b.total:,} "
                f"parameters, but {b.stated_source.title} ({b.stated_source.where}) "
                f"states {b.stated:,} (tolerance {allowed:,.0f})"
            )
        if matches and name in KNOWN_MISMATCHES:
            found.append(f"{name}: listed in KNOWN_MISMATCHES but its count matches")
        exact, where = CHECKPOINTS.get(name, (b.total, ""))
        if matches and b.total != exact:  # inside the rounding, not the unit
            found.append(
                f"{name} ({_row(name)}): the shape and architecture in mha.data count "
                f"{b.total:,} parameters, but the released checkpoint holds {exact:,} "
                f"({where}); a layer count or width is wrong"
            )
    found += [
        f"{n}: in KNOWN_MISMATCHES but not a published model"
        for n in KNOWN_MISMATCHES
        if n not in names
    ]
    return found


def _row(name: str) -> str:
    """Where the model's row starts in mha/data/published.py, as ``file:line``."""
    path = Path(published.__file__)
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next((i for i, text in enumerate(lines, 1) if f'"{name}"' in text), 0)
    return f"src/mha/data/published.py:{line}"
