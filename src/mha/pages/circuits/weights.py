"""The circuits read off the weights alone: copying (OV) and K-composition (QK after OV).

Every matrix is taken per head, with the RMSNorm gain of the layer's input folded into
W_Q, W_K and W_V (``fold``); the RMS scale itself is one number per token and leaves
the scores below unchanged. In the row convention of the site (``x @ W``):

- a head's **OV circuit** on tokens is ``W_E^T W_V W_O W_U`` (vocab × vocab): the
  logits that attending to a token adds. Its nonzero eigenvalues are those of the
  d_k × d_k matrix ``W_O (W_U W_E^T) W_V``, with ``W_U W_E^T`` (d_model × d_model)
  computed once. Elhage et al. (2021)'s copying score is ``sum(λ) / sum(|λ|)``: 1 if
  every eigenvalue is positive (the head raises the logit of what it reads).
- **K-composition** of a sender head s into a receiver head r of a later layer is
  ``|W_QK^r W_OV^s^T|_F / (|W_QK^r|_F |W_OV^s|_F)``, with ``W_QK = W_Q R_Δ W_K^T``
  and ``W_OV = W_V W_O``. Rotary positions put the rotation R_Δ of the offset Δ
  between query and key inside W_QK, so the score depends on Δ: it is computed for a
  set of offsets, by the mean square of each norm over them. All Frobenius norms are
  traces of d_k × d_k Gram matrices (``composition_scores``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.layer import MultiHeadAttention
from mha.rope import RotaryEmbedding


@dataclass(frozen=True)
class _Folded:
    """Per-head matrices of a stack of attention layers, gains folded in, in the
    weights' dtype."""

    w_q: np.ndarray  # (layers, h, d_model, d_k)
    w_k: np.ndarray  # (layers, h_kv, d_model, d_k)
    w_v: np.ndarray  # (layers, h_kv, d_model, d_k)
    w_o: np.ndarray  # (layers, h, d_k, d_model)

    @property
    def group(self) -> int:
        """Query heads per K/V head: query head i reads K/V head ``i // group``."""
        return self.w_q.shape[1] // self.w_k.shape[1]

    def per_query_head(self, kv: np.ndarray) -> np.ndarray:
        """``(layers, h_kv, ...)`` -> ``(layers, h, ...)``: each query head's K/V head."""
        return np.repeat(kv, self.group, axis=1)


def _fold(
    attentions: Sequence[MultiHeadAttention], gains: Sequence[np.ndarray]
) -> _Folded:
    """Split each layer's weights by head, ``diag(gain) W`` for W_Q, W_K and W_V."""
    if len(attentions) != len(gains) or not attentions:
        raise ValueError(
            f"gains: expected one per attention layer ({len(attentions)}), "
            f"got {len(gains)}"
        )

    def heads(w: np.ndarray, gain: np.ndarray, n: int) -> np.ndarray:
        w = np.asarray(gain, w.dtype)[:, None] * w  # (d_model, n d_k)
        return w.reshape(w.shape[0], n, -1).transpose(1, 0, 2)

    a0 = attentions[0]
    pairs = list(zip(attentions, gains, strict=True))
    return _Folded(
        np.stack([heads(a.w_q, g, a.n_heads) for a, g in pairs]),
        np.stack([heads(a.w_k, g, a.n_kv_heads) for a, g in pairs]),
        np.stack([heads(a.w_v, g, a.n_kv_heads) for a, g in pairs]),
        np.stack(
            [np.asarray(a.w_o).reshape(a0.n_heads, a0.d_k, -1) for a in attentions]
        ),
    )


def _ov_eigenvalues(
    folded: _Folded, heads: Sequence[tuple[int, int]], unembed_embed: np.ndarray
) -> np.ndarray:
    """The d_k eigenvalues of each head's OV circuit, ``(len(heads), d_k)`` complex:
    those of ``W_O unembed_embed W_V``, where ``unembed_embed (d_model, d_model)`` is
    ``W_U W_E^T``.
    """
    layers, rows = np.array(heads).T
    w_v = folded.w_v[layers, rows // folded.group]  # (k, d_model, d_k)
    return np.linalg.eigvals(folded.w_o[layers, rows] @ unembed_embed @ w_v)


def _copying_score(eigenvalues: np.ndarray) -> np.ndarray:
    """``sum(λ) / sum(|λ|)`` over the last axis (real): 1 when every eigenvalue is
    positive, -1 when every one is negative.
    """
    return np.sum(eigenvalues, axis=-1).real / np.sum(np.abs(eigenvalues), axis=-1)


def _own_token_ranks(
    folded: _Folded,
    heads: Sequence[tuple[int, int]],
    inputs: np.ndarray,
    unembed: np.ndarray,
) -> np.ndarray:
    """``(len(heads), k)``: for each of k tokens, the rank (1 = highest) of its own
    logit among the k logits that the head's OV circuit writes when it reads it.

    ``inputs (k, d_model)`` are what the layer reads for the tokens (normalised
    embeddings, gain left to ``folded``), ``unembed (d_model, k)`` their output
    directions.
    """
    layers, rows = np.array(heads).T
    w_v = folded.w_v[layers, rows // folded.group]  # (heads, d_model, d_k)
    values, outputs = inputs @ w_v, folded.w_o[layers, rows] @ unembed
    ranks = []
    for v, o in zip(values, outputs, strict=True):  # one (k, k) at a time, not all
        written = v @ o
        ranks.append(1 + (written > np.diagonal(written)[:, None]).sum(axis=-1))
    return np.stack(ranks)


def _rotations(rope: RotaryEmbedding, offsets: Sequence[int]) -> np.ndarray:
    """``(len(offsets), d_k, d_k)``: R_Δ with ``rope(x, p) = x @ R_p``, so that a
    query at t and a key at t - Δ score ``q R_Δ k^T`` before rotation.
    """
    eye = np.eye(rope.d_k)
    return np.stack([rope(eye, np.full(rope.d_k, int(d))) for d in offsets])


def _rotated_mean(grams: np.ndarray, rots: np.ndarray) -> np.ndarray:
    """``mean over R of R^T G R`` for each G of ``grams (..., d_k, d_k)``, the R being
    rotary ``rots (m, d_k, d_k)`` (``rotations``), without a matrix product.

    A rotary R has two nonzeros in column j: ``c_j = R[j, j]`` (a cosine) and
    ``t_j = R[p(j), j]`` (a signed sine), p(j) the partner of j in its pair. So
    ``(R^T G R)[i, j] = c_i c_j G[i, j] + c_i t_j G[i, p(j)] + t_i c_j G[p(i), j]
    + t_i t_j G[p(i), p(j)]``, and the mean over R needs only the means of the four
    outer products: O(d_k²) per G.
    """
    rots = np.asarray(rots)
    d_k = rots.shape[-1]
    if rots.ndim != 3 or rots.shape[1] != d_k:
        raise ValueError(f"rots: expected shape (m, d_k, d_k), got {rots.shape}")
    nonzero = np.abs(rots).sum(axis=0) * (1 - np.eye(d_k))  # off the diagonal
    off = (nonzero > 0).sum(axis=0)
    if (off > 1).any():
        raise ValueError(
            "rots: expected rotary rotations, at most one nonzero off the "
            f"diagonal of each column, got {off.max()} in column {off.argmax()}"
        )
    lone = off == 0  # no partner (an angle of zero): t = 0
    partner = np.where(lone, np.arange(d_k), nonzero.argmax(axis=0))  # p(j)
    c = np.diagonal(rots, axis1=-2, axis2=-1)  # (m, d_k)
    t = rots[:, partner, np.arange(d_k)] * ~lone  # (m, d_k)
    m = len(rots)
    g = np.asarray(grams)
    mean = (
        (c.T @ c / m) * g
        + (c.T @ t / m) * g[..., :, partner]
        + (t.T @ c / m) * g[..., partner, :]
        + (t.T @ t / m) * g[..., partner, :][..., :, partner]
    )
    return mean.astype(g.dtype, copy=False)


def _composition_scores(
    folded: _Folded, offset_sets: Sequence[np.ndarray]
) -> np.ndarray:
    """K-composition of every sender into every receiver of a later layer, for each
    set of rotations ``(m, d_k, d_k)`` of ``offset_sets``: ``(sets, layers, h, layers,
    h)``, indexed ``[set, receiver layer, receiver head, sender layer, sender head]``,
    NaN where the sender is not in an earlier layer.

    With ``G_X = W_X^T W_X`` and ``H = mean over Δ of R_Δ^T G_Q R_Δ`` (d_k × d_k):
    ``|W_QK|² = <H, G_K>``, ``|W_OV|² = <G_V, W_O W_O^T>`` and ``|W_QK W_OV^T|² =
    <H, M G_V M^T>`` with ``M = W_K^T W_O^T`` (H by ``rotated_mean``); the products M
    come from one matrix product per receiving layer, in the weights' dtype.
    """
    f = folded
    n_layers, h, d_model, d_k = f.w_q.shape
    h_kv = f.w_k.shape[1]
    for i, rots in enumerate(offset_sets):
        if np.ndim(rots) != 3 or np.shape(rots)[1:] != (d_k, d_k) or not len(rots):
            raise ValueError(
                f"offset_sets[{i}]: expected rotations (m >= 1, {d_k}, {d_k}), "
                f"got shape {np.shape(rots)}"
            )

    def gram(w: np.ndarray) -> np.ndarray:  # (..., d_model, d_k) -> (..., d_k, d_k)
        return (w.swapaxes(-1, -2) @ w).astype(np.float64)

    g_q, g_k, g_v = gram(f.w_q), gram(f.w_k), gram(f.w_v)
    mean_rotated = [_rotated_mean(g_q, rots) for rots in offset_sets]  # H per set
    qk2 = [(m * f.per_query_head(g_k)).sum(axis=(-2, -1)) for m in mean_rotated]
    ov2 = (f.per_query_head(g_v) * gram(f.w_o.swapaxes(-1, -2))).sum(axis=(-2, -1))
    # W_O^T C_V per sender, with G_V = C_V C_V^T: then M G_V M^T = Y Y^T, Y = W_K^T W_O^T C_V
    c_v = f.per_query_head(np.linalg.cholesky(g_v)).astype(f.w_o.dtype)
    sent = f.w_o.swapaxes(-1, -2) @ c_v  # (layers, h, d_model, d_k)
    sent = np.ascontiguousarray(sent.transpose(2, 0, 1, 3))  # (d_model, layers, h, d_k)
    scores = np.full((len(offset_sets), n_layers, h, n_layers, h), np.nan)
    for layer in range(1, n_layers):
        senders = sent[:, :layer].reshape(d_model, -1)  # a view: every earlier head
        keys = f.w_k[layer].swapaxes(-1, -2).reshape(-1, d_model)  # (h_kv d_k, d_model)
        y = (keys @ senders).reshape(h_kv, d_k, layer * h, d_k).transpose(0, 2, 1, 3)
        p = (y @ y.swapaxes(-1, -2)).reshape(h_kv, layer * h, d_k * d_k)
        for i, m in enumerate(mean_rotated):
            # each query head with its K/V head's products: (h_kv, group, senders)
            rows = m[layer].reshape(h_kv, f.group, d_k * d_k).astype(p.dtype)
            num2 = (rows @ p.swapaxes(-1, -2)).reshape(h, -1).astype(np.float64)
            denominator = qk2[i][layer][:, None] * ov2[:layer].reshape(1, -1)
            scores[i, layer, :, :layer] = np.sqrt(num2 / denominator).reshape(
                h, layer, h
            )
    return scores
