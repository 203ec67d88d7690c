"""Sentences of different lengths in one batch: padding, its mask, and which side.

Random "sentences" of ``LENGTHS`` tokens, padded with a large embedding (a leak would
show), go through one causal rotary layer; each one's real rows are compared with the
sentence run alone, padded right or left, with and without the padding mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask, padding_mask
from mha.layer import MultiHeadAttention
from mha.rope import RotaryEmbedding
from mha.support.validate import generator

LENGTHS = (5, 3, 2)  # tokens of each sentence of the batch
_D_MODEL, _N_HEADS = 8, 2
_PAD_SCALE = 100.0  # the padding embedding is this large: a leak could not hide
TOLERANCE = 1e-12  # float64: a padded sentence's real rows equal its own run to this


def sentences(
    lengths: tuple[int, ...] = LENGTHS, rng: np.random.Generator | None = None
) -> list[np.ndarray]:
    """One ``(length, D_MODEL)`` array of seeded random embeddings per sentence."""
    rng = generator(rng)
    return [rng.normal(size=(n, _D_MODEL)) for n in lengths]


def layer() -> MultiHeadAttention:
    """The seeded causal layer the batch goes through, with rotary positions."""
    attention = MultiHeadAttention(_D_MODEL, _N_HEADS)
    attention.rope = RotaryEmbedding(attention.d_k)
    return attention


def pad(sequences: list[np.ndarray], left: bool) -> np.ndarray:
    """``(batch, n, d_model)``: the sequences padded to the longest, with a padding
    embedding of ``PAD_SCALE`` in every component, after them or (``left``) before.
    """
    n = max(len(s) for s in sequences)
    batch = np.full((len(sequences), n, sequences[0].shape[-1]), _PAD_SCALE)
    for b, s in enumerate(sequences):
        if left:
            batch[b, n - len(s) :] = s
        else:
            batch[b, : len(s)] = s
    return batch


def _decoder_mask(lengths: tuple[int, ...], n: int, left: bool) -> np.ndarray:
    """``(batch, n, n)``: each query may attend to the real keys up to itself, and a
    padding query to itself as well, so that none is left without a key (with left
    padding, the first ones have no real key before them). A padding query's output
    is never read.
    """
    valid = padding_mask(np.array(lengths), n, left=left)  # (batch, n): real tokens
    mask = causal_mask(n) & valid[:, None, :]  # real keys, none after the query
    return mask | (np.eye(n, dtype=bool) & ~valid[:, :, None])  # a pad sees itself


@dataclass(frozen=True)
class _Batched:
    """How far each sentence's real rows in the batch are from the sentence alone."""

    lengths: tuple[int, ...]
    tolerance: float
    right: float  # right padding, causal and padding masks: largest difference
    left: float  # left padding, the same masks, padding queries on themselves
    right_causal_only: float  # right padding, the causal mask alone
    left_causal_only: float  # left padding, the causal mask alone: the pads leak
    refusal: str  # what attend says of left padding without the self rows


def _study(lengths: tuple[int, ...] = LENGTHS) -> _Batched:
    """Run the padded batch both ways, with and without the padding mask."""
    attention, n = layer(), max(lengths)
    alone = [attention(s[None], causal_mask(len(s)))[0][0] for s in sentences(lengths)]

    def largest_gap(left: bool, mask: np.ndarray) -> float:
        out, _ = attention(pad(sentences(lengths), left), mask)
        gaps = [
            (o[n - len(a) :] if left else o[: len(a)]) - a
            for o, a in zip(out, alone, strict=True)
        ]
        return max(float(np.abs(g).max()) for g in gaps)

    valid = padding_mask(np.array(lengths), n, left=True)
    try:  # left padding's masks, the padding queries left without a key
        attention(
            pad(sentences(lengths), True), (causal_mask(n) & valid[:, None])[:, None]
        )
        refusal = ""
    except ValueError as error:
        refusal = str(error)
    return _Batched(
        lengths=tuple(lengths),
        tolerance=TOLERANCE,
        right=largest_gap(False, _decoder_mask(lengths, n, False)[:, None]),
        left=largest_gap(True, _decoder_mask(lengths, n, True)[:, None]),
        right_causal_only=largest_gap(False, causal_mask(n)),
        left_causal_only=largest_gap(True, causal_mask(n)),
        refusal=refusal,
    )
