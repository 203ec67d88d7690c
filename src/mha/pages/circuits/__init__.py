"""Circuits: how SmolLM2's induction heads are wired. Page: ``docs/circuits.md``.

The depth page finds the induction heads by their attention pattern. This page tests
the circuit of Olsson et al. (2022) and Elhage et al. (2021) around them: from the
weights alone (``weights``: copying, K-composition), on the repeated sequences
(``sequences``: direct logit attribution, mean and zero ablation, path patching into
keys, what the first token's attention moves) and on the site's own Markdown
(``streaming``: the StreamingLLM windows). Layers and heads are numbered from 0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mha.pages.circuits import weights as w
from mha.pages.circuits.sequences import patched_induction, replaced_loss, run
from mha.pages.circuits.streaming import Streaming, streaming
from mha.pages.depth import repeated_tokens
from mha.pages.depth.repeated_tokens import N_ABLATED, Scan, strongest
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page

SEED = 26
N_RANDOM = 20  # random heads whose OV circuits are scored beside the induction heads
N_SAMPLE = 1000  # tokens the own-logit rank is measured on
MAX_OFFSET = 64  # K-composition averaged over offsets 1 .. MAX_OFFSET
N_CONTROLS = 5  # random earlier heads patched as controls
STREAM_TOKENS = 512  # tokens of Markdown the windows are measured on
BAND = 128  # keys in the sliding window
SINKS = 4  # first tokens kept beside it
TEXT = Path(__file__).resolve().parents[4] / "docs" / "attention.md"


def _name(head) -> str:
    return f"L{int(head[0])}H{int(head[1])}"


@dataclass(frozen=True)
class Weights:
    """What the weights alone say: copying of ``heads`` (the induction heads, then
    ``N_RANDOM`` random others) and K-composition of every pair."""

    heads: tuple[tuple[int, int], ...]
    copying: np.ndarray  # (heads,) sum(λ) / sum(|λ|)
    median_rank: np.ndarray  # (heads,) of the own logit among N_SAMPLE
    first: np.ndarray  # (heads,) share of the sample ranked first
    composition: np.ndarray  # (2, layers, h, layers, h): Δ = 1, mean over Δ


def _weights(heads: tuple[tuple[int, int], ...]) -> Weights:
    model = smollm2.load()
    blocks = model.blocks
    folded = w.fold([b.attention for b in blocks], [b.attention_norm for b in blocks])
    embed = model.embedding.astype(np.float64)  # (d_model, vocab): W_E, tied
    unembed = model.final_norm[:, None] * embed  # W_U: the final norm's gain folded in
    eig = w.ov_eigenvalues(folded, heads, unembed @ embed.T)
    control = set(model.tokenizer.get_added_tokens_decoder())
    allowed = [i for i in range(model.config.vocab_size) if i not in control]
    sample = np.random.default_rng([SEED, 1]).choice(allowed, N_SAMPLE, replace=False)
    ones = np.ones(model.config.d_model)
    inputs = rms_norm(embed[:, sample].T, ones, np.float64(model.blocks[0].eps))
    ranks = w.own_token_ranks(folded, heads, inputs, unembed[:, sample])
    rope = blocks[0].attention.rope
    offsets = w.rotations(rope, range(1, MAX_OFFSET + 1))
    composition = w.composition_scores(folded, [offsets[:1], offsets])
    return Weights(
        heads=heads,
        copying=w.copying_score(eig),
        median_rank=np.median(ranks, axis=-1),
        first=(ranks == 1).mean(axis=-1),
        composition=composition.astype(np.float32),
    )


@dataclass(frozen=True)
class Sequences:
    """What the repeated sequences show (means over them)."""

    first_token: np.ndarray  # (layers,) attention weight on the first token
    first_token_moved: np.ndarray  # (layers,) its share of what moves
    dla: np.ndarray  # (layers, h) direct logit attribution to the repeated token
    mean_top: float  # second-copy loss, the induction heads mean-ablated
    previous_zero: float  # ... the previous-token head alone removed
    previous_mean: float  # ... mean-ablated
    clean: np.ndarray  # (N_ABLATED,) induction score of each induction head
    patched: np.ndarray  # (N_ABLATED,) ... its keys patched at the previous-token head
    controls: np.ndarray  # (N_ABLATED, N_CONTROLS) ... at random earlier heads


def _sequences(
    top: tuple[tuple[int, int], ...],
    previous: tuple[int, int],
    controls: tuple[tuple[int, int], ...],
) -> Sequences:
    model = smollm2.load()
    p = run(model, repeated_tokens.repeated_sequences(model))
    return Sequences(
        first_token=p.first_token,
        first_token_moved=p.first_token_moved,
        dla=p.dla,
        mean_top=replaced_loss(model, p, top, mean=True),
        previous_zero=replaced_loss(model, p, [previous], mean=False),
        previous_mean=replaced_loss(model, p, [previous], mean=True),
        clean=np.array([patched_induction(model, p, r, None) for r in top]),
        patched=np.array([patched_induction(model, p, r, previous) for r in top]),
        controls=np.array(
            [[patched_induction(model, p, r, s) for s in controls] for r in top]
        ),
    )


def markdown_ids() -> tuple[int, ...]:
    """The first ``STREAM_TOKENS`` + 1 tokens of the site's attention page (Markdown).

    ```python
    from mha.pages.circuits import STREAM_TOKENS, markdown_ids

    assert len(markdown_ids()) == STREAM_TOKENS + 1
    ```
    """
    return tuple(
        smollm2.load().encode(TEXT.read_text(encoding="utf-8"))[: STREAM_TOKENS + 1]
    )


@dataclass(frozen=True)
class Studies:
    """The three cached studies and the heads they are about."""

    scan: Scan
    top: tuple[tuple[int, int], ...]
    previous: tuple[int, int]
    controls: tuple[tuple[int, int], ...]
    weights: Weights
    sequences: Sequences
    streaming: Streaming


@functools.cache
def studies() -> Studies:
    """Every study of the page, from the cache (the depth page's scan picks the heads).

    ```python
    from mha.pages.circuits import studies

    s = studies()
    assert s.previous[0] < min(layer for layer, _ in s.top)
    ```
    """
    scan = repeated_tokens.scan()
    top = tuple(strongest(scan.induction, N_ABLATED))
    previous = tuple(strongest(scan.previous, 1)[0])
    n_layers, n_heads = scan.induction.shape
    rng = np.random.default_rng([SEED, 2])
    others = [h for h in np.ndindex(n_layers, n_heads) if h not in top]
    picked = rng.choice(len(others), N_RANDOM, replace=False)
    randoms = tuple(others[i] for i in picked)
    below = [h for h in np.ndindex(min(l for l, _ in top), n_heads) if h != previous]
    controls = tuple(
        below[i] for i in rng.choice(len(below), N_CONTROLS, replace=False)
    )
    return Studies(
        scan=scan,
        top=top,
        previous=previous,
        controls=controls,
        weights=cached(_weights, top + randoms),
        sequences=cached(_sequences, top, previous, controls),
        streaming=cached(streaming, markdown_ids(), BAND, SINKS),
    )
