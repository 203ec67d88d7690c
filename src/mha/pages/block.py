"""The Transformer block in code: what ``docs/block.md`` prints.

A block wraps multi-head attention and a feed-forward layer in residual connections
and norms, in one of two orders. ``pre_norm`` (GPT-2, Llama, SmolLM2) normalises
what each sublayer reads and adds its output to the stream untouched; ``post_norm``
(the original Transformer, BERT, MiniLM) adds first and normalises the sum.
``smollm2_block`` and ``minilm_layer`` wire the two real models' weights into them,
and ``_study`` checks them against the models' own code on real text (cached).
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.heads import split_heads
from mha.pretrained import minilm, smollm2
from mha.pretrained.minilm import gelu
from mha.pretrained.smollm2 import rms_norm, silu
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page

Sublayer = Callable[[np.ndarray], np.ndarray]

_SMOLLM2_TEXT = "The cat sat on the mat because it was warm."
_MINILM_TEXTS = (
    "the cat sat on the warm mat .",
    "a dog barked",
)  # two lengths: padding
_SMOLLM2_TOLERANCE = 1e-4  # relative to the largest logit, float32 through 30 blocks
# absolute, float32 through 6 layers: the output is at most about 5.5, where float32
# steps by 4.8e-7, so 1e-5 allows some 20 steps (how many it takes depends on the
# CPU's BLAS kernels and threads: 1.4e-6 on one machine)
_MINILM_TOLERANCE = 1e-5


def pre_norm(
    x: np.ndarray,
    attend: Sublayer,
    ffn: Sublayer,
    norm_1: Sublayer,
    norm_2: Sublayer,
) -> np.ndarray:
    """Normalise, attend, add; normalise, feed forward, add. The stream ``x`` itself
    is never normalised.
    """
    x = x + attend(norm_1(x))
    return x + ffn(norm_2(x))


def post_norm(
    x: np.ndarray,
    attend: Sublayer,
    ffn: Sublayer,
    norm_1: Sublayer,
    norm_2: Sublayer,
) -> np.ndarray:
    """Attend, add, normalise; feed forward, add, normalise. The stream is
    normalised after each sublayer.
    """
    x = norm_1(x + attend(x))
    return norm_2(x + ffn(x))


def smollm2_block(x: np.ndarray, block: smollm2.Block) -> np.ndarray:
    """One SmolLM2 block on ``x (1, n, d_model)``: pre-norm, RMSNorm, causal
    grouped-query attention, SwiGLU.
    """
    mask = causal_mask(x.shape[-2])
    w_gate, w_up = np.split(block.w_gate_up, 2, axis=1)  # (d_model, d_ff) each

    def swiglu(y: np.ndarray) -> np.ndarray:
        gate, up = y @ w_gate, y @ w_up
        return (silu(gate) * up) @ block.w_down.T  # w_down is stored (out, in)

    return pre_norm(
        x,
        attend=lambda y: block.attention(y, mask)[0],
        ffn=swiglu,
        norm_1=lambda y: rms_norm(y, block.attention_norm, block.eps),
        norm_2=lambda y: rms_norm(y, block.mlp_norm, block.eps),
    )


def minilm_layer(
    x: np.ndarray, layer: minilm.EncoderLayer, mask: np.ndarray
) -> np.ndarray:
    """One MiniLM layer on ``x (batch, n, d_model)``: post-norm, LayerNorm,
    attention to every real token (``mask``, the padding mask), GELU.
    """

    def gelu_ffn(y: np.ndarray) -> np.ndarray:
        hidden = gelu(y @ layer.w_in + layer.b_in)
        return hidden @ layer.w_out + layer.b_out

    return post_norm(
        x,
        attend=lambda y: layer.attention(y, mask)[0],
        ffn=gelu_ffn,
        norm_1=layer.attention_norm,
        norm_2=layer.output_norm,
    )


def source(function: Callable) -> str:
    """The code of ``function`` as the page shows it: without its docstring."""
    lines = textwrap.dedent(inspect.getsource(function)).splitlines()
    docstring = ast.parse("\n".join(lines)).body[0].body[0]
    end = docstring.end_lineno
    while not lines[end].strip():  # and the blank lines after it
        end += 1
    del lines[docstring.lineno - 1 : end]
    return "\n".join(lines)


@dataclass(frozen=True)
class _Check:
    """The blocks written here against the models' own code, on real text."""

    smollm2_tokens: int
    smollm2_layers: int
    smollm2_gap: float  # largest |logit ours - logit model| / largest |logit|
    smollm2_block_gap: (
        float  # largest |block ours - Block| / largest |Block|, per layer
    )
    minilm_tokens: tuple[int, ...]  # real tokens of each sentence of the batch
    minilm_layers: int
    minilm_gap: float  # largest |output ours - model| over the real tokens
    # the stream's size at each depth (layers + 1,): the median over the tokens of
    # each token's root mean square, the first token of SmolLM2's apart
    smollm2_rms: np.ndarray  # the tokens after the first
    smollm2_first_rms: np.ndarray  # the first token
    minilm_rms: np.ndarray  # the real tokens of the first sentence
    # what flows through each model's first block, read from the arrays themselves
    smollm2_shapes: _Shapes
    minilm_shapes: _Shapes


@dataclass(frozen=True)
class _Shapes:
    """The shapes of a block's real arrays: the stream, each query head's and each
    K/V head's projection, the attention weights and the FFN's hidden layer."""

    stream: tuple[int, ...]  # (batch, n, d_model): in, between the sublayers, out
    queries: tuple[int, ...]  # (batch, h, n, d_k)
    keys: tuple[int, ...]  # (batch, h_kv, n, d_k): keys, and values alike
    weights: tuple[int, ...]  # (batch, h, n, n)
    hidden: tuple[int, ...]  # (batch, n, d_ff)


def _shapes(
    x: np.ndarray, attention, weights: np.ndarray, hidden: np.ndarray
) -> _Shapes:
    """The ``_Shapes`` of a block run on ``x``: its attention layer's heads split
    ``x``'s projections as the core does (``split_heads``)."""
    q = split_heads(x @ attention.w_q, attention.n_heads)
    k = split_heads(x @ attention.w_k, attention.n_kv_heads)
    return _Shapes(x.shape, q.shape, k.shape, weights.shape, hidden.shape)


def _study(smollm2_text: str, minilm_texts: tuple[str, ...], digest: str) -> _Check:
    """Run both models through the blocks written here and through their own code
    (``digest`` names SmolLM2's weights, for the cache).
    """
    model = smollm2.load()
    ids = model.encode(smollm2_text)
    x, stream, block_gaps = model.embed(ids), [], []
    for block, cache in zip(model.blocks, model.new_caches(len(ids)), strict=True):
        stream.append(x)
        ours = smollm2_block(x, block)
        own = block(x, cache)  # the model's block on the same input
        block_gaps.append(np.abs(ours - own).max() / np.abs(own).max())
        x = ours
    stream.append(x)
    theirs = model.logits(ids)
    first, embedded = model.blocks[0], model.embed(ids)
    normed = rms_norm(embedded, first.attention_norm, first.eps)
    w_gate = np.split(first.w_gate_up, 2, axis=1)[0]
    smollm2_shapes = _shapes(
        embedded,
        first.attention,
        first.attention(normed, causal_mask(len(ids)))[1],
        normed @ w_gate,
    )
    gap = np.abs(model.head(x)[0] - theirs).max() / np.abs(theirs).max()

    encoder = minilm.load()
    batch = encoder.batch(list(minilm_texts))
    y, hidden = encoder.embed_tokens(batch), []
    for layer in encoder.layers:
        hidden.append(y)
        y = minilm_layer(y, layer, batch.mask)
    hidden.append(y)
    expected = encoder.forward(batch).hidden[-1]
    start, first = encoder.embed_tokens(batch), encoder.layers[0]
    minilm_shapes = _shapes(
        start,
        first.attention,
        first.attention(start, batch.mask)[1],
        start @ first.w_in,
    )
    return _Check(
        smollm2_tokens=len(ids),
        smollm2_layers=len(model.blocks),
        smollm2_gap=float(gap),
        smollm2_block_gap=float(max(block_gaps)),
        minilm_tokens=tuple(int(v) for v in batch.valid.sum(axis=1)),
        minilm_layers=len(encoder.layers),
        minilm_gap=float(np.abs(y - expected)[batch.valid].max()),
        smollm2_rms=np.array([np.median(_rms(s[0, 1:])) for s in stream]),
        smollm2_first_rms=np.array([_rms(s[0, 0]) for s in stream]),
        minilm_rms=np.array([np.median(_rms(h[0][batch.valid[0]])) for h in hidden]),
        smollm2_shapes=smollm2_shapes,
        minilm_shapes=minilm_shapes,
    )


def _rms(x: np.ndarray) -> np.ndarray:
    """Root mean square over the last axis (each token's vector), in float64."""
    return np.sqrt(np.mean(np.square(x, dtype=np.float64), axis=-1))


@functools.cache
def page() -> Page:
    """What the page prints: the two checks and the stream's size through the depth."""
    check = cached(_study, _SMOLLM2_TEXT, _MINILM_TEXTS, smollm2.gguf_digest())
    return Page(
        check=check,
        smollm2_tolerance=_SMOLLM2_TOLERANCE,
        minilm_tolerance=_MINILM_TOLERANCE,
        first_peak=float(check.smollm2_first_rms.max()),
        minilm_low=float(check.minilm_rms[1:].min()),  # after each layer
        minilm_high=float(check.minilm_rms[1:].max()),
        facts=_facts(check),
        figures=_figures(check),
    )


def _figures(check: _Check) -> dict[str, Figure]:
    """The two orders as diagrams, with the real models' shapes on the arrows."""
    pre, post = check.smollm2_shapes, check.minilm_shapes
    panels = (
        (
            "pre-norm: SmolLM2",
            "pre",
            {"norm": "RMSNorm", "attention": "attention", "ffn": "FFN: SwiGLU"},
            pre,
        ),
        (
            "post-norm: MiniLM",
            "post",
            {"norm": "LayerNorm", "attention": "attention", "ffn": "FFN: GELU"},
            post,
        ),
    )
    return {
        "orders": Figure(
            "block.orders",
            (panels,),
            alt="Two block diagrams side by side, the stream flowing down. Pre-norm "
            f"(SmolLM2, stream {pre.stream}): RMSNorm, attention with queries "
            f"{pre.queries} and keys and values {pre.keys}, then a plus that adds "
            f"the residual line; RMSNorm, the SwiGLU FFN with a hidden layer "
            f"{pre.hidden}, and a second plus. Post-norm (MiniLM, stream "
            f"{post.stream}): attention with queries {post.queries} and keys and "
            f"values {post.keys}, a plus, then LayerNorm; the GELU FFN with a hidden "
            f"layer {post.hidden}, a plus, then LayerNorm.",
            caption="Follow the residual lines. In the pre-norm block they leave the "
            "stream before each norm, so the stream itself is never normalised; in "
            "the post-norm block each norm sits on the stream, after each addition. "
            "The shapes are those of the real models' arrays on the sentences below: "
            "the stream's on its arrows, the heads' and the FFN's inside their boxes.",
        )
    }


def _facts(check: _Check) -> dict[str, Fact]:
    """The page's facts: both blocks equal their models', and what each norm
    placement does to the stream's size.
    """
    pre, post = check.smollm2_rms, check.minilm_rms
    return {
        "smollm2_equal": Fact(
            check.smollm2_gap <= _SMOLLM2_TOLERANCE,
            f"relative logit gap {check.smollm2_gap}",
            says="our blocks' logits differ from SmolLM2's by at most the tolerance, relative to the largest logit",
        ),
        "minilm_equal": Fact(
            check.minilm_gap <= _MINILM_TOLERANCE,
            f"largest gap {check.minilm_gap}",
            says="our blocks' output differs from MiniLM's by at most the tolerance on every real token",
        ),
        "pre_norm_grows": Fact(
            pre[-1] > 100 * pre[0],
            f"stream RMS {np.round(pre, 3).tolist()}",
            says="SmolLM2's median stream RMS after its last block is over 100 times that before its first",
        ),
        "post_norm_steady": Fact(
            post[1:].max() < 2 * post[1:].min(),
            f"stream RMS {np.round(post, 3).tolist()}",
            says="MiniLM's median stream RMS after every layer stays within a factor of two of its smallest",
        ),
    }
